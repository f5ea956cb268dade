//! A rogue fabric peer for the hostile tests, made of parts fabriq does
//! not control: a libfabric endpoint driven through fabriq-ofi directly
//! ([`Rogue`]), a ZMTP control connection spoken by fabriq-zmtp's
//! sans-I/O connection over a plain `TcpStream` ([`Control`]), a
//! doorbell of its own ([`RogueBell`]), and a victim socket run in a
//! process of its own ([`Victim`]) where memory or a signal must be
//! watched. Every wait has a deadline.
#![allow(dead_code)]

use std::io::{BufRead, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_ofi::{
    Caps, Domain, EpType, Event, FiAddr, Hints, Info, Lent, PagePool, PagedConfig, PagedEndpoint,
    ReadPool,
};
use fabriq_zmtp::{Config, Connection, MechanismConfig, SocketType};

mod bell;
pub use bell::*;

/// The deadline of every wait.
pub const LIMIT: Duration = Duration::from_secs(10);
/// The rogue's page size: what it announces and what its pool holds.
pub const PAGE: usize = 4096;
/// The token a rogue announces (fabriq stamps its pages with it).
pub const ROGUE_TOKEN: &[u8] = b"00000000000000a7";

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &[u8]) -> Vec<u8> {
    text.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect()
}

/// A ZMTP frame (short or long form).
pub fn frame(command: bool, more: bool, body: &[u8]) -> Vec<u8> {
    let mut flags = u8::from(more) | if command { 0x04 } else { 0 };
    let mut out = Vec::with_capacity(body.len() + 9);
    if body.len() > 255 {
        flags |= 0x02;
        out.push(flags);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    } else {
        out.push(flags);
        out.push(body.len() as u8);
    }
    out.extend_from_slice(body);
    out
}

/// A page holding a one-frame message.
pub fn message(body: &[u8]) -> Vec<u8> {
    frame(false, false, body)
}

/// A page holding a rendezvous frame: the sender lent `len` bytes at
/// `addr` under `key` (fabriq's RDV command, body id u32, len u64, addr
/// u64, key u64, more u8).
pub fn rdv(id: u32, len: u64, addr: u64, key: u64) -> Vec<u8> {
    let mut body = vec![3];
    body.extend_from_slice(b"RDV");
    body.extend_from_slice(&id.to_be_bytes());
    body.extend_from_slice(&len.to_be_bytes());
    body.extend_from_slice(&addr.to_be_bytes());
    body.extend_from_slice(&key.to_be_bytes());
    body.push(0);
    frame(true, false, &body)
}

/// The frames in `page`: (command, more, body).
pub fn frames(mut page: &[u8]) -> Vec<(bool, bool, Vec<u8>)> {
    let mut out = Vec::new();
    while let [flags, rest @ ..] = page {
        let (len, rest) = if flags & 0x02 != 0 {
            let n = u64::from_be_bytes(rest[..8].try_into().unwrap()) as usize;
            (n, &rest[8..])
        } else {
            (usize::from(rest[0]), &rest[1..])
        };
        out.push((flags & 0x04 != 0, flags & 0x01 != 0, rest[..len].to_vec()));
        page = &rest[len..];
    }
    out
}

/// A random u64 (from the OS).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("/dev/urandom");
    u64::from_ne_bytes(b)
}

// --- the fabric endpoint ------------------------------------------------------

/// A libfabric endpoint of the test's own, driven through fabriq-ofi.
pub struct Rogue {
    pub info: Info,
    pub domain: Domain,
    pub pool: PagePool,
    pub ep: PagedEndpoint,
    reads: ReadPool,
    /// Pages received: (CQ data, bytes).
    pub received: Vec<(Option<u64>, Vec<u8>)>,
    /// Reads completed: (tag, the bytes or the error).
    pub reads_done: Vec<(u64, Result<Bytes, String>)>,
    /// Receives to keep posted (0: the rogue only sends).
    recvs: usize,
    /// Sends completed, and sends that failed (the peer refused them or
    /// dropped the connection).
    pub sent: u64,
    pub send_failed: u64,
}

/// The most one rogue read takes.
const READ_MAX: usize = 1 << 20;

