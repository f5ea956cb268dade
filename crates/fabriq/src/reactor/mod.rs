//! The I/O thread: one mio event loop per context that runs every
//! connection of a transport (sessions), the listeners, and the timers
//! (reconnects, handshakes, heartbeats).
//!
//! Application threads talk to it through a command queue and a
//! `mio::Waker`; pipes wake a session through [`ReactorWaker`], which
//! queues the session's token and wakes the loop only if it may be
//! asleep. Sessions talk to sockets through pipes and the socket mailbox.
//! Nothing here knows a transport: endpoints come as
//! [`Address`]es whose transport binds and connects.
//!
//! The loop reads time from a [`Clock`]: the system's, or in the
//! deterministic tests (`tests.rs`) a simulated one that the test moves,
//! with the loop stepped by hand rather than run on a thread.

mod engine;
mod session;
#[cfg(test)]
mod tests;

#[cfg(feature = "fuzzing")]
pub(crate) use engine::fabric::wire;
#[cfg(feature = "fuzzing")]
pub(crate) use engine::fabric::{addr, conn};
pub(crate) use engine::udp::Framing;
use engine::udp::UdpEngine;

use engine::Link;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use crate::endpoint::Address;
use crate::error::{Error, Result};
use crate::mailbox::Mailbox;
use crate::monitor::Event;
use crate::options::Options;
use crate::pipe::{PeerMeta, PipeEnd, Queue, Waker};
use crate::transport::{DataPath, Listener, Poller, SharedSources, Stream};

use session::Session;

const WAKER: Token = Token(0);

static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

fn next_token() -> usize {
    NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
}

/// Work handed to the I/O thread.
enum Cmd {
    Listen {
        token: usize,
        listener: Box<dyn Listener>,
        socket: Arc<Mailbox>,
        opts: Box<Options>,
        text: String,
        data_path: DataPath,
    },
    Connect(Box<Session>),
    /// A `udp://` socket and its pipe.
    Udp(usize, Box<UdpEngine>),
    Unbind(usize),
    /// A session to end, and who to tell once it has.
    Disconnect(usize, std::sync::mpsc::Sender<()>),
    CloseSocket {
        socket: u64,
        linger: i32,
        /// Told once the socket's listeners are closed (and their CLOSED
        /// events sent), for a monitored socket's close to wait on.
        done: Option<std::sync::mpsc::Sender<()>>,
    },
    Shutdown,
}

#[derive(Default)]
struct Inbox {
    cmds: Vec<Cmd>,
    ready: Vec<usize>,
}

/// How soon a listener whose accept failed (out of descriptors or
/// memory) tries again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

struct Shared {
    waker: mio::Waker,
    inbox: Mutex<Inbox>,
    clock: Clock,
    /// How loaded the loop is, for choosing among several I/O threads:
    /// the listeners and sessions it had after its last turn (`live`)
    /// plus those handed to it and not taken yet (`posted - taken`).
    live: AtomicUsize,
    posted: AtomicUsize,
    taken: AtomicUsize,
}

/// The I/O thread's time: the system clock, or a simulated one that moves
/// only when a test advances it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clock {
    simulated: Option<Arc<Mutex<Instant>>>,
}

