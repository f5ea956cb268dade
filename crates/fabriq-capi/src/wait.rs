//! Blocking the way libzmq blocks: a blocking send or receive, and
//! `zmq_poll`, wait in poll(2) on the sockets' wake-up descriptors
//! (`ZMQ_FD`), so that a signal interrupts them with EINTR, as in libzmq
//! (Python's Ctrl-C and pyzmq's signal handling rely on it; fabriq's own
//! blocking calls retry after a signal).

use std::ffi::c_int;
use std::time::{Duration, Instant};

use fabriq::{PollEvents, Socket, DONTWAIT};

/// Milliseconds left until `deadline` for poll(2) (-1: none).
fn left(deadline: Option<Instant>) -> c_int {
    match deadline {
        None => -1,
        Some(d) => {
            let ms = d
                .saturating_duration_since(Instant::now())
                .as_micros()
                .div_ceil(1000);
            ms.min(c_int::MAX as u128) as c_int
        }
    }
}

/// Waits in poll(2) on `fds` until one is readable (or writable as asked)
/// or the deadline passes. EINTR when a signal came.
pub fn wait_fds(fds: &mut [libc::pollfd], deadline: Option<Instant>) -> Result<c_int, c_int> {
    // SAFETY: `fds` is a valid, exclusive array of pollfd for the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, left(deadline)) };
    if n < 0 {
        let e = crate::util::errno();
        return Err(if e == libc::EINTR { libc::EINTR } else { e });
    }
    Ok(n)
}

/// Runs `op` (a send or receive) as a blocking call: tries it without
/// blocking and, while it would block, waits for the socket's descriptor
/// until the socket's timeout (`timeout`: SNDTIMEO or RCVTIMEO in ms, -1:
/// forever) passes (EAGAIN) or a signal comes (EINTR).
///
/// The timeout and the descriptor are looked up only when the first try
/// would block: a busy stream's calls, which find their message or room at
/// once, pay for neither (the timeout then runs from that first try, a few
/// instructions after the call began, as in libzmq and `fabriq`).
#[inline(always)]
pub fn blocking<T>(
    s: &Socket,
    flags: c_int,
    timeout: impl FnOnce(&Socket) -> fabriq::Result<i32>,
    want: PollEvents,
    mut op: impl FnMut(c_int) -> fabriq::Result<T>,
) -> Result<T, c_int> {
    // The first try inline in the caller; a failure (its errno, the
    // waits) out of line, so that a success costs the caller one test.
    match op(flags | DONTWAIT) {
        Ok(v) => Ok(v),
        Err(e) => failed_once(s, flags, e, timeout, want, op),
    }
}

/// `blocking` after a first try that failed with `first`: a call that
/// would have blocked waits; anything else fails with `first`'s errno.
#[cold]
#[inline(never)]
fn failed_once<T>(
    s: &Socket,
    flags: c_int,
    first: fabriq::Error,
    timeout: impl FnOnce(&Socket) -> fabriq::Result<i32>,
    want: PollEvents,
    op: impl FnMut(c_int) -> fabriq::Result<T>,
) -> Result<T, c_int> {
    if first == fabriq::Error::EAGAIN && flags & DONTWAIT == 0 {
        wait_then(s, flags, timeout, want, op)
    } else {
        Err(first.to_raw())
    }
}

/// `blocking` after a first try that would have blocked.
fn wait_then<T>(
    s: &Socket,
    flags: c_int,
    timeout: impl FnOnce(&Socket) -> fabriq::Result<i32>,
    want: PollEvents,
    mut op: impl FnMut(c_int) -> fabriq::Result<T>,
) -> Result<T, c_int> {
    let timeout_ms = timeout(s).map_err(|e| e.to_raw())?;
    if timeout_ms == 0 {
        return Err(libc::EAGAIN);
    }
    let deadline =
        (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
    let fd = s.get_fd().map_err(|e| e.to_raw())?;
    loop {
        // Reading the events takes in what the I/O threads delivered and
        // clears the descriptor; if the operation can go now, try again.
        let events = s.get_events().map_err(|e| e.to_raw())?;
        if !events.intersects(want) {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(libc::EAGAIN);
            }
            let mut pfd = [libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }];
            wait_fds(&mut pfd, deadline)?;
        }
        match op(flags | DONTWAIT) {
            Err(fabriq::Error::EAGAIN) => {}
            r => return r.map_err(|e| e.to_raw()),
        }
    }
}
