//! A socket's spells of spinning, as its fabric peers see them.
//!
//! A socket with `spin_us` looks at its connections again and again
//! before it sleeps (`Socket::wait_for`). Over a fabric whose nodes are
//! woken by a doorbell (shm), each ring is a system call on the sender and
//! a wake-up of the receiver's I/O thread, both wasted while the receiver
//! spins: its spinning thread reaps the completion queue itself. So while
//! a spell lasts, each fabric node the spinner actually reaps counts it in
//! a counter its peers can read (`fabriq_ofi::SharedCounter`), and they
//! skip the ring.
//!
//! A spell begins at the first look that found nothing and ends before
//! the socket sleeps or returns. The node counters raised during it are
//! lowered at the end; the socket then looks once more before it sleeps
//! (a sender that saw the count just before it fell did not ring; see
//! `fabriq_ofi::shared` for the ordering). Everything here runs on the
//! socket's thread: the engines count the spell from `pull`, which only
//! the socket's thread calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fabriq_ofi::{Count, SharedCounter};

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Spin {
    /// Odd while a spell lasts; one more at each beginning and end, so an
    /// engine can tell this spell from the last.
    epoch: AtomicU64,
    /// The node counters raised in this spell.
    counted: Mutex<Vec<Arc<SharedCounter>>>,
}

impl Spin {
    /// A spell begins.
    pub(crate) fn begin(&self) {
        let e = self.epoch.load(Ordering::Relaxed);
        if e % 2 == 0 {
            self.epoch.store(e + 1, Ordering::Relaxed);
        }
    }

    /// The spell ends: every counter it raised is lowered. Returns whether
    /// there were any (the caller must then look once more before it
    /// sleeps).
    pub(crate) fn end(&self) -> bool {
        let e = self.epoch.load(Ordering::Relaxed);
        if e % 2 == 0 {
            return false;
        }
        self.epoch.store(e + 1, Ordering::Relaxed);
        let mut counted = self.counted.lock().unwrap_or_else(|p| p.into_inner());
        for c in counted.iter() {
            c.decrement(Count::Spinners);
        }
        let any = !counted.is_empty();
        counted.clear();
        // The look that follows must not read the completion queue before
        // the peers can see the lowered counts (the receiver's half of the
        // store-buffering pattern in `fabriq_ofi::shared`).
        std::sync::atomic::fence(Ordering::SeqCst);
        any
    }

    /// The spell in progress, if any (an id that changes between spells).
    pub(crate) fn spell(&self) -> Option<u64> {
        let e = self.epoch.load(Ordering::Relaxed);
        (e % 2 == 1).then_some(e)
    }

    /// Counts the spell in a node's counter (once per node and spell: the
    /// caller remembers the spell it counted).
    pub(crate) fn count(&self, counter: &Arc<SharedCounter>) {
        let mut counted = self.counted.lock().unwrap_or_else(|p| p.into_inner());
        if !counted.iter().any(|c| Arc::ptr_eq(c, counter)) {
            counter.increment(Count::Spinners);
            counted.push(counter.clone());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::interleave::{first_losing, Step};

    /// The hand-off between a spinning receiver and a sender, as steps.
    /// Under every interleaving (with sequentially consistent memory,
    /// which the fences on both sides provide; loom models SeqCst as
    /// AcqRel and cannot check this pattern) the page is either reaped by
    /// a look or the doorbell rings. Returns the first interleaving that
    /// loses it.
    fn losing_interleaving(final_look: bool) -> Option<Vec<&'static str>> {
        #[derive(Clone, Copy, Default)]
        struct World {
            count: u32,
            page_sent: bool,
            reaped: bool,
            rang: bool,
        }
        let sender: Vec<Step<World>> = vec![
            ("send", |w| w.page_sent = true),
            ("check", |w| w.rang |= w.count == 0),
        ];
        let mut receiver: Vec<Step<World>> = vec![
            ("count", |w| w.count += 1),
            ("look", |w| w.reaped |= w.page_sent),
            ("uncount", |w| w.count -= 1),
        ];
        if final_look {
            receiver.push(("final look", |w| w.reaped |= w.page_sent));
        }
        // The receiver then sleeps: only a ring wakes it.
        first_losing(&sender, &receiver, World::default(), |w| {
            !w.reaped && !w.rang
        })
    }

    #[test]
    fn the_look_after_the_spell_ends_leaves_no_interleaving_that_loses_a_page() {
        assert_eq!(losing_interleaving(true), None);
        // Without it, a page sent while the count was up is stranded.
        let lost = losing_interleaving(false).expect("the final look is needed");
        assert_eq!(lost, ["count", "look", "send", "check", "uncount"]);
    }

    #[test]
    fn a_spell_raises_each_node_once_and_lowers_them_at_its_end() {
        let spin = Spin::default();
        let (a, b) = (
            Arc::new(SharedCounter::create().unwrap()),
            Arc::new(SharedCounter::create().unwrap()),
        );
        assert_eq!(spin.spell(), None);
        assert!(!spin.end(), "no spell to end");
        spin.begin();
        let first = spin.spell().expect("a spell");
        spin.count(&a);
        spin.count(&a);
        spin.count(&b);
        assert_eq!((a.load(Count::Spinners), b.load(Count::Spinners)), (1, 1));
        assert!(spin.end(), "it raised counters: look once more");
        assert_eq!((a.load(Count::Spinners), b.load(Count::Spinners)), (0, 0));
        spin.begin();
        assert_ne!(spin.spell(), Some(first), "a new spell");
        assert!(!spin.end(), "nothing counted");
    }
}
