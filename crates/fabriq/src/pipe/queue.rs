//! [`Queue`], one direction of a pipe: its shared and reader's sides,
//! the wake-ups of each end ([`Waker`]), and the high-water mark.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::chunked::Chunked;
use crate::signal::Signal;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering, PlainGuard, PlainMutex};

use super::{Item, PeerIo, PipeId};

/// Whom to wake when a queue changes state.
#[derive(Debug, Clone)]
pub(crate) enum Waker {
    /// An application socket (its eventfd).
    Socket(Arc<Signal>),
    /// A connection's engine.
    Peer(Arc<dyn PeerIo>),
    /// An inproc socket that has not bound yet: woken once it has.
    Deferred(Arc<std::sync::OnceLock<Arc<Signal>>>),
}

impl Waker {
    fn wake(&self) {
        match self {
            Waker::Socket(signal) => signal.raise(),
            Waker::Peer(peer) => peer.wake(),
            Waker::Deferred(cell) => {
                if let Some(signal) = cell.get() {
                    signal.raise();
                }
            }
        }
    }

    /// Wakes a socket for data alone (an item, or room): its pipes did not
    /// change, so it need not look for new or dead ones (see
    /// [`Signal::raise_data`]).
    fn wake_for_data(&self) {
        match self {
            Waker::Socket(signal) => signal.raise_data(),
            Waker::Peer(peer) => peer.wake(),
            Waker::Deferred(cell) => {
                if let Some(signal) = cell.get() {
                    signal.raise_data();
                }
            }
        }
    }

    /// Wakes the reader of `queue`, which was waiting for an item.
    fn item_for(&self, queue: &Queue) {
        match self {
            Waker::Peer(peer) => peer.output_ready(queue),
            Waker::Socket(signal) => queue.announce(signal),
            Waker::Deferred(cell) => {
                if let Some(signal) = cell.get() {
                    queue.announce(signal);
                }
            }
        }
    }

    /// The socket signal this waker raises, if it is a socket's.
    fn signal(&self) -> Option<Arc<Signal>> {
        match self {
            Waker::Socket(signal) => Some(signal.clone()),
            Waker::Deferred(cell) => cell.get().cloned(),
            Waker::Peer(_) => None,
        }
    }
}

/// The part both ends touch, under one lock.
#[derive(Debug, Default)]
struct Shared {
    items: Chunked<Item>,
    /// The reader found the queue empty and waits for a wake-up.
    reader_waiting: bool,
}

/// The part only the reader touches: items it took from [`Shared`] in one
/// batch, and how many it consumed since it last told the writer.
///
/// Taking everything queued at once (one lock per batch instead of one per
/// message) keeps the two threads off each other's cache lines while a
/// stream is flowing; it is what libzmq's ypipe achieves with its
/// lock-free batch reads.
///
/// A queue read through `&Queue` (by engines, whichever thread drives
/// them) keeps its reader's side inside, behind an uncontended lock. A
/// socket reads its pipes through its [`PipeEnd`](super::PipeEnd)s, which own theirs:
/// no lock per message (an uncontended lock and unlock cost about 10 ns
/// here, against roughly 110 ns for a whole 8 B message received). One
/// queue is read one way only.
#[derive(Debug, Default)]
pub(crate) struct ReaderSide {
    cache: Chunked<Item>,
    unreported: usize,
    /// The [`LateMeta`](crate::message::LateMeta) generation last taken.
    pub(super) late_seen: u64,
}

