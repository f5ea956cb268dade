//! Hostile peers on the fabric's data plane (issue 30, "Security of the
//! fabric data plane" and Build item 4): one test per attack, each
//! against a real fabriq socket, the attacker a libfabric endpoint driven
//! through fabriq-ofi directly and a ZMTP control peer of the test's own
//! (`fabric_rogue`). Where memory or a signal must be watched, the victim
//! socket runs in a process of its own (this test binary again, running
//! only that test with `FABRIQ_HOSTILE_VICTIM` set; see [`victim`]).
//!
//! | attack | test |
//! |---|---|
//! | CQ data forged for an authenticated connection by a node that is not its peer | [`forged_pages_for_a_curve_zap_connection_are_not_taken_from_a_stranger`] |
//! | a lent (rendezvous) frame read with guessed keys | [`guessed_keys_read_nothing_of_a_frame_a_socket_lent`] |
//! | a rendezvous length of 2^63, u64::MAX, just over the cap | [`huge_rendezvous_lengths_end_the_connection_and_map_nothing`] |
//! | pages before the handshake, and from a node that never handshakes | [`pages_before_the_handshake_or_without_one_are_never_delivered`] |
//! | the spinner count's memfd truncated under its mapper; the count written or resized by the peer it is passed to; passed to a peer ZAP refused; the pid in READY | [`a_truncated_spinner_count_does_not_kill_the_victim`], [`the_spinner_count_is_passed_only_to_a_peer_zap_allowed`] |
//! | a READY whose data address is a third host | [`a_ready_aiming_the_data_at_a_third_address_is_refused`] |

mod fabric_rogue;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabric_rogue::*;
use fabriq_zmtp::{CurveKeyPair, CurvePublicKey, MechanismConfig, SocketType};

/// The control connection's `host:port` of a socket bound on `ofi+...://`.
fn control_of(socket: &fabriq::Socket) -> String {
    let endpoint = socket.get_last_endpoint().unwrap().unwrap();
    endpoint.split("://").nth(1).unwrap().to_string()
}

