//! The fabric's own floor (the F column of the fabric tables): the
//! scenario's messages moved by libfabric itself, through fabriq-ofi's
//! [`PagedEndpoint`] on the same provider, with no framing, no queues, no
//! credits and no second thread: what a hand-written libfabric program
//! gets.
//!
//! - **Throughput, the streaming floor** (what fabtests' `fi_rdm_bw`
//!   shows): the sender keeps up to [`window`] sends of one message each
//!   in flight, from registered memory it wrote once at start-up (never
//!   from the kernel's zero page), and busy-polls its completion queues;
//!   each receiver keeps as many receives posted and busy-polls.
//! - **Fan-out (PUB/SUB to several receivers)**: each message goes to each
//!   receiver in turn, one send per receiver (no multicast in RDM
//!   endpoints), with a window per receiver ([`fan_out_pages`]), and the
//!   receivers sleep the way fabriq's subscribers do (below): sixteen
//!   receivers busy-polling two CPUs left the sender a sliver of one, and
//!   the "floor" moved 1 % of what fabriq did. The sender rings sleeping
//!   receivers' doorbells once per [`RING_EVERY`] rounds and before it
//!   waits for a free page.
//! - **Latency, the event-driven ping-pong floor**: one message in
//!   flight, and each side sleeps until its message arrives the way
//!   fabriq's I/O thread sleeps: on the completion queues' wait
//!   descriptors after `fi_trywait` where the provider has them (tcp),
//!   else on a doorbell, a datagram socket its peer writes a byte to after
//!   each send (shm, which has no wait descriptors in libfabric 1.17).
//!   One wake-up per hop. In the spinning variant both sides busy-poll
//!   instead, like `fi_pingpong` (the P column).
//!
//! A receiving side prints `BOUND fi:HEX:DOORBELL` (its raw address in
//! hex, its doorbell's abstract name or nothing); the connecting side's
//! first message to each is a hello carrying its own address and
//! doorbell, so that the receiving side can answer and ring.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

use fabriq_ofi::{
    Caps, Domain, EpType, Event, FiAddr, Hints, PagePool, PagedConfig, PagedEndpoint, Wait,
};

use crate::scenario::{FabricVariant, Scenario, Transport};
use crate::sys::Usage;
use crate::worker::{time_round_trips, Gate, Outcome, Role, WorkerSpec, WARM_PAUSE};

/// The longest wait for one message before the trial fails.
const STALL: Duration = Duration::from_secs(30);

/// Room for the hello (an address and a doorbell name) in a page.
const HELLO_ROOM: usize = 1024;

/// Sends in flight (and receives posted) in the streaming floor: 64, as
/// fabtests' default window, fewer for large messages (at most 16 MiB in
/// flight), at least 8.
pub fn window(size: usize) -> usize {
    ((16 << 20) / size.max(1)).clamp(8, 64)
}

/// Send pages of a fan-out sender: a [`window`] per receiver, at most
/// 64 MiB in all (and never fewer than one window).
pub fn fan_out_pages(size: usize, receivers: usize) -> usize {
    let w = window(size);
    w.saturating_mul(receivers)
        .min((64 << 20) / size.max(1))
        .max(w)
}

/// Rounds (one message to every receiver) between rings of sleeping
/// receivers' doorbells in the fan-out floor: fabriq's engine rings once
/// per turn, which carries many pages.
pub const RING_EVERY: u64 = 8;

