//! Engines: what moves one connection's messages, and the one place that
//! reads, decodes, encodes and writes it, whichever thread drives it.
//!
//! The split is libzmq's `session_base` / `i_engine`. A session (in the
//! I/O thread, `session.rs`) owns a connection's life: connecting, the
//! pipe to the socket, reconnects, timers, monitor events. Once a
//! transport has a connection the session makes an [`Engine`] for it and
//! drives it: [`Engine::read`] moves what arrived into the socket's queue,
//! [`Engine::write`] moves what the socket queued to the peer. The engine
//! lives in a [`Link`] that the session and the socket's end of the pipe
//! both hold.
//!
//! [`StreamEngine`] is ZMTP over a byte stream (tcp, ipc): readiness,
//! `read(2)` into the protocol's buffer, vectored writes of the encoder's
//! batches. A completion-based engine (libfabric) implements the same
//! trait with its own meaning of the words: "writable" is a send credit,
//! "read" reaps receive completions of posted buffers, and a write is done
//! when its completion arrives, so its in-flight buffers stay in the
//! engine until then ([`Engine::unsent`] counts them).
//!
//! Two speculative paths let the socket's thread do the engine's work
//! instead of waking the I/O thread, because handing every batch of
//! messages from one thread to another is what costs libzmq a context
//! switch per batch. Whether to take them is the engine's decision (the
//! pipe only knows [`PeerIo`], which [`Link`] implements by asking the
//! engine):
//!
//! - *Read on the socket's thread* ([`Engine::pull`]): a socket that finds
//!   its pipes empty asks the engine to read before it sleeps. The stream
//!   engine runs the same [`Engine::read`] the session runs, into the same
//!   queue, for a few reads; whatever it cannot finish (end of stream, an
//!   error, a PONG to send, more to read) it hands back by waking the
//!   session. Conflating sockets are never read this way (reading as bytes
//!   trickle in would hand them every message).
//! - *Write on the socket's thread* ([`Engine::output_ready`]): for
//!   lock-step sockets (REQ, REP) a message queued while the wire is idle
//!   is encoded and written at once by the same [`Engine::write`].
//!   Streaming sockets leave writing to the I/O thread, which batches many
//!   messages per write.
//! - *Write out a full pipe* ([`Engine::flush`]): a socket that would
//!   drop a message because the pipe to this peer is at its high-water
//!   mark (ROUTER, PUB, RADIO, ...) first has the engine write what the
//!   wire takes, on the socket's thread. Without it a socket thread that
//!   outruns a descheduled I/O thread fills the pipe and drops messages
//!   the peer's kernel buffer had room for; with it a message is dropped
//!   only when the peer is not keeping up, which is what the HWM is for.
//!   (The zguide's `tripping` lost replies this way on a loaded machine:
//!   its broker reads the worker's echoes on its own thread, so nothing
//!   paced it to the I/O thread that writes to the client.) Subscribers
//!   never write this way: the session records the subscriptions that
//!   pass through their pipes, for replay after a reconnect.
//!
//! The link's lock is uncontended in the steady state: the socket's thread
//! only `try_lock`s it, and a session that holds it is doing the same work
//! and will wake the socket (see the loom model at the end).

use std::io::{self, IoSlice};
use std::time::Instant;

use bytes::Bytes;

use fabriq_zmtp::{
    AuthReply, AuthRequest, Connection, Event as ZEvent, PeerInfo, ProtocolError, UsageError,
};

use crate::pipe::{Item, PeerIo, Queue};
use crate::sync::{Mutex, MutexGuard};
use crate::topics::Topics;
use crate::transport::{Poller, Stream};

use super::{Clock, ReactorWaker};

/// Reads the socket's thread may do before it hands the rest to the session.
const PULL_READS: usize = 4;
/// Pieces per vectored write.
const MAX_IOV: usize = 64;
/// Encoded bytes gathered before a write (opportunistic batching: a write
/// happens as soon as the pipe runs dry, this only caps a batch).
pub(super) const MAX_BATCH: usize = 256 * 1024;