impl Rogue {
    /// An endpoint on `provider` (bound to `node` when given: tcp), with
    /// RMA when `rma`.
    pub fn open(provider: &str, node: Option<&str>, rma: bool) -> Rogue {
        let mut caps = Caps::MSG;
        if rma {
            caps = caps | Caps::RMA;
        }
        let mut hints = Hints::new()
            .ep_type(EpType::Rdm)
            .caps(caps)
            .provider(provider);
        if let Some(node) = node {
            hints = hints.node(node).source(true);
        }
        let info = fabriq_ofi::getinfo(&hints)
            .unwrap_or_else(|e| panic!("libfabric's {provider} provider: {e}"))
            .into_iter()
            .next()
            .expect("an RDM endpoint");
        let domain = Domain::open_info(&info).expect("fabric and domain");
        let pool = PagePool::new(&domain, 256, PAGE).expect("registered pages");
        let config = PagedConfig {
            max_sends: 128,
            max_recvs: 64,
            ..PagedConfig::default()
        };
        let ep = PagedEndpoint::open(&domain, &info, config).expect("endpoint");
        let reads = read_pool(&domain);
        Rogue {
            info,
            domain,
            pool,
            ep,
            reads,
            received: Vec::new(),
            reads_done: Vec::new(),
            recvs: 0,
            sent: 0,
            send_failed: 0,
        }
    }

    /// The endpoint's raw address.
    pub fn name(&self) -> Vec<u8> {
        self.ep.name().expect("endpoint name")
    }

    /// The address as READY carries it (hex).
    pub fn name_hex(&self) -> Vec<u8> {
        hex(&self.name()).into_bytes()
    }

    /// Inserts a peer's raw address.
    pub fn insert(&mut self, address: &[u8]) -> FiAddr {
        self.ep.insert_peer(address).expect("fi_av_insert")
    }

    /// Keeps `n` receives posted from now on.
    pub fn receive(&mut self, n: usize) {
        self.recvs = n;
        self.post_receives();
    }

    fn post_receives(&mut self) {
        while self.ep.recvs_posted() < self.recvs {
            let Some(page) = self.pool.get() else { return };
            if self.ep.post_recv(page).is_err() {
                return;
            }
        }
    }

    /// Drives the provider and files what completed.
    pub fn progress(&mut self) {
        let mut events: Vec<Event> = Vec::new();
        let _ = self.ep.poll(&mut events, 64);
        for event in events {
            match event {
                Event::Received { page, data, .. } => {
                    self.received.push((data, page.as_slice().to_vec()));
                }
                Event::ReadDone { data, tag } => self.reads_done.push((tag, Ok(data))),
                Event::ReadFailed { tag, error } => {
                    self.reads_done.push((tag, Err(error.to_string())))
                }
                // Sent pages go back to the pool.
                Event::Sent { .. } => self.sent += 1,
                Event::SendFailed { .. } => self.send_failed += 1,
                _ => {}
            }
        }
        self.post_receives();
    }

    /// Sends one page holding `bytes` to `dest`, stamped `data`, waiting
    /// (with progress) for a free page and for the provider to take it.
    pub fn send(&mut self, dest: FiAddr, data: u64, bytes: &[u8]) {
        let until = Instant::now() + LIMIT;
        let mut page = loop {
            if let Some(p) = self.pool.get() {
                break p;
            }
            assert!(Instant::now() < until, "the rogue's sends never completed");
            self.progress();
        };
        page.fill(bytes).unwrap();
        loop {
            match self.ep.send(page, dest, Some(data), 0) {
                Ok(()) => return,
                Err(refused) => {
                    assert!(Instant::now() < until, "send: {}", refused.error);
                    page = refused.page;
                    self.progress();
                }
            }
        }
    }

    /// Waits (with progress) until every send completed.
    pub fn flush(&mut self) {
        let until = Instant::now() + LIMIT;
        while self.ep.sends_in_flight() > 0 {
            assert!(Instant::now() < until, "the rogue's pages never left");
            self.progress();
            std::thread::yield_now();
        }
    }

    /// Registers `bytes` for peers to read.
    pub fn lend(&self, bytes: Bytes) -> Lent {
        Lent::new(&self.domain, bytes).expect("registered for reads")
    }

    /// Posts a read of `len` bytes at `addr` under `key` from `src`;
    /// `Err` when the provider refuses it at once.
    pub fn read(
        &mut self,
        src: FiAddr,
        len: usize,
        addr: u64,
        key: u64,
        tag: u64,
    ) -> Result<(), String> {
        let until = Instant::now() + LIMIT;
        let mut buf = self.reads.get(len).map_err(|e| e.to_string())?;
        loop {
            match self.ep.read(buf, src, addr, key, tag) {
                Ok(()) => return Ok(()),
                Err(refused) if matches!(refused.error, fabriq_ofi::Error::Again { .. }) => {
                    assert!(Instant::now() < until, "the provider stayed busy");
                    buf = *refused.buffer;
                    self.progress();
                }
                Err(refused) => return Err(refused.error.to_string()),
            }
        }
    }