/// A ZAP handler on `ctx` (a REP at `inproc://zeromq.zap.01`, answering
/// until dropped): `decide(mechanism, credentials)` says whether a peer
/// may in.
struct Zap {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Zap {
    fn start(
        ctx: &fabriq::Context,
        mut decide: impl FnMut(&[u8], &[u8]) -> bool + Send + 'static,
    ) -> Zap {
        let handler = ctx.socket(fabriq::REP).unwrap();
        handler.bind("inproc://zeromq.zap.01").unwrap();
        handler.set_rcvtimeo(20).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok(request) = handler.recv_multipart(0) else {
                    continue;
                };
                // version, request id, domain, address, identity,
                // mechanism, credentials...
                let credentials = request.get(6).map(Vec::as_slice).unwrap_or(&[]);
                let ok = decide(&request[5], credentials);
                let status: &[u8] = if ok { b"200" } else { b"400" };
                let reply: Vec<Vec<u8>> = vec![
                    b"1.0".to_vec(),
                    request[1].clone(),
                    status.to_vec(),
                    b"".to_vec(),
                    b"".to_vec(),
                    b"".to_vec(),
                ];
                handler.send_multipart(reply, 0).unwrap();
            }
        });
        Zap {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Zap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// --- the victim in a process of its own ---------------------------------------

/// The victim's body, in the child process: `mode` is `KIND PROVIDER
/// [zap]`. KIND `pull`: a PULL bound on `ofi+PROVIDER://127.0.0.1:*` that
/// prints each message it receives as `msg PARTS BYTES TEXT` (TEXT: the
/// first part's first 32 bytes, lossy). KIND `push`: a PUSH that, told
/// `send N`, sends N messages and prints `sent N`. With `zap`, a ZAP
/// handler asks the test: it prints `zap MECHANISM` for each request and
/// answers when told `allow` or `deny`. fabriq's log lines about closed
/// connections and spinner counts are printed as `log: TEXT`. Ends when
/// stdin closes.
fn victim(mode: &str) {
    capture_logs(
        &[
            "closing connection",
            "connection failed",
            "fabric handshake",
            "spinner count",
        ],
        true,
    );
    let words: Vec<&str> = mode.split_whitespace().collect();
    let (kind, provider) = (words[0], words[1]);
    let ctx = fabriq::Context::new();
    let commands = stdin_lines();
    let (decisions, decided) = std::sync::mpsc::channel::<bool>();
    let _zap = words.contains(&"zap").then(|| {
        Zap::start(&ctx, move |mechanism, _| {
            println!("zap {}", String::from_utf8_lossy(mechanism));
            decided
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or(false)
        })
    });
    let socket = ctx
        .socket(if kind == "pull" {
            fabriq::PULL
        } else {
            fabriq::PUSH
        })
        .unwrap();
    if words.contains(&"zap") {
        socket.set_zap_domain("hostile").unwrap();
    }
    socket.set_rcvtimeo(20).unwrap();
    socket.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
    socket.set_linger(0).unwrap();
    socket
        .bind(&format!("ofi+{provider}://127.0.0.1:*"))
        .unwrap();
    println!("endpoint {}", socket.get_last_endpoint().unwrap().unwrap());
    let until = Instant::now() + Duration::from_secs(300);
    while Instant::now() < until {
        // A PULL waits on its socket (20 ms at most), a PUSH on its stdin.
        let wait = if kind == "pull" {
            Duration::ZERO
        } else {
            Duration::from_millis(100)
        };
        let command = match commands.recv_timeout(wait) {
            Ok(line) => Some(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match command
            .as_deref()
            .map(str::split_whitespace)
            .map(|mut w| (w.next(), w.next()))
        {
            Some((Some("allow"), _)) => decisions.send(true).unwrap(),
            Some((Some("deny"), _)) => decisions.send(false).unwrap(),
            Some((Some("send"), Some(n))) => {
                let n: u32 = n.parse().unwrap();
                let ok = (0..n).all(|i| socket.send(format!("m{i}").as_bytes(), 0).is_ok());
                println!("{} {n}", if ok { "sent" } else { "send failed" });
            }
            _ => {}
        }
        if kind == "pull" {
            if let Ok(msg) = socket.recv_multipart(0) {
                let total: usize = msg.iter().map(Vec::len).sum();
                let head = &msg[0][..msg[0].len().min(32)];
                println!(
                    "msg {} {total} {}",
                    msg.len(),
                    String::from_utf8_lossy(head)
                );
            }
        }
    }
    // A ZAP request still waiting for the test is refused now.
    drop(decisions);
}

// --- 1: forged CQ data ----------------------------------------------------------

/// A PULL authenticated by CURVE and ZAP, and a NULL PULL of the same
/// context (so of the same I/O thread and fabric node): any node learns
/// the node's address and a token of its own from the NULL socket. A
/// stranger that is no peer of the CURVE socket then forges pages for its
/// connections: stamped with the token of the authenticated peer's
/// connection itself (as if it had leaked), with the stamps of the scheme
/// before random tokens (`id << 32 | seq`, ids counting from 1 per node),
/// and at random. None is taken: the authenticated peer's own first page
/// (the sequence number the forgeries used) and a fabriq CURVE peer's
/// messages arrive, nothing forged does, and no connection ends.
#[test]
fn forged_pages_for_a_curve_zap_connection_are_not_taken_from_a_stranger() {
    let ctx = fabriq::Context::new();
    let server = fabriq::CurveKeyPair::new().unwrap();
    let friend = fabriq::CurveKeyPair::new().unwrap();
    let peer_keys = CurveKeyPair::generate();
    let allowed = [friend.public_key, peer_keys.public.0];
    let _zap = Zap::start(&ctx, move |mechanism, key| {
        mechanism == b"NULL" || allowed.iter().any(|k| k[..] == *key)
    });
    let pull = ctx.socket(fabriq::PULL).unwrap();
    pull.set_curve_server(true).unwrap();
    pull.set_curve_secretkey(&server.secret_key).unwrap();
    pull.set_zap_domain("victim").unwrap();
    pull.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
    pull.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let door = ctx.socket(fabriq::PULL).unwrap();
    door.bind("ofi+tcp://127.0.0.1:*").unwrap();

    // A fabriq CURVE peer, allowed by ZAP.
    let other = fabriq::Context::new();
    let push = other.socket(fabriq::PUSH).unwrap();
    push.set_curve_serverkey(&server.public_key).unwrap();
    push.set_curve_publickey(&friend.public_key).unwrap();
    push.set_curve_secretkey(&friend.secret_key).unwrap();
    push.connect(pull.get_last_endpoint().unwrap().unwrap().as_str())
        .unwrap();
    push.send("0", 0).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"0");

    // The authenticated peer: a CURVE client of the test's own.
    let mut peer = Rogue::open("tcp", Some("127.0.0.1"), false);
    let mechanism = MechanismConfig::CurveClient {
        server_public: CurvePublicKey(server.public_key),
        keys: peer_keys,
    };
    let mut c = Control::start(
        &control_of(&pull),
        SocketType::Push,
        mechanism,
        &fabric_props(&peer, &[]),
    );
    c.handshake().expect("the CURVE handshake, ZAP allowing");
    let window = c.first_credit(&mut peer);
    let victim = c.address();

    // The stranger: a NULL peer of the door socket, nothing of the CURVE one.
    let mut stranger = Rogue::open("tcp", Some("127.0.0.1"), false);
    let mut d = Control::null(
        &control_of(&door),
        SocketType::Push,
        &fabric_props(&stranger, &[]),
    );
    let _ = d.first_credit(&mut stranger);
    assert_eq!(
        d.address(),
        victim,
        "the door socket's node is the CURVE socket's: the attack reaches it"
    );
    let dest = stranger.insert(&victim);
    let mut stamps: Vec<u64> = (0..window).map(|seq| c.stamp(seq)).collect();
    for id in 1..=8u64 {
        stamps.extend((0..32).map(|seq| id << 32 | seq));
    }
    stamps.extend((0..64).map(|_| random_u64()));
    for &stamp in &stamps {
        stranger.send(dest, stamp, &message(b"forged"));
    }
    stranger.flush();

    // The peer's own first page, stamped as the first forgery was.
    let at = peer.insert(&victim);
    peer.send(at, c.stamp(0), &message(b"legit"));
    peer.flush();
    const GOOD: u32 = 200;
    for i in 1..=GOOD {
        push.send(i.to_string().as_bytes(), 0).unwrap();
    }
    let (mut legit, mut good) = (false, 0);
    while !legit || good < GOOD {
        let m = pull
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("legit {legit}, {good} good messages, then: {e}"));
        assert_ne!(m, b"forged", "a forged page was delivered");
        if m == b"legit" {
            legit = true;
        } else {
            good += 1;
            assert_eq!(m, good.to_string().as_bytes(), "in order, none lost");
        }
    }
    pull.set_rcvtimeo(200).unwrap();
    if let Ok(m) = pull.recv_bytes(0) {
        panic!("after everything: {m:?}");
    }
    assert!(
        c.open_after(Duration::from_millis(50)),
        "the authenticated peer's connection was ended by forgeries"
    );
    eprintln!("{} forged pages, none taken", stamps.len());
}

// --- 2: lent memory read with guessed keys ---------------------------------------

/// How many strangers [`read_all`] keeps open at once. A rogue endpoint
/// over tcp;ofi_rxm holds about eleven file descriptors (its listener, its
/// connections, the provider's wait and progress sets) and the victim one
/// per connection: 97 strangers at once took this process past 1024, the
/// usual soft limit, where libfabric's tcp provider can no longer accept
/// or connect and reads come back cancelled (FI_ECANCELED), which is how
/// this test failed in CI.
const STRANGERS_AT_ONCE: usize = 16;

/// Reads 4096 bytes at each `(addr, key)` of `probes` from the fabric
/// address `victim`, each from an endpoint of its own (tcp drops the
/// connection of a read it refuses), [`STRANGERS_AT_ONCE`] at a time,
/// waiting at most `limit` for each batch: the bytes, an error, or `None`
/// when nothing answered.
fn read_all(
    victim: &[u8],
    probes: &[(u64, u64)],
    limit: Duration,
) -> Vec<Option<Result<Bytes, String>>> {
    probes
        .chunks(STRANGERS_AT_ONCE)
        .flat_map(|batch| read_batch(victim, batch, limit))
        .collect()
}

fn read_batch(
    victim: &[u8],
    probes: &[(u64, u64)],
    limit: Duration,
) -> Vec<Option<Result<Bytes, String>>> {
    let mut rogues: Vec<(Rogue, fabriq_ofi::FiAddr)> = probes
        .iter()
        .map(|_| {
            let mut r = Rogue::open("tcp", Some("127.0.0.1"), true);
            let at = r.insert(victim);
            (r, at)
        })
        .collect();
    let mut outcome: Vec<Option<Result<Bytes, String>>> = vec![None; probes.len()];
    for (i, (&(addr, key), (r, at))) in probes.iter().zip(&mut rogues).enumerate() {
        if let Err(e) = r.read(*at, 4096, addr, key, i as u64) {
            outcome[i] = Some(Err(e));
        }
    }
    let until = Instant::now() + limit;
    while outcome.iter().any(Option::is_none) && Instant::now() < until {
        for (i, (r, _)) in rogues.iter_mut().enumerate() {
            if outcome[i].is_none() {
                outcome[i] = r.read_outcome(i as u64, Duration::ZERO);
            }
        }
        std::thread::yield_now();
    }
    outcome
}

/// Lowers this process's soft limit on open files to 1024 (the usual
/// default, and CI's) when it is higher, so that a test that opens many
/// endpoints runs here under the limit it meets there.
fn usual_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.map_or(true, |soft| soft > 1024) {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(1024),
                maximum: limit.maximum,
            },
        )
        .expect("lower RLIMIT_NOFILE to 1024");
    }
}

