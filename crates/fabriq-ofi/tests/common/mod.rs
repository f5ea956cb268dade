//! Shared test helpers: real libfabric endpoints, no mocks.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use fabriq_ofi::{Domain, Event, FiAddr, Hints, Info, PagePool, PagedConfig, PagedEndpoint};

/// Fabric tests need libfabric compiled in. A build without it fails these
/// tests loudly, unless FABRIQ_OFI_DISABLE=1 says it was done on purpose.
/// Returns false (the test does nothing) only in that deliberate case.
pub fn need_fabric() -> bool {
    if fabriq_ofi::available() {
        return true;
    }
    if fabriq_ofi::compiled_in() {
        panic!(
            "libfabric is compiled in but cannot be used: {}",
            fabriq_ofi::getinfo(&Hints::new())
                .err()
                .map_or(String::new(), |e| e.to_string())
        );
    }
    if std::env::var("FABRIQ_OFI_DISABLE").is_ok_and(|v| v == "1") {
        eprintln!("FABRIQ_OFI_DISABLE=1: fabriq-ofi built without libfabric; fabric test not run");
        return false;
    }
    panic!(
        "fabriq-ofi was built without libfabric, so the fabric tests cannot run. \
         Install libfabric-dev (Debian) / libfabric-devel and rebuild, or set \
         FABRIQ_OFI_DISABLE=1 (at build and test time) to test the unavailable path on purpose."
    );
}

/// Hints for one of the providers that work on this machine.
pub fn hints(provider: &str) -> Hints {
    let h = Hints::new().provider(provider);
    match provider {
        // Loopback: the address is 127.0.0.1 with an ephemeral port.
        "tcp" => h.node("127.0.0.1").source(true),
        _ => h,
    }
}

pub fn info(provider: &str) -> Info {
    let infos = fabriq_ofi::getinfo(&hints(provider))
        .unwrap_or_else(|e| panic!("getinfo({provider}): {e}"));
    infos
        .into_iter()
        .next()
        .expect("getinfo returned an empty list")
}

/// One side of a test connection.
pub struct Side {
    pub domain: Domain,
    pub pool: PagePool,
    pub ep: PagedEndpoint,
    pub peer: FiAddr,
}

/// Two endpoints, each in its own fabric/domain, that know each other.
pub fn pair(provider: &str, pages: usize, page_size: usize, config: PagedConfig) -> (Side, Side) {
    pair_sized(provider, pages, page_size, page_size, config)
}

/// As [`pair`], with different page sizes for the two sides.
pub fn pair_sized(
    provider: &str,
    pages: usize,
    page_a: usize,
    page_b: usize,
    config: PagedConfig,
) -> (Side, Side) {
    let mk = |page_size| {
        let info = info(provider);
        let domain = Domain::open_info(&info).expect("fabric/domain");
        let pool = PagePool::new(&domain, pages, page_size).expect("page pool");
        let ep = PagedEndpoint::open(&domain, &info, config).expect("endpoint");
        (domain, pool, ep)
    };
    let (da, pa, mut ea) = mk(page_a);
    let (db, pb, mut eb) = mk(page_b);
    let name_a = ea.name().expect("name a");
    let name_b = eb.name().expect("name b");
    let peer_b = ea.insert_peer(&name_b).expect("insert b");
    let peer_a = eb.insert_peer(&name_a).expect("insert a");
    (
        Side {
            domain: da,
            pool: pa,
            ep: ea,
            peer: peer_b,
        },
        Side {
            domain: db,
            pool: pb,
            ep: eb,
            peer: peer_a,
        },
    )
}

/// Polls `side` until `pred` accepts an event or the deadline passes.
pub fn poll_until(
    side: &mut Side,
    deadline: Instant,
    what: &str,
    mut pred: impl FnMut(Event) -> Option<Event>,
) -> Event {
    let mut events = Vec::new();
    loop {
        side.ep.poll(&mut events, 16).expect("poll");
        for e in events.drain(..) {
            if let Some(e) = pred(e) {
                return e;
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

pub fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// Sends, retrying on `Error::Again`, driving progress on both sides: a
/// first send answers EAGAIN until the peer has progressed far enough to
/// accept the connection (tcp;ofi_rxm) or the address exchange (shm). The
/// callers have nothing else in flight, so no completion can be lost.
pub fn send_retry(
    side: &mut Side,
    peer: &mut Side,
    mut page: fabriq_ofi::Page,
    dest: FiAddr,
    deadline: Instant,
) {
    let mut events = Vec::new();
    loop {
        match side.ep.send(page, dest, None, 0) {
            Ok(()) => return,
            Err(e) if e.error.is_again() => page = e.page,
            Err(e) => panic!("send: {}", e.error),
        }
        side.ep.poll(&mut events, 16).expect("poll");
        peer.ep.poll(&mut events, 16).expect("poll");
        assert!(
            events.is_empty(),
            "unexpected completions while retrying: {events:?}"
        );
        assert!(
            Instant::now() < deadline,
            "send still refused (EAGAIN) at the deadline"
        );
        std::thread::yield_now();
    }
}

/// A test of this crate run alone in a child process.
pub struct ChildRun {
    /// The child's pid (for what it may leave behind).
    pub pid: u32,
    /// Whether it exited successfully.
    pub ok: bool,
    /// Its standard output, then its standard error.
    pub text: String,
}

/// Runs test `case` alone in `exe` (this test binary, or a copy of it)
/// with `env` set, and waits for it.
pub fn run_case(exe: &std::path::Path, case: &str, env: &[(&str, &str)]) -> ChildRun {
    use std::process::{Command, Stdio};
    let child = Command::new(exe)
        .args([case, "--exact", "--nocapture", "--test-threads=1"])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child starts");
    let pid = child.id();
    let out = child.wait_with_output().expect("the child's output");
    ChildRun {
        pid,
        ok: out.status.success(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}
