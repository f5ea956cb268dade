//! The I/O thread's time.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The I/O thread's time: the system clock, or a simulated one that moves
/// only when a test advances it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clock {
    simulated: Option<Arc<Mutex<Instant>>>,
}

impl Clock {
    pub(crate) fn now(&self) -> Instant {
        match &self.simulated {
            None => Instant::now(),
            Some(t) => *t.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// A clock that stands still until [`Clock::advance`].
    #[cfg(test)]
    pub(crate) fn simulated() -> Clock {
        Clock {
            simulated: Some(Arc::new(Mutex::new(Instant::now()))),
        }
    }

    /// Moves a simulated clock to `to` (never backwards).
    #[cfg(test)]
    pub(crate) fn advance_to(&self, to: Instant) {
        let t = self.simulated.as_ref().expect("a simulated clock");
        let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
        *t = (*t).max(to);
    }
}
