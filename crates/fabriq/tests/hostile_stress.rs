//! Stress: hostile tcp clients must never cost a good peer its messages.
//!
//! A fabriq PULL bound on tcp was seen to lose every message of a good
//! libzmq PUSH that connected after a series of hostile connections (HTTP
//! text, zeros, a version-2 greeting, an unknown mechanism, a PUB, a frame
//! announcing 2^63 bytes, a READY cut short, a stalled greeting, hundreds
//! of 3-byte greetings): the bytes had been read, yet the application slept
//! in `poll` and the I/O thread in epoll. It happened in 1 round of 10 to
//! 100, under load, and never with one kind of hostile input alone: a race,
//! which one run of each case (as in `semantics.rs`) does not catch.
//!
//! So this test runs many rounds, with busy threads competing for the CPU.
//! Each round binds a fresh receiver (PULL or ROUTER) on an ephemeral port,
//! receiving as `fabriq pull` does (`fabriq::poll` next to a raw
//! descriptor, then `recv` with DONTWAIT) or with a blocking `recv` and
//! RCVTIMEO, and runs the hostile sequence, shuffled in half the rounds by
//! a seeded RNG, with two good peers (a libzmq PUSH/DEALER and a fabriq
//! one) joining at random points and sending `MESSAGES` each. Every good
//! message must arrive, once and in order per peer, within `ROUND_LIMIT`.
//! The test runs all rounds, then fails listing every failed round.
//!
//! Environment (`scripts/stress` runs the long version):
//! - `FABRIQ_STRESS_ROUNDS`: rounds (default 60);
//! - `FABRIQ_STRESS_SEED`: replays a run (the seed is printed);
//! - `FABRIQ_STRESS_SHORT`: 3-byte connections per round (default 50);
//! - `FABRIQ_STRESS_LOAD`: busy threads (default 2);
//! - `FABRIQ_STRESS_RECEIVERS`: comma-separated subset of `pull-poll`,
//!   `pull-recv`, `router-poll`, `router-recv` (default all, in turn).
//!
//! Waits are bounded: hostile clients read until fabriq closes them
//! (`CLOSE_WAIT` at most), the receiver sleeps until the round's deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

const DEFAULT_ROUNDS: u64 = 60;
const DEFAULT_SHORT: u64 = 50;
const DEFAULT_LOAD: u64 = 2;
const DEFAULT_MESSAGES: u64 = 10;
const DEFAULT_BURSTS: u64 = 1;
/// From a round's start until every good message must have arrived.
const ROUND_LIMIT: Duration = Duration::from_secs(10);
/// How long a hostile client waits for fabriq to close its connection.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

// ---- settings and randomness ------------------------------------------------