/// A PUSH lends a 256 KiB frame to its peer (a rendezvous: the peer reads
/// it from the PUSH's memory). A stranger that learned the PUSH's fabric
/// address, and even where the lent bytes are (the RDV's address: 0, an
/// offset, now; a heap address before), reads with keys 0 to 64 and 32
/// random ones while the frame is lent, and gets nothing of it. Whoever is
/// told the key reads it (so strangers' reads are served, and the others
/// were refused, not ignored); once the peer returned the frame
/// (RDVDONE), the key reads nothing more.
#[test]
fn guessed_keys_read_nothing_of_a_frame_a_socket_lent() {
    usual_file_limit();
    let ctx = fabriq::Context::new();
    let push = ctx.socket(fabriq::PUSH).unwrap();
    push.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
    push.set_linger(0).unwrap();
    push.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let mut peer = Rogue::open("tcp", Some("127.0.0.1"), true);
    peer.receive(16);
    let mut c = Control::null(
        &control_of(&push),
        SocketType::Pull,
        &fabric_props(&peer, &[("X-Fabriq-Ofi-Rma", b"1048576")]),
    );
    c.grant(8);
    let victim = c.address();
    let secret = vec![0x5au8; 256 << 10];
    push.send(&secret[..], 0).unwrap();
    let until = Instant::now() + LIMIT;
    let (id, len, addr, key) = loop {
        assert!(Instant::now() < until, "no RDV from the PUSH");
        peer.progress();
        let _ = c.commands(Duration::from_millis(1));
        let rdv = peer.received.iter().find_map(|(_, page)| {
            frames(page).into_iter().find_map(|(command, _, body)| {
                (command && body.len() == 33 && &body[..4] == b"\x03RDV").then(|| {
                    let u64_at = |i: usize| u64::from_be_bytes(body[i..i + 8].try_into().unwrap());
                    (
                        u32::from_be_bytes(body[4..8].try_into().unwrap()),
                        u64_at(8),
                        u64_at(16),
                        u64_at(24),
                    )
                })
            })
        });
        if let Some(rdv) = rdv {
            break rdv;
        }
    };
    assert_eq!(len, secret.len() as u64, "the frame is lent whole");

    // Told the key, a stranger reads it: reads from strangers are served
    // (so the refusals below are the keys', not a deaf endpoint's).
    match read_all(&victim, &[(addr, key)], LIMIT).remove(0) {
        Some(Ok(got)) => assert_eq!(got[..], secret[..4096]),
        other => panic!("the right key: {other:?}"),
    }

    let mut keys: Vec<u64> = (0..=64).collect();
    keys.extend((0..32).map(|_| random_u64()));
    let mut probes: Vec<(u64, u64)> = keys.iter().map(|&k| (0, k)).collect();
    if addr != 0 {
        probes.extend(keys.iter().map(|&k| (addr, k)));
    }
    let outcomes = read_all(&victim, &probes, Duration::from_secs(5));
    let (mut refused, mut unanswered) = (0, 0);
    for ((a, k), outcome) in probes.iter().zip(outcomes) {
        match outcome {
            Some(Ok(got)) => assert!(
                !got.contains(&0x5a),
                "key {k} at {a:#x} read the lent frame"
            ),
            Some(Err(_)) => refused += 1,
            None => unanswered += 1,
        }
    }
    // The peer reads it whole and returns it.
    let src = peer.insert(&victim);
    peer.read(src, len as usize, addr, key, 1).unwrap();
    match peer.read_outcome(1, LIMIT) {
        Some(Ok(got)) => assert!(got[..] == secret[..], "the peer read the frame"),
        other => panic!("the peer's read: {other:?}"),
    }
    c.send_command(b"RDVDONE", &id.to_be_bytes());
    let until = Instant::now() + LIMIT;
    loop {
        let _ = c.commands(Duration::from_millis(1));
        match read_all(&victim, &[(addr, key)], Duration::from_secs(2)).remove(0) {
            Some(Ok(got)) if got[..] == secret[..4096] => {
                assert!(
                    Instant::now() < until,
                    "the frame is still lent after RDVDONE"
                )
            }
            _ => break,
        }
    }
    eprintln!(
        "{} guessed keys: {refused} refused, {unanswered} unanswered, none read the lent frame",
        probes.len()
    );
}

