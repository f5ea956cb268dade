//! Where message bytes are copied in user space, counted for the copy
//! budget.
//!
//! Every place on a data path that copies the bytes of a message (not a
//! header, not a command) calls [`count`] with the [`Site`] it is and the
//! number of bytes. Without the crate feature `copy-count` that call is
//! empty and compiles to nothing; with it, each site adds to a global
//! counter, and [`snapshot`] reads them all. The workspace's copy-budget
//! test (`crates/fabriq-copy-budget`) turns the feature on, sends messages
//! of each size over each transport and checks the totals against what
//! the docs promise: nothing copied for inproc, large bodies written by
//! reference, large frames read into their final buffer.
//!
//! Copies the kernel makes (`read`, `write`) are not counted: they are the
//! same for every ZeroMQ.

/// A kind of copy, named after where it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Site {
    /// A message made from a borrowed slice (`send(&[u8])`,
    /// `Message::from(&[u8])`): the bytes go into memory the message owns.
    FromSlice,
    /// A small body copied into the encoder's write batch (bodies at or
    /// above the by-reference threshold are written from their own memory).
    Batch,
    /// Bytes copied into a fabric page (buffered fabric sends).
    Page,
    /// Undecoded bytes moved when the read buffer had to grow: the start
    /// of a frame that had not wholly arrived.
    Regrow,
    /// A frame gathered from pieces that arrived in separate buffers
    /// (fabric pages, owned input handed to the connection).
    Gather,
    /// A copy the caller asked for: `recv_bytes`, `recv_into`, `to_vec`.
    Api,
    /// A received body small enough to be held inline in its [`Part`]
    /// (at most [`INLINE_MAX`] bytes), copied out of the read buffer.
    ///
    /// [`Part`]: crate::Part
    /// [`INLINE_MAX`]: crate::part::INLINE_MAX
    Inline,
}

impl Site {
    /// Every site, in a fixed order (the order of [`Copies`]'s fields).
    pub const ALL: [Site; 7] = [
        Site::FromSlice,
        Site::Batch,
        Site::Page,
        Site::Regrow,
        Site::Gather,
        Site::Api,
        Site::Inline,
    ];
}

/// The largest received body copied into its message ([`Site::Inline`]).
pub use crate::part::INLINE_MAX;

/// Counts `bytes` copied at `site`. Empty without the `copy-count` feature.
#[inline(always)]
pub fn count(site: Site, bytes: usize) {
    #[cfg(feature = "copy-count")]
    counters::add(site, bytes);
    #[cfg(not(feature = "copy-count"))]
    let _ = (site, bytes);
}

/// The bytes counted at each site since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copies {
    counts: [u64; 7],
}

impl Copies {
    /// The bytes counted at `site`.
    pub fn at(&self, site: Site) -> u64 {
        self.counts[site as usize]
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &Copies) -> Copies {
        let mut counts = [0; 7];
        for (i, c) in counts.iter_mut().enumerate() {
            *c = self.counts[i].saturating_sub(earlier.counts[i]);
        }
        Copies { counts }
    }
}

/// Reads every site's counter (all zero without the `copy-count` feature).
///
/// ```
/// use fabriq_zmtp::copies::{self, Site};
///
/// let before = copies::snapshot();
/// copies::count(Site::Api, 10);
/// let counted = copies::snapshot().since(&before).at(Site::Api);
/// assert_eq!(counted, if copies::ENABLED { 10 } else { 0 });
/// ```
pub fn snapshot() -> Copies {
    #[cfg(feature = "copy-count")]
    return counters::snapshot();
    #[cfg(not(feature = "copy-count"))]
    Copies::default()
}

/// Whether this build counts (the `copy-count` feature).
pub const ENABLED: bool = cfg!(feature = "copy-count");

#[cfg(feature = "copy-count")]
mod counters {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{Copies, Site};

    static COUNTS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

    pub(super) fn add(site: Site, bytes: usize) {
        COUNTS[site as usize].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(super) fn snapshot() -> Copies {
        let mut counts = [0; 7];
        for (c, a) in counts.iter_mut().zip(COUNTS.iter()) {
            *c = a.load(Ordering::Relaxed);
        }
        Copies { counts }
    }
}