fn ofi(what: &'static str) -> impl Fn(fabriq_ofi::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// How a side waits for a completion.
enum Waiter {
    /// Busy-polls the completion queues.
    Spin,
    /// Sleeps on the completion queues' wait descriptors.
    Fds(Vec<RawFd>),
    /// Sleeps on its doorbell (and the peer rings it after each send).
    Doorbell(UnixDatagram, String),
}

/// A peer: its address-vector entry and its doorbell (if it has one).
struct Peer {
    addr: FiAddr,
    doorbell: Option<String>,
}

/// One side: an endpoint with its receives posted, a pool of pages to
/// send from, and how it waits.
struct Side {
    ep: PagedEndpoint,
    sends: PagePool,
    events: Vec<Event>,
    waiter: Waiter,
    /// Messages received and not yet taken by a caller.
    received: u64,
    /// A received hello, kept until the caller asks for it.
    hello: Option<Vec<u8>>,
    /// Wakes the peer's doorbell.
    ringer: Option<UnixDatagram>,
    /// Doorbells of peers sent to since they were last rung (fan-out).
    unrung: Vec<String>,
    size: usize,
}

impl Side {
    /// Opens an RDM endpoint on the transport's provider (bound to
    /// loopback for tcp, as fabriq binds where its control connection is)
    /// with `recvs` receives posted and `sends` pages to send from.
    fn open(
        transport: Transport,
        size: usize,
        recvs: usize,
        sends: usize,
        waits: bool,
    ) -> Result<Side, String> {
        let provider = transport
            .provider()
            .ok_or_else(|| format!("{} is not a fabric transport", transport.name()))?;
        let mut hints = Hints::new()
            .ep_type(EpType::Rdm)
            .caps(Caps::MSG)
            .provider(provider);
        if provider == "tcp" {
            hints = hints.node("127.0.0.1").source(true);
        }
        let info = fabriq_ofi::getinfo(&hints)
            .map_err(ofi("fi_getinfo"))?
            .into_iter()
            .next()
            .ok_or_else(|| format!("fi_getinfo offered no RDM endpoint for {provider}"))?;
        let domain = Domain::open_info(&info).map_err(ofi("domain"))?;
        let config = PagedConfig {
            max_sends: sends,
            max_recvs: recvs,
            wait: if waits { Wait::FdOrPoll } else { Wait::None },
            av_size: 64,
        };
        let mut ep = PagedEndpoint::open(&domain, &info, config).map_err(ofi("endpoint"))?;
        let page = size.max(HELLO_ROOM);
        let posted = PagePool::new(&domain, recvs, page).map_err(ofi("receive pages"))?;
        let sends_pool = PagePool::new(&domain, sends, page).map_err(ofi("send pages"))?;
        // Every byte sent is written once, here: a page never written is
        // the kernel's zero page, one physical page behind every address,
        // and the provider's copy out of it (shm's CMA read) ran from the
        // cache: 1 MiB at 11.5k msg/s against 8.1k for fabriq sending real
        // bytes by reference.
        {
            let pages: Vec<_> = std::iter::from_fn(|| sends_pool.get()).collect();
            for mut p in pages {
                p.buffer_mut().fill(b'F');
            }
        }
        while let Some(p) = posted.get() {
            ep.post_recv(p)
                .map_err(|e| format!("post receive: {}", e.error))?;
        }
        let waiter = if !waits {
            Waiter::Spin
        } else {
            match ep.wait_fd() {
                Some(fd) => Waiter::Fds(vec![fd]),
                _ => {
                    let name = format!("fabriq-bench-floor-{}-{}", std::process::id(), nanos());
                    let s = UnixDatagram::bind_addr(
                        &SocketAddr::from_abstract_name(name.as_bytes())
                            .map_err(|e| format!("doorbell name: {e}"))?,
                    )
                    .map_err(|e| format!("doorbell: {e}"))?;
                    s.set_nonblocking(true)
                        .map_err(|e| format!("doorbell: {e}"))?;
                    Waiter::Doorbell(s, name)
                }
            }
        };
        // The posted pages keep their registration alive; they come back
        // in Received events and are posted again.
        drop(posted);
        Ok(Side {
            ep,
            sends: sends_pool,
            events: Vec::with_capacity(64),
            waiter,
            received: 0,
            hello: None,
            ringer: None,
            unrung: Vec::new(),
            size,
        })
    }

    /// This side's address for the peer: `fi:HEX:DOORBELL`.
    fn endpoint(&self) -> Result<String, String> {
        let name = self.ep.name().map_err(ofi("endpoint name"))?;
        let doorbell = match &self.waiter {
            Waiter::Doorbell(_, n) => n.as_str(),
            _ => "",
        };
        Ok(format!("fi:{}:{doorbell}", hex(&name)))
    }

    /// Inserts a peer from its `fi:HEX:DOORBELL`.
    fn connect(&mut self, endpoint: &str) -> Result<Peer, String> {
        let mut parts = endpoint.splitn(3, ':');
        let (Some("fi"), Some(h), Some(doorbell)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("not a fabric floor endpoint: {endpoint:?}"));
        };
        let name = unhex(h).ok_or_else(|| format!("bad address in {endpoint:?}"))?;
        let addr = self.ep.insert_peer(&name).map_err(ofi("insert peer"))?;
        Ok(Peer {
            addr,
            doorbell: (!doorbell.is_empty()).then(|| doorbell.to_string()),
        })
    }

    /// Reads both completion queues once: counts received messages (the
    /// first of a hello-less peer too), reposts their pages, frees sent
    /// pages. Returns how many events it read.
    fn poll(&mut self) -> Result<usize, String> {
        self.events.clear();
        let n = self.ep.poll(&mut self.events, 64);
        let count = self.events.len();
        let mut failed = None;
        for event in self.events.drain(..) {
            match event {
                Event::Sent { .. } => {}
                Event::Received { page, .. } => {
                    if page.len() != self.size
                        && self.hello.is_none()
                        && page.as_slice().starts_with(b"HELLO")
                    {
                        self.hello = Some(page.as_slice().to_vec());
                    } else {
                        self.received += 1;
                    }
                    if let Err(e) = self.ep.post_recv(page) {
                        failed.get_or_insert(format!("repost receive: {}", e.error));
                    }
                }
                other => {
                    failed.get_or_insert(format!("completion: {other:?}"));
                }
            }
        }
        n.map_err(ofi("poll"))?;
        match failed {
            Some(why) => Err(why),
            None => Ok(count),
        }
    }

    /// Sends `len` bytes (`data` first, the rest as is) to `peer`, waiting
    /// for a free page and retrying while the provider says EAGAIN.
    fn send(&mut self, peer: &Peer, data: &[u8], len: usize) -> Result<(), String> {
        let deadline = Instant::now() + STALL;
        let mut page = loop {
            if let Some(p) = self.sends.get() {
                break p;
            }
            // Sleeping receivers may hold the completions we wait for.
            self.ring_unrung()?;
            self.poll()?;
            if Instant::now() > deadline {
                return Err("no send completed in 30 s".into());
            }
        };
        page.buffer_mut()[..data.len()].copy_from_slice(data);
        page.set_len(len);
        loop {
            match self.ep.send(page, peer.addr, None, 0) {
                Ok(()) => return Ok(()),
                Err(e) if e.error.is_again() && Instant::now() < deadline => {
                    page = e.page;
                    self.poll()?;
                }
                Err(e) => return Err(format!("send: {}", e.error)),
            }
        }
    }

    /// Notes that `peer` was sent to and not rung yet.
    fn unrung(&mut self, peer: &Peer) {
        if let Some(name) = &peer.doorbell {
            if !self.unrung.contains(name) {
                self.unrung.push(name.clone());
            }
        }
    }

    /// Rings every peer sent to since its last ring.
    fn ring_unrung(&mut self) -> Result<(), String> {
        for name in std::mem::take(&mut self.unrung) {
            self.ring_name(&name)?;
        }
        Ok(())
    }

    /// Rings the peer's doorbell (if it has one).
    fn ring(&mut self, peer: &Peer) -> Result<(), String> {
        match &peer.doorbell {
            Some(name) => self.ring_name(&name.clone()),
            None => Ok(()),
        }
    }

    /// Rings the doorbell named `name`.
    fn ring_name(&mut self, name: &str) -> Result<(), String> {
        if self.ringer.is_none() {
            let s = UnixDatagram::unbound().map_err(|e| format!("ringer: {e}"))?;
            s.set_nonblocking(true)
                .map_err(|e| format!("ringer: {e}"))?;
            self.ringer = Some(s);
        }
        let addr = SocketAddr::from_abstract_name(name.as_bytes())
            .map_err(|e| format!("doorbell {name}: {e}"))?;
        match self.ringer.as_ref().map(|s| s.send_to_addr(&[1], &addr)) {
            Some(Ok(_)) => Ok(()),
            // Full: rings are unread, the peer wakes anyway.
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            // Gone: a receiver that has all its messages closes its
            // doorbell while the last rings of a fan-out are on their way.
            Some(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(()),
            Some(Err(e)) => Err(format!("ring {name}: {e}")),
            None => Ok(()),
        }
    }

    /// Waits until a message (or, with `hello`, the hello) has arrived,
    /// sleeping as the side's [`Waiter`] says.
    fn wait(&mut self, hello: bool) -> Result<(), String> {
        let deadline = Instant::now() + STALL;
        let arrived = |s: &Side| {
            if hello {
                s.hello.is_some()
            } else {
                s.received > 0
            }
        };
        loop {
            self.poll()?;
            if arrived(self) {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("no message in 30 s".into());
            }
            let ms = left.as_millis().min(1000) as i32;
            match &self.waiter {
                Waiter::Spin => {}
                Waiter::Fds(fds) => {
                    // fi_trywait says whether sleeping is safe now.
                    if self.ep.try_wait().map_err(ofi("fi_trywait"))? {
                        sleep_on(fds, ms)?;
                    }
                }
                Waiter::Doorbell(s, _) => {
                    let fd = s.as_raw_fd();
                    let mut buf = [0u8; 64];
                    while s.recv(&mut buf).is_ok() {}
                    // A ring after this look wakes the sleep below.
                    self.poll()?;
                    if arrived(self) {
                        return Ok(());
                    }
                    sleep_on(&[fd], ms)?;
                }
            }
        }
    }

    /// Takes one received message, waiting for it.
    fn recv(&mut self) -> Result<(), String> {
        self.wait(false)?;
        self.received -= 1;
        Ok(())
    }

    /// Takes the hello, waiting for it, and inserts its sender.
    fn accept(&mut self) -> Result<Peer, String> {
        self.wait(true)?;
        let hello = self.hello.take().unwrap_or_default();
        let text = std::str::from_utf8(&hello[5..]).map_err(|_| "hello is not text".to_string())?;
        let end = text.find('\0').unwrap_or(text.len());
        self.connect(&text[..end])
    }

    /// Says hello to `peer`: our endpoint, so that it can answer.
    fn hello(&mut self, peer: &Peer) -> Result<(), String> {
        let mut msg = b"HELLO".to_vec();
        msg.extend_from_slice(self.endpoint()?.as_bytes());
        msg.push(0);
        if msg.len() > HELLO_ROOM {
            return Err(format!("hello of {} bytes", msg.len()));
        }
        // Never the scenario's size, so the receiver tells it apart.
        let len = if msg.len() == self.size {
            msg.len() + 1
        } else {
            msg.len()
        };
        self.send(peer, &msg, len)?;
        self.ring(peer)
    }

    /// Busy-polls until every send completed.
    fn drain_sends(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STALL;
        while self.ep.sends_in_flight() > 0 {
            self.poll()?;
            if Instant::now() > deadline {
                return Err("sends still in flight after 30 s".into());
            }
        }
        Ok(())
    }
}

/// poll(2) on `fds` for input, at most `ms` milliseconds.
fn sleep_on(fds: &[RawFd], ms: i32) -> Result<(), String> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: pfds is a live array of pfds.len() pollfd structs for the
    // call's duration; poll writes only their revents.
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(format!("poll: {e}"));
        }
    }
    Ok(())
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Runs one side of a floor trial.
pub fn run(spec: &WorkerSpec, role: Role, gate: &dyn Gate) -> Result<Outcome, String> {
    match role {
        Role::Sender => sender(spec, gate),
        Role::Receiver => receiver(spec, gate),
        Role::Client => client(spec),
        Role::Server => server(spec, gate),
        Role::Inproc => Err("the fabric floor has no inproc variant".into()),
    }
}