/// One direction of a pipe.
///
/// `len` counts every item in the pipe (shared queue and reader cache);
/// the reader lowers it in small batches, so the writer's view is at most
/// a batch too high, never too low: the high-water mark is never exceeded.
///
/// The fields fall in three groups on separate cache lines: what both
/// threads write ([`Hot`]), what only the reader touches (`reader_side`),
/// and the rest, which neither writes on the data path. With all of them
/// on one or two lines, the reader's lock of `reader_side` at every pop
/// took the line from the writer, which wanted it back at the next push.
#[derive(Debug)]
pub(crate) struct Queue {
    hot: CachePadded<Hot>,
    /// Only the reader locks this, so the lock is never contended.
    reader_side: CachePadded<PlainMutex<ReaderSide>>,
    hwm: AtomicUsize,
    /// What the writer's SNDHWM and the reader's RCVHWM contribute to
    /// `hwm` (`NO_PART`: that side does not count, e.g. a tcp session's):
    /// kept so that either socket may change its HWM later, as in libzmq.
    parts: [AtomicUsize; 2],
    /// The writer will push no more.
    writer_closed: AtomicBool,
    /// The reader is gone; pushes are discarded.
    reader_closed: AtomicBool,
    /// Keep only the newest item (ZMQ_CONFLATE); the HWM does not apply.
    conflate: AtomicBool,
    /// The pipe's id in its reader's socket (0 until [`Queue::announce_as`]).
    reader_id: AtomicU64,
    /// The id is in the reader's signal, not yet taken (see
    /// [`Queue::announce`]).
    announced: AtomicBool,
    reader: Waker,
    writer: Waker,
}

/// What both ends write while items flow.
#[derive(Debug, Default)]
struct Hot {
    shared: PlainMutex<Shared>,
    /// Items in the pipe (see [`Queue`]).
    len: AtomicUsize,
    /// The writer found the queue full and waits for a wake-up. Paired
    /// with `len` (both sequentially consistent): either the writer's
    /// second look sees the room the reader made, or the reader sees the
    /// flag and wakes it.
    writer_waiting: AtomicBool,
}

/// Consumed items the reader may hold back before lowering `len`, at most
/// (libzmq's `max_wm_delta`).
const REPORT_BATCH: usize = 1024;

impl Queue {
    pub(crate) fn new(hwm: usize, reader: Waker, writer: Waker) -> Arc<Queue> {
        Arc::new(Queue {
            hot: CachePadded::new(Hot::default()),
            reader_side: CachePadded::new(PlainMutex::new(ReaderSide::default())),
            hwm: AtomicUsize::new(hwm),
            parts: [AtomicUsize::new(NO_PART), AtomicUsize::new(NO_PART)],
            writer_closed: AtomicBool::new(false),
            reader_closed: AtomicBool::new(false),
            conflate: AtomicBool::new(false),
            reader_id: AtomicU64::new(0),
            announced: AtomicBool::new(false),
            reader,
            writer,
        })
    }

