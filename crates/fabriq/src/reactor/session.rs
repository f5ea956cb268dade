//! A session: one endpoint's connection of one socket, in the I/O thread.
//!
//! It owns the connection's life (connecting through its transport, the
//! pipe to the socket, reconnects with libzmq's intervals and backoff,
//! linger, monitor events) and leaves moving messages to the connection's
//! [`Engine`], which it makes once the transport has a connection and
//! drives from the I/O thread as the socket's thread may. A connecting
//! session outlives its connections: it keeps its pipe (so messages queue
//! meanwhile) and replays the subscriptions it has carried.
//!
//! A udp socket's session has no connection to make: bind or connect
//! opened the socket and made the pipe, the session makes the engine on
//! its first turn, and it ends with the socket (closed, or its end of the
//! pipe dropped) after one last write, without lingering and without
//! monitor events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fabriq_zmtp::{AuthRequest, ProtocolError};
use mio::Token;

use super::engine::{make_engine, Conn, End, Engine, Input, Link, Reads};

use crate::endpoint::Address;
use crate::mailbox::Mailbox;
use crate::message::Metadata;
use crate::monitor::{handshake_failure, Event};
use crate::options::{millis, Options};
use crate::pipe::{PeerMeta, PipeEnd};
use crate::topics::Topics;
use crate::transport::{DataPath, Poller, Stream};

/// Reads per turn before yielding to other sessions.
const READ_BUDGET: usize = 16;

/// What every session starts from: who it is and whom it serves.
pub(super) struct Base {
    pub token: usize,
    pub socket: Arc<Mailbox>,
    pub opts: Options,
    /// The endpoint as monitor events name it.
    pub endpoint: String,
    /// The connection's engine slot, shared with the socket's end of the pipe.
    pub link: Arc<Link>,
    /// How messages move once connected.
    pub data_path: DataPath,
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
        target: Address,
        /// Current reconnect interval (grows with backoff).
        ivl: Option<Duration>,
        /// When to try again, while disconnected.
        retry_at: Option<Instant>,
    },
    Accept {
        listener: usize,
    },
    /// A udp socket, until its first turn makes the engine.
    Datagram {
        socket: Option<std::net::UdpSocket>,
    },
}

pub(super) struct Session {
    pub token: usize,
    pub socket: Arc<Mailbox>,
    opts: Options,
    endpoint: String,
    origin: Origin,
    /// A connect attempt in progress (registered with the poller).
    connecting: Option<Box<dyn Stream>>,
    /// When the attempt in progress is abandoned (tcp with
    /// `connect_timeout`, as libzmq's tcp connecter does).
    connect_deadline: Option<Instant>,
    /// The connection's engine, when there is a connection.
    link: Arc<Link>,
    data_path: DataPath,
    pipe: Option<PipeEnd>,
    /// The pipe lives only as long as one connection (accepted sessions,
    /// ROUTER and IMMEDIATE connects).
    pipe_per_connection: bool,
    /// Topics carried to the peer, replayed after a reconnect.
    subs: Topics,
    /// The socket is closed: finish sending, then go. `Some(None)`:
    /// linger forever.
    linger: Option<Option<Instant>>,
    /// The ZAP request of a handshake in progress, waiting for its reply.
    zap: Option<crate::zap::Pending>,
}

type Slot = Option<Box<dyn Engine>>;

impl Session {
    /// A session in its initial state, with nothing connected yet.
    fn new(base: Base, origin: Origin, pipe: Option<PipeEnd>) -> Session {
        Session {
            token: base.token,
            socket: base.socket,
            opts: base.opts,
            endpoint: base.endpoint,
            origin,
            connecting: None,
            connect_deadline: None,
            link: base.link,
            data_path: base.data_path,
            pipe_per_connection: pipe.is_none(),
            pipe,
            subs: Topics::default(),
            linger: None,
            zap: None,
        }
    }

    pub(super) fn connecting(
        base: Base,
        target: Address,
        pipe: Option<PipeEnd>,
        now: Instant,
    ) -> Session {
        let origin = Origin::Connect {
            target,
            ivl: millis(base.opts.reconnect_ivl),
            retry_at: Some(now),
        };
        Session::new(base, origin, pipe)
    }