// --- 3: huge rendezvous lengths ------------------------------------------------

const HUGE: &str = "huge_rendezvous_lengths_end_the_connection_and_map_nothing";

/// A rogue peer of a PULL (run in a process of its own) announces
/// rendezvous frames of the cap the PULL announced plus one byte, 2^63
/// bytes and u64::MAX bytes. Each ends that connection with an error about
/// the RDV, without the PULL mapping anything for it (its peak virtual
/// size stays within 64 MiB of where it was; it was the buffer's size
/// rounded up to a power of two, 512 MiB for the cap plus one, before),
/// and a good PUSH keeps being served. A rendezvous within the bounds is
/// read first, so the rogue's frames are taken as rendezvous at all.
#[test]
fn huge_rendezvous_lengths_end_the_connection_and_map_nothing() {
    if let Ok(mode) = std::env::var(VICTIM) {
        return victim(&mode);
    }
    let mut v = Victim::spawn(HUGE, "pull tcp");
    let control = v.control();
    let other = fabriq::Context::new();
    let good = other.socket(fabriq::PUSH).unwrap();
    good.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
    good.connect(&v.endpoint).unwrap();
    let mut sent = 0;
    let mut serve = |v: &mut Victim, seen: &mut Vec<String>| {
        sent += 1;
        good.send(format!("good {sent}").as_bytes(), 0).unwrap();
        v.expect_collecting(
            &format!("msg 1 {} good {sent}", 5 + sent.to_string().len()),
            LIMIT,
            seen,
        );
    };
    serve(&mut v, &mut Vec::new());

    // Within the bounds: read, delivered.
    let mut r = Rogue::open("tcp", Some("127.0.0.1"), true);
    let mut c = Control::null(
        &control,
        SocketType::Push,
        &fabric_props(&r, &[("X-Fabriq-Ofi-Rma", b"1048576")]),
    );
    c.first_credit(&mut r);
    let cap: u64 = String::from_utf8(c.prop("X-Fabriq-Ofi-Rma"))
        .unwrap()
        .parse()
        .unwrap();
    let dest = r.insert(&c.address());
    let lent = r.lend(Bytes::from(vec![b'3'; 4096]));
    r.send(dest, c.stamp(0), &rdv(0, 4096, lent.rma_addr(), lent.key()));
    let until = Instant::now() + LIMIT;
    loop {
        r.progress();
        if let Some(line) = v.line(Duration::from_millis(2)) {
            if line.contains("msg 1 4096 3333") {
                break;
            }
        }
        assert!(
            Instant::now() < until,
            "the rendezvous within bounds was not read"
        );
    }
    let peak = v.status_kb("VmPeak");
    let rss = v.status_kb("VmRSS");

    for len in [cap + 1, 1 << 63, u64::MAX] {
        let mut r = Rogue::open("tcp", Some("127.0.0.1"), true);
        let mut c = Control::null(
            &control,
            SocketType::Push,
            &fabric_props(&r, &[("X-Fabriq-Ofi-Rma", b"1048576")]),
        );
        c.first_credit(&mut r);
        let dest = r.insert(&c.address());
        r.send(dest, c.stamp(0), &rdv(0, len, 0, random_u64()));
        assert!(
            c.dropped(&mut r),
            "a rendezvous of {len} bytes: not dropped"
        );
        v.assert_alive(&format!("a rendezvous of {len} bytes"));
        let mut seen = Vec::new();
        serve(&mut v, &mut seen);
        let now = v.status_kb("VmPeak");
        assert!(
            now <= peak + 64 * 1024,
            "a rendezvous of {len} bytes: the victim's peak virtual size went {peak} -> {now} kB"
        );
        assert!(
            seen.iter().any(|l| l.contains("log:") && l.contains("RDV")),
            "a rendezvous of {len} bytes: no error about it (the victim printed {seen:?})"
        );
    }
    let now = v.status_kb("VmRSS");
    assert!(now <= rss + 32 * 1024, "VmRSS {rss} -> {now} kB");
    eprintln!("cap {cap}: 3 huge lengths refused; VmPeak {peak} kB, VmRSS {rss} -> {now} kB");
    v.finish();
}

