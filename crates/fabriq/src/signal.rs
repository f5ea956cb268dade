//! The wake-up signal of a socket: an eventfd that becomes readable when
//! something the socket owner may care about happened (a message arrived,
//! room appeared in a full pipe, a peer came or went). It is the file
//! descriptor `get_fd` returns and what blocking calls and `poll` sleep on.
//!
//! # The protocol
//!
//! Raising must be cheap when a wake-up is already pending, so a flag,
//! `raised`, says "the eventfd holds a count, or a raiser is about to write
//! one", and only the raiser that turns it on writes. The owner clears the
//! signal *before* looking at the state the signal guards, then looks, then
//! sleeps on the eventfd if it found nothing. The invariant that makes this
//! safe: **`raised` is off only while the eventfd is empty and no write is
//! on its way.** So:
//!
//! - `raise`: set `raised`; if it was off, write 1 to the eventfd.
//! - `clear`: if `raised` is on, read the eventfd; only a read that took a
//!   count turns `raised` off. A read that finds the eventfd empty means a
//!   raiser has set the flag and not yet written: the flag stays on, the
//!   write lands, and the next sleep returns at once (one spare wake-up).
//!
//! An earlier version turned the flag off first and read afterwards. A
//! raise landing between the two wrote a count that the read then
//! swallowed, leaving the flag on with the eventfd empty: every later
//! raise saw the flag and skipped its write, and the socket slept through
//! all of them (a peer's pipe attached and never taken in; issue 10). The
//! unit tests below replay that interleaving through [`Signal::clear_with`],
//! and the loom model (`tests` with `--cfg loom`) explores every one.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags, Timespec};

use crate::sync::{AtomicBool, Mutex, Ordering};

/// The counter a signal sleeps on: an eventfd. Under loom the count lives
/// in a modelled atomic instead (loom cannot see system calls); the
/// eventfd is still made, so the descriptor-facing API compiles unchanged,
/// but the models never sleep on it.
#[derive(Debug)]
struct Counter {
    fd: OwnedFd,
    #[cfg(loom)]
    model: loom::sync::atomic::AtomicU64,
}

impl Counter {
    fn new() -> io::Result<Counter> {
        Ok(Counter {
            fd: eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?,
            #[cfg(loom)]
            model: loom::sync::atomic::AtomicU64::new(0),
        })
    }

    #[cfg(not(loom))]
    fn add_one(&self) {
        // An eventfd write only fails if the counter would overflow, which
        // the flag-guarded single increments of `raise` cannot do.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Empties the counter; whether it held anything.
    #[cfg(not(loom))]
    fn take(&self) -> bool {
        let mut buf = [0u8; 8];
        rustix::io::read(&self.fd, &mut buf).is_ok()
    }

    #[cfg(loom)]
    fn add_one(&self) {
        self.model.fetch_add(1, Ordering::SeqCst);
    }

    #[cfg(loom)]
    fn take(&self) -> bool {
        self.model.swap(0, Ordering::SeqCst) > 0
    }

    /// What a sleeper would find: whether the eventfd is readable.
    #[cfg(loom)]
    fn pending(&self) -> bool {
        self.model.load(Ordering::SeqCst) > 0
    }
}

/// A level-triggered wake-up flag backed by an eventfd. See the module
/// documentation for the protocol.
#[derive(Debug)]
pub(crate) struct Signal {
    counter: Counter,
    /// On while the eventfd holds a count or a raiser is about to write
    /// one: lets `raise` skip the write when a wake-up is already pending.
    raised: AtomicBool,
    /// Set by every `raise` (not by `raise_data`), reset only by
    /// [`Signal::take_dirty`]: tells the socket that its pipes may have
    /// changed (a peer came or went),
    /// so its housekeeping can be skipped while nothing did.
    dirty: AtomicBool,
    /// How many clears took a count: lets the async API see that an
    /// operation swallowed a wake-up another waiter on the same socket may
    /// need (see `asynchronous/shared.rs`). A plain counter, outside the protocol
    /// (so not modelled by loom), bumped only after a successful read.
    takes: std::sync::atomic::AtomicU64,
    /// Ids of the pipes whose writers woke the socket for an item since
    /// the socket last took them (see `Queue::announce`), each at most
    /// once: a socket with many pipes looks only at these.
    woken: Mutex<Vec<u64>>,
}

impl Signal {
    pub(crate) fn new() -> io::Result<Signal> {
        Ok(Signal {
            counter: Counter::new()?,
            raised: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            takes: std::sync::atomic::AtomicU64::new(0),
            woken: Mutex::new(Vec::new()),
        })
    }

    /// Wakes whoever waits on this signal, and marks its pipes as changed
    /// (a pipe came or may have died). Cheap when already raised.
    pub(crate) fn raise(&self) {
        self.dirty.store(true, Ordering::Release);
        self.raise_data();
    }

    /// Wakes whoever waits on this signal for data alone: an item arrived
    /// or room appeared in a pipe it has. The socket's housekeeping
    /// (taking new pipes, pruning dead ones, a look at every pipe) is not
    /// asked for, so a socket with thousands of pipes does not scan them
    /// all at every wake-up.
    pub(crate) fn raise_data(&self) {
        if !self.raised.swap(true, Ordering::AcqRel) {
            self.counter.add_one();
        }
    }

    /// [`Signal::raise_data`] for an item in the pipe `id`, which is named
    /// in the list [`Signal::take_woken`] returns. The id is listed before
    /// the raise, so a socket that takes the list after clearing the
    /// signal sees it or is woken again.
    pub(crate) fn raise_for_pipe(&self, id: u64) {
        self.woken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id);
        self.raise_data();
    }

