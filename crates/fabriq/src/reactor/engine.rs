//! The stream engine: ZMTP over a byte stream (tcp, ipc), and the one
//! place that reads, decodes, encodes and writes a connection, whichever
//! thread drives it.
//!
//! A session (in the I/O thread) owns the connection's life: connecting,
//! the handshake, reconnects, timers, errors and monitor events. The
//! engine's state lives behind a lock in a [`Link`] that the session and
//! the socket's end of the pipe both hold, because the steady state, bytes
//! in and messages out, does not need the I/O thread: handing every batch
//! of messages from one thread to another is what costs libzmq a context
//! switch per batch. Two speculative paths are the engine's own decisions
//! (the pipe only knows [`PeerIo`]):
//!
//! - *Read on the socket's thread* ([`PeerIo::pull`]): a socket that finds
//!   its pipes empty asks the engine to read before it sleeps; the engine
//!   runs the same [`StreamEngine::read`] the session runs, into the same
//!   queue, for a few reads. Whatever it cannot finish (end of stream, an
//!   error, a PONG to send, more to read) it hands back by waking the
//!   session. Conflating sockets are never read this way (reading as bytes
//!   trickle in would hand them every message).
//! - *Write on the socket's thread* ([`PeerIo::output_ready`]): for
//!   lock-step sockets (REQ, REP) a message queued while the session waits
//!   is encoded and written at once by [`StreamEngine::write`] when the
//!   wire is idle. Streaming sockets leave writing to the I/O thread,
//!   which batches many messages per write.
//!
//! The lock is uncontended in the steady state: the socket's thread only
//! `try_lock`s it, and a session that holds it is doing the same work and
//! will wake the socket.

use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use fabriq_zmtp::{Connection, Event as ZEvent, ProtocolError, SocketType};

use crate::pipe::{Item, PeerIo, Queue};
use crate::topics::Topics;
use crate::transport::Stream;

use super::ReactorWaker;

/// Reads the socket's thread may do before it hands the rest to the session.
const PULL_READS: usize = 4;
/// Pieces per vectored write.
const MAX_IOV: usize = 64;
/// Encoded bytes gathered before a write (opportunistic batching: a write
/// happens as soon as the pipe runs dry, this only caps a batch).
const MAX_BATCH: usize = 256 * 1024;

/// Why a connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Eof,
    Io(io::Error),
    Protocol(ProtocolError),
}

/// Why [`StreamEngine::read`] stopped.
#[derive(Debug)]
pub(crate) enum Input {
    /// Nothing more to read now (the stream would block).
    Idle,
    /// The inbound queue is at its HWM; its reader wakes the session when
    /// it makes room.
    Full,
    /// The read budget ran out with more possibly waiting.
    More,
    /// The handshake completed: the session attaches a pipe, then reads on.
    Handshake,
    /// The connection ended.
    Ended(End),
}

/// How much [`StreamEngine::read`] may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reads {
    /// Reads at most.
    pub max: usize,
    /// Read once even if the stream was last seen empty: bytes may have
    /// come since, and one read that finds nothing is cheaper than
    /// sleeping until the I/O thread has run.
    pub speculative: bool,
}

/// One connection's stream and protocol state.
#[derive(Default)]
pub(crate) struct StreamEngine {
    pub stream: Option<Stream>,
    /// A non-blocking connect is in progress on `stream`.
    pub connecting: bool,
    pub conn: Option<Connection>,
    pub handshaken: bool,
    /// The stream may have bytes to read (cleared on `WouldBlock`).
    pub readable: bool,
    /// The stream may take bytes (cleared on `WouldBlock`).
    pub writable: bool,
    /// How the socket's thread found the connection ended; the session
    /// reports it.
    pub ended: Option<End>,
}

impl StreamEngine {
    /// Whether messages flow: handshaken, connected and not ended.
    fn is_active(&self) -> bool {
        self.handshaken && !self.connecting && self.ended.is_none() && self.stream.is_some()
    }

    /// Encoded bytes not yet written.
    pub(crate) fn unsent(&self) -> usize {
        self.conn.as_ref().map_or(0, |c| c.pending().len())
    }