fn env_num(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

/// SplitMix64: small, seedable, good enough to shuffle a schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// Busy threads competing with fabriq's for the CPU; stopped when dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Load {
    fn start(n: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                thread::spawn(move || {
                    let mut x = 1u64;
                    let jitter = env_num("FABRIQ_STRESS_JITTER");
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_micros(jitter.unwrap_or(1000)) {
                            x = std::hint::black_box(
                                x.wrapping_mul(6364136223846793005).wrapping_add(1),
                            );
                        }
                        if let Some(j) = jitter {
                            thread::sleep(Duration::from_micros(j));
                        }
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

// ---- hostile clients ----------------------------------------------------------

/// A ZMTP 3 greeting with the NULL mechanism unless told otherwise.
fn greeting(major: u8, mechanism: &[u8]) -> Vec<u8> {
    let mut g = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, major, 1];
    g.extend_from_slice(mechanism);
    g.resize(64, 0); // mechanism padding, as-server 0, filler
    g
}

/// A READY command (short form) announcing `socket_type`; `claimed` is
/// the value length written, which a hostile peer makes too large.
fn ready(socket_type: &str, claimed: u32) -> Vec<u8> {
    let mut body = vec![5];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&claimed.to_be_bytes());
    body.extend_from_slice(socket_type.as_bytes());
    let mut cmd = vec![0x04, body.len() as u8];
    cmd.extend_from_slice(&body);
    cmd
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hostile {
    Http,
    Zeros,
    Version2,
    BogusMechanism,
    PubReady,
    /// A good handshake, then a frame header announcing 2^63 bytes.
    HugeFrame,
    /// A READY whose property value runs past the command.
    BadProperty,
    /// Two bytes of a greeting, the connection left open.
    Stalled,
    /// Three bytes of a greeting, then close.
    Short,
}

impl Hostile {
    /// What the client sends; `peer` is a type the receiver accepts.
    fn bytes(self, peer: &str) -> Vec<u8> {
        let g = greeting(3, b"NULL");
        match self {
            Hostile::Http => b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
            Hostile::Zeros => vec![0; 64],
            Hostile::Version2 => greeting(2, b"NULL"),
            Hostile::BogusMechanism => greeting(3, b"BOGUS"),
            Hostile::PubReady => [g, ready("PUB", 3)].concat(),
            Hostile::HugeFrame => {
                let header = [&[0x02][..], &(1u64 << 63).to_be_bytes()].concat();
                [g, ready(peer, peer.len() as u32), header].concat()
            }
            Hostile::BadProperty => [g, ready(peer, 1000)].concat(),
            Hostile::Stalled => g[..2].to_vec(),
            Hostile::Short => g[..3].to_vec(),
        }
    }
}

/// Reads until the peer closes (EOF or reset); whether it did in `limit`.
fn wait_closed(stream: &mut TcpStream, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true, // reset
        }
    }
}

/// Runs one hostile client. Returns its stream if it stays open; `Err`
/// says what went unexpectedly (noted, not a failure by itself).
fn attack(port: u16, what: Hostile, peer: &str) -> Result<Option<TcpStream>, String> {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("{what:?}: connect: {e}"))?;
    // fabriq may close before reading everything: a failed write is fine.
    let _ = s.write_all(&what.bytes(peer));
    match what {
        Hostile::Stalled => Ok(Some(s)),
        Hostile::Short => Ok(None),
        _ if wait_closed(&mut s, CLOSE_WAIT) => Ok(None),
        _ => Err(format!("{what:?}: not closed by fabriq in {CLOSE_WAIT:?}")),
    }
}

// ---- the receiver -------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Receiver {
    PullPoll,
    PullRecv,
    RouterPoll,
    RouterRecv,
}

impl Receiver {
    const ALL: [Receiver; 4] = [
        Receiver::PullPoll,
        Receiver::PullRecv,
        Receiver::RouterPoll,
        Receiver::RouterRecv,
    ];

    fn name(self) -> &'static str {
        match self {
            Receiver::PullPoll => "pull-poll",
            Receiver::PullRecv => "pull-recv",
            Receiver::RouterPoll => "router-poll",
            Receiver::RouterRecv => "router-recv",
        }
    }

    fn is_router(self) -> bool {
        matches!(self, Receiver::RouterPoll | Receiver::RouterRecv)
    }

    fn uses_poll(self) -> bool {
        matches!(self, Receiver::PullPoll | Receiver::RouterPoll)
    }

    /// The good peers' socket type, as READY names it.
    fn peer(self) -> &'static str {
        if self.is_router() {
            "DEALER"
        } else {
            "PUSH"
        }
    }
}

fn recv_frames(sock: &fabriq::Socket, flags: i32) -> fabriq::Result<Vec<Vec<u8>>> {
    let mut frames = vec![sock.recv_bytes(flags)?];
    while sock.get_rcvmore()? {
        frames.push(sock.recv_bytes(0)?);
    }
    Ok(frames)
}

/// Receives up to `expected` messages until `until`. The poll variant
/// sleeps as `fabriq pull` does: in one `fabriq::poll` over the socket and
/// a descriptor nobody writes to, with no periodic wake-up that would hide
/// a lost one.
fn receive(
    sock: &fabriq::Socket,
    how: Receiver,
    expected: usize,
    until: Instant,
) -> Vec<Vec<Vec<u8>>> {
    let (wake, _writer) = UnixStream::pair().unwrap();
    let mut got = Vec::new();
    while got.len() < expected {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let ms = left.as_millis() as i64 + 1;
        let flags = if how.uses_poll() {
            fabriq::DONTWAIT
        } else {
            sock.set_rcvtimeo(ms as i32).unwrap();
            0
        };
        match recv_frames(sock, flags) {
            Ok(m) => got.push(m),
            Err(fabriq::Error::EAGAIN) if how.uses_poll() => {
                let mut items = [
                    sock.as_poll_item(fabriq::POLLIN),
                    fabriq::PollItem::from_fd(wake.as_raw_fd(), fabriq::POLLIN),
                ];
                fabriq::poll(&mut items, ms).unwrap();
            }
            Err(fabriq::Error::EAGAIN) => {}
            Err(e) => panic!("recv failed: {e:?}"),
        }
    }
    got
}