    fn lock_shared(&self) -> PlainGuard<'_, Shared> {
        // No poisoning: a panic elsewhere must not wedge every pipe, and
        // the queue holds plain data, consistent after any completed
        // operation.
        self.hot.shared.lock()
    }

    fn lock_reader(&self) -> PlainGuard<'_, ReaderSide> {
        self.reader_side.lock()
    }

    /// Items in the pipe, as the writer sees it (possibly a few high).
    pub(crate) fn len(&self) -> usize {
        self.hot.len.load(Ordering::SeqCst)
    }

    /// Whether one more message fits under the high-water mark. If not,
    /// the writer is registered for a wake-up when room appears.
    pub(crate) fn has_room(&self) -> bool {
        if self.reader_closed.load(Ordering::Acquire) {
            return true; // pushes are discarded: never block on a dead peer
        }
        let hwm = self.hwm.load(Ordering::Relaxed);
        if hwm == 0 || self.conflate.load(Ordering::Relaxed) || self.len() < hwm {
            return true;
        }
        // Set the flag, then look again: the reader may have made room
        // before it could see the flag. (If so the flag stays set and costs
        // one spare wake-up.) Both steps are read-modify-writes, not a
        // plain store and load: the second one then reads the reader's
        // `fetch_sub` or precedes it in `len`'s order, so either we see the
        // room or the reader sees the flag, under acquire/release alone.
        // (A store/load pair needs sequential consistency for that, which
        // the loom model cannot check and which is easy to lose in a later
        // edit.) This is the slow path: the queue looked full.
        self.hot.writer_waiting.swap(true, Ordering::SeqCst);
        self.hot.len.fetch_add(0, Ordering::SeqCst) < hwm
    }

    /// Whether one more message fits under the high-water mark beside
    /// `pending` items the writer holds back for one [`Queue::push_all`].
    /// Unlike [`Queue::has_room`] this registers no wake-up: a writer that
    /// gets `false` pushes what it holds, then asks `has_room`.
    pub(crate) fn has_room_beside(&self, pending: usize) -> bool {
        let hwm = self.hwm.load(Ordering::Relaxed);
        hwm == 0
            || self.conflate.load(Ordering::Relaxed)
            || self.reader_closed.load(Ordering::Acquire)
            || self.len() + pending < hwm
    }

    /// Whether one more message fits while the I/O thread is busy with the
    /// connection ([`Flush::Busy`](super::Flush::Busy)): the pipe may hold up to twice its
    /// high-water mark. Registers no wake-up (only patterns that drop ask).
    pub(crate) fn has_overdraft_room(&self) -> bool {
        let hwm = self.hwm.load(Ordering::Relaxed);
        hwm == 0
            || self.conflate.load(Ordering::Relaxed)
            || self.reader_closed.load(Ordering::Acquire)
            || self.len() < hwm.saturating_mul(2)
    }

    /// PROBE_ROUTER: queues the empty message that a DEALER, ROUTER or REQ
    /// with the option sends a new peer before anything else. Callers
    /// queue it when they make the pipe (on the socket's outgoing side),
    /// so it leaves without the application calling into the socket, as
    /// libzmq's does for the connections it initiates.
    pub(crate) fn push_probe(&self) {
        self.push(Item::Msg([fabriq_zmtp::Part::new()].into_iter().collect()));
    }

    /// Appends an item (the caller checked [`Queue::has_room`] where the
    /// pattern requires it). Discarded if the reader is gone.
    pub(crate) fn push(&self, item: Item) {
        if self.reader_closed.load(Ordering::Acquire) {
            return;
        }
        let wake = {
            let mut shared = self.lock_shared();
            if self.conflate.load(Ordering::Relaxed) {
                let dropped = shared.items.len();
                shared.items.clear();
                self.hot.len.fetch_sub(dropped, Ordering::SeqCst);
            }
            shared.items.push_back(item);
            self.hot.len.fetch_add(1, Ordering::SeqCst);
            std::mem::take(&mut shared.reader_waiting)
        };
        if wake {
            self.reader.item_for(self);
        }
    }

    /// Appends every item of `items`, leaving it empty: one lock, one
    /// count update and at most one wake-up for the lot. A read that
    /// decoded several messages delivers them this way (libzmq's session
    /// likewise flushes its pipe once per read batch, not per message).
    /// The caller checked [`Queue::has_room_beside`] for each item where
    /// the pattern requires it. Discarded if the reader is gone.
    pub(crate) fn push_all(&self, items: &mut Vec<Item>) {
        match items.len() {
            0 => return,
            // One message per read (a round trip): the plain push is
            // cheaper than handing over buffers.
            1 => return self.push(items.pop().expect("one item")),
            _ => {}
        }
        if self.reader_closed.load(Ordering::Acquire) {
            items.clear();
            return;
        }
        let wake = {
            let mut shared = self.lock_shared();
            if self.conflate.load(Ordering::Relaxed) {
                let dropped = shared.items.len();
                shared.items.clear();
                self.hot.len.fetch_sub(dropped, Ordering::SeqCst);
                let newest = items.pop();
                items.clear();
                shared.items.extend(newest);
                self.hot.len.fetch_add(1, Ordering::SeqCst);
            } else {
                let n = items.len();
                // A reader that keeps up finds the queue empty: the batch's
                // buffer becomes the queue's, and the writer gets the
                // queue's emptied one for its next batch (no allocation).
                shared.items.append_vec(items);
                self.hot.len.fetch_add(n, Ordering::SeqCst);
            }
            std::mem::take(&mut shared.reader_waiting)
        };
        if wake {
            self.reader.item_for(self);
        }
    }

    /// Names this queue, as its reader's socket knows the pipe: the reader's
    /// wake-ups for an item then say which pipe has it (see `Pipes`).
    pub(crate) fn announce_as(&self, id: PipeId) {
        self.reader_id.store(id, Ordering::Relaxed);
    }

    /// The signal of the socket that reads this queue, if a socket does.
    pub(crate) fn reader_signal(&self) -> Option<Arc<Signal>> {
        self.reader.signal()
    }

    /// Wakes the reader's socket for an item here, naming the pipe unless
    /// its name is already waiting to be taken. (The id is read after the
    /// shared lock that saw the reader waiting, and the reader set it
    /// before its first look, so it is never missed.)
    fn announce(&self, signal: &Signal) {
        let id = self.reader_id.load(Ordering::Relaxed);
        if id != 0 && !self.announced.swap(true, Ordering::AcqRel) {
            signal.raise_for_pipe(id);
        } else {
            signal.raise_data();
        }
    }

    /// The reader took this pipe's name from its signal: the next wake-up
    /// names it again. Called before the reader looks at the queue.
    pub(crate) fn clear_announced(&self) {
        self.announced.store(false, Ordering::Release);
    }

    /// Withdraws the reader's request for a wake-up (the next push will
    /// not wake it): the reader is about to fill the queue itself, and
    /// will [`Queue::pop`] again, which asks for one anew if it finds the
    /// queue empty.
    pub(crate) fn stop_waiting(&self) {
        self.lock_shared().reader_waiting = false;
    }

    /// Takes the oldest item. When the queue is empty the reader is
    /// registered for a wake-up on the next push.
    ///
    /// For queues read through `&Queue`; a [`PipeEnd`](super::PipeEnd) reads its own with
    /// [`PipeEnd::pop`](super::PipeEnd::pop).
    pub(crate) fn pop(&self) -> Option<Item> {
        let mut side = self.lock_reader();
        self.pop_locked(&mut side)
    }

    /// [`Queue::pop`] with a reader's side that the reader owns.
    #[inline]
    pub(super) fn pop_from(&self, side: &mut ReaderSide) -> Option<Item> {
        if self.reader_closed.load(Ordering::Acquire) {
            // As `close_reader` leaves the inner side: nothing to read.
            side.cache.clear();
            side.unreported = 0;
            return None;
        }
        self.pop_locked(side)
    }

    /// Takes items in order and hands each to `take` until it returns
    /// `false` or the queue is empty: repeated [`Queue::pop`] under one
    /// lock (an engine encoding a batch for the wire).
    pub(crate) fn pop_each(&self, mut take: impl FnMut(Item) -> bool) {
        let mut reader = self.reader();
        while let Some(item) = reader.pop() {
            if !take(item) {
                break;
            }
        }
    }

    /// The reader's side, held for a run of [`Reader::pop`]s under one
    /// lock (an engine filling pages between pops). Only the queue's one
    /// reader takes it, so holding it keeps nobody waiting.
    pub(crate) fn reader(&self) -> Reader<'_> {
        Reader {
            queue: self,
            side: self.lock_reader(),
        }
    }

    // Always inlined: a call per item cost more than the batch saves.
    #[inline(always)]
    fn pop_locked(&self, side: &mut ReaderSide) -> Option<Item> {
        if self.conflate.load(Ordering::Relaxed) {
            // Only the newest item counts: nothing may wait in the cache.
            side.unreported += side.cache.len();
            side.cache.clear();
        }
        if side.cache.is_empty() {
            self.report(side);
            let mut shared = self.lock_shared();
            if shared.items.is_empty() {
                shared.reader_waiting = true;
                return None;
            }
            if self.conflate.load(Ordering::Relaxed) {
                let item = shared.items.pop_back();
                side.unreported += 1 + shared.items.len();
                shared.items.clear();
                drop(shared);
                self.report(side);
                return item;
            }
            std::mem::swap(&mut side.cache, &mut shared.items);
        }
        let item = side.cache.pop_front();
        side.unreported += 1;
        if side.cache.is_empty() || side.unreported >= self.report_batch() {
            self.report(side);
            if self.is_finished() {
                // The last item of a closed pipe: the reader's owner can
                // forget the pipe now, and must be told so to look.
                self.reader.wake();
            }
        }
        item
    }

    /// How many consumed items the reader reports at once: the distance
    /// between the HWM and libzmq's low-water mark (half the HWM, at most
    /// 1024), so a writer blocked at the HWM is woken to refill in
    /// batches rather than for every message. A receiver slower than its
    /// sender keeps its queue at the HWM, and then every report is a
    /// wake-up: with a batch of 64 that was one wake-up (and a context
    /// switch) per 64 small messages.
    fn report_batch(&self) -> usize {
        match self.hwm.load(Ordering::Relaxed) {
            0 => REPORT_BATCH,
            hwm => (hwm / 2).clamp(1, REPORT_BATCH),
        }
    }

    /// Tells the writer what the reader consumed, and wakes it if it waits.
    /// `len` changes only here on the reader's side, so a writer that sees
    /// room has been (or is being) woken: `has_room` and wake-ups agree.
    fn report(&self, side: &mut ReaderSide) {
        if side.unreported == 0 {
            return;
        }
        self.hot.len.fetch_sub(side.unreported, Ordering::SeqCst);
        side.unreported = 0;
        if self.hot.writer_waiting.load(Ordering::SeqCst)
            && self.hot.writer_waiting.swap(false, Ordering::SeqCst)
        {
            self.writer.wake_for_data();
        }
    }

    /// Items of room the queue holds in memory, its reader's side
    /// included (for tests of what a pipe keeps).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.lock_shared().items.capacity() + self.lock_reader().cache.capacity()
    }

    /// The writer is done; the reader sees the rest, then the end.
    pub(crate) fn close_writer(&self) {
        self.writer_closed.store(true, Ordering::Release);
        self.lock_shared().reader_waiting = false;
        self.reader.wake();
    }

    /// The reader is gone: drop what is queued, discard future pushes, and
    /// unblock a waiting writer.
    pub(crate) fn close_reader(&self) {
        self.reader_closed.store(true, Ordering::Release);
        let mut side = self.lock_reader();
        side.cache.clear();
        side.unreported = 0;
        let mut shared = self.lock_shared();
        shared.items.clear();
        self.hot.len.store(0, Ordering::SeqCst);
        drop(shared);
        drop(side);
        self.hot.writer_waiting.store(false, Ordering::SeqCst);
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

    /// Whether the queue keeps only its newest item.
    pub(crate) fn is_conflate(&self) -> bool {
        self.conflate.load(Ordering::Relaxed)
    }

    /// Sets the writer's (`sender`) and/or reader's part of the HWM and
    /// recomputes it: one part alone is the HWM; both are summed (an
    /// inproc pipe, libzmq's "HWM boost"), 0 in either meaning none. A
    /// lowered HWM keeps what is queued; no more is accepted until the
    /// queue is under it.
    pub(crate) fn set_hwm_parts(&self, sender: Option<usize>, receiver: Option<usize>) {
        if let Some(s) = sender {
            self.parts[0].store(s, Ordering::Relaxed);
        }
        if let Some(r) = receiver {
            self.parts[1].store(r, Ordering::Relaxed);
        }
        let part = |i: usize| Some(self.parts[i].load(Ordering::Relaxed)).filter(|&p| p != NO_PART);
        let hwm = match (part(0), part(1)) {
            (Some(s), Some(r)) if s == 0 || r == 0 => 0,
            (Some(s), Some(r)) => s.saturating_add(r),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => return,
        };
        self.hwm.store(hwm, Ordering::Relaxed);
        // A raised HWM may let a waiting writer go on.
        self.writer.wake();
    }
}