    /// Moves the ids listed by [`Signal::raise_for_pipe`] into `into`.
    pub(crate) fn take_woken(&self, into: &mut Vec<u64>) {
        let mut woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
        into.append(&mut woken);
    }

    /// Resets the signal. Call before looking at the state it guards, so a
    /// change made after the look raises it again.
    pub(crate) fn clear(&self) {
        self.clear_with(|| {});
    }

    /// [`Signal::clear`], saying whether it took a raise off the eventfd.
    pub(crate) fn clear_took(&self) -> bool {
        self.clear_with(|| {})
    }

    /// [`Signal::clear`], running `between` after the flag was seen on and
    /// before the eventfd is read: the window a concurrent raise can hit,
    /// which tests use to replay that interleaving.
    pub(crate) fn clear_with(&self, between: impl FnOnce()) -> bool {
        if !self.raised.load(Ordering::Acquire) {
            return false;
        }
        between();
        if self.counter.take() {
            // The swap (not a store) reads the flag as the last raiser left
            // it, so whatever that raiser changed before raising is visible
            // to the look that follows.
            self.raised.swap(false, Ordering::AcqRel);
            self.takes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return true;
        }
        false
    }

    /// How many times a clear has taken a raise off the eventfd so far.
    /// The owner reads it before and after an operation on the socket: a
    /// change means the operation consumed a wake-up.
    #[cfg_attr(any(loom, not(feature = "tokio")), allow(dead_code))]
    pub(crate) fn takes(&self) -> u64 {
        self.takes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the signal was raised since the last call.
    ///
    /// Looks before it swaps: a socket calls this on every send and
    /// receive, and a read leaves the cache line shared with the threads
    /// that raise, where a swap would take it from them each time.
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire) && self.dirty.swap(false, Ordering::AcqRel)
    }

    /// Whether a sleep on the signal would return at once (the loom
    /// models' stand-in for [`Signal::wait`]).
    #[cfg(loom)]
    pub(crate) fn would_wake(&self) -> bool {
        self.counter.pending()
    }
}

impl Signal {
    /// Sleeps until raised or until `deadline` (forever if `None`).
    /// Returns whether it was raised.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut fds = [PollFd::new(&self.counter.fd, PollFlags::IN)];
        wait_fds(&mut fds, deadline) > 0
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.counter.fd.as_raw_fd()
    }

    pub(crate) fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.counter.fd.as_fd()
    }
}

/// `poll(2)` until one of `fds` is ready or `deadline` passes; returns the
/// number of ready descriptors (0 on timeout). Retries on EINTR.
pub(crate) fn wait_fds(fds: &mut [PollFd<'_>], deadline: Option<Instant>) -> usize {
    loop {
        let timeout = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            }
        });
        match poll(fds, timeout.as_ref()) {
            Ok(n) => return n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                tracing::error!("poll failed: {e}");
                return 0;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pending(s: &Signal) -> bool {
        s.wait(Some(Instant::now()))
    }

    /// The interleaving of issue 10: a raise lands inside `clear`. The
    /// owner then looks, finds that raise's change but nothing that ends
    /// its wait (a pipe came or went), and sleeps without clearing again:
    /// the next raise must still wake it.
    #[test]
    fn a_raise_inside_clear_does_not_silence_later_raises() {
        let s = Signal::new().unwrap();
        s.raise();
        s.clear_with(|| s.raise());
        s.raise();
        assert!(pending(&s), "the owner would sleep through this raise");
    }

    /// A raiser that has set the flag but not yet written when the owner
    /// reads: the flag must stay on so the coming write is not orphaned.
    #[test]
    fn a_write_still_on_its_way_keeps_the_flag() {
        let s = Signal::new().unwrap();
        // Model the raiser stopped between its flag and its write.
        s.raised.store(true, Ordering::SeqCst);
        s.clear();
        assert!(s.raised.load(Ordering::SeqCst));
        s.counter.add_one(); // the raiser's write lands
        assert!(pending(&s));
        s.clear();
        assert!(!pending(&s));
        s.raise();
        assert!(pending(&s));
    }

    #[test]
    fn raise_clear_wait() {
        let s = Signal::new().unwrap();
        assert!(!pending(&s));
        s.raise();
        s.raise();
        assert!(pending(&s));
        assert!(s.take_dirty());
        assert!(!s.take_dirty());
        s.clear();
        assert!(!pending(&s));
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;

    /// A pending wake-up and two raisers, each announcing one change,
    /// against an owner that clears, looks once and would then sleep. In every
    /// interleaving, an owner about to sleep with a change it has not seen
    /// must find the signal readable.
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let signal = Arc::new(Signal::new().unwrap());
            let changes = Arc::new(AtomicUsize::new(0));
            // A wake-up already pending when the owner comes to clear.
            changes.fetch_add(1, Ordering::SeqCst);
            signal.raise();
            let raisers: Vec<_> = (0..2)
                .map(|_| {
                    let (signal, changes) = (signal.clone(), changes.clone());
                    loom::thread::spawn(move || {
                        changes.fetch_add(1, Ordering::SeqCst);
                        signal.raise();
                    })
                })
                .collect();
            // The owner clears, looks once, and would then sleep: the look
            // may find a change that does not end its wait (a pipe came or
            // went), so a later raise is all that can wake it.
            signal.clear();
            let seen = changes.load(Ordering::SeqCst);
            for r in raisers {
                r.join().unwrap();
            }
            if changes.load(Ordering::SeqCst) != seen {
                assert!(signal.would_wake(), "owner sleeps through a change");
            }
            // And the signal still works afterwards: clear, raise, wake.
            signal.clear();
            signal.clear();
            signal.raise();
            assert!(signal.would_wake());
        });
    }
}