    /// The outcome of the read tagged `tag`, waiting (with progress) at
    /// most `limit`; `None` if the provider never answered.
    pub fn read_outcome(&mut self, tag: u64, limit: Duration) -> Option<Result<Bytes, String>> {
        let until = Instant::now() + limit;
        loop {
            self.progress();
            if let Some(i) = self.reads_done.iter().position(|(t, _)| *t == tag) {
                return Some(self.reads_done.remove(i).1);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// Drives the provider for `d` (the peer reads from us meanwhile).
    pub fn progress_for(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            self.progress();
            std::thread::yield_now();
        }
    }
}

fn read_pool(domain: &Domain) -> ReadPool {
    ReadPool::new(domain, 4 * READ_MAX, READ_MAX)
}

// --- the control connection -------------------------------------------------

/// The fabric fields of a rogue's READY: its endpoint, [`ROGUE_TOKEN`],
/// a window of 8 pages of [`PAGE`] bytes, and `extra`.
pub fn fabric_props(rogue: &Rogue, extra: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut props = vec![
        ("X-Fabriq-Ofi-Address".to_string(), rogue.name_hex()),
        ("X-Fabriq-Ofi-Token".to_string(), ROGUE_TOKEN.to_vec()),
        ("X-Fabriq-Ofi-Window".to_string(), b"8".to_vec()),
        (
            "X-Fabriq-Ofi-Page".to_string(),
            PAGE.to_string().into_bytes(),
        ),
    ];
    props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_vec())));
    props
}

/// A ZMTP peer on fabriq's control connection: fabriq-zmtp's connection
/// over a TcpStream, whose output the test may hold back after the
/// greeting (to act between fabriq's READY and its own).
pub struct Control {
    pub conn: Connection,
    pub stream: TcpStream,
    /// Output not written yet.
    out: Vec<u8>,
    /// Bytes written so far, and the most that may be (None: no limit).
    written: usize,
    hold_at: Option<usize>,
    closed: bool,
    /// Commands received and not taken yet.
    commands: Vec<(Bytes, Bytes)>,
}

impl Control {
    /// A connection to `addr` as `socket_type` with `mechanism`, announcing
    /// `props` in its READY; the handshake is not waited for.
    pub fn start(
        addr: &str,
        socket_type: SocketType,
        mechanism: MechanismConfig,
        props: &[(String, Vec<u8>)],
    ) -> Control {
        let mut config = Config::new(socket_type);
        config.mechanism = mechanism;
        for (name, value) in props {
            config.metadata.push(name, value.clone()).unwrap();
        }
        Control {
            conn: Connection::new(config, Instant::now()).unwrap(),
            stream: TcpStream::connect(addr).expect("the control port"),
            out: Vec::new(),
            written: 0,
            hold_at: None,
            closed: false,
            commands: Vec::new(),
        }
    }

    /// A NULL peer that completes its handshake (see [`Control::start`]).
    pub fn null(addr: &str, socket_type: SocketType, props: &[(String, Vec<u8>)]) -> Control {
        let mut c = Control::start(addr, socket_type, MechanismConfig::Null, props);
        c.handshake().expect("the NULL handshake");
        c
    }

    /// Writes nothing past the greeting (64 bytes) until [`Control::release`].
    pub fn hold_after_greeting(&mut self) {
        self.hold_at = Some(64);
    }

    /// Writes what was held back, and from now on everything.
    pub fn release(&mut self) {
        self.hold_at = None;
        self.flush();
    }

    /// Writes the connection's output (up to the hold).
    pub fn flush(&mut self) {
        while self.conn.poll_transmit(&mut self.out, 1 << 20) > 0 {}
        let allowed = match self.hold_at {
            Some(at) => at.saturating_sub(self.written).min(self.out.len()),
            None => self.out.len(),
        };
        if allowed > 0 && !self.closed {
            if self.stream.write_all(&self.out[..allowed]).is_err() {
                self.closed = true;
            }
            self.out.drain(..allowed);
            self.written += allowed;
        }
    }