impl Clock {
    pub(crate) fn now(&self) -> Instant {
        match &self.simulated {
            None => Instant::now(),
            Some(t) => *t.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// A clock that stands still until [`Clock::advance`].
    #[cfg(test)]
    pub(crate) fn simulated() -> Clock {
        Clock {
            simulated: Some(Arc::new(Mutex::new(Instant::now()))),
        }
    }

    /// Moves a simulated clock to `to` (never backwards).
    #[cfg(test)]
    pub(crate) fn advance_to(&self, to: Instant) {
        let t = self.simulated.as_ref().expect("a simulated clock");
        let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
        *t = (*t).max(to);
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn post(&self, f: impl FnOnce(&mut Inbox)) {
        let was_empty = {
            let mut inbox = self.lock();
            let empty = inbox.cmds.is_empty() && inbox.ready.is_empty();
            f(&mut inbox);
            empty
        };
        if was_empty {
            if let Err(e) = self.waker.wake() {
                tracing::error!("cannot wake the I/O thread: {e}");
            }
        }
    }
}

/// Wakes one session of the I/O thread (used by pipes).
#[derive(Clone)]
pub(crate) struct ReactorWaker {
    shared: Arc<Shared>,
    token: usize,
}

impl std::fmt::Debug for ReactorWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReactorWaker({})", self.token)
    }
}

impl ReactorWaker {
    pub(crate) fn wake(&self) {
        let token = self.token;
        self.shared.post(|inbox| inbox.ready.push(token));
    }
}

/// Handle to the I/O thread.
pub(crate) struct Reactor {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Reactor {
    /// Starts an I/O thread named `fabriq-io` (`fabriq-io-N` for the
    /// `N`th of several, from 1).
    pub(crate) fn start(index: usize) -> std::io::Result<Reactor> {
        let (reactor, event_loop) = Reactor::unstarted(Clock::default())?;
        let name = match index {
            0 => "fabriq-io".to_string(),
            n => format!("fabriq-io-{n}"),
        };
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || event_loop.run())?;
        *reactor.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(thread);
        Ok(reactor)
    }

