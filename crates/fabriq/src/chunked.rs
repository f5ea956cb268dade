//! The FIFO inside a pipe: items in chunks of at most [`CHUNK`], each
//! chunk freed as soon as the reader has emptied it.
//!
//! A pipe used to keep its items in one `VecDeque`, which grows by
//! doubling and never shrinks: a receiver that fell behind by N messages
//! left the pipe holding room for up to 2N (rounded up to a power of two)
//! for as long as the pipe lived, and since the reader swaps the whole
//! shared queue into its private cache (one lock per batch, see
//! `pipe::ReaderSide`), both the queue and the cache could each hold such
//! a peak. In chunks, the memory follows what is queued, within one chunk,
//! on the way up and on the way down, as in libzmq's `yqueue_t` (chunks of
//! 256 messages). The last chunk stays when the queue empties, so a pipe
//! that keeps flowing reuses it instead of allocating per batch.

use std::collections::VecDeque;

/// Items per chunk (libzmq's `message_pipe_granularity`). A chunk of
/// `pipe::Item`s is 20 KiB, below glibc's mmap threshold.
pub(crate) const CHUNK: usize = 256;

/// A FIFO that holds its items in chunks of at most [`CHUNK`] (see the
/// module's documentation). The chunk being read is kept apart from the
/// ones behind it, so a pop is one `VecDeque` pop: with the chunks in one
/// `VecDeque` of `VecDeque`s, a pop cost 76 instructions (callgrind,
/// PUSH/PULL 8 B over tcp, two pops a message). Only the last chunk of
/// `rest` takes pushes, and chunks in `rest` are never empty; `head` may
/// be emptied with chunks behind it, and is replaced at the next pop.
#[derive(Debug)]
pub(crate) struct Chunked<T> {
    /// The oldest chunk: pops come from here.
    head: VecDeque<T>,
    /// The chunks behind it, oldest first; pushes go to the last one (to
    /// `head` while there is none).
    rest: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            head: VecDeque::new(),
            rest: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Items held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether no item is held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `item`.
    #[inline]
    pub(crate) fn push_back(&mut self, item: T) {
        let last = self.rest.back_mut().unwrap_or(&mut self.head);
        if last.len() < CHUNK {
            last.push_back(item);
        } else {
            self.push_to_new_chunk(item);
        }
        self.len += 1;
    }

    /// Starts a chunk with `item`, behind a full one: allocated whole.
    /// (The head chunk of an empty queue grows as items come: a pipe that
    /// carries one request at a time holds room for a few.)
    #[inline(never)]
    fn push_to_new_chunk(&mut self, item: T) {
        let mut chunk = VecDeque::with_capacity(CHUNK);
        chunk.push_back(item);
        self.rest.push_back(chunk);
    }

    /// Takes the oldest item; a chunk emptied this way is freed unless it
    /// is the last.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let item = match self.head.pop_front() {
            Some(item) => item,
            None => self.next_chunk()?,
        };
        self.len -= 1;
        Some(item)
    }

    /// The head chunk is empty: the next one takes its place (the emptied
    /// one is freed) and gives its oldest item; None when there is none.
    #[inline(never)]
    fn next_chunk(&mut self) -> Option<T> {
        self.head = self.rest.pop_front()?;
        self.head.pop_front()
    }

    /// Takes the newest item (a conflating pipe keeps only that).
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        let item = match self.rest.back_mut() {
            Some(last) => {
                let item = last.pop_back();
                if last.is_empty() {
                    self.rest.pop_back();
                }
                item
            }
            None => self.head.pop_back(),
        }?;
        self.len -= 1;
        Some(item)
    }

    /// Drops every item and every chunk but one (emptied, for reuse).
    pub(crate) fn clear(&mut self) {
        self.rest.clear();
        self.head.clear();
        self.len = 0;
    }

    /// Appends every item of `items`, leaving it empty. Into an empty
    /// queue (a reader that keeps up) the two trade storage instead: the
    /// items stay where they are, as this queue's chunk, and `items` gets
    /// the queue's emptied chunk back (at most about [`CHUNK`] items of
    /// room), so neither side allocates per batch.
    pub(crate) fn append_vec(&mut self, items: &mut Vec<T>) {
        if self.len == 0 && items.len() <= CHUNK {
            // (Empty: `rest` is too.)
            self.len = items.len();
            let batch = VecDeque::from(std::mem::take(items));
            *items = Vec::from(std::mem::replace(&mut self.head, batch));
        } else {
            for item in items.drain(..) {
                self.push_back(item);
            }
        }
    }

    /// Items the queue has room for without allocating: what it holds in
    /// memory, in items.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.head.capacity() + self.rest.iter().map(VecDeque::capacity).sum::<usize>()
    }
}

