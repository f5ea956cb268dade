//! Load: many connections and many sockets at once (issue 15 item 4).
//!
//! - one ROUTER serving 10,000 DEALER connections (the DEALERs in two
//!   child processes, 5,000 each, since every DEALER holds two
//!   descriptors: its wake-up eventfd and its connection);
//! - one PUB sending to 1,000 SUB connections (the SUBs in a child);
//! - 100 sockets in one context: 50 PUSH/PULL pairs over tcp moving
//!   messages at once, the PULLs served by one `poll` loop.
//!
//! Each test checks that nothing is lost, duplicated or reordered, that
//! every peer is served, and prints its figures (throughput, the spread
//! of service across peers, memory per connection) for
//! docs/reliability.md. The tests take one lock so that they run one at a
//! time: each wants most of the machine.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fabriq as zmq;

/// One load test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// No wait in these tests may take longer than this.
const LIMIT: Duration = Duration::from_secs(120);

/// Raises this process's descriptor limit to its hard limit, and checks
/// that `need` descriptors fit.
fn raise_fd_limit(need: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    )
    .expect("raise RLIMIT_NOFILE to its hard limit");
    assert!(
        hard >= need,
        "this test needs {need} descriptors per process; the hard limit is {hard}"
    );
}

/// Peak resident memory of this process, in kB (`VmHWM`), and the
/// current one (`VmRSS`).
fn memory_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// This test binary again, running `test` with `role` in the environment.
fn spawn_child(test: &str, role: &str, args: &[String]) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("FABRIQ_LOAD_ROLE", role)
        .env("FABRIQ_LOAD_ARGS", args.join(" "))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

/// The role this process plays, if it is a child.
fn child_role() -> Option<(String, Vec<String>)> {
    let role = std::env::var("FABRIQ_LOAD_ROLE").ok()?;
    let args = std::env::var("FABRIQ_LOAD_ARGS").unwrap_or_default();
    Some((role, args.split_whitespace().map(str::to_string).collect()))
}

/// Reads the child's lines until one starts with `prefix`; returns the
/// rest of it. Fails if the child ends first.
fn expect_line(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the child ended before saying {prefix:?}");
        if let Some(rest) = line.trim_end().strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
}