    /// Reads for at most `wait` and feeds the connection; false once
    /// fabriq closed it.
    fn read(&mut self, wait: Duration) -> bool {
        if self.closed {
            return false;
        }
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .unwrap();
        let mut buf = [0u8; 16384];
        match self.stream.read(&mut buf) {
            Ok(0) => self.closed = true,
            Ok(n) => self.conn.feed(&buf[..n], Instant::now()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => self.closed = true,
        }
        !self.closed
    }

    /// Takes the connection's events (commands are kept); `Err` on a
    /// protocol error (an ERROR from fabriq, for instance).
    fn events(&mut self) -> Result<bool, String> {
        let mut complete = false;
        loop {
            match self.conn.poll_event() {
                Ok(None) => return Ok(complete),
                Ok(Some(fabriq_zmtp::Event::HandshakeComplete)) => complete = true,
                Ok(Some(fabriq_zmtp::Event::Command { name, body })) => {
                    self.commands.push((name, body))
                }
                Ok(Some(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Runs the handshake until it completes at our side (fabriq's READY
    /// came): `Err` when fabriq refuses or closes first.
    pub fn handshake(&mut self) -> Result<(), String> {
        let until = Instant::now() + LIMIT;
        loop {
            self.flush();
            if self.events()? {
                self.flush();
                return Ok(());
            }
            if self.conn.is_ready() {
                return Ok(());
            }
            if !self.read(Duration::from_millis(20)) {
                self.events()?;
                return Err("fabriq closed the control connection".into());
            }
            assert!(Instant::now() < until, "no handshake in time");
        }
    }

    /// A property of fabriq's READY.
    pub fn prop(&self, name: &str) -> Vec<u8> {
        self.try_prop(name)
            .unwrap_or_else(|| panic!("fabriq's READY has no {name}"))
    }

    pub fn try_prop(&self, name: &str) -> Option<Vec<u8>> {
        let peer = self.conn.peer()?;
        peer.properties.get(name).map(|v| v.to_vec())
    }

    /// fabriq's fabric address, raw.
    pub fn address(&self) -> Vec<u8> {
        unhex(&self.prop("X-Fabriq-Ofi-Address"))
    }

    /// The token fabriq announced: its pages from us are stamped with it
    /// plus their sequence numbers.
    pub fn token(&self) -> u64 {
        let text = String::from_utf8(self.prop("X-Fabriq-Ofi-Token")).unwrap();
        u64::from_str_radix(&text, 16).expect("a hex token")
    }

    /// The stamp of our page `seq` to fabriq.
    pub fn stamp(&self, seq: u32) -> u64 {
        self.token().wrapping_add(u64::from(seq))
    }

    /// Reads for `wait` and returns the commands fabriq sent; `None` once
    /// it closed the connection.
    pub fn commands(&mut self, wait: Duration) -> Option<Vec<(Bytes, Bytes)>> {
        let open = self.read(wait);
        let _ = self.events();
        self.flush();
        let got = std::mem::take(&mut self.commands);
        (open || !got.is_empty()).then_some(got)
    }

    /// The pages fabriq granted (CREDIT) within `wait`; `None` once it
    /// closed the connection.
    pub fn credits(&mut self, wait: Duration) -> Option<u32> {
        let commands = self.commands(wait)?;
        Some(
            commands
                .iter()
                .filter(|(name, body)| &name[..] == b"CREDIT" && body.len() == 4)
                .map(|(_, body)| u32::from_be_bytes(body[..].try_into().unwrap()))
                .sum(),
        )
    }

    /// Waits for fabriq's first CREDIT (sent once its handshake and ZAP
    /// completed), driving `rogue` meanwhile.
    pub fn first_credit(&mut self, rogue: &mut Rogue) -> u32 {
        let until = Instant::now() + LIMIT;
        loop {
            rogue.progress();
            let n = self
                .credits(Duration::from_millis(10))
                .expect("fabriq dropped the connection before its first CREDIT");
            if n > 0 {
                return n;
            }
            assert!(Instant::now() < until, "no CREDIT within the limit");
        }
    }

    /// Grants fabriq `n` more pages (we receive).
    pub fn grant(&mut self, n: u32) {
        self.send_command(b"CREDIT", &n.to_be_bytes());
    }

    pub fn send_command(&mut self, name: &[u8], body: &[u8]) {
        let _ = self.conn.send_command(name, Bytes::copy_from_slice(body));
        self.flush();
    }

    /// Whether fabriq closes the connection within [`LIMIT`], driving
    /// `rogue` meanwhile.
    pub fn dropped(&mut self, rogue: &mut Rogue) -> bool {
        let until = Instant::now() + LIMIT;
        while Instant::now() < until {
            rogue.progress();
            if self.commands(Duration::from_millis(5)).is_none() {
                return true;
            }
        }
        false
    }

    /// Whether the connection is still open after `wait` (commands read
    /// meanwhile are kept).
    pub fn open_after(&mut self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            match self.commands(Duration::from_millis(5)) {
                None => return false,
                Some(got) => self.commands.extend(got),
            }
        }
        true
    }
}

// --- a victim in a process of its own ---------------------------------------

/// The environment variable that makes the test binary run a victim.
pub const VICTIM: &str = "FABRIQ_HOSTILE_VICTIM";

/// A fabriq socket run by this test binary again, in a child process
/// (the test `test` alone, with [`VICTIM`] set to `mode`), so that its
/// memory and its fate are its own. It prints `endpoint E` once bound
/// and then what it is told to (see the test's victim body); it ends
/// when its stdin closes.
pub struct Victim {
    pub child: Child,
    lines: Receiver<String>,
    pub endpoint: String,
}

impl Victim {
    pub fn spawn(test: &str, mode: &str) -> Victim {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(VICTIM, mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut v = Victim {
            child,
            lines,
            endpoint: String::new(),
        };
        v.endpoint = v.expect("endpoint ", 3 * LIMIT);
        v
    }

    /// The control connection's `host:port`.
    pub fn control(&self) -> String {
        self.endpoint.split("://").nth(1).unwrap().to_string()
    }

    /// The next line (libtest may have written `test NAME ... ` before
    /// it), within `limit`.
    pub fn line(&mut self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    /// Waits for a line with `prefix` and returns what follows it; lines
    /// before it go to `seen`.
    pub fn expect_collecting(
        &mut self,
        prefix: &str,
        limit: Duration,
        seen: &mut Vec<String>,
    ) -> String {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self.line(left).unwrap_or_else(|| {
                panic!("the victim printed no {prefix:?} line in time (it printed {seen:?})")
            });
            if let Some(at) = line.find(prefix) {
                return line[at + prefix.len()..].trim().to_string();
            }
            seen.push(line);
        }
    }

    pub fn expect(&mut self, prefix: &str, limit: Duration) -> String {
        self.expect_collecting(prefix, limit, &mut Vec::new())
    }

    /// The lines printed within `wait`.
    pub fn lines_for(&mut self, wait: Duration) -> Vec<String> {
        let until = Instant::now() + wait;
        let mut out = Vec::new();
        while let Some(line) = self.line(until.saturating_duration_since(Instant::now())) {
            out.push(line);
        }
        out
    }

    /// Sends the victim a command line.
    pub fn tell(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("the victim's stdin");
        writeln!(stdin, "{line}").expect("the victim reads its stdin");
        stdin.flush().unwrap();
    }

    /// A `/proc/PID/status` field, in kB.
    pub fn status_kb(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the victim still runs")
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in the victim's status"))
    }

    /// Whether the victim still runs; panics with how it ended if not.
    pub fn assert_alive(&mut self, when: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            panic!(
                "{when}: the victim died: {status} (signal {:?}{})",
                status.signal(),
                if status.signal() == Some(libc::SIGBUS) {
                    ", SIGBUS"
                } else {
                    ""
                }
            );
        }
    }

    /// Panics with how the victim ended if it does within `limit`.
    pub fn assert_exited_within(&mut self, limit: Duration) {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            self.assert_alive("it closed the connection");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Closes the victim's stdin and waits for it to end.
    pub fn finish(mut self) {
        drop(self.child.stdin.take());
        let until = Instant::now() + LIMIT;
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "the victim did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            drop(self.child.stdin.take());
            let until = Instant::now() + LIMIT;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The victim's side: lines from its stdin, on a channel that closes
/// (disconnects) when the stdin does.
pub fn stdin_lines() -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

// --- what fabriq logs -----------------------------------------------------------

/// Captures fabriq's log lines (its `tracing` events) that contain one
/// of `keep`, process-wide, from the first call on; returns them so
/// far.
pub fn captured_logs() -> Vec<String> {
    CAPTURED.lock().unwrap().clone()
}

static CAPTURED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Installs the capture (once per process): events whose text contains
/// one of `keep` are kept; with `print`, also printed as `log: TEXT`.
pub fn capture_logs(keep: &'static [&'static str], print: bool) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Capture { keep, print });
    });
}

struct Capture {
    keep: &'static [&'static str],
    print: bool,
}

struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?} ");
        } else {
            let _ = write!(self.0, "{}={value:?} ", field.name());
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        if self.keep.iter().any(|k| text.0.contains(k)) {
            if self.print {
                println!("log: {}", text.0.trim());
            }
            CAPTURED.lock().unwrap().push(text.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