/// Streams `n` messages to every peer in turn; with `rings`, rings the
/// peers every [`RING_EVERY`] rounds and at the end.
fn stream(side: &mut Side, peers: &[Peer], n: u64, rings: bool) -> Result<(), String> {
    let size = side.size;
    for round in 1..=n {
        for p in peers {
            side.send(p, &[], size)?;
            if rings {
                side.unrung(p);
            }
        }
        if round % RING_EVERY == 0 {
            side.ring_unrung()?;
        }
    }
    side.ring_unrung()
}

/// Whether the scenario fans out to several receivers (which then sleep
/// rather than busy-poll, as fabriq's subscribers do).
fn fans_out(sc: &Scenario) -> bool {
    sc.subs > 1
}

fn sender(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let pages = if fans_out(sc) {
        fan_out_pages(sc.size, spec.endpoints.len())
    } else {
        window(sc.size)
    };
    let mut side = Side::open(sc.transport, sc.size, 4, pages, false)?;
    let peers = spec
        .endpoints
        .iter()
        .map(|ep| side.connect(ep))
        .collect::<Result<Vec<_>, _>>()?;
    for p in &peers {
        side.hello(p)?;
    }
    let rings = fans_out(sc);
    stream(&mut side, &peers, sc.warm, rings)?;
    while !gate.go()? {
        // Manual progress: what is in flight moves only while polled.
        side.poll()?;
        std::thread::sleep(WARM_PAUSE);
    }
    let before = Usage::now();
    let start = Instant::now();
    stream(&mut side, &peers, sc.count, rings)?;
    side.drain_sends()?;
    let elapsed_s = start.elapsed().as_secs_f64();
    gate.wait_done()?;
    let usage = Usage::now().since(&before);
    Ok(Outcome::sent(sc, elapsed_s, usage))
}