    /// Reads, decodes and delivers into `inbound` (the socket's queue from
    /// this peer, absent until the handshake made one) until the stream
    /// would block, the queue is full, the handshake completes, or `reads`
    /// are done. Returns why it stopped and how many items it delivered.
    ///
    /// A conflating queue gets only the newest message of what one read
    /// decoded, as libzmq conflates per read batch: pushing each one would
    /// wake the socket at the first and let it take messages while the
    /// rest are still being decoded.
    pub(crate) fn read(
        &mut self,
        inbound: Option<&Queue>,
        reads: Reads,
        now: Instant,
    ) -> (Input, usize) {
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
                let Some(conn) = self.conn.as_mut() else {
                    break Some(Input::Idle);
                };
                if self.handshaken && inbound.is_some_and(|q| !q.has_room()) {
                    break Some(Input::Full);
                }
                let item = match conn.poll_event() {
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
                    // Only with Config::authenticate, which this crate
                    // does not set yet (no ZAP handler support).
                    Ok(Some(ZEvent::AuthRequest(r))) => {
                        break Some(Input::Ended(End::Protocol(
                            fabriq_zmtp::ProtocolError::NoAuthenticator(r.mechanism),
                        )));
                    }
                    Err(e) => break Some(Input::Ended(End::Protocol(e))),
                };
                if let Some(q) = inbound {
                    q.push(item);
                    delivered += 1;
                }
            };
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
            let (Some(conn), Some(stream)) = (self.conn.as_mut(), self.stream.as_mut()) else {
                return (Input::Idle, delivered);
            };
            let want = conn.read_size();
            match stream.read_into(conn.recv_buf(), want) {
                Ok(0) => return (Input::Ended(End::Eof), delivered),
                Ok(_) => {
                    self.readable = true;
                    conn.input_received(now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Input::Ended(End::Io(e)), delivered),
            }
        }
    }

    /// Encodes what `outbound` (the socket's queue to this peer) holds, a
    /// batch at a time, and writes until everything is out or the stream
    /// would block. Without `outbound` it writes only what is already
    /// encoded (an ending connection's ERROR). `subs` (subscriber sockets)
    /// records the topics carried, for replay after a reconnect.
    pub(crate) fn write(
        &mut self,
        outbound: Option<&Queue>,
        mut subs: Option<&mut Topics>,
    ) -> io::Result<()> {
        let (Some(conn), Some(stream)) = (self.conn.as_mut(), self.stream.as_mut()) else {
            return Ok(());
        };
        if self.connecting {
            return Ok(());
        }
        if let Some(q) = outbound {
            encode_queued(conn, q, subs.as_deref_mut());
        }
        while !conn.pending().is_empty() && self.writable {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = conn.pending().io_slices(&mut slices);
            match stream.write_vectored(&slices[..n]) {
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
}

/// Encodes what the socket has queued, up to one batch.
fn encode_queued(conn: &mut Connection, outbound: &Queue, mut subs: Option<&mut Topics>) {
    if !conn.is_ready() {
        return;
    }
    while conn.pending().len() < MAX_BATCH {
        let Some(item) = outbound.pop() else { break };
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
    }
}

/// A connection's engine behind a lock, shared by its session and the
/// socket's end of its pipe. See the module documentation.
pub(crate) struct Link {
    engine: Mutex<StreamEngine>,
    session: ReactorWaker,
    /// Lock-step sockets write on the socket's thread when the wire is idle.
    speculative_write: bool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({:?})", self.session)
    }
}

impl Link {
    pub(crate) fn new(session: ReactorWaker, socket_type: SocketType) -> Arc<Link> {
        Arc::new(Link {
            engine: Mutex::new(StreamEngine::default()),
            session,
            speculative_write: matches!(socket_type, SocketType::Req | SocketType::Rep),
        })
    }

    /// The engine, for the session (which may wait for the socket's thread
    /// to finish a speculative read or write).
    pub(crate) fn lock(&self) -> MutexGuard<'_, StreamEngine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes what `outbound` holds on the calling thread; false if the
    /// session must do it (busy, not ready, or bytes already waiting for
    /// the stream to drain).
    fn write_now(&self, outbound: &Queue) -> bool {
        let Ok(mut engine) = self.engine.try_lock() else {
            return false;
        };
        if !engine.is_active() || engine.unsent() > 0 {
            return false;
        }
        if let Err(e) = engine.write(Some(outbound), None) {
            engine.ended = Some(End::Io(e));
            return false;
        }
        // A write the stream did not take whole finishes when the session
        // sees the stream writable again.
        true
    }
}

impl PeerIo for Link {
    fn wake(&self) {
        self.session.wake();
    }

    fn output_ready(&self, outbound: &Queue) {
        if !(self.speculative_write && self.write_now(outbound)) {
            self.session.wake();
        }
    }

    fn pull(&self, inbound: &Queue) -> bool {
        let Ok(mut engine) = self.engine.try_lock() else {
            // The session holds the engine: it is doing this very work
            // and will wake the socket.
            return false;
        };
        if !engine.is_active() || inbound.is_conflate() {
            return false;
        }
        let unsent = engine.unsent();
        let reads = Reads {
            max: PULL_READS,
            speculative: true,
        };
        let (input, delivered) = engine.read(Some(inbound), reads, Instant::now());
        let mut hand_over = match input {
            Input::Idle | Input::Full => false,
            Input::More | Input::Handshake => true,
            Input::Ended(end) => {
                engine.ended = Some(end);
                true
            }
        };
        // A PING read here queued a PONG: the session writes it.
        hand_over |= engine.unsent() > unsent;
        drop(engine);
        if hand_over {
            self.session.wake();
        }
        delivered > 0
    }
}