    /// The session of a udp socket that bind or connect opened, with its
    /// pipe (made at once: there is no peer to wait for).
    pub(super) fn datagram(base: Base, socket: std::net::UdpSocket, pipe: PipeEnd) -> Session {
        let origin = Origin::Datagram {
            socket: Some(socket),
        };
        Session::new(base, origin, Some(pipe))
    }

    pub(super) fn accepted(
        base: Base,
        listener: usize,
        mut stream: Box<dyn Stream>,
        poller: &mut Poller<'_>,
        now: Instant,
    ) -> Session {
        stream.tune(&base.opts);
        if let Err(e) = stream.register(poller, Token(base.token)) {
            tracing::error!("cannot register connection: {e}");
        }
        let s = Session::new(base, Origin::Accept { listener }, None);
        *s.link.lock() = s.engine_for(Conn::Stream(stream), poller, now);
        s
    }

    /// The engine for a connected stream or a udp socket.
    fn engine_for(&self, conn: Conn, poller: &mut Poller<'_>, now: Instant) -> Slot {
        let made = make_engine(
            &self.data_path,
            self.socket.socket_type,
            conn,
            &self.opts,
            &self.socket.spin,
            Token(self.token),
            poller,
            now,
        );
        match made {
            Ok(engine) => Some(engine),
            Err(why) => {
                tracing::warn!("{}: cannot start the engine: {why}", self.endpoint);
                None
            }
        }
    }

    /// Records readiness the event loop saw for this session's sources.
    pub(super) fn ready(&self, readable: bool, writable: bool) {
        if let Some(engine) = self.link.lock().as_mut() {
            engine.ready(readable, writable);
        }
    }

    /// Records that the poller saw the peer's close or an error.
    pub(super) fn hung_up(&self) {
        if let Some(engine) = self.link.lock().as_mut() {
            engine.hung_up();
        }
    }

    /// The connection's engine slot, for tests that hold it as a turn
    /// would.
    #[cfg(test)]
    pub(super) fn link(&self) -> &Arc<Link> {
        &self.link
    }

    pub(super) fn accepted_by(&self) -> Option<usize> {
        match self.origin {
            Origin::Accept { listener } => Some(listener),
            Origin::Connect { .. } | Origin::Datagram { .. } => None,
        }
    }

    pub(super) fn start_linger(&mut self, deadline: Option<Instant>) {
        self.linger = Some(deadline);
    }

    /// One turn: connect if due, read, write, check timers.
    pub(super) fn drive(
        &mut self,
        poller: &mut Poller<'_>,
        now: Instant,
        shutting_down: bool,
    ) -> Outcome {
        let link = self.link.clone();
        let mut slot = link.lock();
        self.turn(&mut slot, poller, now, shutting_down)
    }