fn receiver(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let w = window(sc.size);
    let mut side = Side::open(sc.transport, sc.size, w, 1, fans_out(sc))?;
    gate.bound(&side.endpoint()?);
    side.accept()?;
    for _ in 0..sc.warm {
        side.recv()?;
    }
    gate.ready();
    // The clock starts at the first timed message.
    side.recv()?;
    let before = Usage::now();
    let start = Instant::now();
    let started_at = crate::worker::wall_now();
    for _ in 1..sc.count {
        side.recv()?;
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    let span = Some((started_at, crate::worker::wall_now()));
    let usage = Usage::now().since(&before);
    let timed = sc.count.saturating_sub(1).max(1) as f64;
    Ok(Outcome {
        messages: sc.count,
        bytes: sc.count * sc.size as u64,
        elapsed_s,
        rate: timed / elapsed_s.max(1e-9),
        usage,
        span,
        ..Outcome::default()
    })
}

fn waits(sc: &Scenario) -> bool {
    sc.variant != FabricVariant::Spin
}

fn client(spec: &WorkerSpec) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let mut side = Side::open(sc.transport, sc.size, 4, 4, waits(sc))?;
    let server = side.connect(spec.endpoints.first().ok_or("no server endpoint")?)?;
    side.hello(&server)?;
    let size = sc.size;
    time_round_trips(sc, || {
        side.send(&server, &[], size)?;
        side.ring(&server)?;
        side.recv()
    })
}

