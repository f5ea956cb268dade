//! Pipes: the bounded queues between a socket and one of its peers.
//!
//! A pipe is two one-way [`Queue`]s. The socket owns one end
//! ([`PipeEnd`]); the other end belongs to a reactor session (tcp, ipc) or
//! to another socket (inproc). Items are whole messages, so a multipart
//! message is atomic by construction. Each queue has a high-water mark
//! counted in messages (0 = no limit, as in libzmq).
//!
//! Wake-ups are edge-triggered and coalesced: a writer wakes the reader
//! only if the reader found the queue empty and said it is waiting, and a
//! reader wakes the writer only if the writer found it full, and tells it
//! about room in batches. A busy pipe therefore costs no system
//! calls for wake-ups, and the reader takes queued items in batches.

use std::sync::Arc;

use bytes::Bytes;
use fabriq_zmtp::Multipart;

mod end;
mod queue;

pub(crate) use end::{PeerMeta, PipeEnd};
pub(crate) use queue::{Queue, Reader, ReaderSide, Waker};

/// What travels through a pipe.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// A whole message.
    Msg(Multipart),
    /// A subscription travelling from a subscriber to a publisher.
    Subscribe(Bytes),
    /// A cancelled subscription.
    Cancel(Bytes),
}

/// The connection behind a pipe's far end, when that end is driven by a
/// connection's engine rather than by a socket. Pipes know only this; what
/// the engine does when asked (read or write on the calling thread, or
/// wake the thread that drives it) is its own decision (see
/// `reactor/engine/mod.rs`).
pub(crate) trait PeerIo: Send + Sync + std::fmt::Debug {
    /// Wakes whoever drives the connection.
    fn wake(&self);

    /// `outbound`, the queue of messages to the peer, received an item
    /// while the engine was waiting for one.
    fn output_ready(&self, outbound: &Queue);

    /// The socket found `outbound` at its high-water mark and would drop
    /// a message: the engine may write what the wire takes on this thread.
    /// Never waits for the engine: see [`Flush`].
    fn flush(&self, outbound: &Queue) -> Flush;

    /// The socket found `inbound`, the queue from the peer, empty and is
    /// about to sleep: the engine may read what has arrived on this thread.
    /// Returns whether anything was delivered.
    fn pull(&self, inbound: &Queue) -> bool;

    /// What the socket's thread may sleep on, beside its signal, while it
    /// waits to receive from `inbound`: a descriptor that turns readable
    /// when a [`PeerIo::pull`] may find input (see [`PullWait`]). None for
    /// connections whose input reaches the socket only through the I/O
    /// thread. Never waits for the engine.
    fn pull_wait(&self, _inbound: &Queue) -> Option<Arc<dyn PullWait>> {
        None
    }
}

/// A descriptor a receiving socket's thread sleeps on so that the input
/// which wakes it needs no hand-off through the I/O thread: a fabric
/// node's doorbell, which peers ring after they sent it pages. Woken, the
/// socket's thread pulls (reads the completions itself): one wake-up per
/// hop instead of two (the I/O thread's, then the socket's).
///
/// The I/O thread watches the same descriptor, and a ring the socket's
/// thread takes is one the I/O thread does not see, so the socket's thread
/// owes it what it does not use itself: it calls [`PullWait::take`] when
/// the poll reports the descriptor, looks at its pipes (pulling), then
/// calls [`PullWait::settle`], which hands anything left to the I/O thread.
/// A ring is never lost between them: whatever the order of the two
/// threads, the input it announced is either pulled by the socket's thread
/// or handled by the I/O thread.
pub(crate) trait PullWait: Send + Sync + std::fmt::Debug {
    /// The descriptor to poll for readability.
    fn fd(&self) -> std::os::fd::BorrowedFd<'_>;

    /// Consumes the readiness the poll reported (drains the doorbell) and
    /// makes the input it announced ready to pull. True when there was
    /// any (another thread may have consumed it first); then
    /// [`PullWait::settle`] must follow the next look at the pipes.
    fn take(&self) -> bool;

    /// After the look that followed a [`PullWait::take`]: hands the input
    /// this thread did not pull (its pull found the engine busy, or the
    /// input was another connection's) to the I/O thread.
    fn settle(&self);

    /// Asked just before the thread sleeps on [`PullWait::fd`]: false when
    /// input is already there that would not make the descriptor readable
    /// (libfabric's `fi_trywait` says to read the queue first); the thread
    /// then calls [`PullWait::take`] instead of sleeping.
    fn may_sleep(&self) -> bool {
        true
    }

    /// Called once after every sleep (and every decision not to sleep)
    /// that followed a [`PullWait::may_sleep`] that said true, whatever
    /// woke the thread: the wait stops counting the thread as asleep.
    /// True when the wait wants a [`PullWait::take`] and
    /// [`PullWait::settle`] even though its descriptor did not turn
    /// readable (input may have come in that nothing announced to anyone
    /// awake).
    fn woke(&self) -> bool {
        false
    }
}

/// What [`PeerIo::flush`] did with a full pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flush {
    /// The engine wrote on the calling thread: look at the room again.
    Wrote,
    /// The I/O thread holds the engine, in the middle of a turn that
    /// writes what the pipe holds when it ends (a message pushed now wakes
    /// it again): the pipe may go over its high-water mark, up to
    /// [`Queue::has_overdraft_room`], rather than drop what the wire may
    /// have room for.
    Busy,
    /// Nothing was or can be written on this thread (an engine that never
    /// writes here, the wire full, no connection).
    Nothing,
}

/// Identifies a pipe within its socket.
pub(crate) type PipeId = u64;

// A std atomic even under loom: loom's cannot be a static, and the
// counter is outside every modelled protocol.
static NEXT_PIPE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A fresh pipe id.
pub(crate) fn next_pipe_id() -> PipeId {
    NEXT_PIPE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
