//! The I/O thread's loop: one mio poll for every listener and session
//! (of a connection or a udp socket) of the thread, the commands and
//! wake-ups posted to it, and
//! the timers of its sessions (reconnects, handshakes, heartbeats,
//! linger) and listeners (accept retries).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::engine::Link;
use super::session::{self, Session};
use super::{next_token, Cmd, ReactorWaker, Shared, WAKER};
use crate::error::Error;
use crate::mailbox::Mailbox;
use crate::monitor::Event;
use crate::options::Options;
use crate::transport::{DataPath, Listener, Poller, SharedSources, Stream};

/// How soon a listener whose accept failed (out of descriptors or
/// memory) tries again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

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
pub(super) struct EventLoop {
    poll: Poll,
    pub(super) events: Events,
    pub(super) shared: Arc<Shared>,
    listeners: HashMap<usize, ListenerEntry>,
    pub(super) sessions: HashMap<usize, Session>,
    /// Sources that serve many sessions (see `transport::Demux`).
    pub(super) shared_sources: SharedSources,
    pub(super) timers: BinaryHeap<Reverse<(Instant, usize)>>,
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
    pub(super) fn new(poll: Poll, shared: Arc<Shared>) -> EventLoop {
        EventLoop {
            poll,
            events: Events::with_capacity(256),
            shared,
            listeners: HashMap::new(),
            sessions: HashMap::new(),
            shared_sources: SharedSources::default(),
            timers: BinaryHeap::new(),
            wake_at: HashMap::new(),
            shutting_down: false,
            was_woken: false,
            fanned_out: Vec::new(),
            taken: 0,
        }
    }

    pub(super) fn run(mut self) {
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
            let live = self.sessions.len() + self.listeners.len();
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
    pub(super) fn next_timer(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// One turn: waits up to `timeout` for readiness, runs the sessions
    /// and listeners it names, the commands and wake-ups posted, and the
    /// timers that are due. Returns true once the loop is finished
    /// (shutting down with no session left).
    pub(super) fn turn(&mut self, timeout: Option<Duration>) -> bool {
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
            Cmd::Session(session) => {
                self.taken += 1;
                let token = session.token;
                self.sessions.insert(token, *session);
                self.drive(token, now);
            }
            Cmd::Unbind(token) => self.unbind(token, now),
            Cmd::Disconnect(token, done) => {
                self.remove_session(token, now);
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

    /// Stops a listener and ends the connections it accepted (or ends a
    /// bound udp socket's session, whose token a udp bind returned).
    fn unbind(&mut self, token: usize, now: Instant) {
        self.remove_session(token, now);
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
            self.remove_session(t, now);
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

    /// Runs a session and applies what it asks for.
    fn drive(&mut self, token: usize, now: Instant) {
        let Some(session) = self.sessions.get_mut(&token) else {
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
            session::Outcome::Remove => self.remove_session(token, now),
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

    fn remove_session(&mut self, token: usize, now: Instant) {
        self.wake_at.remove(&token);
        if let Some(mut s) = self.sessions.remove(&token) {
            let mut poller = Poller {
                registry: self.poll.registry(),
                shared: &mut self.shared_sources,
            };
            s.close(&mut poller, now);
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
    }
}