// ---- good peers ---------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peer {
    Libzmq,
    Fabriq,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Libzmq => "libzmq",
            Peer::Fabriq => "fabriq",
        }
    }
}

/// A good peer's socket, kept until the round ends.
enum GoodSocket {
    Libzmq(zmq::Socket),
    Fabriq(Box<fabriq::Socket>),
}

/// A good peer: connects at its first step, sends a burst at each.
struct Good {
    peer: Peer,
    socket: GoodSocket,
    sent: usize,
}

impl Good {
    fn connect(peer: Peer, ep: &str, how: Receiver) -> Good {
        let socket = match peer {
            Peer::Libzmq => {
                let kind = if how.is_router() {
                    zmq::DEALER
                } else {
                    zmq::PUSH
                };
                let s = zmq::Context::new().socket(kind).unwrap();
                s.set_linger(0).unwrap();
                s.set_sndtimeo(5000).unwrap();
                s.connect(ep).unwrap();
                GoodSocket::Libzmq(s)
            }
            Peer::Fabriq => {
                let ctx = fabriq::Context::new();
                let kind = if how.is_router() {
                    fabriq::DEALER
                } else {
                    fabriq::PUSH
                };
                let s = ctx.socket(kind).unwrap();
                s.set_linger(0).unwrap();
                s.set_sndtimeo(5000).unwrap();
                s.connect(ep).unwrap();
                GoodSocket::Fabriq(Box::new(s))
            }
        };
        Good {
            peer,
            socket,
            sent: 0,
        }
    }

    fn send(&mut self, round: u64, count: usize) {
        for _ in 0..count {
            let msg = payload(self.peer, round, self.sent);
            match &self.socket {
                GoodSocket::Libzmq(s) => s.send(msg, 0).unwrap(),
                GoodSocket::Fabriq(s) => s.send(msg, 0).unwrap(),
            }
            self.sent += 1;
        }
    }
}

fn payload(peer: Peer, round: u64, i: usize) -> Vec<u8> {
    format!("{} r{round} m{i}", peer.name()).into_bytes()
}

/// Bytes the kernel holds unread for fabriq's connections on `port`
/// (from /proc/net/tcp; `None` where that is not available).
fn unread_bytes(port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{port:04X}");
    let mut total = 0;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // f[3] == "01": ESTABLISHED; f[4] is tx_queue:rx_queue in hex.
        if f.len() > 4 && f[1] == local && f[3] == "01" {
            total += u64::from_str_radix(f[4].split(':').nth(1)?, 16).ok()?;
        }
    }
    Some(total)
}

// ---- one round ----------------------------------------------------------------

/// What a run does; see the module documentation for the variables.
struct Settings {
    rounds: u64,
    seed: u64,
    short: usize,
    huge: usize,
    load: usize,
    /// Messages each good peer sends per round...
    messages: usize,
    /// ... in this many bursts at different points of the schedule.
    bursts: usize,
    receivers: Vec<Receiver>,
}

impl Settings {
    fn from_env() -> Settings {
        let num = |name: &str, default: u64| env_num(name).unwrap_or(default);
        let seed = env_num("FABRIQ_STRESS_SEED").unwrap_or_else(|| {
            let t = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap();
            t.as_nanos() as u64 ^ u64::from(std::process::id())
        });
        let receivers = match std::env::var("FABRIQ_STRESS_RECEIVERS") {
            Ok(list) => list
                .split(',')
                .map(|name| {
                    Receiver::ALL
                        .into_iter()
                        .find(|r| r.name() == name.trim())
                        .unwrap_or_else(|| panic!("unknown receiver {name:?}"))
                })
                .collect(),
            Err(_) => Receiver::ALL.to_vec(),
        };
        Settings {
            rounds: num("FABRIQ_STRESS_ROUNDS", DEFAULT_ROUNDS),
            seed,
            short: num("FABRIQ_STRESS_SHORT", DEFAULT_SHORT) as usize,
            huge: num("FABRIQ_STRESS_HUGE", 1) as usize,
            load: num("FABRIQ_STRESS_LOAD", DEFAULT_LOAD) as usize,
            messages: num("FABRIQ_STRESS_MESSAGES", DEFAULT_MESSAGES).max(1) as usize,
            bursts: num("FABRIQ_STRESS_BURSTS", DEFAULT_BURSTS).max(1) as usize,
            receivers,
        }
    }