fn server(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let mut side = Side::open(sc.transport, sc.size, 4, 4, waits(sc))?;
    gate.bound(&side.endpoint()?);
    let client = side.accept()?;
    let mut before = Usage::now();
    let mut start = Instant::now();
    for i in 0..sc.warm + sc.count {
        side.recv()?;
        if i == sc.warm {
            before = Usage::now();
            start = Instant::now();
        }
        side.send(&client, &[], sc.size)?;
        side.ring(&client)?;
    }
    // The last reply may still need our progress (manual progress).
    side.drain_sends()?;
    Ok(Outcome::round_trips(sc, start, &before, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_hex() {
        let bytes = [0u8, 1, 0xab, 0xff, 0x10];
        assert_eq!(unhex(&hex(&bytes)).as_deref(), Some(&bytes[..]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    /// Every byte the floor sends was written: a send page never written
    /// is the kernel's zero page, which the provider's copy reads from
    /// the cache (the floor moved 1 MiB at twice the rate real bytes
    /// allow).
    #[test]
    fn every_send_page_is_written_before_it_is_sent() {
        let size = 64 * 1024;
        let side = Side::open(Transport::OfiShm, size, 4, 8, false).expect("an shm endpoint");
        let pages: Vec<_> = std::iter::from_fn(|| side.sends.get()).collect();
        assert_eq!(pages.len(), 8);
        for page in &pages {
            assert!(page.buffer().len() >= size);
            assert!(
                page.buffer().iter().all(|&b| b == b'F'),
                "page {} has bytes never written",
                page.index()
            );
        }
    }

    #[test]
    fn the_window_keeps_large_messages_to_16_mib_in_flight() {
        assert_eq!(window(64), 64);
        assert_eq!(window(65536), 64);
        assert_eq!(window(1 << 20), 16);
        assert_eq!(window(64 << 20), 8);
    }

    #[test]
    fn a_fan_out_sender_has_a_window_per_receiver_up_to_64_mib() {
        assert_eq!(fan_out_pages(64, 16), 64 * 16);
        assert_eq!(fan_out_pages(65536, 4), 64 * 4);
        assert_eq!(fan_out_pages(65536, 16), 1024, "64 MiB of 64 KiB pages");
        assert_eq!(fan_out_pages(64 << 20, 16), 8, "never below one window");
    }
}