// --- 4: pages before the handshake, and without one ----------------------------

const EARLY: &str = "pages_before_the_handshake_or_without_one_are_never_delivered";
/// Pages of the node that never handshakes.
const FLOOD: u32 = 20_000;
/// What libfabric's tcp;ofi_rxm may add once for a burst (two chunks of
/// its buffer pools; see hostile_fabric.rs).
const PROVIDER_BURST_KB: u64 = 2 * 1024 * 17;

/// A PULL that asks ZAP (run in a process of its own; the test answers
/// its ZAP requests). A rogue that once completed a handshake knows the
/// node's address and its own old token; it opens a second connection
/// and, while that one's handshake waits for ZAP, sends pages from the
/// endpoint it announced there, stamped with the old token, with the
/// stamps of the scheme before random tokens, and at random. A node that
/// never handshakes floods 20,000 pages stamped with the first
/// connection's live token (and at random). Nothing of either is
/// delivered, the PULL's memory stays within a provider burst, and then
/// the second connection (its first page), the first one (its next page,
/// the sequence number the flood used) and a good PUSH all work.
#[test]
fn pages_before_the_handshake_or_without_one_are_never_delivered() {
    if let Ok(mode) = std::env::var(VICTIM) {
        return victim(&mode);
    }
    let mut v = Victim::spawn(EARLY, "pull tcp zap");
    let control = v.control();
    let mut seen = Vec::new();
    let other = fabriq::Context::new();
    let good = other.socket(fabriq::PUSH).unwrap();
    good.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
    good.connect(&v.endpoint).unwrap();
    v.expect_collecting("zap NULL", LIMIT, &mut seen);
    v.tell("allow");
    good.send("good 0", 0).unwrap();
    v.expect_collecting("msg 1 6 good 0", LIMIT, &mut seen);

    // A first connection: the node's address and a token.
    let mut r1 = Rogue::open("tcp", Some("127.0.0.1"), false);
    let mut c1 = Control::start(
        &control,
        SocketType::Push,
        MechanismConfig::Null,
        &fabric_props(&r1, &[]),
    );
    c1.flush();
    v.expect_collecting("zap NULL", LIMIT, &mut seen);
    v.tell("allow");
    c1.handshake().expect("the first handshake");
    c1.first_credit(&mut r1);
    let node = c1.address();
    let d1 = r1.insert(&node);
    r1.send(d1, c1.stamp(0), &message(b"first"));
    v.expect_collecting("msg 1 5 first", LIMIT, &mut seen);

    // A node that never handshakes.
    let rss = v.status_kb("VmRSS");
    let mut r3 = Rogue::open("tcp", Some("127.0.0.1"), false);
    let d3 = r3.insert(&node);
    for i in 0..FLOOD {
        let stamp = match i % 4 {
            0 => random_u64(),
            _ => c1.stamp(1 + i % 64),
        };
        r3.send(d3, stamp, &message(b"flood"));
    }
    r3.flush();
    // Then it handshakes, only so that its first page marks the end of
    // the flood: one endpoint's pages to another complete in order, so
    // once that page is delivered the PULL has taken in the whole flood.
    let mut c3 = Control::start(
        &control,
        SocketType::Push,
        MechanismConfig::Null,
        &fabric_props(&r3, &[]),
    );
    c3.flush();
    v.expect_collecting("zap NULL", LIMIT, &mut seen);
    v.tell("allow");
    c3.handshake().expect("the flooding node's handshake");
    c3.first_credit(&mut r3);
    r3.send(d3, c3.stamp(0), &message(b"drained"));
    v.expect_collecting("msg 1 7 drained", LIMIT, &mut seen);
    let flooded = v.status_kb("VmRSS");

    // A second connection, its handshake held by ZAP: pages meanwhile.
    let mut r2 = Rogue::open("tcp", Some("127.0.0.1"), false);
    let mut c2 = Control::start(
        &control,
        SocketType::Push,
        MechanismConfig::Null,
        &fabric_props(&r2, &[]),
    );
    c2.flush();
    v.expect_collecting("zap NULL", LIMIT, &mut seen);
    assert!(c2.open_after(Duration::from_millis(20)));
    assert!(c2.conn.peer().is_none(), "no READY before ZAP answered");
    let d2 = r2.insert(&node);
    let mut stamps: Vec<u64> = (0..64).map(|seq| c1.stamp(seq)).collect();
    for id in 1..=8u64 {
        stamps.extend((0..32).map(|seq| id << 32 | seq));
    }
    stamps.extend((0..64).map(|_| random_u64()));
    for &stamp in &stamps {
        r2.send(d2, stamp, &message(b"early"));
    }
    r2.flush();

    v.tell("allow");
    c2.handshake()
        .expect("the second handshake, once ZAP allowed");
    c2.first_credit(&mut r2);
    assert_ne!(c2.token(), c1.token());
    r2.send(d2, c2.stamp(0), &message(b"after"));
    v.expect_collecting("msg 1 5 after", LIMIT, &mut seen);
    r1.send(d1, c1.stamp(1), &message(b"still"));
    v.expect_collecting("msg 1 5 still", LIMIT, &mut seen);
    for i in 1..=100 {
        good.send(format!("good {i}").as_bytes(), 0).unwrap();
    }
    v.expect_collecting("msg 1 8 good 100", LIMIT, &mut seen);
    seen.extend(v.lines_for(Duration::from_millis(200)));
    let delivered: Vec<&String> = seen
        .iter()
        .filter(|l| l.contains("msg ") && (l.contains("early") || l.contains("flood")))
        .collect();
    assert!(
        delivered.is_empty(),
        "{} pages delivered that were sent before a handshake or without one: {:?}",
        delivered.len(),
        &delivered[..delivered.len().min(5)]
    );
    // (The first and the last good message were taken by the waits.)
    let goods = seen.iter().filter(|l| l.contains(" good ")).count();
    assert_eq!(goods, 99, "every good message, once");
    assert!(
        [&mut c1, &mut c2, &mut c3]
            .iter_mut()
            .all(|c| c.open_after(Duration::from_millis(20))),
        "a rogue connection was ended by pages that were not its own"
    );
    eprintln!(
        "{} early pages ({} sent, {} failed), {FLOOD} flooded ({} sent, {} failed): none delivered; the PULL's VmRSS {rss} -> {flooded} kB",
        stamps.len(), r2.sent, r2.send_failed, r3.sent, r3.send_failed
    );
    assert!(
        flooded <= rss + PROVIDER_BURST_KB,
        "a flood of {FLOOD} pages: the PULL's VmRSS went {rss} -> {flooded} kB"
    );
    v.finish();
}

