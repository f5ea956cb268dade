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
//! engine until then ([`Engine::unsent`] counts them). The udp engine
//! (`udp.rs`) has no connection and no handshake: one read is one
//! datagram, one message one datagram written. `make.rs` picks the engine.
//!
//! Two speculative paths let the socket's thread do the engine's work
//! instead of waking the I/O thread, because handing every batch of
//! messages from one thread to another is what costs libzmq a context
//! switch per batch. Whether to take them is the engine's decision (the
//! pipe only knows [`PeerIo`](crate::pipe::PeerIo), which [`Link`] implements by asking the
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
//! No thread waits for an engine it does not own: the socket's thread only
//! `try_lock`s the link, on every path. When the session holds the engine
//! it is in the middle of a turn that does the work the socket wanted
//! done, and the socket's push wakes it for another. A full pipe then
//! ([`crate::pipe::Flush::Busy`]) takes the message anyway, up to twice
//! its high-water mark, rather than drop what the wire may have room for.
//! The loom models in `link.rs` check both paths.
//!
//! So a message is dropped only when the peer is not keeping up, except:
//! on an engine that cannot flush ([`Engine::can_flush`]: UDP's, and
//! subscribers', which write only on the I/O thread), where a socket that
//! outruns its I/O thread drops at the HWM as libzmq does; and when the I/O
//! thread stays descheduled in the middle of a turn while the socket sends
//! another HWM of messages. A fabric engine flushes as far as its credits
//! and free pages allow: past those, the peer is not keeping up.

mod link;
mod make;
mod stream;

pub(crate) mod fabric;
pub(crate) mod raw;
mod udp;

use std::io;
use std::time::Instant;

use fabriq_zmtp::{AuthReply, AuthRequest, PeerInfo, ProtocolError, UsageError};

use crate::pipe::{Item, Queue};
use crate::topics::Topics;
use crate::transport::Poller;

pub(crate) use link::Link;
pub(crate) use make::{make_engine, Conn};
pub(crate) use stream::StreamEngine;
#[cfg(test)]
pub(crate) use stream::MAX_BATCH;

/// Why a connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Eof,
    Io(io::Error),
    Protocol(ProtocolError),
    /// As `Io`, for a handshake whose failure the session has reported to
    /// the monitor already (a malformed ZAP reply: HANDSHAKE_FAILED_PROTOCOL
    /// with libzmq's ZAP code), so no second event follows.
    Reported(io::Error),
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
    fn write(
        &mut self,
        outbound: Option<&Queue>,
        subs: Option<&mut Topics>,
        now: Instant,
    ) -> io::Result<()>;

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

    /// What the socket's thread may sleep on so that a [`Engine::pull`]
    /// finds input as soon as it arrives ([`crate::pipe::PullWait`]):
    /// engines whose input must pass the I/O thread keep this default.
    fn pull_wait(&self, _inbound: &Queue) -> Option<std::sync::Arc<dyn crate::pipe::PullWait>> {
        None
    }

    /// A message landed in `outbound` while the engine waited for one;
    /// returns true if the engine wrote it on this thread (else the
    /// session is woken).
    fn output_ready(&mut self, outbound: &Queue, now: Instant) -> bool;

    /// Whether [`Engine::flush`] may write on the socket's thread (then
    /// the socket asks before it drops a message). Engines that leave all
    /// writing to the session keep this default.
    fn can_flush(&self) -> bool {
        false
    }

    /// The socket found `outbound` at its high-water mark and would drop
    /// a message: write what the wire takes now, on this thread, at most
    /// one batch (see the module docs). Returns whether the engine wrote;
    /// the caller then looks at the queue's room again.
    fn flush(&mut self, _outbound: &Queue, _now: Instant) -> bool {
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

/// The most decoded items a read holds back before it pushes them: a
/// reader on another thread starts on a long batch this early.
const PUSH_BATCH: usize = 64;

/// Moves what one read decoded into a socket's inbound queue, for every
/// engine: the one place that decides conflation.
///
/// Items are pushed in batches ([`Queue::push_all`]). A conflating queue
/// gets only the newest message of the read, as libzmq conflates per
/// read batch: pushing each one would wake the socket at the first and
/// let it take messages while the rest are still being decoded.
pub(crate) struct Delivery<'a> {
    queue: &'a Queue,
    conflate: bool,
    batch: &'a mut Vec<Item>,
    newest: Option<Item>,
    delivered: usize,
}

impl<'a> Delivery<'a> {
    /// A delivery into `queue`, holding items back in `batch` (empty,
    /// kept by the caller so its allocation is reused).
    pub(crate) fn new(queue: &'a Queue, batch: &'a mut Vec<Item>) -> Delivery<'a> {
        Delivery {
            queue,
            conflate: queue.is_conflate(),
            batch,
            newest: None,
            delivered: 0,
        }
    }

    /// Whether the queue takes more (the items held back pushed first
    /// when they would fill it).
    pub(crate) fn has_room(&mut self) -> bool {
        if self.queue.has_room_beside(self.batch.len()) {
            return true;
        }
        self.queue.push_all(self.batch);
        self.queue.has_room()
    }

    /// Delivers `item` (a message to a conflating queue replaces the
    /// newest one held).
    pub(crate) fn push(&mut self, item: Item) {
        if self.conflate && matches!(item, Item::Msg(_)) {
            self.newest = Some(item);
            return;
        }
        self.batch.push(item);
        self.delivered += 1;
        if self.batch.len() >= PUSH_BATCH {
            self.queue.push_all(self.batch);
        }
    }

    /// Pushes what is held back; returns the items delivered.
    pub(crate) fn finish(self) -> usize {
        self.queue.push_all(self.batch);
        match self.newest {
            Some(item) => {
                self.queue.push(item);
                self.delivered + 1
            }
            None => self.delivered,
        }
    }
}

/// Records a subscription (or its cancellation) that leaves a subscriber
/// socket in `subs`, for replay after a reconnect: what every engine does
/// with an item it takes from the socket's queue.
pub(crate) fn record_subscription(item: &Item, subs: Option<&mut Topics>) {
    match (item, subs) {
        (Item::Subscribe(t), Some(s)) => {
            s.add(t);
        }
        (Item::Cancel(t), Some(s)) => {
            s.remove(t);
        }
        _ => {}
    }
}
