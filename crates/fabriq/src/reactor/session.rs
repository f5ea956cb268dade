//! A session: one tcp or ipc connection of one socket, in the I/O thread.
//!
//! It owns the connection's life (connecting, the handshake, reconnects,
//! timers, monitor events, the pipe to the socket) and leaves moving bytes
//! and messages to the connection's engine (`engine.rs`), which it drives
//! from the I/O thread as the socket's thread may. A connecting session outlives its connections: it reconnects
//! with libzmq's intervals and backoff, keeps its pipe (so messages queue
//! meanwhile), and replays the subscriptions it has carried.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fabriq_zmtp::{Connection, ProtocolError};
use mio::{Registry, Token};

use super::engine::{End, Input, Link, Reads, StreamEngine};

use crate::mailbox::Mailbox;
use crate::message::Metadata;
use crate::monitor::{handshake_failure, Event};
use crate::options::{millis, Options};
use crate::pipe::{PeerMeta, PipeEnd};
use crate::topics::Topics;
use crate::transport::{self, Stream, Target};

/// Reads per turn before yielding to other sessions.
const READ_BUDGET: usize = 16;

/// What every session starts from: who it is and whom it serves.
pub(super) struct Base {
    pub token: usize,
    pub socket: Arc<Mailbox>,
    pub opts: Options,
    /// The endpoint as monitor events name it.
    pub endpoint: String,
    /// The connection's engine, shared with the socket's end of the pipe.
    pub link: Arc<Link>,
}

/// What the event loop should do with the session after a turn.
pub(super) enum Outcome {
    /// Keep it; run it again at `wake_at` if set.
    Keep { wake_at: Option<Instant> },
    /// It has more work right now (budget spent).
    Again,
    /// It is finished.
    Remove,
}

#[derive(Debug)]
enum Origin {
    Connect {
        target: Target,
        /// Current reconnect interval (grows with backoff).
        ivl: Option<Duration>,
        /// When to try again, while disconnected.
        retry_at: Option<Instant>,
    },
    Accept {
        listener: usize,
    },
}

pub(super) struct Session {
    pub token: usize,
    pub socket: Arc<Mailbox>,
    opts: Options,
    endpoint: String,
    origin: Origin,
    /// The connection's engine (see `engine.rs`).
    link: Arc<Link>,
    pipe: Option<PipeEnd>,
    /// The pipe lives only as long as one connection (accepted sessions,
    /// ROUTER and IMMEDIATE connects).
    pipe_per_connection: bool,
    /// Topics carried to the peer, replayed after a reconnect.
    subs: Topics,
    /// The socket is closed: finish sending, then go. `Some(None)`:
    /// linger forever.
    linger: Option<Option<Instant>>,
}

impl Session {
    /// A session in its initial state, with nothing connected yet.
    fn new(base: Base, origin: Origin, pipe: Option<PipeEnd>) -> Session {
        Session {
            token: base.token,
            socket: base.socket,
            opts: base.opts,
            endpoint: base.endpoint,
            origin,
            link: base.link,
            pipe_per_connection: pipe.is_none(),
            pipe,
            subs: Topics::default(),
            linger: None,
        }
    }

    pub(super) fn connecting(base: Base, target: Target, pipe: Option<PipeEnd>) -> Session {
        let origin = Origin::Connect {
            target,
            ivl: millis(base.opts.reconnect_ivl),
            retry_at: Some(Instant::now()),
        };
        Session::new(base, origin, pipe)
    }

    pub(super) fn accepted(
        base: Base,
        listener: usize,
        mut stream: Stream,
        registry: &Registry,
        now: Instant,
    ) -> Session {
        stream.tune(&base.opts);
        if let Err(e) = stream.register(registry, Token(base.token)) {
            tracing::error!("cannot register connection: {e}");
        }
        let s = Session::new(base, Origin::Accept { listener }, None);
        let mut io = s.link.lock();
        io.conn = Connection::new(s.opts.zmtp_config(s.socket.socket_type), now).ok();
        io.stream = Some(stream);
        io.readable = true;
        io.writable = true;
        drop(io);
        s
    }

    /// Records readiness the event loop saw for this session's stream.
    pub(super) fn ready(&self, readable: bool, writable: bool) {
        let mut io = self.link.lock();
        io.readable |= readable;
        io.writable |= writable;
    }

    pub(super) fn accepted_by(&self) -> Option<usize> {
        match self.origin {
            Origin::Accept { listener } => Some(listener),
            Origin::Connect { .. } => None,
        }
    }

    pub(super) fn start_linger(&mut self, deadline: Option<Instant>) {
        self.linger = Some(deadline);
    }

    /// One turn: connect if due, read, write, check timers.
    pub(super) fn drive(
        &mut self,
        registry: &Registry,
        now: Instant,
        shutting_down: bool,
    ) -> Outcome {
        let link = self.link.clone();
        let mut io = link.lock();
        self.turn(&mut io, registry, now, shutting_down)
    }