// --- 5: the spinner count ---------------------------------------------------------

const SPIN: &str = "a_truncated_spinner_count_does_not_kill_the_victim";

/// An unsealed memfd of one page, as a lying peer would pass for its
/// spinner count.
fn unsealed_memfd() -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: a NUL-terminated name, checked result, owned at once.
    let fd = unsafe { libc::memfd_create(c"rogue-spinners".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: just created, owned by no one else.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.set_len(4096).unwrap();
    file
}

/// Asserts that no property of fabriq's READY on `c` names `pid` (a run
/// of decimal digits equal to it), the fabric address aside: it is the
/// provider's, hex, and shm makes it from the pid (`fi_shm(7)`).
fn assert_no_pid(c: &Control, pid: u32) {
    let pid = pid.to_string();
    let peer = c.conn.peer().expect("fabriq's READY");
    for (name, value) in peer.properties.iter() {
        if name == "X-Fabriq-Ofi-Address" {
            continue;
        }
        let text = String::from_utf8_lossy(value);
        assert!(
            !text
                .split(|c: char| !c.is_ascii_digit())
                .any(|run| run == pid),
            "READY's {name} names the pid {pid}: {text}"
        );
    }
    assert!(
        c.try_prop("X-Fabriq-Ofi-Spinners").is_none(),
        "READY names the spinner count"
    );
}

/// Tells the PUSH to send 4 messages and waits for them to come (at
/// least a page) while the PUSH lives; returns the credits for what came
/// and counts the rings (RING commands, and datagrams on `bell`).
///
/// A PUSH deals its messages out to the peers it has: a round it dealt
/// before its I/O thread took this peer's READY, or to a peer that had
/// just left, may be lost (seen once in CI, on a loaded machine, with an
/// earlier peer). So a round that brought nothing within a second is sent
/// again.
fn spin_round(
    v: &mut Victim,
    c: &mut Control,
    r: &mut Rogue,
    bell: &mut RogueBell,
    pages: &mut u32,
    rings: &mut usize,
) {
    v.tell("send 4");
    let mut asked = Instant::now();
    let until = asked + LIMIT;
    let before = r.received.len();
    let mut sent = false;
    while !(sent && r.received.len() > before) {
        assert!(
            Instant::now() < until,
            "the PUSH's pages never came (sent: {sent})"
        );
        if sent && asked.elapsed() > Duration::from_secs(1) {
            v.tell("send 4");
            asked = Instant::now();
            sent = false;
        }
        v.assert_alive("sending to a peer whose spinner count was truncated");
        r.progress();
        let Some(got) = c.commands(Duration::from_millis(2)) else {
            v.assert_exited_within(Duration::from_secs(1));
            panic!("the PUSH closed the connection");
        };
        *rings += got.iter().filter(|(n, _)| &n[..] == b"RING").count();
        *rings += bell.rings();
        if let Some(line) = v.line(Duration::from_millis(1)) {
            assert!(!line.contains("send failed"), "{line}");
            sent |= line.contains("sent 4");
        }
    }
    // Credits back for what came, as a receiver does.
    let came = (r.received.len() - before) as u32;
    *pages += came;
    c.grant(came);
}

/// A PUSH on `ofi+shm://` (run in a process of its own; shm has no wait
/// descriptors, so its READY names a doorbell, and once a peer that names
/// a doorbell of its own is handshaken, the PUSH passes it a read-only
/// descriptor of its count of spinning sockets there). A rogue PULL
/// receives that descriptor for its connection: it cannot truncate or
/// grow the count through it, nor through the read-write descriptor
/// `/proc/self/fd` opens from it (the seals), and no READY property
/// names the PUSH's pid. The rogue then passes the PUSH, as its own
/// count, an unsealed memfd of one page, with the PUSH's token for the
/// connection, and truncates it once the PUSH has refused it; the PUSH
/// then sends more (each send reads the peer's count if it mapped it): it
/// lives on, its pages come, and it rings the rogue's doorbell.
#[test]
fn a_truncated_spinner_count_does_not_kill_the_victim() {
    if let Ok(mode) = std::env::var(VICTIM) {
        return victim(&mode);
    }
    use std::os::fd::{AsFd, AsRawFd};
    let mut v = Victim::spawn(SPIN, "push shm");
    let control = v.control();
    let mut bell = RogueBell::bind();
    let mut r = Rogue::open("shm", None, false);
    r.receive(32);
    let mut c = Control::null(
        &control,
        SocketType::Pull,
        &fabric_props(&r, &[("X-Fabriq-Ofi-Doorbell", bell.name.as_bytes())]),
    );
    assert_no_pid(&c, v.child.id());

    // The PUSH's own count, passed to our doorbell for our connection.
    let (payload, mut fds) = bell.counts(LIMIT).expect("the PUSH passed its count");
    assert_eq!(payload, counts_payload(rogue_token()), "named by our token");
    assert_eq!(fds.len(), 1, "one descriptor");
    let own = std::fs::File::from(fds.pop().unwrap());
    // SAFETY: fcntl on a descriptor we own, no argument.
    let flags = unsafe { libc::fcntl(own.as_raw_fd(), libc::F_GETFL) };
    assert_eq!(flags & libc::O_ACCMODE, libc::O_RDONLY, "passed read-only");
    assert!(own.set_len(0).is_err(), "truncated through what was passed");
    let reopened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{}", own.as_raw_fd()))
        .expect("a memfd opens again read-write through /proc/self/fd");
    assert!(
        reopened.set_len(0).is_err(),
        "the PUSH's count was truncated"
    );
    assert!(reopened.set_len(8192).is_err(), "the PUSH's count grew");
    drop((own, reopened));

    // Ours: an unsealed memfd, for the connection the PUSH knows by the
    // token it gave it.
    let memfd = unsealed_memfd();
    let doorbell = String::from_utf8(c.prop("X-Fabriq-Ofi-Doorbell")).unwrap();
    bell.send_counts(&doorbell, c.token(), memfd.as_fd());
    let refused = v.expect("spinner count refused", LIMIT);
    assert!(refused.contains("not sealed"), "{refused}");
    c.grant(8);
    let (mut pages, mut rings) = (0, 0);
    spin_round(&mut v, &mut c, &mut r, &mut bell, &mut pages, &mut rings);
    memfd.set_len(0).expect("our own unsealed memfd shrinks");
    spin_round(&mut v, &mut c, &mut r, &mut bell, &mut pages, &mut rings);
    spin_round(&mut v, &mut c, &mut r, &mut bell, &mut pages, &mut rings);
    v.assert_alive("after the count it was passed was truncated");
    assert!(
        rings > 0,
        "the PUSH rang (and so looked at the peer's count)"
    );
    eprintln!("{pages} pages, {rings} rings; the PUSH lives");
    v.finish();
}

/// The PUSH's count of spinners (and its fabric address and token) reach
/// only a peer ZAP allowed: the count is passed, as a descriptor on the
/// doorbell the peer named in its READY, once the handshake, ZAP and the
/// check of the peer's address are done. A peer ZAP refused gets no
/// READY, and its doorbell no descriptor; one it allows on the same
/// socket gets both, and no READY property names the PUSH's pid.
#[test]
fn the_spinner_count_is_passed_only_to_a_peer_zap_allowed() {
    // Made first, so that it closes last: the rogue's shm endpoint is in
    // this process, and libfabric's shm maps a peer of its own process
    // through the process's list of endpoints, without holding it (an
    // endpoint closed while the PUSH inserts it crashed the insert).
    let mut r = Rogue::open("shm", None, false);
    let mut refused_bell = RogueBell::bind();
    let mut allowed_bell = RogueBell::bind();
    let ctx = fabriq::Context::new();
    let mut first = true;
    let _zap = Zap::start(&ctx, move |_, _| !std::mem::take(&mut first));
    let push = ctx.socket(fabriq::PUSH).unwrap();
    push.set_zap_domain("hostile").unwrap();
    push.set_linger(0).unwrap();
    push.bind("ofi+shm://127.0.0.1:*").unwrap();
    let doorbell =
        |bell: &RogueBell| fabric_props(&r, &[("X-Fabriq-Ofi-Doorbell", bell.name.as_bytes())]);
    let mut refused = Control::start(
        &control_of(&push),
        SocketType::Pull,
        MechanismConfig::Null,
        &doorbell(&refused_bell),
    );
    let outcome = refused.handshake();
    assert!(outcome.is_err(), "ZAP refused the peer: {outcome:?}");
    assert!(refused.conn.peer().is_none(), "a refused peer got a READY");
    let mut allowed = Control::null(
        &control_of(&push),
        SocketType::Pull,
        &doorbell(&allowed_bell),
    );
    assert_no_pid(&allowed, std::process::id());
    // The PUSH took our READY too (its first CREDIT comes after it
    // inserted our address, and after it passed its count).
    allowed.first_credit(&mut r);
    let (payload, fds) = allowed_bell
        .counts(LIMIT)
        .expect("an allowed peer is passed the count");
    assert_eq!(payload, counts_payload(rogue_token()));
    assert_eq!(fds.len(), 1);
    assert!(
        refused_bell.counts(Duration::from_millis(200)).is_none(),
        "a peer ZAP refused was passed the count"
    );
}

// --- 6: the data address --------------------------------------------------------

/// A rogue PULL whose control connection comes from 127.0.0.1 announces,
/// as its fabric address, a real endpoint of its own on 127.0.0.2, as
/// libfabric's tcp provider gives it (a `sockaddr_in`) and in forms the
/// provider reads the same way: with a byte more, and cut to its first 8
/// bytes (the address vector reads its own length, zero-padded). Each
/// READY is refused with an error that says why, the endpoint on
/// 127.0.0.2 receives nothing, and a good PULL of the same PUSH gets every
/// message meanwhile.
///
/// shm is not tested here: its rule is that the control connection runs
/// within this host (its two ends have the same IP, or the peer's is
/// loopback), and a control connection from another host cannot be made
/// on one machine; `engine/fabric/addr.rs` tests the rule itself.
#[test]
fn a_ready_aiming_the_data_at_a_third_address_is_refused() {
    capture_logs(&["fabric handshake"], false);
    let ctx = fabriq::Context::new();
    let push = ctx.socket(fabriq::PUSH).unwrap();
    push.set_sndtimeo(LIMIT.as_millis() as i32).unwrap();
    push.set_linger(0).unwrap();
    push.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let control = control_of(&push);
    let pull = ctx.socket(fabriq::PULL).unwrap();
    pull.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
    pull.connect(push.get_last_endpoint().unwrap().unwrap().as_str())
        .unwrap();
    push.send("0", 0).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"0");

    let mut third = Rogue::open("tcp", Some("127.0.0.2"), false);
    third.receive(16);
    let name = third.name();
    assert_eq!(name.len(), 16, "a sockaddr_in");
    assert_eq!(name[4..8], [127, 0, 0, 2]);
    let mut plus = name.clone();
    plus.push(0);
    let forms = [
        ("its address", name.clone()),
        ("its address and a byte more", plus),
        ("its first 8 bytes", name[..8].to_vec()),
    ];
    let mut next = 1u32;
    for (what, address) in forms {
        let logged = captured_logs().len();
        let mut props = fabric_props(&third, &[]);
        props[0].1 = hex(&address).into_bytes();
        let mut c = Control::start(&control, SocketType::Pull, MechanismConfig::Null, &props);
        // NULL: fabriq's READY comes at once; a receiver grants credits.
        let _ = c.handshake();
        c.grant(8);
        // Messages meanwhile: the PUSH would round-robin them to the
        // rogue too, if it took its READY.
        let until = Instant::now() + LIMIT;
        let refused = loop {
            push.send(next.to_string().as_bytes(), 0).unwrap();
            next += 1;
            third.progress();
            if c.commands(Duration::from_millis(2)).is_none() {
                break true;
            }
            if Instant::now() > until {
                break false;
            }
        };
        assert!(
            refused,
            "{what}: a READY aiming the data at 127.0.0.2 was not refused ({} pages went there)",
            third.received.len()
        );
        // The error names the third address, or the form it is not in.
        let logs = captured_logs().split_off(logged);
        let why = match address.len() {
            8 => "a fabric address of 8 bytes that is not an IPv4 socket address",
            _ => "fabric address 127.0.0.2 but its control connection comes from 127.0.0.1",
        };
        assert!(
            logs.iter().any(|l| l.contains("fabric handshake")
                && l.contains(why)
                && l.contains("refused")),
            "{what}: no error saying {why:?}: {logs:?}"
        );
    }
    for i in 1..next {
        assert_eq!(
            pull.recv_bytes(0).unwrap(),
            i.to_string().as_bytes(),
            "the good PULL gets every message"
        );
    }
    third.progress_for(Duration::from_millis(200));
    assert!(
        third.received.is_empty(),
        "{} pages went to the third address",
        third.received.len()
    );
}