/// Why a connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Eof,
    Io(io::Error),
    Protocol(ProtocolError),
}

/// Why [`Engine::read`] stopped.
#[derive(Debug)]
pub(crate) enum Input {
    /// Nothing more to read now.
    Idle,
    /// The inbound queue is at its HWM; its reader wakes the session when
    /// it makes room.
    Full,
    /// The read budget ran out with more possibly waiting.
    More,
    /// The handshake completed: the session attaches a pipe, then reads on.
    Handshake,
    /// The handshake waits for an authentication decision (ZAP): the
    /// session asks, then answers with [`Engine::auth_reply`].
    Auth(AuthRequest),
    /// The connection ended.
    Ended(End),
}

/// How much [`Engine::read`] may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reads {
    /// Reads at most.
    pub max: usize,
    /// Read once even if the source was last seen empty: bytes may have
    /// come since, and one read that finds nothing is cheaper than
    /// sleeping until the I/O thread has run.
    pub speculative: bool,
}

/// What a speculative read on the socket's thread did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pulled {
    /// Items delivered into the inbound queue.
    pub delivered: usize,
    /// The session must run (more to read, the connection ended, a
    /// handshake finished, something to write).
    pub hand_over: bool,
}

/// One connection's message mover, owned by its session (see the module
/// documentation for who calls what, and from which thread).
///
/// Call order, per turn of the session: [`Engine::ready`] with what the
/// poller saw; [`Engine::read`] until it returns anything but
/// [`Input::Handshake`]; [`Engine::write`]; [`Engine::handle_timeout`]
/// when [`Engine::poll_timeout`] is due. [`Engine::pull`] and
/// [`Engine::output_ready`] may run on the socket's thread between turns.
pub(crate) trait Engine: Send {
    /// Records readiness the poller reported.
    fn ready(&mut self, readable: bool, writable: bool);

    /// Records that the poller reported the peer's close or an error: the
    /// stream must now be read until it says `WouldBlock` or ends, since
    /// no later event will come for what is already there.
    fn hung_up(&mut self) {}

    /// Moves what has arrived into `inbound` (the socket's queue from this
    /// peer; absent until the handshake made one). Returns why it stopped
    /// and how many items it delivered.
    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, now: Instant) -> (Input, usize);

    /// Moves what `outbound` (the socket's queue to this peer) holds
    /// toward the peer until it is empty or the peer takes no more.
    /// Without `outbound`, only what the engine already holds (an ending
    /// connection's ERROR). `subs` (subscriber sockets) records the topics
    /// carried, for replay after a reconnect.
    fn write(&mut self, outbound: Option<&Queue>, subs: Option<&mut Topics>) -> io::Result<()>;

    /// Bytes (or buffers) accepted from the pipe that the peer has not
    /// taken yet: encoded and unwritten, or posted and not completed.
    fn unsent(&self) -> usize;

    /// Whether messages flow: the handshake is done and the connection
    /// has not ended.
    fn is_active(&self) -> bool;

    /// Whether the handshake has completed.
    fn handshaken(&self) -> bool;

    /// The peer's identity and metadata, once handshaken.
    fn peer(&self) -> Option<&PeerInfo>;

    /// The peer's address for the `Peer-Address` property.
    fn peer_address(&self) -> String;

    /// Queues a subscription toward the peer (replayed after a reconnect).
    fn subscribe(&mut self, topic: &[u8]);

    /// The connection's next protocol deadline (handshake, heartbeat).
    fn poll_timeout(&self) -> Option<Instant>;

    /// Runs the protocol's timers.
    fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError>;

    /// The peer closed cleanly: what that cut short, if anything.
    fn end_of_input(&mut self) -> Option<ProtocolError>;

    /// The value monitor events report for this connection.
    fn monitor_value(&self) -> u32;

    /// Takes the engine's sources out of the poller before it is dropped.
    fn deregister(&mut self, poller: &mut Poller<'_>);

    /// Answers the [`Input::Auth`] request the last read returned. An
    /// engine that never returns one keeps this default.
    fn auth_reply(&mut self, _reply: AuthReply) -> Result<(), UsageError> {
        Err(UsageError::NoAuthPending)
    }

    /// Speculative read on the socket's thread (see the module docs).
    fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled;

    /// A message landed in `outbound` while the engine waited for one;
    /// returns true if the engine wrote it on this thread (else the
    /// session is woken).
    fn output_ready(&mut self, outbound: &Queue) -> bool;

    /// The socket found `outbound` at its high-water mark and would drop
    /// a message: write what the wire takes now, on this thread (see the
    /// module docs). Returns whether the engine wrote; the caller then
    /// looks at the queue's room again. Engines that leave all writing to
    /// the session keep this default.
    fn flush(&mut self, _outbound: &Queue) -> bool {
        false
    }
}