    fn turn(
        &mut self,
        io: &mut StreamEngine,
        registry: &Registry,
        now: Instant,
        shutting_down: bool,
    ) -> Outcome {
        if let Some(outcome) = self.check_linger(io, now, shutting_down) {
            return outcome;
        }
        if io.stream.is_none() {
            return self.maybe_connect(io, registry, now);
        }
        if io.connecting {
            match io.stream.as_mut().map(Stream::connect_result) {
                Some(Ok(true)) => self.on_connected(io, now),
                Some(Ok(false)) => return Outcome::Keep { wake_at: None },
                Some(Err(e)) => return self.on_end(io, registry, End::Io(e), now),
                None => unreachable!("checked above"),
            }
        }
        let reads = Reads {
            max: READ_BUDGET,
            speculative: false,
        };
        let budget_left = loop {
            let inbound = self.pipe.as_ref().map(|p| &*p.tx);
            match io.read(inbound, reads, now).0 {
                Input::Handshake => self.on_handshake(io),
                Input::Ended(end) => return self.on_end(io, registry, end, now),
                Input::More => break false,
                Input::Idle | Input::Full => break true,
            }
        };
        if let Err(e) = self.write(io) {
            return self.on_end(io, registry, End::Io(e), now);
        }
        if let Some(conn) = io.conn.as_mut() {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                if let Err(e) = conn.handle_timeout(now) {
                    return self.on_end(io, registry, End::Protocol(e), now);
                }
                if let Err(e) = self.write(io) {
                    return self.on_end(io, registry, End::Io(e), now);
                }
            }
        }
        if let Some(outcome) = self.check_linger(io, now, shutting_down) {
            return outcome;
        }
        if !budget_left {
            return Outcome::Again;
        }
        Outcome::Keep {
            wake_at: io.conn.as_ref().and_then(Connection::poll_timeout),
        }
    }

    /// Ends a lingering session once everything is sent or time is up.
    fn check_linger(
        &mut self,
        io: &StreamEngine,
        now: Instant,
        shutting_down: bool,
    ) -> Option<Outcome> {
        let deadline = match self.linger {
            Some(d) => d,
            None if shutting_down => Some(now),
            None => return None,
        };
        if deadline.is_some_and(|d| now >= d) {
            return Some(Outcome::Remove);
        }
        let queued = self.pipe.as_ref().is_some_and(|p| p.rx.len() > 0);
        let unsent = io.conn.as_ref().is_some_and(|c| !c.pending().is_empty());
        if !(queued || unsent && io.stream.is_some()) {
            return Some(Outcome::Remove);
        }
        None
    }

    fn maybe_connect(
        &mut self,
        io: &mut StreamEngine,
        registry: &Registry,
        now: Instant,
    ) -> Outcome {
        let Origin::Connect {
            target, retry_at, ..
        } = &mut self.origin
        else {
            return Outcome::Remove;
        };
        match *retry_at {
            Some(t) if t <= now => {}
            Some(t) => return Outcome::Keep { wake_at: Some(t) },
            None => return Outcome::Keep { wake_at: None },
        }
        *retry_at = None;
        match transport::connect(target) {
            Ok(mut stream) => {
                if let Err(e) = stream.register(registry, Token(self.token)) {
                    tracing::error!("cannot register connection: {e}");
                    return self.on_end(io, registry, End::Io(e), now);
                }
                io.stream = Some(stream);
                io.connecting = true;
                self.socket.monitor.emit(
                    Event::ConnectDelayed,
                    libc::EINPROGRESS as u32,
                    &self.endpoint,
                );
                Outcome::Keep { wake_at: None }
            }
            Err(e) => self.on_end(io, registry, End::Io(e), now),
        }
    }

    fn on_connected(&mut self, io: &mut StreamEngine, now: Instant) {
        io.connecting = false;
        io.readable = true;
        io.writable = true;
        if let Some(s) = &io.stream {
            s.tune(&self.opts);
            self.socket
                .monitor
                .emit(Event::Connected, s.raw_fd() as u32, &self.endpoint);
        }
        io.conn = Connection::new(self.opts.zmtp_config(self.socket.socket_type), now).ok();
        if let Origin::Connect { ivl, .. } = &mut self.origin {
            *ivl = millis(self.opts.reconnect_ivl);
        }
    }

    fn on_handshake(&mut self, io: &mut StreamEngine) {
        io.handshaken = true;
        let Some(conn) = io.conn.as_mut() else {
            return;
        };
        let peer = conn.peer().cloned().expect("handshake complete");
        self.socket
            .monitor
            .emit(Event::HandshakeSucceeded, 0, &self.endpoint);
        let peer_address = io.stream.as_ref().map(Stream::peer_text);
        let meta = PeerMeta {
            identity: peer.identity.clone(),
            metadata: Some(Arc::new(Metadata {
                properties: peer.properties.clone(),
                peer_address,
            })),
        };
        if self.pipe.is_none() && self.linger.is_none() {
            let (socket_end, session_end) =
                super::session_pipe(&self.link, &self.socket, &self.opts, meta);
            self.pipe = Some(session_end);
            self.socket.attach(socket_end);
        }
        // After a reconnect, tell the new publisher what we subscribe to.
        if self.socket.socket_type.is_subscriber() {
            for topic in self.subs.iter() {
                let _ = conn.subscribe(topic);
            }
        }
    }

    /// Moves what the socket queued for the peer to the wire.
    fn write(&mut self, io: &mut StreamEngine) -> std::io::Result<()> {
        let outbound = self.pipe.as_ref().map(|p| &*p.rx);
        let subs = self
            .socket
            .socket_type
            .is_subscriber()
            .then_some(&mut self.subs);
        io.write(outbound, subs)
    }

    /// The connection ended: report, clean up, and reconnect or finish.
    fn on_end(
        &mut self,
        io: &mut StreamEngine,
        registry: &Registry,
        end: End,
        now: Instant,
    ) -> Outcome {
        let was_connected = !io.connecting && io.stream.is_some();
        if let End::Io(e) = &end {
            tracing::debug!("{}: connection failed: {e}", self.endpoint);
        }
        let truncated = match (&end, io.conn.as_mut()) {
            (End::Eof, Some(conn)) => conn.end_of_input(),
            _ => None,
        };
        // libzmq ends a connecting session for good on a protocol error
        // (a peer that speaks wrongly will not improve by retrying), but
        // retries after timeouts and I/O errors.
        let fatal = matches!(
            &end,
            End::Protocol(e) if !matches!(
                e,
                ProtocolError::HeartbeatExpired(_) | ProtocolError::HandshakeTimeout
            )
        );
        let protocol = match end {
            End::Protocol(e) => Some(e),
            _ => truncated,
        };
        if let Some(e) = &protocol {
            tracing::debug!("{}: closing connection: {e}", self.endpoint);
            if !io.handshaken {
                let (ev, value) = handshake_failure(e);
                self.socket.monitor.emit(ev, value, &self.endpoint);
            }
            // Best effort: an ERROR command the engine queued. Nothing more
            // is taken from the pipe: a connecting session keeps what is
            // queued for the next connection.
            let _ = io.write(None, None);
        }
        if let Some(mut stream) = io.stream.take() {
            stream.deregister(registry);
            let event = if was_connected {
                Event::Disconnected
            } else {
                // A connect that failed: libzmq reports its socket closed.
                Event::Closed
            };
            self.socket
                .monitor
                .emit(event, stream.raw_fd() as u32, &self.endpoint);
        }
        io.conn = None;
        io.connecting = false;
        io.handshaken = false;
        io.readable = false;
        io.writable = false;
        io.ended = None;
        if self.pipe_per_connection {
            if let Some(p) = self.pipe.take() {
                p.close();
            }
        }
        let reconnect = match &mut self.origin {
            Origin::Accept { .. } => None,
            Origin::Connect { .. } if fatal => None,
            Origin::Connect { ivl, retry_at, .. } => {
                let next = ivl.map(|current| {
                    // libzmq: the current interval plus up to one base
                    // interval of jitter; with a larger maximum, the
                    // interval doubles up to it.
                    let base = millis(self.opts.reconnect_ivl).unwrap_or(current);
                    let random = std::hash::BuildHasher::hash_one(
                        &std::collections::hash_map::RandomState::new(),
                        self.token,
                    );
                    let jitter = Duration::from_millis(random % base.as_millis().max(1) as u64);
                    let wait = current + jitter;
                    if let Some(max) = millis(self.opts.reconnect_ivl_max) {
                        if max > base {
                            *ivl = Some((current * 2).min(max));
                        }
                    }
                    wait
                });
                *retry_at = next.map(|w| now + w);
                next
            }
        };
        match reconnect {
            Some(wait)
                if self.linger.is_none() || self.pipe.as_ref().is_some_and(|p| p.rx.len() > 0) =>
            {
                self.socket.monitor.emit(
                    Event::ConnectRetried,
                    wait.as_millis() as u32,
                    &self.endpoint,
                );
                Outcome::Keep {
                    wake_at: Some(now + wait),
                }
            }
            _ => Outcome::Remove,
        }
    }

    /// Closes everything (removal from the loop).
    pub(super) fn close(&mut self, registry: &Registry) {
        let link = self.link.clone();
        let mut io = link.lock();
        if let Some(mut stream) = io.stream.take() {
            stream.deregister(registry);
            if io.handshaken || io.conn.is_some() {
                self.socket.monitor.emit(
                    Event::Disconnected,
                    stream.raw_fd() as u32,
                    &self.endpoint,
                );
            }
        }
        io.conn = None;
        io.handshaken = false;
        if let Some(p) = self.pipe.take() {
            p.close();
        }
    }
}