    /// Messages in burst `k` (0-based) of a peer.
    fn burst(&self, k: usize) -> usize {
        self.messages * (k + 1) / self.bursts - self.messages * k / self.bursts
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Hostile(Hostile),
    Good(Peer),
}

/// The reported sequence (shuffled in half the rounds) with the good
/// peers' bursts inserted at random points; in half the rounds the libzmq
/// peer comes last, as reported.
fn schedule(rng: &mut Rng, set: &Settings) -> Vec<Step> {
    use Hostile::*;
    let mut steps: Vec<Step> = [
        Http,
        Zeros,
        Version2,
        BogusMechanism,
        PubReady,
        HugeFrame,
        BadProperty,
        Stalled,
    ]
    .into_iter()
    .chain(std::iter::repeat(Short).take(set.short))
    .chain(std::iter::repeat(HugeFrame).take(set.huge.saturating_sub(1)))
    .map(Step::Hostile)
    .collect();
    if rng.below(2) == 1 {
        rng.shuffle(&mut steps);
    }
    let libzmq_last = rng.below(2) == 0;
    for _ in 0..set.bursts {
        let at = match libzmq_last {
            true => steps.len(),
            false => rng.below(steps.len() + 1),
        };
        steps.insert(at, Step::Good(Peer::Libzmq));
        let at = rng.below(steps.len() + 1);
        steps.insert(at, Step::Good(Peer::Fabriq));
    }
    steps
}

/// The schedule in short, runs of 3-byte connections as `short*N`.
fn describe(steps: &[Step]) -> String {
    let mut out = Vec::new();
    let mut shorts = 0;
    for step in steps {
        if *step == Step::Hostile(Hostile::Short) {
            shorts += 1;
            continue;
        }
        if shorts > 0 {
            out.push(format!("short*{shorts}"));
            shorts = 0;
        }
        out.push(match step {
            Step::Hostile(h) => format!("{h:?}"),
            Step::Good(p) => p.name().to_uppercase(),
        });
    }
    if shorts > 0 {
        out.push(format!("short*{shorts}"));
    }
    out.join(" ")
}

/// `[0, 1, 2, 5, 6]` as `0..3, 5..7`.
fn ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(format!("{}..{}", v[i], v[j] + 1));
        i = j + 1;
    }
    out.join(", ")
}

/// What is wrong with the messages received; empty if nothing.
fn check(how: Receiver, round: u64, set: &Settings, got: &[Vec<Vec<u8>>]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seqs: [Vec<usize>; 2] = Default::default();
    for frames in got {
        let body = match (how.is_router(), &frames[..]) {
            (false, [body]) | (true, [_, body]) => String::from_utf8_lossy(body),
            _ => {
                problems.push(format!("unexpected message {frames:?}"));
                continue;
            }
        };
        let parsed = [Peer::Libzmq, Peer::Fabriq].into_iter().find_map(|p| {
            let rest = body.strip_prefix(&format!("{} r{round} m", p.name()))?;
            Some((p as usize, rest.parse::<usize>().ok()?))
        });
        match parsed {
            Some((p, seq)) => seqs[p].push(seq),
            None => problems.push(format!("unexpected message {body:?}")),
        }
    }
    for (peer, got) in [Peer::Libzmq, Peer::Fabriq].into_iter().zip(seqs) {
        let mut got = got;
        got.sort();
        if got.iter().copied().eq(0..set.messages) {
            continue;
        }
        let missing: Vec<usize> = (0..set.messages).filter(|i| !got.contains(i)).collect();
        let order = if got.windows(2).all(|w| w[0] < w[1]) {
            ""
        } else {
            " (out of order or duplicated)"
        };
        problems.push(format!(
            "{} peer: {} of {} received{order}, missing {}",
            peer.name(),
            got.len(),
            set.messages,
            ranges(&missing)
        ));
    }
    problems
}

