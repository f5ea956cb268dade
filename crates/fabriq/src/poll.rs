//! `poll`: wait for readiness on several sockets and raw file descriptors
//! at once, as `zmq::poll` does.
//!
//! Socket readiness is computed from the socket's state; the sleep in
//! between is one `poll(2)` over the sockets' wake-up descriptors and the
//! raw descriptors.

use std::os::fd::{BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};

use crate::error::Result;
use crate::socket::Socket;

bitflags::bitflags! {
    /// Readiness flags for [`PollItem`]s and [`Socket::get_events`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct PollEvents: i16 {
        /// A message can be received without blocking.
        const POLLIN = 1;
        /// A message can be sent without blocking.
        const POLLOUT = 2;
        /// An error condition (raw descriptors only).
        const POLLERR = 4;
    }
}

/// Readable.
pub const POLLIN: PollEvents = PollEvents::POLLIN;
/// Writable.
pub const POLLOUT: PollEvents = PollEvents::POLLOUT;
/// Error.
pub const POLLERR: PollEvents = PollEvents::POLLERR;

/// One thing to poll: a socket or a raw file descriptor.
pub struct PollItem<'a> {
    socket: Option<&'a Socket>,
    fd: RawFd,
    events: PollEvents,
    revents: PollEvents,
}

impl<'a> PollItem<'a> {
    pub(crate) fn from_socket(socket: &'a Socket, events: PollEvents) -> PollItem<'a> {
        PollItem {
            socket: Some(socket),
            fd: -1,
            events,
            revents: PollEvents::empty(),
        }
    }

    /// A raw file descriptor (a pipe, a TCP socket, a timerfd...).
    pub fn from_fd(fd: RawFd, events: PollEvents) -> PollItem<'a> {
        PollItem {
            socket: None,
            fd,
            events,
            revents: PollEvents::empty(),
        }
    }

    /// Changes the events of interest.
    pub fn set_events(&mut self, events: PollEvents) {
        self.events = events;
    }

    /// The events found by the last [`poll`].
    pub fn get_revents(&self) -> PollEvents {
        self.revents
    }

    /// POLLIN was found.
    pub fn is_readable(&self) -> bool {
        self.revents.contains(POLLIN)
    }

    /// POLLOUT was found.
    pub fn is_writable(&self) -> bool {
        self.revents.contains(POLLOUT)
    }

    /// POLLERR was found.
    pub fn is_error(&self) -> bool {
        self.revents.contains(POLLERR)
    }

    /// Whether this item polls `socket`.
    pub fn has_socket(&self, socket: &Socket) -> bool {
        self.socket.is_some_and(|s| std::ptr::eq(s, socket))
    }

    /// Whether this item polls the raw descriptor `fd`.
    pub fn has_fd(&self, fd: RawFd) -> bool {
        self.socket.is_none() && self.fd == fd
    }
}

/// Waits until at least one item is ready or `timeout` ms pass (-1:
/// forever, 0: just look). Returns how many items are ready.
///
/// ```
/// let ctx = fabriq::Context::new();
/// let pull = ctx.socket(fabriq::PULL).unwrap();
/// pull.bind("inproc://doc-poll").unwrap();
/// let mut items = [pull.as_poll_item(fabriq::POLLIN)];
/// assert_eq!(fabriq::poll(&mut items, 10).unwrap(), 0);
/// ```
pub fn poll(items: &mut [PollItem], timeout: i64) -> Result<i32> {
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    loop {
        let mut ready = 0;
        for item in items.iter_mut() {
            item.revents = PollEvents::empty();
            if let Some(s) = item.socket {
                item.revents = s.get_events()? & item.events;
                if !item.revents.is_empty() {
                    ready += 1;
                }
            }
        }
        let has_fds = items.iter().any(|i| i.socket.is_none());
        // Raw descriptors: one poll(2) with zero timeout when sockets are
        // already ready, else the real wait over everything.
        let wait_deadline = if ready > 0 {
            Some(Instant::now())
        } else {
            deadline
        };
        if ready > 0 && !has_fds {
            return Ok(ready);
        }
        let mut fds: Vec<PollFd<'_>> = items
            .iter()
            .map(|item| match item.socket {
                Some(s) => PollFd::from_borrowed_fd(s.signal().as_fd(), PollFlags::IN),
                None => {
                    let mut flags = PollFlags::empty();
                    if item.events.contains(POLLIN) {
                        flags |= PollFlags::IN;
                    }
                    if item.events.contains(POLLOUT) {
                        flags |= PollFlags::OUT;
                    }
                    PollFd::from_borrowed_fd(borrow_raw(item.fd), flags)
                }
            })
            .collect();
        let n = crate::signal::wait_fds(&mut fds, wait_deadline);
        if n > 0 {
            for (item, fd) in items.iter_mut().zip(&fds) {
                if item.socket.is_none() {
                    let r = fd.revents();
                    let mut ev = PollEvents::empty();
                    if r.contains(PollFlags::IN) {
                        ev |= POLLIN;
                    }
                    if r.contains(PollFlags::OUT) {
                        ev |= POLLOUT;
                    }
                    if r.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL) {
                        ev |= POLLERR;
                    }
                    item.revents = ev & (item.events | POLLERR);
                    if !item.revents.is_empty() {
                        ready += 1;
                    }
                }
            }
        }
        if ready > 0 {
            return Ok(ready);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(0);
        }
    }
}

/// Borrows a descriptor the caller handed to [`poll`] as a raw number.
#[allow(unsafe_code)]
fn borrow_raw<'a>(fd: RawFd) -> BorrowedFd<'a> {
    // SAFETY: this is the zmq_poll contract: the caller keeps `fd` open
    // while `poll` runs, and the borrow does not outlive the call. Even a
    // closed descriptor number is harmless to poll(2): it reports POLLNVAL,
    // which we return as POLLERR; nothing is read or written through it.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

impl Socket {
    /// A poll item for this socket.
    pub fn as_poll_item(&self, events: PollEvents) -> PollItem<'_> {
        PollItem::from_socket(self, events)
    }

    /// Polls this socket alone.
    pub fn poll(&self, events: PollEvents, timeout_ms: i64) -> Result<i32> {
        poll(&mut [self.as_poll_item(events)], timeout_ms)
    }

    /// What the socket can do now, without blocking: POLLIN and/or POLLOUT.
    pub fn get_events(&self) -> Result<PollEvents> {
        let (readable, writable) = self.readiness()?;
        let mut ev = PollEvents::empty();
        if readable {
            ev |= POLLIN;
        }
        if writable {
            ev |= POLLOUT;
        }
        Ok(ev)
    }

    /// POLLIN/POLLOUT as for [`Socket::get_events`] (zmq's `ZMQ_EVENTS`).
    pub fn events(&self) -> Result<PollEvents> {
        self.get_events()
    }
}