/// A HWM part that does not count (see [`Queue::set_hwm_parts`]).
const NO_PART: usize = usize::MAX;

/// A queue's reader side, locked (see [`Queue::reader`]).
pub(crate) struct Reader<'a> {
    queue: &'a Queue,
    side: PlainGuard<'a, ReaderSide>,
}

impl Reader<'_> {
    /// [`Queue::pop`] without taking the lock again.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Item> {
        self.queue.pop_locked(&mut self.side)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::pipe::{next_pipe_id, PeerMeta, PipeEnd};

    fn signal() -> Arc<Signal> {
        Arc::new(Signal::new().unwrap())
    }

    fn msg(b: &'static [u8]) -> Item {
        Item::Msg([fabriq_zmtp::Part::from_static(b)].into_iter().collect())
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

    /// A socket's end reads with the cache it owns: in order, with the
    /// writer told of room in batches and woken for it, and nothing once
    /// the end is closed, as the queue's own reader's side behaves.
    #[test]
    fn a_pipe_end_reads_with_its_own_cache() {
        let (r, w) = (signal(), signal());
        // HWM 4: the reader reports consumption two items at a time.
        let rx = Queue::new(4, Waker::Socket(r.clone()), Waker::Socket(w.clone()));
        let tx = Queue::new(0, Waker::Socket(w.clone()), Waker::Socket(r));
        let mut end = PipeEnd {
            id: next_pipe_id(),
            rx: rx.clone(),
            tx,
            peer: PeerMeta {
                identity: Bytes::new(),
                metadata: None,
                all_groups: false,
                late: None,
            },
            peer_io: None,
            reader: ReaderSide::default(),
        };
        for b in [&b"a"[..], b"b", b"c", b"d"] {
            rx.push(Item::Msg(
                [fabriq_zmtp::Part::from(Bytes::from(b))]
                    .into_iter()
                    .collect(),
            ));
        }
        assert!(!rx.has_room()); // the writer waits for room
        w.clear();
        let mut next = || match end.pop() {
            Some(Item::Msg(m)) => m[0].to_vec(),
            other => panic!("not a message: {other:?}"),
        };
        assert_eq!(next(), b"a");
        assert!(!w.wait(Some(std::time::Instant::now()))); // not reported yet
        assert_eq!(next(), b"b");
        assert!(w.wait(Some(std::time::Instant::now()))); // room, in one report
        assert_eq!(rx.len(), 2);
        assert_eq!((next(), next()), (b"c".to_vec(), b"d".to_vec()));
        assert_eq!(rx.len(), 0);
        assert!(end.pop().is_none());

        rx.push(msg(b"e"));
        rx.push(msg(b"f"));
        assert!(end.pop().is_some()); // "f" now in the end's cache
        assert_eq!(end.reader.cache.len(), 1);
        end.close();
        assert!(end.pop().is_none(), "read past the close");
        assert!(end.reader.cache.is_empty());
    }

    /// A pipe holds memory for what it holds, within a chunk or two per
    /// side, on the way up and on the way down: a receiver that fell
    /// behind by 100,000 messages and caught up leaves nothing of that
    /// backlog allocated (a `VecDeque` kept its peak, twice over: the
    /// queue's and the reader's cache's after their swap), and a writer's
    /// batch buffer traded for the queue's gets a chunk's worth back.
    #[test]
    fn a_pipe_gives_a_drained_backlog_s_memory_back() {
        use crate::chunked::CHUNK;
        let q = Queue::new(0, Waker::Socket(signal()), Waker::Socket(signal()));
        let n = 100_000;
        let mut batch = Vec::new();
        for i in 0..n {
            if i % 2 == 0 {
                q.push(msg(b"x"));
            } else {
                batch.push(msg(b"y"));
                if batch.len() == 64 {
                    q.push_all(&mut batch);
                }
            }
            if i == n / 2 {
                // The reader takes the first half into its cache and reads
                // some; the writer goes on filling the shared queue.
                for _ in 0..1000 {
                    assert!(q.pop().is_some());
                }
            }
        }
        q.push_all(&mut batch);
        let held = q.len();
        assert!(q.held() <= held + 4 * CHUNK, "{} for {held}", q.held());
        while q.pop().is_some() {}
        assert_eq!(q.len(), 0);
        assert!(q.held() <= 2 * CHUNK, "{} items of room left", q.held());
        // The batch buffer traded for the (empty) queue's comes back small.
        let mut batch: Vec<Item> = (0..64).map(|_| msg(b"z")).collect();
        q.push_all(&mut batch);
        assert!(batch.is_empty() && batch.capacity() <= 2 * CHUNK);
    }
}