/// Runs one round; `Err` describes what went wrong.
fn round(round: u64, how: Receiver, set: &Settings) -> Result<(), String> {
    let mut rng = Rng(set.seed ^ round.wrapping_mul(0xA24B_AED4_963E_E407));
    let steps = schedule(&mut rng, set);
    let ctx = fabriq::Context::new();
    let kind = if how.is_router() {
        fabriq::ROUTER
    } else {
        fabriq::PULL
    };
    let sock = ctx.socket(kind).unwrap();
    sock.set_linger(0).unwrap();
    sock.bind("tcp://127.0.0.1:*").unwrap();
    let ep = sock.get_last_endpoint().unwrap().unwrap();
    let port: u16 = ep.rsplit(':').next().unwrap().parse().unwrap();

    let start = Instant::now();
    let until = start + ROUND_LIMIT;
    let (tx, rx) = mpsc::channel();
    let expected = 2 * set.messages;
    thread::spawn(move || {
        let got = receive(&sock, how, expected, until);
        let _ = tx.send((sock, got));
    });

    let mut notes = Vec::new();
    let mut keep_open = Vec::new();
    let mut good: [Option<Good>; 2] = [None, None];
    let mut bursts = [0; 2];
    let mut retired = Vec::new();
    for step in &steps {
        match *step {
            Step::Good(peer) => {
                let i = peer as usize;
                if env_num("FABRIQ_STRESS_RECONNECT").is_some() {
                    if let Some(old) = good[i].take() {
                        let mut g = Good::connect(peer, &ep, how);
                        g.sent = old.sent;
                        retired.push(old);
                        good[i] = Some(g);
                    }
                }
                let g = good[i].get_or_insert_with(|| Good::connect(peer, &ep, how));
                g.send(round, set.burst(bursts[peer as usize]));
                bursts[peer as usize] += 1;
            }
            Step::Hostile(h) => match attack(port, h, how.peer()) {
                Ok(open) => keep_open.extend(open),
                Err(note) => notes.push(note),
            },
        }
    }
    let steps_took = start.elapsed();

    let wait = until.saturating_duration_since(Instant::now()) + Duration::from_secs(5);
    let Ok((sock, got)) = rx.recv_timeout(wait) else {
        // The receiver is stuck (or panicked): do not wait for its context.
        std::mem::forget(ctx);
        return Err(format!(
            "the receiver did not return by the round's deadline; schedule: {}",
            describe(&steps)
        ));
    };
    let mut problems = check(how, round, set, &got);
    if problems.is_empty() {
        return Ok(());
    }
    // Were the missing messages there all along (a lost wake-up)?
    let unread = unread_bytes(port).map_or("?".to_string(), |n| n.to_string());
    let fd = sock.get_fd().unwrap();
    let raised = fabriq::poll(&mut [fabriq::PollItem::from_fd(fd, fabriq::POLLIN)], 0).unwrap();
    let mut late = 0;
    while recv_frames(&sock, fabriq::DONTWAIT).is_ok() {
        late += 1;
    }
    problems.push(format!(
        "after the deadline: {unread} bytes unread in fabriq's kernel receive queues, \
         socket fd readable: {}, then {late} more messages received with DONTWAIT",
        raised > 0
    ));
    problems.push(format!(
        "schedule: {}; the steps took {} ms; limit {ROUND_LIMIT:?} from the start",
        describe(&steps),
        steps_took.as_millis()
    ));
    problems.extend(notes);
    Err(problems.join("\n    "))
}

#[test]
fn hostile_connections_never_cost_good_peers_their_messages() {
    let set = Settings::from_env();
    eprintln!(
        "hostile_stress: {} rounds, seed {:#x} (FABRIQ_STRESS_SEED to replay), \
         {} short connections, {} messages per good peer in {} bursts, {} busy threads",
        set.rounds, set.seed, set.short, set.messages, set.bursts, set.load
    );
    let started = Instant::now();
    let busy = Load::start(set.load);
    let failures = std::sync::Mutex::new(Vec::new());
    let workers = env_num("FABRIQ_STRESS_PARALLEL").unwrap_or(1);
    thread::scope(|scope| {
        for w in 0..workers {
            let (set, failures) = (&set, &failures);
            scope.spawn(move || {
                for r in (w..set.rounds).step_by(workers as usize) {
                    let how = set.receivers[r as usize % set.receivers.len()];
                    if let Err(why) = round(r, how, set) {
                        let report =
                            format!("round {r} ({}, seed {:#x}): {why}", how.name(), set.seed);
                        eprintln!("hostile_stress: FAILED {report}");
                        failures.lock().unwrap().push(report);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    drop(busy);
    let per_round = started.elapsed().as_millis() / u128::from(set.rounds.max(1));
    let summary = format!(
        "hostile_stress: SUMMARY rounds={} failures={} seed={:#x} ms_per_round={per_round}",
        set.rounds,
        failures.len(),
        set.seed
    );
    eprintln!("{summary}");
    assert!(failures.is_empty(), "{summary}\n{}", failures.join("\n"));
}