/// Waits for a child to end well, within the time limit.
fn finish(mut child: Child) {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "a child failed: {status}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a child did not end within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Prints a figure for the notes.
fn report(test: &str, what: &str) {
    println!("LOAD {test}: {what}");
}

// ---- ROUTER with 10,000 DEALERs -------------------------------------------

const DEALER_PROCS: usize = 2;
const DEALERS_PER_PROC: usize = 5_000;
/// Requests each DEALER sends after everyone is connected.
const ROUNDS: usize = 4;

/// A child with `DEALERS_PER_PROC` DEALERs (identities `P-I`). Each sends
/// a hello and waits for the go; then sends `ROUNDS` requests at once and
/// checks that exactly their replies come back, in order.
fn dealers(args: &[String]) {
    let (proc_no, endpoint) = (&args[0], &args[1]);
    raise_fd_limit(2 * DEALERS_PER_PROC as u64 + 64);
    let ctx = zmq::Context::new();
    let mut socks = Vec::with_capacity(DEALERS_PER_PROC);
    for i in 0..DEALERS_PER_PROC {
        let s = ctx.socket(zmq::DEALER).unwrap();
        s.set_identity(format!("{proc_no}-{i}").as_bytes()).unwrap();
        s.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
        s.set_linger(1000).unwrap();
        s.connect(endpoint).unwrap();
        s.send("hello", 0).unwrap();
        socks.push(s);
    }
    println!("connected");
    for s in &socks {
        assert_eq!(s.recv_bytes(0).unwrap(), b"go");
    }
    for s in &socks {
        for r in 0..ROUNDS {
            s.send(format!("req {r}").as_bytes(), 0).unwrap();
        }
    }
    for (i, s) in socks.iter().enumerate() {
        for r in 0..ROUNDS {
            let reply = s.recv_bytes(0).unwrap();
            assert_eq!(
                reply,
                format!("rep {proc_no}-{i} {r}").as_bytes(),
                "DEALER {proc_no}-{i}"
            );
        }
    }
    println!("served");
}

/// One ROUTER, 10,000 DEALER connections: every DEALER is greeted, every
/// request answered to the right peer; the ROUTER's fair queueing is
/// measured as the spread, across peers, of how many requests each had
/// served when half of all requests were.
#[test]
fn a_router_serves_ten_thousand_dealers() {
    const TEST: &str = "a_router_serves_ten_thousand_dealers";
    if let Some((role, args)) = child_role() {
        assert_eq!(role, "dealers");
        return dealers(&args);
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let peers = DEALER_PROCS * DEALERS_PER_PROC;
    raise_fd_limit(peers as u64 + 64);
    let ctx = zmq::Context::new();
    let router = ctx.socket(zmq::ROUTER).unwrap();
    router.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = router.get_last_endpoint().unwrap().unwrap();
    let (rss_peak_before, _) = memory_kb();
    let start = Instant::now();
    let children: Vec<_> = (0..DEALER_PROCS)
        .map(|p| spawn_child(TEST, "dealers", &[p.to_string(), endpoint.clone()]))
        .collect();
    // Every DEALER's hello.
    let mut ids = std::collections::HashSet::new();
    for _ in 0..peers {
        let msg = router.recv_multipart(0).unwrap();
        assert_eq!(msg.len(), 2, "identity and body");
        assert_eq!(msg[1], b"hello");
        assert!(ids.insert(msg[0].clone()), "one hello per DEALER");
    }
    let connected = start.elapsed();
    let (rss_peak_connected, rss_connected) = memory_kb();
    for id in &ids {
        router.send(&id[..], zmq::SNDMORE).unwrap();
        router.send("go", 0).unwrap();
    }
    // The requests: answered one by one, as they come.
    let total = peers * ROUNDS;
    let mut served: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
    let mut spread = None;
    let serving = Instant::now();
    for n in 0..total {
        let msg = router.recv_multipart(0).unwrap();
        let id = msg[0].clone();
        let count = served.entry(id.clone()).or_insert(0);
        assert_eq!(
            msg[1],
            format!("req {count}").as_bytes(),
            "in order per peer"
        );
        let reply = format!("rep {} {count}", String::from_utf8_lossy(&id));
        *count += 1;
        router.send(&id[..], zmq::SNDMORE).unwrap();
        router.send(reply.as_bytes(), 0).unwrap();
        if n + 1 == total / 2 {
            let counts: Vec<usize> = ids
                .iter()
                .map(|id| served.get(id).copied().unwrap_or(0))
                .collect();
            spread = Some((*counts.iter().min().unwrap(), *counts.iter().max().unwrap()));
        }
    }
    let serve_time = serving.elapsed();
    assert_eq!(served.len(), peers);
    assert!(served.values().all(|&c| c == ROUNDS));
    for (child, mut out) in children {
        expect_line(&mut out, "served");
        finish(child);
    }
    let (min, max) = spread.unwrap();
    let per_conn = (rss_peak_connected.saturating_sub(rss_peak_before)) * 1024 / peers as u64;
    report(
        TEST,
        &format!(
            "{peers} DEALERs connected and greeted in {:.2} s; {total} requests served in {:.2} s ({:.0} req/s); \
             at half of them served, per-peer served min {min} max {max} (of {ROUNDS}); \
             ROUTER side RSS {} MB with every connection up, {} B per connection",
            connected.as_secs_f64(),
            serve_time.as_secs_f64(),
            total as f64 / serve_time.as_secs_f64(),
            rss_connected / 1024,
            per_conn,
        ),
    );
    // Memory per connection, the ROUTER's side: its session, pipes and
    // buffers. A bound well above what it takes (about 20 kB when
    // measured) and far below a leak of a buffer per message.
    assert!(per_conn < 256 * 1024, "{per_conn} B per connection");
}

// ---- PUB to 1,000 SUBs ------------------------------------------------------

const SUBS: usize = 1_000;
const PUB_MSGS: usize = 2_000;
const PUB_SIZE: usize = 64;

/// A child with `SUBS` SUBs: each subscribes to everything and must
/// receive every message, numbered, in order.
fn subscribers(args: &[String]) {
    let endpoint = &args[0];
    raise_fd_limit(2 * SUBS as u64 + 64);
    let ctx = zmq::Context::new();
    let socks: Vec<_> = (0..SUBS)
        .map(|_| {
            let s = ctx.socket(zmq::SUB).unwrap();
            s.set_rcvhwm(0).unwrap();
            s.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
            s.set_subscribe(b"").unwrap();
            s.connect(endpoint).unwrap();
            s
        })
        .collect();
    println!("subscribed");
    // Receive in rounds across all SUBs, so that no SUB is left to queue
    // everything while another is read.
    let mut items: Vec<_> = socks.iter().map(|s| s.as_poll_item(zmq::POLLIN)).collect();
    let mut next = vec![0usize; SUBS];
    let mut done = 0;
    let deadline = Instant::now() + LIMIT;
    while done < SUBS {
        assert!(
            Instant::now() < deadline,
            "{done} of {SUBS} SUBs got everything"
        );
        zmq::poll(&mut items, 1000).unwrap();
        for (i, s) in socks.iter().enumerate() {
            while next[i] < PUB_MSGS {
                match s.recv_bytes(zmq::DONTWAIT) {
                    Ok(m) => {
                        assert_eq!(m.len(), PUB_SIZE);
                        let n = u32::from_be_bytes(m[..4].try_into().unwrap()) as usize;
                        assert_eq!(n, next[i], "SUB {i}: in order, nothing lost");
                        next[i] += 1;
                        if next[i] == PUB_MSGS {
                            done += 1;
                        }
                    }
                    Err(zmq::Error::EAGAIN) => break,
                    Err(e) => panic!("SUB {i}: {e}"),
                }
            }
        }
    }
    println!("received");
}

/// One PUB, 1,000 SUB connections (HWM 0: nothing may be dropped): every
/// subscriber gets every message in order. The PUB learns of the
/// subscriptions through XPUB, so it starts once all 1,000 are in.
#[test]
fn a_publisher_feeds_a_thousand_subscribers() {
    const TEST: &str = "a_publisher_feeds_a_thousand_subscribers";
    if let Some((role, args)) = child_role() {
        assert_eq!(role, "subscribers");
        return subscribers(&args);
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    raise_fd_limit(SUBS as u64 + 64);
    let ctx = zmq::Context::new();
    let xpub = ctx.socket(zmq::XPUB).unwrap();
    xpub.set_sndhwm(0).unwrap();
    xpub.set_xpub_verbose(true).unwrap();
    xpub.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
    xpub.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = xpub.get_last_endpoint().unwrap().unwrap();
    let (child, mut out) = spawn_child(TEST, "subscribers", &[endpoint]);
    // With XPUB_VERBOSE every SUB's subscription is passed up.
    for _ in 0..SUBS {
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01");
    }
    let start = Instant::now();
    let mut msg = [0u8; PUB_SIZE];
    for n in 0..PUB_MSGS {
        msg[..4].copy_from_slice(&(n as u32).to_be_bytes());
        xpub.send(&msg[..], 0).unwrap();
    }
    expect_line(&mut out, "received");
    let elapsed = start.elapsed();
    finish(child);
    let (_, rss) = memory_kb();
    report(
        TEST,
        &format!(
            "{PUB_MSGS} x {PUB_SIZE} B to {SUBS} SUBs in {:.2} s: {:.0} deliveries/s; PUB side RSS {} MB",
            elapsed.as_secs_f64(),
            (PUB_MSGS * SUBS) as f64 / elapsed.as_secs_f64(),
            rss / 1024,
        ),
    );
}

// ---- 100 sockets in one context ---------------------------------------------

const PAIRS: usize = 50;
const PAIR_MSGS: usize = 2_000;

/// 50 PUSH/PULL pairs over tcp in one context (100 sockets): one thread
/// sends on every PUSH in turn, another serves every PULL from one `poll`
/// loop. Each pair's messages arrive whole, in order, none lost; the
/// spread of progress across pairs is measured when half of all messages
/// have arrived.
#[test]
fn a_hundred_sockets_share_one_context() {
    const TEST: &str = "a_hundred_sockets_share_one_context";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = zmq::Context::new();
    let mut pulls = Vec::new();
    let mut endpoints = Vec::new();
    for _ in 0..PAIRS {
        let pull = ctx.socket(zmq::PULL).unwrap();
        pull.bind("tcp://127.0.0.1:*").unwrap();
        endpoints.push(pull.get_last_endpoint().unwrap().unwrap());
        pulls.push(pull);
    }
    let pushes: Vec<_> = endpoints
        .iter()
        .map(|e| {
            let push = ctx.socket(zmq::PUSH).unwrap();
            push.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
            push.connect(e).unwrap();
            push
        })
        .collect();
    // Every pair connected before the clock starts: one message each.
    for (p, (push, pull)) in pushes.iter().zip(&pulls).enumerate() {
        push.send(format!("{p} hello").as_bytes(), 0).unwrap();
        pull.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
        assert_eq!(pull.recv_bytes(0).unwrap(), format!("{p} hello").as_bytes());
    }
    let start = Instant::now();
    let sender = std::thread::spawn(move || {
        for n in 0..PAIR_MSGS {
            for (p, push) in pushes.iter().enumerate() {
                push.send(format!("{p} {n}").as_bytes(), 0).unwrap();
            }
        }
        pushes
    });
    let mut items: Vec<_> = pulls.iter().map(|s| s.as_poll_item(zmq::POLLIN)).collect();
    let mut next = vec![0usize; PAIRS];
    let mut got = 0;
    let mut spread = None;
    let deadline = Instant::now() + LIMIT;
    while got < PAIRS * PAIR_MSGS {
        assert!(Instant::now() < deadline, "{got} messages arrived in time");
        zmq::poll(&mut items, 1000).unwrap();
        for (p, pull) in pulls.iter().enumerate() {
            while let Ok(m) = pull.recv_bytes(zmq::DONTWAIT) {
                assert_eq!(m, format!("{p} {}", next[p]).as_bytes(), "pair {p}");
                next[p] += 1;
                got += 1;
                if got == PAIRS * PAIR_MSGS / 2 {
                    spread = Some((*next.iter().min().unwrap(), *next.iter().max().unwrap()));
                }
            }
        }
    }
    let elapsed = start.elapsed();
    drop(sender.join().unwrap());
    let (min, max) = spread.unwrap();
    report(
        TEST,
        &format!(
            "{PAIRS} PUSH/PULL pairs x {PAIR_MSGS} msgs in {:.2} s ({:.0} msg/s); at half, per-pair progress min {min} max {max}",
            elapsed.as_secs_f64(),
            (PAIRS * PAIR_MSGS) as f64 / elapsed.as_secs_f64(),
        ),
    );
}