/// loom models of the wake-up protocol (`RUSTFLAGS="--cfg loom"`, see
/// scripts/test): in every interleaving, a side that registered as waiting
/// is woken by the other side's next step.
#[cfg(all(test, loom))]
mod loom_models {
    use fabriq_zmtp::Multipart;

    use super::*;

    fn item() -> Item {
        Item::Msg(Multipart::new())
    }

    fn signals() -> (Arc<Signal>, Arc<Signal>) {
        (
            Arc::new(Signal::new().unwrap()),
            Arc::new(Signal::new().unwrap()),
        )
    }

    /// A reader that finds the queue empty is woken by the next push.
    #[test]
    fn push_wakes_a_reader_that_found_the_queue_empty() {
        loom::model(|| {
            let (r, w) = signals();
            let q = Queue::new(0, Waker::Socket(r.clone()), Waker::Socket(w));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || q.push(item()))
            };
            r.clear();
            let got = q.pop().is_some();
            writer.join().unwrap();
            if !got {
                assert!(r.would_wake(), "reader sleeps with an item queued");
            }
        });
    }

    /// A batch pushed at once (one read's messages) either is seen whole
    /// by the reader's look, or wakes it; the reader never sees half of
    /// it and sleeps.
    #[test]
    fn a_batch_wakes_a_reader_that_found_the_queue_empty() {
        loom::model(|| {
            let (r, w) = signals();
            let q = Queue::new(0, Waker::Socket(r.clone()), Waker::Socket(w));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || q.push_all(&mut vec![item(), item()]))
            };
            r.clear();
            let mut got = 0;
            while q.pop().is_some() {
                got += 1;
            }
            writer.join().unwrap();
            assert!(got == 0 || got == 2, "half a batch seen: {got}");
            if got == 0 {
                assert!(r.would_wake(), "reader sleeps with a batch queued");
            }
        });
    }

    /// A reader that fills its own queue (a pull on the socket's thread)
    /// withdraws its wake-up first; the look after the pull re-arms it, so
    /// a push from the I/O thread at any moment is either seen or wakes
    /// the reader.
    #[test]
    fn a_reader_that_pulls_still_sees_or_is_woken_by_every_push() {
        loom::model(|| {
            let (r, w) = signals();
            let q = Queue::new(0, Waker::Socket(r.clone()), Waker::Socket(w));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || q.push(item()))
            };
            r.clear();
            let mut got = usize::from(q.pop().is_some());
            q.stop_waiting();
            q.push(item()); // what the pull delivered, on this thread
            while q.pop().is_some() {
                got += 1;
            }
            writer.join().unwrap();
            if got < 2 {
                assert!(r.would_wake(), "reader sleeps with an item queued");
            }
        });
    }

    /// A writer that finds the queue at its HWM is woken when the reader
    /// makes room.
    #[test]
    fn consumption_wakes_a_writer_that_found_the_queue_full() {
        loom::model(|| {
            let (r, w) = signals();
            let q = Queue::new(1, Waker::Socket(r), Waker::Socket(w.clone()));
            q.push(item());
            let reader = {
                let q = q.clone();
                loom::thread::spawn(move || assert!(q.pop().is_some()))
            };
            w.clear();
            let room = q.has_room();
            reader.join().unwrap();
            if !room {
                assert!(w.would_wake(), "writer sleeps with room in the queue");
            }
        });
    }

    /// Closing the writer side wakes a reader that found the queue empty,
    /// and the reader then sees the end.
    #[test]
    fn close_wakes_a_waiting_reader() {
        loom::model(|| {
            let (r, w) = signals();
            let q = Queue::new(0, Waker::Socket(r.clone()), Waker::Socket(w));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || q.close_writer())
            };
            r.clear();
            let finished = q.pop().is_none() && q.is_finished();
            writer.join().unwrap();
            if !finished {
                assert!(r.would_wake(), "reader sleeps through the close");
            }
        });
    }
}
