//! Turns at sleeping on a socket's signal, for a socket that several
//! threads block on at once ([`crate::ThreadSafeSocket`], libzmq's
//! thread-safe draft sockets).
//!
//! A socket's signal (`signal.rs`) is made for one owner: clear it, look
//! at the socket, sleep on it if the look found nothing. With several
//! threads that breaks two ways. A thread's clear can take the raise
//! another thread was sleeping for (room to send, say, taken by a thread
//! that wanted a message), which then sleeps through it. And a socket
//! held under a lock while one thread sleeps in it blocks every other
//! thread, which is what libzmq's thread-safe sockets exist to avoid.
//!
//! So the threads take turns, leader and followers:
//!
//! - A thread first **looks** (a non-blocking attempt, under the socket's
//!   lock) *without* clearing the signal. Only the leader clears it.
//! - If the look found nothing and there is no **leader**, the thread
//!   becomes it: it clears the signal, looks again (the single owner's
//!   protocol) and sleeps on the signal if that found nothing. If its
//!   clear took a raise, the raise may have been for someone else, so it
//!   tells the followers to look again before it sleeps. When it wakes it
//!   steps down and tells the followers, then starts over.
//! - Otherwise it **follows**: it sleeps on a condition variable until the
//!   turns change (a leader took a raise, or stepped down), then starts
//!   over.
//!
//! A follower notes the turn number before its look and follows only if
//! it has not changed since, so a change between its look and its sleep
//! is never missed. A look that got what it wanted wakes the leader (a
//! receive may have filed more messages than it took, raising nothing);
//! nothing else is raised that the socket did not raise, so threads
//! blocked on an idle socket stay asleep (an earlier draft passed every
//! raise a look took on to the leader, and could make two idle threads
//! wake each other for ever). The loom models at the end check that every thread gets what
//! was made for it, in every interleaving with up to two preemptions; they
//! were checked to fail when the leader does not tell the followers after
//! its clear took a raise, and when a follower sleeps without checking the
//! turn number.

use std::time::Instant;

use crate::signal::Signal;
use crate::sync::{Condvar, Mutex, MutexGuard};

/// Who sleeps on a shared signal, and how the turns have changed.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// A thread sleeps (or is about to) on the signal.
    leader: bool,
    /// Bumped whenever followers must look again.
    turn: u64,
}

impl Turns {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the followers to look again.
    fn next_turn(&self, mut state: MutexGuard<'_, State>) {
        state.turn = state.turn.wrapping_add(1);
        drop(state);
        self.changed.notify_all();
    }

    /// After a look that got what it wanted: wakes the leader, if one
    /// sleeps, to look again. A look can leave more behind than it took
    /// without the socket raising anything: a receive that finds its pipe
    /// empty reads the connection itself and files every message that had
    /// arrived (the reader is awake, so the pipe raises nothing), then
    /// takes one. (Only a look that succeeded does this, so threads on an
    /// idle socket still sleep.)
    pub(crate) fn took(&self, signal: &Signal) {
        if self.lock().leader {
            signal.raise_data();
        }
    }

    /// Runs `look` until it gives a result, sleeping in turns with the
    /// other threads between looks, until `deadline` (forever if `None`);
    /// `None` when the deadline passed. `look` must not block: it is the
    /// non-blocking attempt, run under the socket's lock by the caller.
    pub(crate) fn wait_for<T>(
        &self,
        signal: &Signal,
        deadline: Option<Instant>,
        mut look: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        loop {
            let seen = self.lock().turn;
            if let Some(done) = look() {
                self.took(signal);
                return Some(done);
            }
            if past(deadline) {
                return None;
            }
            let mut state = self.lock();
            if state.leader {
                if state.turn == seen {
                    self.follow(state, deadline);
                }
                continue;
            }
            state.leader = true;
            drop(state);
            if signal.clear_took() {
                self.next_turn(self.lock());
            }
            let found = look();
            if found.is_none() && !past(deadline) {
                sleep(signal, deadline);
            }
            let mut state = self.lock();
            state.leader = false;
            self.next_turn(state);
            if found.is_some() {
                self.took(signal);
                return found;
            }
        }
    }

    /// Sleeps until the turns change or `deadline` passes.
    #[cfg(not(loom))]
    fn follow(&self, state: MutexGuard<'_, State>, deadline: Option<Instant>) {
        // A poisoned lock still guards consistent state (two plain
        // fields), so the error is dropped like the guard.
        match deadline {
            None => drop(self.changed.wait(state)),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                drop(self.changed.wait_timeout(state, left));
            }
        }
    }

    /// The models have no deadlines.
    #[cfg(loom)]
    fn follow(&self, state: MutexGuard<'_, State>, _deadline: Option<Instant>) {
        let _ = self.changed.wait(state);
    }
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

#[cfg(not(loom))]
fn sleep(signal: &Signal, deadline: Option<Instant>) {
    signal.wait(deadline);
}