    /// A reactor and its loop, not yet running: [`Reactor::start`] runs
    /// the loop on its thread; the deterministic tests step it by hand.
    fn unstarted(clock: Clock) -> std::io::Result<(Reactor, EventLoop)> {
        let poll = Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), WAKER)?;
        let shared = Arc::new(Shared {
            waker,
            inbox: Mutex::new(Inbox::default()),
            clock,
            live: AtomicUsize::new(0),
            posted: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        });
        let event_loop = EventLoop::new(poll, shared.clone());
        let reactor = Reactor {
            shared,
            thread: Mutex::new(None),
        };
        Ok((reactor, event_loop))
    }

    /// The listeners and connections this I/O thread serves or is about
    /// to (accepted connections count once the loop has seen them).
    pub(crate) fn load(&self) -> usize {
        // `taken` first: the loop stores `live` before `taken`, so a
        // `taken` that counts a command comes with a `live` that counts
        // what it made (a newer `live` only counts it twice for a while).
        let s = &self.shared;
        let taken = s.taken.load(Ordering::Acquire);
        let live = s.live.load(Ordering::Acquire);
        let posted = s.posted.load(Ordering::Acquire);
        live + posted.saturating_sub(taken)
    }

    fn reactor_waker(&self, token: usize) -> ReactorWaker {
        ReactorWaker {
            shared: self.shared.clone(),
            token,
        }
    }

    /// Binds an endpoint now (so errors come back at once) and hands the
    /// listener to the I/O thread.
    pub(crate) fn listen(
        &self,
        endpoint: &Address,
        socket: &Arc<Mailbox>,
        opts: &Options,
    ) -> Result<(usize, String)> {
        let (listener, text) = endpoint.transport.bind(endpoint, opts)?;
        socket
            .monitor
            .emit(Event::Listening, listener.monitor_value(), &text);
        let token = next_token();
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared.post(|inbox| {
            inbox.cmds.push(Cmd::Listen {
                token,
                listener,
                socket: socket.clone(),
                opts: Box::new(opts.clone()),
                text: text.clone(),
                data_path: endpoint.transport.data_path(endpoint),
            })
        });
        Ok((token, text))
    }

    /// Starts connecting in the background. Unless IMMEDIATE is set (or
    /// the socket is a ROUTER, which needs the peer's identity first), the
    /// pipe exists from now on, so messages queue until the peer is there.
    pub(crate) fn connect(
        &self,
        endpoint: &Address,
        text: &str,
        socket: &Arc<Mailbox>,
        opts: &Options,
    ) -> Result<(usize, Option<PipeEnd>)> {
        endpoint.transport.check_connect(endpoint, opts)?;
        let token = next_token();
        let link = Link::new(self.reactor_waker(token), self.shared.clock.clone());
        // (A STREAM's peer gets a new routing id per connection too.)
        let early_pipe = !opts.immediate
            && !matches!(
                socket.socket_type,
                fabriq_zmtp::SocketType::Router | fabriq_zmtp::SocketType::Stream
            );
        let (socket_end, session_end) = if early_pipe {
            let (a, b) = make_pipe(&link, socket, opts, None);
            (Some(a), Some(b))
        } else {
            (None, None)
        };
        let base = session::Base {
            token,
            socket: socket.clone(),
            opts: opts.clone(),
            endpoint: text.to_string(),
            link,
            data_path: endpoint.transport.data_path(endpoint),
        };
        let session =
            Session::connecting(base, endpoint.clone(), session_end, self.shared.clock.now());
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Connect(Box::new(session))));
        Ok((token, socket_end))
    }

    /// Hands a bound (or, for a sender, unbound) udp socket to the I/O
    /// thread; returns its token and the socket's end of its pipe, which
    /// takes every RADIO group (DISHes filter).
    pub(crate) fn udp(
        &self,
        udp_socket: std::net::UdpSocket,
        socket: &Arc<Mailbox>,
        opts: &Options,
        framing: Framing,
        dirs: crate::transport::udp::Directions,
    ) -> (usize, PipeEnd) {
        let token = next_token();
        let link = Link::new(self.reactor_waker(token), self.shared.clock.clone());
        let peer = PeerMeta {
            identity: Default::default(),
            metadata: None,
            all_groups: true,
        };
        let (socket_end, engine_end) = make_pipe(&link, socket, opts, Some(peer));
        let engine = UdpEngine::new(udp_socket, engine_end, link, socket.clone(), framing, dirs);
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Udp(token, Box::new(engine))));
        (token, socket_end)
    }

    pub(crate) fn unbind(&self, token: usize) {
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Unbind(token)));
    }

    /// Ends a session and waits until it has (its pipe closed), so the
    /// socket stops using it at once, as libzmq's zmq_disconnect.
    pub(crate) fn disconnect(&self, token: usize) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Disconnect(token, tx)));
        // An I/O thread that is gone drops the sender: no wait.
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }

    /// Closes the socket's listeners and lingers its sessions. With
    /// `done`, it is told once the listeners are closed.
    pub(crate) fn close_socket(
        &self,
        socket: u64,
        linger: i32,
        done: Option<std::sync::mpsc::Sender<()>>,
    ) {
        self.shared.post(|inbox| {
            inbox.cmds.push(Cmd::CloseSocket {
                socket,
                linger,
                done,
            })
        });
    }

    /// Asks the loop to finish (after lingering sessions) and waits.
    pub(crate) fn shutdown_and_wait(&self) {
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            self.shared.post(|inbox| inbox.cmds.push(Cmd::Shutdown));
            if handle.join().is_err() {
                tracing::error!("the I/O thread panicked");
            }
        }
    }
}

/// Builds the two ends of a session pipe. The session end's `rx` is the
/// socket's outgoing queue (bounded by SNDHWM), its `tx` the socket's
/// incoming queue (bounded by RCVHWM). The connection's engine is the
/// session side's waker, and the socket's end carries it too, so the
/// socket can ask it to read.
pub(super) fn make_pipe(
    link: &Arc<Link>,
    socket: &Arc<Mailbox>,
    opts: &Options,
    peer: Option<PeerMeta>,
) -> (PipeEnd, PipeEnd) {
    let session_waker = Waker::Peer(link.clone());
    let socket_waker = Waker::Socket(socket.signal.clone());
    let outgoing = Queue::new(
        Options::hwm(opts.sndhwm),
        session_waker.clone(),
        socket_waker.clone(),
    );
    let incoming = Queue::new(Options::hwm(opts.rcvhwm), socket_waker, session_waker);
    outgoing.set_conflate(opts.conflate);
    incoming.set_conflate(opts.conflate);
    if opts.probe_router {
        outgoing.push_probe();
    }
    let peer = peer.unwrap_or(PeerMeta {
        identity: Default::default(),
        metadata: None,
        all_groups: false,
    });
    let socket_end = PipeEnd {
        id: crate::pipe::next_pipe_id(),
        rx: incoming.clone(),
        tx: outgoing.clone(),
        peer: peer.clone(),
        peer_io: Some(link.clone()),
        reader: Default::default(),
    };
    let session_end = PipeEnd {
        id: socket_end.id,
        rx: outgoing,
        tx: incoming,
        peer,
        peer_io: None,
        reader: Default::default(),
    };
    (socket_end, session_end)
}