/// What the socket's thread may write for a stream engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketWrites {
    /// Nothing: the session writes everything (subscribers, whose
    /// subscriptions the session records on the way; control channels).
    Never,
    /// A pipe at its high-water mark ([`Engine::flush`]).
    WhenFull,
    /// Also every message queued while the wire is idle
    /// ([`Engine::output_ready`]; lock-step REQ and REP).
    WhenIdle,
}

/// ZMTP over a byte stream.
#[derive(Debug)]
pub(crate) struct StreamEngine {
    stream: Box<dyn Stream>,
    conn: Connection,
    handshaken: bool,
    /// The stream may have bytes to read (cleared on `WouldBlock`, and
    /// on a short read of a stream whose short reads drain it).
    readable: bool,
    /// The poller reported the peer's close or an error: read on until
    /// `WouldBlock` or the end, short reads or not.
    hung_up: bool,
    /// The stream may take bytes (cleared on `WouldBlock`).
    writable: bool,
    /// How the socket's thread found the connection ended.
    ended: Option<End>,
    /// What the socket's thread may write.
    socket_writes: SocketWrites,
    /// Keep the commands ZMTP leaves to the caller (`Event::Command`), for
    /// an engine that uses this one as its control channel.
    keep_commands: bool,
    commands: Vec<(Bytes, Bytes)>,
    /// Items decoded by the current read, not yet pushed to the inbound
    /// queue (see [`Queue::push_all`]); empty between reads.
    decoded: Vec<Item>,
}

/// The most decoded items a read holds back before it pushes them: a
/// reader on another thread starts on a long batch this early.
const PUSH_BATCH: usize = 64;

impl StreamEngine {
    /// An engine for a connected, registered stream, starting the ZMTP
    /// greeting now.
    pub(crate) fn new(
        stream: Box<dyn Stream>,
        conn: Connection,
        socket_writes: SocketWrites,
    ) -> Self {
        StreamEngine {
            stream,
            conn,
            handshaken: false,
            readable: true,
            hung_up: false,
            writable: true,
            ended: None,
            socket_writes,
            keep_commands: false,
            commands: Vec::new(),
            decoded: Vec::new(),
        }
    }

    /// Keeps the commands ZMTP leaves to the caller for
    /// [`StreamEngine::take_commands`] (otherwise they are ignored, as
    /// libzmq ignores unknown commands).
    pub(crate) fn keep_commands(&mut self, keep: bool) {
        self.keep_commands = keep;
    }

    /// The commands kept since the last call.
    pub(crate) fn take_commands(&mut self) -> Vec<(Bytes, Bytes)> {
        std::mem::take(&mut self.commands)
    }

    /// Queues a command of the caller's own on the connection.
    pub(crate) fn send_command(
        &mut self,
        name: &[u8],
        body: Bytes,
    ) -> Result<(), fabriq_zmtp::UsageError> {
        self.conn.send_command(name, body)
    }
}

impl Engine for StreamEngine {
    fn ready(&mut self, readable: bool, writable: bool) {
        self.readable |= readable;
        self.writable |= writable;
    }

    fn hung_up(&mut self) {
        self.hung_up = true;
        self.readable = true;
    }

