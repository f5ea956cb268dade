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
//! reader wakes the writer only if the writer found it full. A busy pipe
//! therefore costs no system calls for wake-ups.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use fabriq_zmtp::Multipart;

use crate::message::Metadata;
use crate::reactor::ReactorWaker;
use crate::signal::Signal;

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

/// Whom to wake when a queue changes state.
#[derive(Debug, Clone)]
pub(crate) enum Waker {
    /// An application socket (its eventfd).
    Socket(Arc<Signal>),
    /// A reactor session.
    Reactor(ReactorWaker),
    /// An inproc socket that has not bound yet: woken once it has.
    Deferred(Arc<std::sync::OnceLock<Arc<Signal>>>),
}

impl Waker {
    fn wake(&self) {
        match self {
            Waker::Socket(signal) => signal.raise(),
            Waker::Reactor(r) => r.wake(),
            Waker::Deferred(cell) => {
                if let Some(signal) = cell.get() {
                    signal.raise();
                }
            }
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    items: VecDeque<Item>,
    /// The reader found the queue empty and waits for a wake-up.
    reader_waiting: bool,
    /// The writer found the queue full and waits for a wake-up.
    writer_waiting: bool,
}

/// One direction of a pipe.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
    len: AtomicUsize,
    hwm: AtomicUsize,
    /// The writer will push no more.
    writer_closed: AtomicBool,
    /// The reader is gone; pushes are discarded.
    reader_closed: AtomicBool,
    /// Keep only the newest item (ZMQ_CONFLATE); the HWM does not apply.
    conflate: AtomicBool,
    reader: Waker,
    writer: Waker,
}

impl Queue {
    pub(crate) fn new(hwm: usize, reader: Waker, writer: Waker) -> Arc<Queue> {
        Arc::new(Queue {
            inner: Mutex::new(Inner::default()),
            len: AtomicUsize::new(0),
            hwm: AtomicUsize::new(hwm),
            writer_closed: AtomicBool::new(false),
            reader_closed: AtomicBool::new(false),
            conflate: AtomicBool::new(false),
            reader,
            writer,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere must not wedge every pipe: the queue holds
        // plain data, consistent after any completed operation.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether one more message fits under the high-water mark. If not,
    /// the writer is registered for a wake-up when room appears.
    pub(crate) fn has_room(&self) -> bool {
        if self.reader_closed.load(Ordering::Acquire) {
            return true; // pushes are discarded: never block on a dead peer
        }
        let hwm = self.hwm.load(Ordering::Relaxed);
        if hwm == 0 || self.len() < hwm || self.conflate.load(Ordering::Relaxed) {
            return true;
        }
        let mut inner = self.lock();
        if inner.items.len() < hwm {
            return true;
        }
        inner.writer_waiting = true;
        false
    }

    /// Appends an item (the caller checked [`Queue::has_room`] where the
    /// pattern requires it). Discarded if the reader is gone.
    pub(crate) fn push(&self, item: Item) {
        if self.reader_closed.load(Ordering::Acquire) {
            return;
        }
        let wake = {
            let mut inner = self.lock();
            if self.conflate.load(Ordering::Relaxed) {
                inner.items.clear();
            }
            inner.items.push_back(item);
            self.len.store(inner.items.len(), Ordering::Release);
            std::mem::take(&mut inner.reader_waiting)
        };
        if wake {
            self.reader.wake();
        }
    }

    /// Takes the oldest item. When the queue is empty the reader is
    /// registered for a wake-up on the next push.
    pub(crate) fn pop(&self) -> Option<Item> {
        let (item, wake) = {
            let mut inner = self.lock();
            let item = inner.items.pop_front();
            self.len.store(inner.items.len(), Ordering::Release);
            if item.is_none() {
                inner.reader_waiting = true;
            }
            let hwm = self.hwm.load(Ordering::Relaxed);
            let room = hwm == 0 || inner.items.len() < hwm;
            let wake = item.is_some() && room && std::mem::take(&mut inner.writer_waiting);
            (item, wake)
        };
        if wake {
            self.writer.wake();
        }
        item
    }

    /// The writer is done; the reader sees the rest, then the end.
    pub(crate) fn close_writer(&self) {
        self.writer_closed.store(true, Ordering::Release);
        self.lock().reader_waiting = false;
        self.reader.wake();
    }

    /// The reader is gone: drop what is queued, discard future pushes, and
    /// unblock a waiting writer.
    pub(crate) fn close_reader(&self) {
        self.reader_closed.store(true, Ordering::Release);
        let mut inner = self.lock();
        inner.items.clear();
        self.len.store(0, Ordering::Release);
        inner.writer_waiting = false;
        drop(inner);
        self.writer.wake();
    }

    pub(crate) fn is_writer_closed(&self) -> bool {
        self.writer_closed.load(Ordering::Acquire)
    }

    /// Writer closed and everything read: the pipe has nothing more.
    pub(crate) fn is_finished(&self) -> bool {
        self.is_writer_closed() && self.len() == 0
    }

    /// Makes the queue keep only its newest item.
    pub(crate) fn set_conflate(&self, on: bool) {
        self.conflate.store(on, Ordering::Relaxed);
    }

    pub(crate) fn set_hwm(&self, hwm: usize) {
        self.hwm.store(hwm, Ordering::Relaxed);
    }
}

/// Identifies a pipe within its socket.
pub(crate) type PipeId = u64;

static NEXT_PIPE_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh pipe id.
pub(crate) fn next_pipe_id() -> PipeId {
    NEXT_PIPE_ID.fetch_add(1, Ordering::Relaxed)
}

/// What a socket knows about the peer at the other end of a pipe.
#[derive(Debug, Clone)]
pub(crate) struct PeerMeta {
    /// The identity the peer announced (may be empty).
    pub identity: Bytes,
    /// For `Message::gets`.
    pub metadata: Option<Arc<Metadata>>,
}

/// The socket's end of a pipe.
#[derive(Debug)]
pub(crate) struct PipeEnd {
    pub id: PipeId,
    /// Messages from the peer.
    pub rx: Arc<Queue>,
    /// Messages to the peer.
    pub tx: Arc<Queue>,
    pub peer: PeerMeta,
}

impl PipeEnd {
    /// Whether the pipe can be forgotten: the peer is gone and everything
    /// it sent has been read. (A peer that closes stops reading at the
    /// same moment, but what it sent before must still be delivered.)
    pub(crate) fn is_dead(&self) -> bool {
        self.rx.is_finished()
    }

    /// Closes our side: the peer's end sees the end of its inbound queue,
    /// and anything it still sends is dropped.
    pub(crate) fn close(&self) {
        self.tx.close_writer();
        self.rx.close_reader();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal() -> Arc<Signal> {
        Arc::new(Signal::new().unwrap())
    }

    fn msg(b: &'static [u8]) -> Item {
        Item::Msg([Bytes::from_static(b)].into_iter().collect())
    }

    #[test]
    fn hwm_and_wakeups() {
        let (r, w) = (signal(), signal());
        let q = Queue::new(2, Waker::Socket(r.clone()), Waker::Socket(w.clone()));
        assert!(q.pop().is_none()); // reader now waiting
        assert!(q.has_room());
        q.push(msg(b"a"));
        assert!(r.wait(Some(std::time::Instant::now()))); // woken
        r.clear();
        q.push(msg(b"b"));
        assert!(!r.wait(Some(std::time::Instant::now()))); // not waiting: no wake
        assert!(!q.has_room()); // writer now waiting
        assert!(q.pop().is_some());
        assert!(w.wait(Some(std::time::Instant::now())));
        assert!(q.has_room());
    }

    #[test]
    fn closing() {
        let q = Queue::new(0, Waker::Socket(signal()), Waker::Socket(signal()));
        q.push(msg(b"a"));
        q.close_writer();
        assert!(!q.is_finished());
        assert!(q.pop().is_some());
        assert!(q.is_finished());

        let q = Queue::new(1, Waker::Socket(signal()), Waker::Socket(signal()));
        q.push(msg(b"a"));
        assert!(!q.has_room());
        q.close_reader();
        assert!(q.has_room());
        q.push(msg(b"b"));
        assert_eq!(q.len(), 0);
    }
}