struct ListenerEntry {
    listener: Box<dyn Listener>,
    socket: Arc<Mailbox>,
    opts: Box<Options>,
    text: String,
    data_path: DataPath,
    /// An accept failed and a retry is scheduled (one at a time).
    retrying: bool,
}

/// The loop's own state, owned by the I/O thread.
struct EventLoop {
    poll: Poll,
    events: Events,
    shared: Arc<Shared>,
    listeners: HashMap<usize, ListenerEntry>,
    sessions: HashMap<usize, Session>,
    /// `udp://` sockets.
    udp: HashMap<usize, UdpEngine>,
    /// Sources that serve many sessions (see `transport::Demux`).
    shared_sources: SharedSources,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Per session, the time of its live entry in `timers`: the earliest
    /// wake-up asked for and not yet run. An entry of `timers` that is not
    /// a session's live one is stale and is dropped when it comes up. A
    /// session asks for its wake-up after every turn, thousands of times a
    /// second under load and mostly for the same time; without this each
    /// ask was an entry, and each stale entry that fired drove the session
    /// again and put a new one in (a heap that grew by one entry per
    /// turn, forever: see docs/reliability.md, the soak).
    wake_at: HashMap<usize, Instant>,
    shutting_down: bool,
    /// Whether the last turn moved messages for sockets that woke us.
    was_woken: bool,
    /// Sessions a shared source reported in this turn (kept for its
    /// capacity).
    fanned_out: Vec<Token>,
    /// Listen and Connect commands taken (published as `Shared::taken`).
    taken: usize,
}

impl EventLoop {
    fn new(poll: Poll, shared: Arc<Shared>) -> EventLoop {
        EventLoop {
            poll,
            events: Events::with_capacity(256),
            shared,
            listeners: HashMap::new(),
            sessions: HashMap::new(),
            udp: HashMap::new(),
            shared_sources: SharedSources::default(),
            timers: BinaryHeap::new(),
            wake_at: HashMap::new(),
            shutting_down: false,
            was_woken: false,
            fanned_out: Vec::new(),
            taken: 0,
        }
    }

    fn run(mut self) {
        loop {
            if self.was_woken {
                // Give the CPU to a runnable application thread before
                // sleeping. When it shares our CPU (a sender pinned with
                // its I/O thread), each of its wake-ups would otherwise
                // preempt it at once, and we would drain a few messages per
                // context switch; after a yield it keeps producing for the
                // rest of its slice and we take the lot in one turn. With
                // nobody else runnable on this CPU the yield returns at
                // once. Wake-ups stay as they are, so none is lost.
                std::thread::yield_now();
            }
            let now = self.shared.clock.now();
            let mut timeout = self.next_timer().map(|t| t.saturating_duration_since(now));
            if let Some(limit) = self.poll_shared_sources(now) {
                timeout = Some(timeout.map_or(limit, |t| t.min(limit)));
            }
            if self.turn(timeout) {
                break;
            }
            let live = self.sessions.len() + self.listeners.len() + self.udp.len();
            self.shared.live.store(live, Ordering::Release);
            self.shared.taken.store(self.taken, Ordering::Release);
        }
        self.close_listeners();
    }