    fn turn(
        &mut self,
        slot: &mut Slot,
        poller: &mut Poller<'_>,
        now: Instant,
        shutting_down: bool,
    ) -> Outcome {
        if let Some(outcome) = self.check_linger(slot, now, shutting_down) {
            return outcome;
        }
        if let Origin::Datagram { socket } = &mut self.origin {
            if let Some(socket) = socket.take() {
                *slot = self.engine_for(Conn::Datagram(socket), poller, now);
            }
        } else if slot.is_none() {
            if self.connecting.is_none() {
                return self.maybe_connect(slot, poller, now);
            }
            match self.connecting.as_mut().map(|s| s.connect_result()) {
                Some(Ok(true)) => self.on_connected(slot, poller, now),
                Some(Ok(false)) => match self.connect_deadline {
                    Some(d) if now >= d => {
                        let timed_out = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "connect_timeout: the connect attempt was abandoned",
                        );
                        return self.on_end(slot, poller, End::Io(timed_out), now);
                    }
                    wake_at => return Outcome::Keep { wake_at },
                },
                Some(Err(e)) => return self.on_end(slot, poller, End::Io(e), now),
                None => unreachable!("checked above"),
            }
        }
        let Some(engine) = slot.as_mut() else {
            // The protocol would not start (a configuration it refuses).
            return self.on_end(slot, poller, End::Eof, now);
        };
        if let Err(end) = self.zap_reply(engine.as_mut()) {
            return self.on_end(slot, poller, end, now);
        }
        let reads = Reads {
            max: READ_BUDGET,
            speculative: false,
        };
        let budget_left = loop {
            let inbound = self.pipe.as_ref().map(|p| &*p.tx);
            match engine.read(inbound, reads, now).0 {
                Input::Handshake => self.on_handshake(engine.as_mut()),
                Input::Auth(request) => {
                    if let Err(end) = self.ask_zap(engine.as_mut(), request) {
                        return self.on_end(slot, poller, end, now);
                    }
                }
                Input::Ended(end) => return self.on_end(slot, poller, end, now),
                Input::More => break false,
                Input::Idle | Input::Full => break true,
            }
        };
        if let Err(e) = self.write(engine.as_mut(), now) {
            return self.on_end(slot, poller, End::Io(e), now);
        }
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            if let Err(e) = engine.handle_timeout(now) {
                return self.on_end(slot, poller, End::Protocol(e), now);
            }
            if let Err(e) = self.write(engine.as_mut(), now) {
                return self.on_end(slot, poller, End::Io(e), now);
            }
        }
        if let Some(outcome) = self.check_linger(slot, now, shutting_down) {
            return outcome;
        }
        if !budget_left {
            return Outcome::Again;
        }
        Outcome::Keep {
            wake_at: slot.as_ref().and_then(|e| e.poll_timeout()),
        }
    }

    /// When a lingering session is let go at the latest.
    pub(super) fn linger_deadline(&self) -> Option<Instant> {
        self.linger.flatten()
    }

    /// Ends a lingering session once everything is sent or time is up; a
    /// udp socket's once its socket is closed or gone (see `close`).
    fn check_linger(&mut self, slot: &Slot, now: Instant, shutting_down: bool) -> Option<Outcome> {
        if let Origin::Datagram { .. } = self.origin {
            let dropped = match &self.pipe {
                Some(p) => p.rx.is_writer_closed(),
                None => true,
            };
            return (self.linger.is_some() || shutting_down || dropped).then_some(Outcome::Remove);
        }
        let deadline = match self.linger {
            Some(d) => d,
            None if shutting_down => Some(now),
            None => return None,
        };
        if deadline.is_some_and(|d| now >= d) {
            return Some(Outcome::Remove);
        }
        let queued = self.pipe.as_ref().is_some_and(|p| p.rx.len() > 0);
        let unsent = slot.as_ref().is_some_and(|e| e.unsent() > 0);
        if !(queued || unsent) {
            return Some(Outcome::Remove);
        }
        None
    }

    fn maybe_connect(&mut self, slot: &mut Slot, poller: &mut Poller<'_>, now: Instant) -> Outcome {
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
        match target.transport.connect(target, &self.opts) {
            Ok(mut stream) => {
                if let Err(e) = stream.register(poller, Token(self.token)) {
                    tracing::error!("cannot register connection: {e}");
                    return self.on_end(slot, poller, End::Io(e), now);
                }
                self.connecting = Some(stream);
                self.socket.monitor.emit(
                    Event::ConnectDelayed,
                    libc::EINPROGRESS as u32,
                    &self.endpoint,
                );
                // libzmq applies connect_timeout to tcp connects only.
                self.connect_deadline = match millis(self.opts.connect_timeout) {
                    Some(t) if target.scheme == "tcp" && !t.is_zero() => Some(now + t),
                    _ => None,
                };
                // The poller reports the stream writable once the
                // connect is done (or at once, where it already is).
                Outcome::Keep {
                    wake_at: self.connect_deadline,
                }
            }
            Err(e) => self.on_end(slot, poller, End::Io(e), now),
        }
    }

    fn on_connected(&mut self, slot: &mut Slot, poller: &mut Poller<'_>, now: Instant) {
        let Some(stream) = self.connecting.take() else {
            return;
        };
        stream.tune(&self.opts);
        self.socket
            .monitor
            .emit(Event::Connected, stream.monitor_value(), &self.endpoint);
        *slot = self.engine_for(Conn::Stream(stream), poller, now);
        if let Origin::Connect { ivl, .. } = &mut self.origin {
            *ivl = millis(self.opts.reconnect_ivl);
        }
    }

    fn on_handshake(&mut self, engine: &mut dyn Engine) {
        let Some(peer) = engine.peer().cloned() else {
            return;
        };
        self.socket
            .monitor
            .emit(Event::HandshakeSucceeded, 0, &self.endpoint);
        let meta = PeerMeta {
            identity: peer.identity.clone(),
            metadata: Some(Arc::new(Metadata {
                properties: crate::zap::message_properties(&peer),
                peer_address: Some(engine.peer_address()),
                source_fd: i32::try_from(engine.monitor_value()).ok(),
            })),
            all_groups: false,
            late: None,
        };
        if let Some(late) = self.pipe.as_ref().and_then(|p| p.peer.late.as_ref()) {
            late.set(meta.metadata.clone());
        }
        if self.pipe.is_none() && self.linger.is_none() {
            let (socket_end, session_end) =
                super::make_pipe(&self.link, &self.socket, &self.opts, Some(meta));
            self.pipe = Some(session_end);
            self.socket.attach(socket_end);
        }
        // After a reconnect, tell the new publisher what we subscribe to.
        if self.socket.socket_type.is_subscriber() {
            for topic in self.subs.iter() {
                engine.subscribe(topic);
            }
        }
    }

    /// Asks the ZAP handler about the peer (see `zap.rs`); without one,
    /// answers as libzmq does.
    fn ask_zap(&mut self, engine: &mut dyn Engine, request: AuthRequest) -> Result<(), End> {
        let session = self.link.clone();
        match crate::zap::ask(&self.opts, &request, &engine.peer_address(), session) {
            crate::zap::Asked::Sent(pending) => {
                self.zap = Some(pending);
                self.zap_reply(engine)
            }
            crate::zap::Asked::Allowed(reply) => {
                let _ = engine.auth_reply(reply);
                Ok(())
            }
            crate::zap::Asked::Refused(e) => Err(End::Protocol(e)),
        }
    }

    /// Hands the ZAP handler's reply, once it has come, to the engine. A
    /// malformed reply fails the handshake, as in libzmq.
    fn zap_reply(&mut self, engine: &mut dyn Engine) -> Result<(), End> {
        let Some(reply) = self.zap.as_ref().and_then(|z| z.poll()) else {
            return Ok(());
        };
        self.zap = None;
        match reply {
            Ok(reply) => {
                if let Err(e) = engine.auth_reply(reply) {
                    tracing::debug!("{}: ZAP reply not taken: {e}", self.endpoint);
                }
                Ok(())
            }
            Err(bad) => {
                self.socket
                    .monitor
                    .emit(Event::HandshakeFailedProtocol, bad.code, &self.endpoint);
                let e = std::io::Error::new(std::io::ErrorKind::InvalidData, bad.to_string());
                Err(End::Reported(e))
            }
        }
    }

    /// Moves what the socket queued for the peer to the wire.
    fn write(&mut self, engine: &mut dyn Engine, now: Instant) -> std::io::Result<()> {
        let outbound = self.pipe.as_ref().map(|p| &*p.rx);
        let subs = self
            .socket
            .socket_type
            .is_subscriber()
            .then_some(&mut self.subs);
        engine.write(outbound, subs, now)
    }

    /// The connection (or the attempt) ended: report, clean up, and
    /// reconnect or finish.
    fn on_end(
        &mut self,
        slot: &mut Slot,
        poller: &mut Poller<'_>,
        end: End,
        now: Instant,
    ) -> Outcome {
        let fatal = is_fatal(&end);
        self.report_end(slot, end, now);
        let retry = self.schedule_reconnect(fatal, now).filter(|_| {
            self.linger.is_none() || self.pipe.as_ref().is_some_and(|p| p.rx.len() > 0)
        });
        // The pipe is closed before the connection: once the peer can see
        // its connection end, the socket is told its pipe is gone, and its
        // next send prunes it instead of sending into it. (Closed after,
        // a send the application made as soon as the peer was gone could
        // be round-robined into the dying pipe and lost, though another
        // peer had room.) A session that will not try again closes its
        // pipe here too, so that DISCONNECTED is never seen while a send
        // could still go into it.
        if self.pipe_per_connection || retry.is_none() {
            if let Some(p) = self.pipe.take() {
                p.close();
            }
        }
        self.drop_connection(slot, poller);
        match retry {
            Some(wait) => {
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

    /// Logs why the connection ended, reports a failed handshake, and
    /// sends what the engine queued last (an ERROR command).
    fn report_end(&mut self, slot: &mut Slot, end: End, now: Instant) {
        if let End::Io(e) | End::Reported(e) = &end {
            tracing::debug!("{}: connection failed: {e}", self.endpoint);
        }
        let Some(engine) = slot.as_mut() else {
            return;
        };
        let protocol = match end {
            End::Protocol(e) => Some(e),
            End::Eof => engine.end_of_input(),
            End::Reported(_) => None,
            End::Io(e) => {
                // As libzmq's engine: a connection error before the
                // handshake is done is a handshake failure with its errno
                // (a peer that resets instead of closing: ECONNRESET).
                if !engine.handshaken() {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    self.socket.monitor.emit(
                        Event::HandshakeFailedNoDetail,
                        errno as u32,
                        &self.endpoint,
                    );
                }
                None
            }
        };
        if let Some(e) = &protocol {
            tracing::debug!("{}: closing connection: {e}", self.endpoint);
            if !engine.handshaken() {
                let (ev, value) = handshake_failure(e);
                self.socket.monitor.emit(ev, value, &self.endpoint);
            }
            // Best effort, and nothing more is taken from the pipe: a
            // connecting session keeps what is queued for the next
            // connection.
            let _ = engine.write(None, None, now);
        }
    }

    /// Takes the connection (or the attempt) out of the poller and drops
    /// it, with the monitor event libzmq gives.
    fn drop_connection(&mut self, slot: &mut Slot, poller: &mut Poller<'_>) {
        self.drop_engine(slot, poller);
        if let Some(mut stream) = self.connecting.take() {
            stream.deregister(poller);
            // A connect that failed: libzmq reports its socket closed.
            self.socket
                .monitor
                .emit(Event::Closed, stream.monitor_value(), &self.endpoint);
        }
    }

    /// Takes the engine (and a ZAP request of its handshake) out, with
    /// DISCONNECTED.
    fn drop_engine(&mut self, slot: &mut Slot, poller: &mut Poller<'_>) {
        self.zap = None;
        if let Some(mut engine) = slot.take() {
            engine.deregister(poller);
            // A connection ended by its own socket's close (lingering) is
            // no disconnect to libzmq: it reports none. A udp socket has
            // no connection to report.
            let datagram = matches!(self.origin, Origin::Datagram { .. });
            if self.linger.is_none() && !datagram {
                self.socket.monitor.emit(
                    Event::Disconnected,
                    engine.monitor_value(),
                    &self.endpoint,
                );
            }
        }
    }

    /// When to try again, for a connecting session: the current interval
    /// plus up to one base interval of jitter (libzmq's rule); with a
    /// larger maximum the interval doubles up to it. `None`: do not.
    fn schedule_reconnect(&mut self, fatal: bool, now: Instant) -> Option<Duration> {
        let Origin::Connect { ivl, retry_at, .. } = &mut self.origin else {
            return None;
        };
        if fatal {
            return None;
        }
        let next = ivl.map(|current| {
            let base = millis(self.opts.reconnect_ivl).unwrap_or(current);
            let random = std::hash::BuildHasher::hash_one(
                &std::collections::hash_map::RandomState::new(),
                self.token,
            );
            let jitter = Duration::from_millis(random % base.as_millis().max(1) as u64);
            if let Some(max) = millis(self.opts.reconnect_ivl_max) {
                if max > base {
                    *ivl = Some((current * 2).min(max));
                }
            }
            current + jitter
        });
        *retry_at = next.map(|w| now + w);
        next
    }

    /// Closes everything (removal from the loop). A udp socket's session
    /// first sends what is queued now: udp does not linger.
    pub(super) fn close(&mut self, poller: &mut Poller<'_>, now: Instant) {
        let link = self.link.clone();
        let mut slot = link.lock();
        if let (Origin::Datagram { .. }, Some(engine)) = (&self.origin, slot.as_mut()) {
            let _ = self.write(engine.as_mut(), now);
        }
        self.drop_engine(&mut slot, poller);
        if let Some(mut stream) = self.connecting.take() {
            stream.deregister(poller);
        }
        if let Some(p) = self.pipe.take() {
            p.close();
        }
    }
}

/// libzmq ends a connecting session for good on a protocol error (a peer
/// that speaks wrongly will not improve by retrying), but retries after
/// timeouts and I/O errors.
fn is_fatal(end: &End) -> bool {
    match end {
        End::Protocol(e) => !matches!(
            e,
            ProtocolError::HeartbeatExpired(_) | ProtocolError::HandshakeTimeout
        ),
        End::Io(e) | End::Reported(e) => super::engine::raw::closed_by_application(e),
        End::Eof => false,
    }
}
