//! The wake-up signal of a socket: an eventfd that becomes readable when
//! something the socket owner may care about happened (a message arrived,
//! room appeared in a full pipe, a peer came or went). It is the file
//! descriptor `get_fd` returns and what blocking calls and `poll` sleep on.

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags, Timespec};

/// A level-triggered wake-up flag backed by an eventfd.
#[derive(Debug)]
pub(crate) struct Signal {
    fd: OwnedFd,
    /// Set while the eventfd holds a count: lets `raise` skip the write
    /// syscall when a wake-up is already pending.
    raised: AtomicBool,
    /// Set by every `raise`, reset only by [`Signal::take_dirty`]: tells
    /// the socket that its pipes may have changed (a peer came or went),
    /// so its housekeeping can be skipped while nothing did.
    dirty: AtomicBool,
}

impl Signal {
    pub(crate) fn new() -> std::io::Result<Signal> {
        let fd = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?;
        Ok(Signal {
            fd,
            raised: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
        })
    }

    /// Wakes whoever waits on this signal. Cheap when already raised.
    pub(crate) fn raise(&self) {
        self.dirty.store(true, Ordering::Release);
        if !self.raised.swap(true, Ordering::AcqRel) {
            // An eventfd write only fails if the counter would overflow,
            // which a flag-guarded single increment cannot do.
            let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
        }
    }

    /// Resets the signal. Call before looking at the state it guards, so a
    /// change made after the look raises it again.
    pub(crate) fn clear(&self) {
        if self.raised.swap(false, Ordering::AcqRel) {
            let mut buf = [0u8; 8];
            let _ = rustix::io::read(&self.fd, &mut buf);
        }
    }

    /// Whether the signal was raised since the last call.
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// Sleeps until raised or until `deadline` (forever if `None`).
    /// Returns whether it was raised.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        wait_fds(&mut fds, deadline) > 0
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub(crate) fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
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