    /// Runs the sessions of shared sources that must be read rather than
    /// slept on (a fabric's completion queue that `fi_trywait` refused, or
    /// one without wait descriptors). Returns how long the loop may sleep
    /// at most.
    fn poll_shared_sources(&mut self, now: Instant) -> Option<Duration> {
        let mut ready = std::mem::take(&mut self.fanned_out);
        let limit = self.shared_sources.before_sleep(&mut ready);
        ready.sort_unstable();
        ready.dedup();
        for Token(t) in ready.drain(..) {
            if let Some(s) = self.sessions.get_mut(&t) {
                s.ready(true, true);
                self.drive(t, now);
            }
        }
        self.fanned_out = ready;
        limit
    }

    /// The earliest pending timer.
    fn next_timer(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// One turn: waits up to `timeout` for readiness, runs the sessions
    /// and listeners it names, the commands and wake-ups posted, and the
    /// timers that are due. Returns true once the loop is finished
    /// (shutting down with no session left).
    fn turn(&mut self, timeout: Option<Duration>) -> bool {
        let mut events = std::mem::replace(&mut self.events, Events::with_capacity(0));
        if let Err(e) = self.poll.poll(&mut events, timeout) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::error!("I/O thread poll failed: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            self.events = events;
            return false;
        }
        let now = self.shared.clock.now();
        for event in events.iter() {
            let token = event.token().0;
            if event.token() == WAKER {
                continue;
            }
            let mut fanned_out = std::mem::take(&mut self.fanned_out);
            if self.listeners.contains_key(&token) {
                self.accept(token, now);
            } else if self.udp.contains_key(&token) {
                self.drive(token, now);
            } else if self
                .shared_sources
                .take_ready(event.token(), &mut fanned_out)
            {
                // One event, many sessions: each one the source has work
                // for runs (once) as if its own descriptor had been
                // reported.
                fanned_out.sort_unstable();
                fanned_out.dedup();
                for Token(t) in fanned_out.drain(..) {
                    if let Some(s) = self.sessions.get_mut(&t) {
                        s.ready(true, true);
                        self.drive(t, now);
                    }
                }
            } else if let Some(s) = self.sessions.get_mut(&token) {
                s.ready(
                    event.is_readable() || event.is_read_closed() || event.is_error(),
                    event.is_writable() || event.is_write_closed() || event.is_error(),
                );
                if event.is_read_closed() || event.is_error() {
                    s.hung_up();
                }
                self.drive(token, now);
            }
            self.fanned_out = fanned_out;
        }
        self.events = events;
        let inbox = std::mem::take(&mut *self.shared.lock());
        for cmd in inbox.cmds {
            self.command(cmd, now);
        }
        self.was_woken = !inbox.ready.is_empty();
        for token in inbox.ready {
            self.drive(token, now);
        }
        self.fire_timers(self.shared.clock.now());
        self.shutting_down && self.sessions.is_empty()
    }

    fn command(&mut self, cmd: Cmd, now: Instant) {
        match cmd {
            Cmd::Listen {
                token,
                listener,
                socket,
                opts,
                text,
                data_path,
            } => {
                let entry = ListenerEntry {
                    listener,
                    socket,
                    opts,
                    text,
                    data_path,
                    retrying: false,
                };
                self.taken += 1;
                self.add_listener(token, entry, now);
            }
            Cmd::Connect(session) => {
                self.taken += 1;
                let token = session.token;
                self.sessions.insert(token, *session);
                self.drive(token, now);
            }
            Cmd::Udp(token, mut engine) => {
                self.taken += 1;
                if let Err(e) = engine.register(self.poll.registry(), Token(token)) {
                    tracing::error!("cannot register a udp socket: {e}");
                    engine.close();
                    return;
                }
                self.udp.insert(token, *engine);
                self.drive(token, now);
            }
            Cmd::Unbind(token) => self.unbind(token),
            Cmd::Disconnect(token, done) => {
                self.remove_session(token);
                self.remove_udp(token);
                let _ = done.send(());
            }
            Cmd::CloseSocket {
                socket,
                linger,
                done,
            } => {
                self.close_socket(socket, linger, now);
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
            Cmd::Shutdown => {
                self.shutting_down = true;
                let tokens: Vec<usize> = self.sessions.keys().copied().collect();
                for t in tokens {
                    self.drive(t, now);
                }
            }
        }
    }

    /// Registers a bound listener and takes the connections that queued
    /// before it was registered.
    fn add_listener(&mut self, token: usize, mut entry: ListenerEntry, now: Instant) {
        if let Err(e) = entry.listener.register(self.poll.registry(), Token(token)) {
            tracing::error!("cannot register listener {}: {e}", entry.text);
            return;
        }
        self.listeners.insert(token, entry);
        self.accept(token, now);
    }

    /// Stops a listener and ends the connections it accepted.
    fn unbind(&mut self, token: usize) {
        self.remove_udp(token);
        if let Some(mut l) = self.listeners.remove(&token) {
            l.listener.deregister(self.poll.registry());
            // As libzmq: CLOSED once the endpoint is free (the fd closed
            // and an ipc file removed), so a watcher may bind it again.
            let value = l.listener.monitor_value();
            let socket = l.socket.clone();
            let text = std::mem::take(&mut l.text);
            drop(l);
            socket.monitor.emit(Event::Closed, value, &text);
        }
        let accepted: Vec<usize> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.accepted_by() == Some(token))
            .map(|(t, _)| *t)
            .collect();
        for t in accepted {
            self.remove_session(t);
        }
    }

    /// A socket was closed: its listeners go now, its sessions linger
    /// (send what is queued, up to `linger` ms; -1 without limit).
    fn close_socket(&mut self, socket: u64, linger: i32, now: Instant) {
        let listeners: Vec<usize> = self
            .listeners
            .iter()
            .filter(|(_, l)| l.socket.id == socket)
            .map(|(t, _)| *t)
            .collect();
        for t in listeners {
            if let Some(mut l) = self.listeners.remove(&t) {
                l.listener.deregister(self.poll.registry());
                // As libzmq: a closed socket's listeners report CLOSED
                // (before its monitor stops), once the endpoint is free.
                let value = l.listener.monitor_value();
                let socket = l.socket.clone();
                let text = std::mem::take(&mut l.text);
                drop(l);
                socket.monitor.emit(Event::Closed, value, &text);
            }
        }
        let udp: Vec<usize> = self
            .udp
            .iter()
            .filter(|(_, u)| u.owner.id == socket)
            .map(|(t, _)| *t)
            .collect();
        for t in udp {
            self.remove_udp(t);
        }
        let deadline = match linger {
            -1 => None,
            ms => Some(now + Duration::from_millis(ms.max(0) as u64)),
        };
        let tokens: Vec<usize> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.socket.id == socket)
            .map(|(t, _)| *t)
            .collect();
        for t in tokens {
            if let Some(s) = self.sessions.get_mut(&t) {
                s.start_linger(deadline);
                if let Some(d) = deadline {
                    self.schedule(t, d);
                }
            }
            self.drive(t, now);
        }
    }