impl<T> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for item in iter {
            self.push_back(item);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn items_leave_in_order_across_chunks() {
        let mut q = Chunked::default();
        for i in 0..3 * CHUNK + 5 {
            q.push_back(i);
        }
        assert_eq!(q.len(), 3 * CHUNK + 5);
        for i in 0..3 * CHUNK + 5 {
            assert_eq!(q.pop_front(), Some(i));
        }
        assert_eq!(q.pop_front(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn a_drained_queue_gives_its_memory_back_but_one_chunk() {
        let mut q = Chunked::default();
        let n = 100 * CHUNK;
        for i in 0..n {
            q.push_back(i);
        }
        // On the way up: within one chunk of what is held.
        assert!(q.capacity() <= n + CHUNK, "{} for {n}", q.capacity());
        // On the way down, too, chunk by chunk.
        for _ in 0..n / 2 {
            q.pop_front();
        }
        assert!(q.capacity() <= n / 2 + 2 * CHUNK, "{}", q.capacity());
        while q.pop_front().is_some() {}
        assert!(q.capacity() <= CHUNK, "{}", q.capacity());
        // A VecDeque keeps its peak.
        let mut d: VecDeque<usize> = (0..n).collect();
        d.clear();
        assert!(d.capacity() >= n);
    }

    #[test]
    fn an_idle_queue_holds_room_for_a_few_items_only() {
        let mut q = Chunked::default();
        for i in 0..1000 {
            q.push_back(i);
            assert_eq!(q.pop_front(), Some(i));
        }
        assert!(q.capacity() < 16, "{}", q.capacity());
    }

    #[test]
    fn pop_back_takes_the_newest_and_keeps_the_rest_in_order() {
        let mut q = Chunked::default();
        q.extend(0..CHUNK + 1);
        assert_eq!(q.pop_back(), Some(CHUNK));
        assert_eq!(q.pop_back(), Some(CHUNK - 1));
        assert_eq!(q.len(), CHUNK - 1);
        q.push_back(7);
        assert_eq!(q.pop_front(), Some(0));
        assert_eq!(q.pop_back(), Some(7));
        q.clear();
        assert_eq!((q.len(), q.pop_front(), q.pop_back()), (0, None, None));
        assert!(q.capacity() <= CHUNK);
    }

    #[test]
    fn a_vec_is_taken_whole_into_an_empty_queue_and_appended_otherwise() {
        let mut q = Chunked::default();
        let mut batch: Vec<u32> = Vec::with_capacity(64);
        batch.extend(0..10);
        let at = batch.as_ptr();
        q.append_vec(&mut batch);
        assert!(batch.is_empty());
        assert_eq!(q.len(), 10);
        // Behind what is queued: appended.
        batch.extend(10..20);
        q.append_vec(&mut batch);
        assert!(batch.is_empty());
        let mut seen = Vec::new();
        while let Some(i) = q.pop_front() {
            seen.push(i);
        }
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        // The queue is empty again: the next batch trades storage, and the
        // first batch's allocation, now the queue's emptied chunk, comes
        // back to the writer.
        let mut next: Vec<u32> = Vec::with_capacity(64);
        next.extend(20..30);
        q.append_vec(&mut next);
        assert_eq!(next.as_ptr(), at);
        assert!(next.is_empty() && next.capacity() >= 64);
        assert_eq!(q.pop_front(), Some(20));
    }
}