/// loom cannot see the eventfd: a sleeper yields until a wait would
/// return.
#[cfg(loom)]
fn sleep(signal: &Signal, _deadline: Option<Instant>) {
    while !signal.would_wake() {
        loom::thread::yield_now();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// Two threads block for two different things on one signal; each is
    /// made, in turn, by a third thread: both get theirs, and an idle
    /// wait ends at its deadline.
    #[test]
    fn two_waiters_for_different_things_both_get_theirs() {
        let signal = Arc::new(Signal::new().unwrap());
        let turns = Arc::new(Turns::default());
        let state = Arc::new(std::sync::Mutex::new([false, false]));
        let deadline = Some(Instant::now() + Duration::from_secs(10));
        let waiter = |i: usize| {
            let (signal, turns, state) = (signal.clone(), turns.clone(), state.clone());
            std::thread::spawn(move || {
                turns.wait_for(&signal, deadline, || {
                    let mut s = state.lock().unwrap();
                    std::mem::take(&mut s[i]).then_some(i)
                })
            })
        };
        let (a, b) = (waiter(0), waiter(1));
        for i in [1, 0] {
            std::thread::sleep(Duration::from_millis(20));
            state.lock().unwrap()[i] = true;
            signal.raise();
        }
        assert_eq!(a.join().unwrap(), Some(0));
        assert_eq!(b.join().unwrap(), Some(1));
        let t0 = Instant::now();
        let idle = turns.wait_for(&signal, Some(t0 + Duration::from_millis(50)), || None::<()>);
        assert_eq!(idle, None);
        assert!(t0.elapsed() >= Duration::from_millis(50));
    }
}

/// loom models (`RUSTFLAGS="--cfg loom"`, see scripts/test): threads that
/// wait on one signal for different things, each made by another thread
/// that sets it and raises, as a pipe does. A lost wake-up leaves a
/// waiter yielding for ever, which loom reports.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;

    fn run(waiters: usize, first: usize) {
        // Every interleaving with up to two preemptions (loom's advice: the
        // bugs it finds need few; unbounded, three threads with a mutex, a
        // condition variable and a sleeper's yield loop ran for tens of
        // minutes).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(move || {
            let signal = Arc::new(Signal::new().unwrap());
            let turns = Arc::new(Turns::default());
            let state = Arc::new(loom::sync::Mutex::new(vec![false; waiters]));
            let handles: Vec<_> = (0..waiters)
                .map(|i| {
                    let (signal, turns, state) = (signal.clone(), turns.clone(), state.clone());
                    loom::thread::spawn(move || {
                        turns.wait_for(&signal, None, || {
                            let mut s = state.lock().unwrap();
                            std::mem::take(&mut s[i]).then_some(i)
                        })
                    })
                })
                .collect();
            // The maker: one thing for each waiter, `first`'s first, and
            // the next only once that waiter has it, so no later raise can
            // make up for a wake-up lost on the way.
            let mut handles: Vec<_> = handles.into_iter().map(Some).collect();
            for i in (0..waiters).map(|k| (first + k) % waiters) {
                state.lock().unwrap()[i] = true;
                signal.raise_data();
                let h = handles[i].take().unwrap();
                assert_eq!(h.join().unwrap(), Some(i));
            }
        });
    }

    /// Both things arrive together on the connection, and whoever reads it
    /// first files both: a look that finds its pipe empty reads the
    /// connection itself (no raise: the reader is awake), or the I/O
    /// thread does and raises, but only if a look found the pipe empty
    /// since its last raise (a pipe's `reader_waiting`). The waiter whose
    /// thing another thread's look filed must still get it.
    #[test]
    fn a_thing_filed_by_another_threads_look_is_not_slept_through() {
        #[derive(Default)]
        struct Pipe {
            unread: bool,
            filed: [bool; 2],
            reader_waiting: bool,
        }
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let signal = Arc::new(Signal::new().unwrap());
            let turns = Arc::new(Turns::default());
            let pipe = Arc::new(loom::sync::Mutex::new(Pipe::default()));
            let handles: Vec<_> = (0..2)
                .map(|i| {
                    let (signal, turns, pipe) = (signal.clone(), turns.clone(), pipe.clone());
                    loom::thread::spawn(move || {
                        turns.wait_for(&signal, None, || {
                            let mut p = pipe.lock().unwrap();
                            if std::mem::take(&mut p.unread) {
                                p.filed = [true, true];
                            }
                            let got = std::mem::take(&mut p.filed[i]);
                            if !got && p.filed == [false, false] {
                                p.reader_waiting = true;
                            }
                            got.then_some(i)
                        })
                    })
                })
                .collect();
            pipe.lock().unwrap().unread = true; // on the connection
            {
                // The I/O thread's read, if no look got there first.
                let mut p = pipe.lock().unwrap();
                if std::mem::take(&mut p.unread) {
                    p.filed = [true, true];
                    if std::mem::take(&mut p.reader_waiting) {
                        drop(p);
                        signal.raise_data();
                    }
                }
            }
            for (i, h) in handles.into_iter().enumerate() {
                assert_eq!(h.join().unwrap(), Some(i));
            }
        });
    }

    /// Two waiters for different things, the second's made first.
    #[test]
    fn two_threads_waiting_for_different_things_both_get_theirs() {
        run(2, 1);
    }

    /// The same, the first's made first.
    #[test]
    fn two_threads_waiting_in_either_order_both_get_theirs() {
        run(2, 0);
    }
}