    fn accept(&mut self, token: usize, now: Instant) {
        loop {
            let Some(entry) = self.listeners.get_mut(&token) else {
                return;
            };
            match entry.listener.accept() {
                Ok(Some(stream)) => self.add_accepted(token, stream, now),
                Ok(None) => return,
                // The peer gave up before we took it: take the next.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    // EMFILE and friends: report, and try again after a
                    // pause. Not on the next readiness event: the listener
                    // is edge-triggered, so the connections already
                    // waiting raise none, and once the backlog is full
                    // new ones are refused. (Before this retry a listener
                    // that ran out of descriptors never accepted again.)
                    entry.socket.monitor.emit(
                        Event::AcceptFailed,
                        Error::from_io(&e).to_raw() as u32,
                        &entry.text,
                    );
                    tracing::warn!("accept on {} failed: {e}", entry.text);
                    if !std::mem::replace(&mut entry.retrying, true) {
                        self.timers.push(Reverse((now + ACCEPT_RETRY, token)));
                    }
                    return;
                }
            }
        }
    }

    /// A session for a connection `listener` accepted.
    fn add_accepted(&mut self, listener: usize, stream: Box<dyn Stream>, now: Instant) {
        let Some(entry) = self.listeners.get(&listener) else {
            return;
        };
        let token = next_token();
        entry
            .socket
            .monitor
            .emit(Event::Accepted, stream.monitor_value(), &entry.text);
        let waker = ReactorWaker {
            shared: self.shared.clone(),
            token,
        };
        let base = session::Base {
            token,
            socket: entry.socket.clone(),
            opts: (*entry.opts).clone(),
            endpoint: entry.text.clone(),
            link: Link::new(waker, self.shared.clock.clone()),
            data_path: entry.data_path.clone(),
        };
        let mut poller = Poller {
            registry: self.poll.registry(),
            shared: &mut self.shared_sources,
        };
        let session = Session::accepted(base, listener, stream, &mut poller, now);
        self.sessions.insert(token, session);
        self.drive(token, now);
    }

    /// Runs a session (or udp socket) and applies what it asks for.
    fn drive(&mut self, token: usize, now: Instant) {
        let Some(session) = self.sessions.get_mut(&token) else {
            if let Some(u) = self.udp.get_mut(&token) {
                if !u.drive() {
                    self.remove_udp(token);
                }
            }
            return;
        };
        let mut poller = Poller {
            registry: self.poll.registry(),
            shared: &mut self.shared_sources,
        };
        let outcome = session.drive(&mut poller, now, self.shutting_down);
        let linger = session.linger_deadline();
        match outcome {
            session::Outcome::Keep { wake_at } => {
                // A lingering session must also run at its deadline,
                // whatever its engine waits for.
                if let Some(t) = wake_at.into_iter().chain(linger).min() {
                    self.schedule(token, t);
                }
            }
            session::Outcome::Again => {
                self.shared.post(|inbox| inbox.ready.push(token));
            }
            session::Outcome::Remove => self.remove_session(token),
        }
    }

    fn remove_udp(&mut self, token: usize) {
        if let Some(mut u) = self.udp.remove(&token) {
            u.deregister(self.poll.registry());
            u.close();
        }
    }

    /// Makes sure session `token` runs at `at` or earlier. A wake-up
    /// already due no later is enough: that turn asks again for the next.
    fn schedule(&mut self, token: usize, at: Instant) {
        match self.wake_at.get(&token) {
            Some(&t) if t <= at => {}
            _ => {
                self.wake_at.insert(token, at);
                self.timers.push(Reverse((at, token)));
            }
        }
    }

    fn remove_session(&mut self, token: usize) {
        self.wake_at.remove(&token);
        if let Some(mut s) = self.sessions.remove(&token) {
            let mut poller = Poller {
                registry: self.poll.registry(),
                shared: &mut self.shared_sources,
            };
            s.close(&mut poller);
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((t, token))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            // Timers are not cancelled, only checked: a session drives
            // itself from its own state. An entry that is not the
            // session's live one was superseded by an earlier wake-up,
            // which ran the session already.
            if self.sessions.contains_key(&token) {
                if self.wake_at.get(&token) == Some(&t) {
                    self.wake_at.remove(&token);
                    self.drive(token, now);
                }
            } else if let Some(l) = self.listeners.get_mut(&token) {
                l.retrying = false;
                self.accept(token, now);
            }
        }
    }

    fn close_listeners(&mut self) {
        for (_, mut l) in self.listeners.drain() {
            l.listener.deregister(self.poll.registry());
        }
        for (_, mut u) in self.udp.drain() {
            u.deregister(self.poll.registry());
            u.close();
        }
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        self.shutdown_and_wait();
    }
}
