//! A link: the connection state of a session, which the application
//! thread may drive itself.
//!
//! A session (in the I/O thread) owns the connection's life: connecting,
//! the handshake, reconnects, timers, errors and monitor events. The
//! steady state, bytes in and messages out, does not need the I/O thread,
//! and handing every batch of messages from one thread to another is what
//! costs libzmq a context switch per batch on the receiving side. So the
//! stream and the protocol engine live behind a lock in a [`Link`] that
//! both the session and the socket's pipe hold. When the application finds
//! its inbound pipe empty it *pumps* the link: it reads the stream, decodes,
//! and fills the pipe on its own thread, without waking anyone. Whatever a
//! pump cannot finish (end of stream, an error, a PONG to send, a pipe
//! filled to its HWM) it hands back to the session by waking it.
//!
//! Lock-step sockets (REQ, REP) also *send* on the application thread: a
//! request or reply is encoded and written at once when the wire is idle,
//! instead of waking the I/O thread to do it. Streaming sockets keep
//! sending through the I/O thread, which batches many messages per write.

use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use fabriq_zmtp::{Connection, Event as ZEvent, Multipart, ProtocolError};

use crate::pipe::{Item, Queue};
use crate::transport::Stream;

use super::ReactorWaker;

/// Reads a pump may do before it hands the rest to the session.
const PUMP_READS: usize = 4;
/// Pieces per vectored write.
const MAX_IOV: usize = 64;

/// Why a connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Eof,
    Io(io::Error),
    Protocol(ProtocolError),
}

/// The connection state shared by a session and its socket's pipe.
#[derive(Default)]
pub(crate) struct LinkIo {
    pub stream: Option<Stream>,
    /// A non-blocking connect is in progress on `stream`.
    pub connecting: bool,
    pub conn: Option<Connection>,
    pub handshaken: bool,
    /// The stream may have bytes to read (cleared on `WouldBlock`).
    pub want_read: bool,
    /// The stream may take bytes (cleared on `WouldBlock`).
    pub writable: bool,
    /// How a pump found the connection ended; the session reports it.
    pub ended: Option<End>,
}

/// See the module documentation.
pub(crate) struct Link {
    io: Mutex<LinkIo>,
    session: ReactorWaker,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({:?})", self.session)
    }
}

impl Link {
    pub(crate) fn new(session: ReactorWaker) -> Arc<Link> {
        Arc::new(Link {
            io: Mutex::new(LinkIo::default()),
            session,
        })
    }

    /// The state, for the session (which may wait for a pump to finish).
    pub(crate) fn lock(&self) -> MutexGuard<'_, LinkIo> {
        self.io.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads and decodes on the calling (application) thread into `into`,
    /// the socket's inbound queue, until the stream has nothing more, the
    /// queue is full or a few reads are done. It reads even when the
    /// session last saw the stream empty: bytes may have come since, and
    /// one read that finds nothing is cheaper than sleeping until the I/O
    /// thread has run. Returns whether it delivered
    /// anything. Never blocks: if the session holds the link, the session
    /// is doing this very work and will wake the socket.
    pub(crate) fn pump(&self, into: &Queue) -> bool {
        let Ok(mut guard) = self.io.try_lock() else {
            return false;
        };
        let io = &mut *guard;
        // A conflating socket wants the newest message of each burst,
        // which the I/O thread's larger reads give it; reading here as
        // bytes trickle in would hand it nearly every message.
        if !io.handshaken || io.connecting || io.ended.is_some() || into.is_conflate() {
            return false;
        }
        let (Some(conn), Some(stream)) = (io.conn.as_mut(), io.stream.as_mut()) else {
            return false;
        };
        let unsent = conn.pending().len();
        let mut delivered = false;
        let mut reads = 0;
        // Whether the session must look: something only it handles, or
        // bytes possibly left unread.
        let mut hand_over = false;
        loop {
            // First what is already decoded.
            loop {
                if !into.has_room() {
                    // The socket wakes the session when it makes room;
                    // the session reads on from there.
                    io.want_read = true;
                    return delivered;
                }
                match conn.poll_event() {
                    Ok(Some(ZEvent::Message(m))) => into.push(Item::Msg(m)),
                    Ok(Some(ZEvent::Subscribe(t))) => into.push(Item::Subscribe(t)),
                    Ok(Some(ZEvent::Cancel(t))) => into.push(Item::Cancel(t)),
                    Ok(Some(ZEvent::HandshakeComplete)) => continue,
                    Ok(None) => break,
                    Err(e) => {
                        io.ended = Some(End::Protocol(e));
                        hand_over = true;
                        break;
                    }
                }
                delivered = true;
            }
            if hand_over || (reads > 0 && !io.want_read) {
                break;
            }
            if reads == PUMP_READS {
                io.want_read = true;
                hand_over = true;
                break;
            }
            reads += 1;
            let want = conn.read_size();
            match stream.read_into(conn.recv_buf(), want) {
                Ok(0) => {
                    io.ended = Some(End::Eof);
                    hand_over = true;
                    break;
                }
                Ok(_) => {
                    io.want_read = true;
                    conn.input_received(Instant::now());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => io.want_read = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    io.ended = Some(End::Io(e));
                    hand_over = true;
                    break;
                }
            }
        }
        // A PING read here queued a PONG: the session writes it. (Bytes
        // that were already unsent are the session's business as usual.)
        hand_over |= conn.pending().len() > unsent;
        drop(guard);
        if hand_over {
            self.session.wake();
        }
        delivered
    }

    /// Encodes `msg` and writes it on the calling thread, if nothing
    /// queued for this connection is still waiting (`queue`, the socket's
    /// outbound queue, must be empty so order is kept, and the engine must
    /// have no unsent bytes) and the session is not busy. Gives the message back otherwise, to be queued as usual.
    /// A write that does not finish is completed by the session when the
    /// stream is writable again.
    pub(crate) fn send_inline(&self, queue: &Queue, msg: Multipart) -> Result<(), Multipart> {
        let Ok(mut guard) = self.io.try_lock() else {
            return Err(msg);
        };
        let io = &mut *guard;
        if !io.handshaken || io.connecting || io.ended.is_some() || queue.len() > 0 {
            return Err(msg);
        }
        let (Some(conn), Some(stream)) = (io.conn.as_mut(), io.stream.as_mut()) else {
            return Err(msg);
        };
        // Unsent bytes mean the peer is slow: queue, so the HWM applies.
        if !conn.pending().is_empty() || conn.send(&msg).is_err() {
            return Err(msg);
        }
        let mut hand_over = false;
        while !conn.pending().is_empty() && io.writable {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = conn.pending().io_slices(&mut slices);
            match stream.write_vectored(&slices[..n]) {
                Ok(0) => {
                    io.ended = Some(End::Io(io::ErrorKind::WriteZero.into()));
                    hand_over = true;
                    break;
                }
                Ok(k) => conn.advance_tx(k),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => io.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    io.ended = Some(End::Io(e));
                    hand_over = true;
                    break;
                }
            }
        }
        drop(guard);
        if hand_over {
            self.session.wake();
        }
        Ok(())
    }
}
