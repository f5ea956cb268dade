//! When to try again a post the provider refused for now (`FI_EAGAIN`),
//! with no libfabric and no clock in it: time is passed in.
//!
//! libfabric's answer to `FI_EAGAIN` is "progress the provider, then try
//! again" (fi_msg(3)). How soon matters: on shm without CMA
//! (`FI_SHM_DISABLE_CMA=1`, or where the kernel does not allow
//! `process_vm_readv` between the two processes) every send of more than
//! 4 KiB goes through the provider's segment buffers, which move only
//! while both sides progress, and the next page is refused until the
//! peer has copied the last one out. Retried only after a fixed 200 us
//! (a whole millisecond of the event loop's `epoll_wait`), an ofi+shm
//! stream of 64 KiB messages moved 890 a second against the provider's
//! floor of 41-76k. So the first [`SPIN`] of an episode of refusals is
//! retried at once, each try progressing the provider; after that, every
//! [`RETRY`], so that a peer which stopped reading (tcp;ofi_rxm refuses
//! sends while its queues are full) does not cost a CPU.

use std::time::{Duration, Instant};

/// How long after the first refusal of an episode posts are retried at
/// once: a peer woken by our ring takes some tens of microseconds to copy
/// out what we sent.
pub(crate) const SPIN: Duration = Duration::from_micros(200);

/// After [`SPIN`], how soon a refused post is tried again.
pub(crate) const RETRY: Duration = Duration::from_micros(200);

/// The current episode of refusals, if one is under way.
#[derive(Debug, Default)]
pub(crate) struct Again {
    since: Option<Instant>,
}

impl Again {
    /// The provider refused a post at `now`: when to try again.
    pub(crate) fn refused(&mut self, now: Instant) -> Instant {
        let since = *self.since.get_or_insert(now);
        if now.saturating_duration_since(since) < SPIN {
            now
        } else {
            now + RETRY
        }
    }

    /// A post went through: the episode is over.
    pub(crate) fn accepted(&mut self) {
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_retried_at_once_for_a_while_then_every_retry() {
        let t0 = Instant::now();
        let mut again = Again::default();
        assert_eq!(again.refused(t0), t0);
        let t1 = t0 + SPIN / 2;
        assert_eq!(again.refused(t1), t1, "still within the spin");
        let t2 = t0 + SPIN;
        assert_eq!(again.refused(t2), t2 + RETRY, "the spin is over");
        let t3 = t2 + RETRY;
        assert_eq!(again.refused(t3), t3 + RETRY);
    }

    #[test]
    fn a_post_that_goes_through_starts_the_next_episode_afresh() {
        let t0 = Instant::now();
        let mut again = Again::default();
        again.refused(t0);
        let late = t0 + SPIN * 3;
        assert_eq!(again.refused(late), late + RETRY);
        again.accepted();
        assert_eq!(again.refused(late), late, "a new episode spins again");
    }
}