    /// Reads, decodes and delivers until the stream would block, the
    /// queue is full, the handshake completes, or `reads` are done.
    ///
    /// A conflating queue gets only the newest message of what one read
    /// decoded, as libzmq conflates per read batch: pushing each one would
    /// wake the socket at the first and let it take messages while the
    /// rest are still being decoded.
    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, now: Instant) -> (Input, usize) {
        if let Some(end) = self.ended.take() {
            return (Input::Ended(end), 0);
        }
        let conflate = inbound.is_some_and(Queue::is_conflate);
        let mut delivered = 0;
        let mut done = 0;
        loop {
            // First what is already decoded.
            let mut newest = None;
            let stop = loop {
                if let Some(q) = inbound.filter(|_| self.handshaken) {
                    if !q.has_room_beside(self.decoded.len()) {
                        q.push_all(&mut self.decoded);
                        if !q.has_room() {
                            break Some(Input::Full);
                        }
                    }
                }
                let item = match self.conn.poll_event() {
                    Ok(None) => break None,
                    Ok(Some(ZEvent::HandshakeComplete)) => {
                        self.handshaken = true;
                        break Some(Input::Handshake);
                    }
                    Ok(Some(ZEvent::Message(m))) if conflate => {
                        newest = Some(m);
                        continue;
                    }
                    Ok(Some(ZEvent::Message(m))) => Item::Msg(m),
                    Ok(Some(ZEvent::Subscribe(t))) => Item::Subscribe(t),
                    Ok(Some(ZEvent::Cancel(t))) => Item::Cancel(t),
                    Ok(Some(ZEvent::Command { name, body })) => {
                        if self.keep_commands {
                            self.commands.push((name, body));
                        }
                        continue;
                    }
                    Ok(Some(ZEvent::AuthRequest(r))) => break Some(Input::Auth(r)),
                    Err(e) => break Some(Input::Ended(End::Protocol(e))),
                };
                if let Some(q) = inbound {
                    self.decoded.push(item);
                    delivered += 1;
                    if self.decoded.len() >= PUSH_BATCH {
                        q.push_all(&mut self.decoded);
                    }
                }
            };
            if let Some(q) = inbound {
                q.push_all(&mut self.decoded);
            }
            if let (Some(m), Some(q)) = (newest, inbound) {
                q.push(Item::Msg(m));
                delivered += 1;
            }
            if let Some(input) = stop {
                return (input, delivered);
            }
            let may_read = self.readable || (reads.speculative && done == 0);
            if !may_read {
                return (Input::Idle, delivered);
            }
            if done == reads.max {
                return (Input::More, delivered);
            }
            done += 1;
            let want = self.conn.read_size();
            let buf = self.conn.recv_buf();
            let asked = want.min(buf.capacity() - buf.len());
            match self.stream.read_into(buf, want) {
                Ok(0) => return (Input::Ended(End::Eof), delivered),
                Ok(n) => {
                    // A short read took all the kernel had, and the next
                    // bytes will be reported anew: another read now would
                    // only say WouldBlock (one system call per wake-up
                    // saved; libzmq reads once per event too). Not after a
                    // hang-up: the close came with an event already seen.
                    self.readable = n == asked || self.hung_up || !self.stream.short_read_drains();
                    self.conn.input_received(now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Input::Ended(End::Io(e)), delivered),
            }
        }
    }

    /// Encodes what `outbound` holds, a batch at a time, and writes until
    /// everything is out or the stream would block.
    fn write(&mut self, outbound: Option<&Queue>, mut subs: Option<&mut Topics>) -> io::Result<()> {
        let conn = &mut self.conn;
        if let Some(q) = outbound {
            encode_queued(conn, q, subs.as_deref_mut());
        }
        while !conn.pending().is_empty() && self.writable {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = conn.pending().io_slices(&mut slices);
            match self.stream.write_vectored(&slices[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(k) => conn.advance_tx(k),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            // Refill between writes, so a large backlog streams out.
            if conn.pending().len() < MAX_BATCH / 2 {
                if let Some(q) = outbound {
                    encode_queued(conn, q, subs.as_deref_mut());
                }
            }
        }
        Ok(())
    }

    fn unsent(&self) -> usize {
        self.conn.pending().len()
    }

    fn is_active(&self) -> bool {
        self.handshaken && self.ended.is_none()
    }

    fn handshaken(&self) -> bool {
        self.handshaken
    }

    fn peer(&self) -> Option<&PeerInfo> {
        self.conn.peer()
    }

    fn peer_address(&self) -> String {
        self.stream.peer_address()
    }

    fn subscribe(&mut self, topic: &[u8]) {
        let _ = self.conn.subscribe(topic);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        self.conn.handle_timeout(now)
    }

    fn end_of_input(&mut self) -> Option<ProtocolError> {
        self.conn.end_of_input()
    }

    fn auth_reply(&mut self, reply: AuthReply) -> Result<(), UsageError> {
        self.conn.auth_reply(reply)
    }

    fn monitor_value(&self) -> u32 {
        self.stream.monitor_value()
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        self.stream.deregister(poller);
    }

    fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled {
        if !self.is_active() || inbound.is_conflate() {
            return Pulled::default();
        }
        let unsent = self.unsent();
        let reads = Reads {
            max: PULL_READS,
            speculative: true,
        };
        let (input, delivered) = self.read(Some(inbound), reads, now);
        let mut hand_over = match input {
            Input::Idle | Input::Full => false,
            // (No Auth here: this runs only after the handshake.)
            Input::More | Input::Handshake | Input::Auth(_) => true,
            Input::Ended(end) => {
                self.ended = Some(end);
                true
            }
        };
        // A PING read here queued a PONG: the session writes it.
        hand_over |= self.unsent() > unsent;
        Pulled {
            delivered,
            hand_over,
        }
    }

    fn output_ready(&mut self, outbound: &Queue) -> bool {
        if self.socket_writes != SocketWrites::WhenIdle || self.unsent() > 0 {
            return false;
        }
        self.write_here(outbound)
    }

    fn flush(&mut self, outbound: &Queue) -> bool {
        if self.socket_writes == SocketWrites::Never {
            return false;
        }
        // Bytes still unsent go first, in order: `write` sends them before
        // it encodes more.
        self.write_here(outbound)
    }
}

impl StreamEngine {
    /// Writes on the socket's thread what the wire takes; false if the
    /// engine may not (not active, the wire full) or the write failed
    /// (then the session, woken by the caller, ends the connection).
    fn write_here(&mut self, outbound: &Queue) -> bool {
        if !self.is_active() || !self.writable {
            return false;
        }
        if let Err(e) = self.write(Some(outbound), None) {
            self.ended = Some(End::Io(e));
            return false;
        }
        // A write the stream did not take whole finishes when the session
        // sees the stream writable again.
        true
    }
}

/// Encodes what the socket has queued, up to one batch.
fn encode_queued(conn: &mut Connection, outbound: &Queue, mut subs: Option<&mut Topics>) {
    if !conn.is_ready() {
        return;
    }
    if conn.pending().len() >= MAX_BATCH {
        return;
    }
    outbound.pop_each(|item| {
        let sent = match item {
            Item::Msg(m) => conn.send(&m),
            Item::Subscribe(t) => {
                if let Some(s) = subs.as_deref_mut() {
                    s.add(&t);
                }
                conn.subscribe(&t)
            }
            Item::Cancel(t) => {
                if let Some(s) = subs.as_deref_mut() {
                    s.remove(&t);
                }
                conn.cancel(&t)
            }
        };
        if let Err(e) = sent {
            tracing::debug!("dropped an outgoing message: {e}");
        }
        conn.pending().len() < MAX_BATCH
    });
}

/// A connection's engine behind a lock, shared by its session and the
/// socket's end of its pipe; empty while the session has no connection.
/// See the module documentation.
pub(crate) struct Link {
    engine: Mutex<Option<Box<dyn Engine>>>,
    session: ReactorWaker,
    clock: Clock,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({:?})", self.session)
    }
}

impl Link {
    pub(crate) fn new(session: ReactorWaker, clock: Clock) -> std::sync::Arc<Link> {
        std::sync::Arc::new(Link {
            engine: Mutex::new(None),
            session,
            clock,
        })
    }

    /// The engine slot, for the session (which may wait for the socket's
    /// thread to finish a speculative read or write).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<Box<dyn Engine>>> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl PeerIo for Link {
    fn wake(&self) {
        self.session.wake();
    }

    fn output_ready(&self, outbound: &Queue) {
        let written = match self.engine.try_lock() {
            Ok(mut slot) => slot.as_mut().is_some_and(|e| e.output_ready(outbound)),
            // The session holds the engine: it will write what is queued.
            Err(_) => false,
        };
        if !written {
            self.session.wake();
        }
    }

    fn flush(&self, outbound: &Queue) -> bool {
        // A blocking lock, unlike the speculative paths: the alternative
        // is a dropped message, and a session that holds the engine may
        // be descheduled in the middle of its turn (on a loaded machine
        // that was most of the drops `try_lock` left). No deadlock: a
        // session never waits for a socket's thread while it holds the
        // engine, and the caller holds no queue lock.
        let mut slot = self.lock();
        let Some(engine) = slot.as_mut() else {
            return false;
        };
        let wrote = engine.flush(outbound);
        let ended = !engine.is_active();
        drop(slot);
        if ended {
            self.session.wake();
        }
        wrote
    }

    fn pull(&self, inbound: &Queue) -> bool {
        let Ok(mut slot) = self.engine.try_lock() else {
            // The session holds the engine: it is doing this very work
            // and will wake the socket.
            return false;
        };
        let Some(engine) = slot.as_mut() else {
            return false;
        };
        let pulled = engine.pull(inbound, self.clock.now());
        drop(slot);
        if pulled.hand_over {
            self.session.wake();
        }
        pulled.delivered > 0
    }
}

/// loom models of engine ownership between the socket's thread and the
/// I/O thread: the real [`Link`] (its `try_lock` protocol and hand-over
/// wake-ups), the real pipe queue and socket signal, and an engine whose
/// stream is a counter of messages waiting in the kernel. Run by
/// `scripts/test` with `RUSTFLAGS="--cfg loom"`.
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use fabriq_zmtp::Multipart;

    use super::*;
    use crate::pipe::Waker;
    use crate::signal::Signal;
    use crate::sync::AtomicUsize;
    use crate::sync::Ordering::SeqCst;

    /// An engine whose stream holds `wire` messages; a read takes at most
    /// `per_read` of them.
    struct ModelEngine {
        wire: Arc<AtomicUsize>,
        per_read: usize,
    }

    impl Engine for ModelEngine {
        fn ready(&mut self, _: bool, _: bool) {}
        fn read(&mut self, inbound: Option<&Queue>, reads: Reads, _: Instant) -> (Input, usize) {
            let mut delivered = 0;
            for _ in 0..reads.max {
                let took = self
                    .wire
                    .fetch_update(SeqCst, SeqCst, |n| Some(n - n.min(self.per_read)))
                    .unwrap();
                let took = took.min(self.per_read);
                if took == 0 {
                    return (Input::Idle, delivered);
                }
                // One push for what the read decoded, as StreamEngine does.
                let mut batch: Vec<Item> = (0..took).map(|_| Item::Msg(Multipart::new())).collect();
                inbound.unwrap().push_all(&mut batch);
                delivered += took;
            }
            let more = self.wire.load(SeqCst) > 0;
            (if more { Input::More } else { Input::Idle }, delivered)
        }
        fn write(&mut self, _: Option<&Queue>, _: Option<&mut Topics>) -> io::Result<()> {
            Ok(())
        }
        fn unsent(&self) -> usize {
            0
        }
        fn is_active(&self) -> bool {
            true
        }
        fn handshaken(&self) -> bool {
            true
        }
        fn peer(&self) -> Option<&PeerInfo> {
            None
        }
        fn peer_address(&self) -> String {
            String::new()
        }
        fn subscribe(&mut self, _: &[u8]) {}
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _: Instant) -> Result<(), ProtocolError> {
            Ok(())
        }
        fn end_of_input(&mut self) -> Option<ProtocolError> {
            None
        }
        fn monitor_value(&self) -> u32 {
            0
        }
        fn deregister(&mut self, _: &mut Poller<'_>) {}
        fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled {
            let reads = Reads {
                max: 1,
                speculative: true,
            };
            let (input, delivered) = self.read(Some(inbound), reads, now);
            Pulled {
                delivered,
                hand_over: matches!(input, Input::More),
            }
        }
        fn output_ready(&mut self, _: &Queue) -> bool {
            false
        }
    }

    struct Setup {
        reactor: super::super::Reactor,
        link: Arc<Link>,
        wire: Arc<AtomicUsize>,
        /// The socket's signal and the queue it reads from this peer.
        signal: Arc<Signal>,
        inbound: Arc<Queue>,
    }

    fn setup(wire_holds: usize, per_read: usize) -> Setup {
        let (reactor, _loop) =
            super::super::Reactor::unstarted(Clock::default()).expect("a reactor");
        let link = Link::new(reactor.reactor_waker(1), Clock::default());
        let wire = Arc::new(AtomicUsize::new(wire_holds));
        *link.lock() = Some(Box::new(ModelEngine {
            wire: wire.clone(),
            per_read,
        }));
        let signal = Arc::new(Signal::new().unwrap());
        let inbound = Queue::new(0, Waker::Socket(signal.clone()), Waker::Peer(link.clone()));
        Setup {
            reactor,
            link,
            wire,
            signal,
            inbound,
        }
    }

    /// The session (I/O thread) reads what arrived while the socket's
    /// thread tries to read it first: whoever gets the engine, the
    /// message reaches the socket, or the socket's signal is up.
    #[test]
    fn a_message_is_read_by_one_thread_and_never_stranded() {
        loom::model(|| {
            let s = setup(0, 1);
            let session = {
                let (link, wire, inbound) = (s.link.clone(), s.wire.clone(), s.inbound.clone());
                loom::thread::spawn(move || {
                    // The peer's bytes arrive; the poller reports them and
                    // the session runs a turn.
                    wire.fetch_add(1, SeqCst);
                    let mut slot = link.lock();
                    let engine = slot.as_mut().unwrap();
                    let reads = Reads {
                        max: 4,
                        speculative: false,
                    };
                    engine.read(Some(&inbound), reads, Instant::now());
                })
            };
            // The socket: look, read on this thread if it may (with the
            // queue's wake-up withdrawn, as `PipeEnd::pull` does), look
            // again (which re-arms it), then sleep.
            s.signal.clear();
            let got = s.inbound.pop().is_some() || {
                s.inbound.stop_waiting();
                let _ = PeerIo::pull(&*s.link, &s.inbound);
                s.inbound.pop().is_some()
            };
            session.join().unwrap();
            if !got {
                assert!(
                    s.signal.would_wake(),
                    "the socket sleeps while its message waits"
                );
            }
            drop(s.reactor);
        });
    }

    /// A speculative read that leaves messages behind (its read budget
    /// ran out) hands the rest to the session: the session is woken.
    #[test]
    fn a_read_left_unfinished_on_the_socket_thread_wakes_the_session() {
        loom::model(|| {
            let s = setup(2, 1);
            let session = {
                let (link, inbound) = (s.link.clone(), s.inbound.clone());
                loom::thread::spawn(move || {
                    // A session turn that may run before or after the pull.
                    if let Ok(mut slot) = link.engine.try_lock() {
                        let reads = Reads {
                            max: 4,
                            speculative: false,
                        };
                        slot.as_mut()
                            .unwrap()
                            .read(Some(&inbound), reads, Instant::now());
                    }
                })
            };
            let _ = PeerIo::pull(&*s.link, &s.inbound);
            session.join().unwrap();
            if s.wire.load(SeqCst) > 0 {
                let woken = s.reactor.shared.lock().ready.contains(&1);
                assert!(woken, "messages left on the wire and nobody told");
            }
            drop(s.reactor);
        });
    }
}
