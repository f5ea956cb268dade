//! `zmq_poll`, `zmq_proxy`, `zmq_proxy_steerable` and the old
//! `zmq_device`.

use std::ffi::{c_int, c_long, c_short, c_void};
use std::time::{Duration, Instant};

use fabriq::{Message, PollEvents, PollItem, Socket, DONTWAIT, POLLIN, SNDMORE};

use crate::socket::{held, Kind};
use crate::util::int_result;

/// libzmq's `zmq_pollitem_t` (Linux layout).
#[repr(C)]
pub struct ZmqPollItem {
    /// A socket handle, or null to poll `fd`.
    pub socket: *mut c_void,
    /// A file descriptor, used when `socket` is null.
    pub fd: c_int,
    /// `ZMQ_POLLIN | ZMQ_POLLOUT | ZMQ_POLLERR` to wait for.
    pub events: c_short,
    /// What happened.
    pub revents: c_short,
}

/// The plain socket behind a handle; thread-safe sockets cannot be polled
/// with `zmq_poll` (ENOTSUP, as libzmq).
///
/// # Safety
///
/// As `held`.
unsafe fn plain<'a>(p: *mut c_void) -> Result<&'a Socket, c_int> {
    // SAFETY: forwarded contract.
    match &unsafe { held(p) }?.kind {
        Kind::Plain(s) => Ok(s),
        Kind::Safe(_) => Err(libc::ENOTSUP),
    }
}

/// Waits until one of `nitems` items is ready or `timeout` ms pass (-1:
/// forever); returns how many are ready.
///
/// # Safety
///
/// `items` points to `nitems` `zmq_pollitem_t`s (or is null with `nitems`
/// 0) whose sockets came from `zmq_socket` and are not used by another
/// thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zmq_poll(
    items: *mut ZmqPollItem,
    nitems: c_int,
    timeout: c_long,
) -> c_int {
    int_result(|| {
        if nitems < 0 || (items.is_null() && nitems > 0) {
            return Err(libc::EFAULT);
        }
        if nitems == 0 {
            if timeout != 0 {
                let ms = if timeout < 0 {
                    u64::MAX / 4
                } else {
                    timeout as u64
                };
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
            return Ok(0);
        }
        // SAFETY: non-null, `nitems` items, exclusive for the call.
        let items = unsafe { std::slice::from_raw_parts_mut(items, nitems as usize) };
        let mut sockets = Vec::with_capacity(items.len());
        for it in items.iter() {
            sockets.push(if it.socket.is_null() {
                None
            } else {
                // SAFETY: forwarded contract.
                Some(unsafe { plain(it.socket) }?)
            });
        }
        poll_items(items, &sockets, timeout)
    })
}

/// `zmq_poll`'s loop: sockets' readiness from their events, raw
/// descriptors and the sockets' wake-up descriptors through poll(2), which
/// a signal interrupts (EINTR), as in libzmq.
fn poll_items(
    items: &mut [ZmqPollItem],
    sockets: &[Option<&Socket>],
    timeout: c_long,
) -> Result<c_int, c_int> {
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(items.len());
    loop {
        let mut ready = 0;
        fds.clear();
        for (it, s) in items.iter_mut().zip(sockets) {
            it.revents = 0;
            match s {
                Some(s) => {
                    let ev = s.get_events().map_err(|e| e.to_raw())?;
                    it.revents = ev.bits() & it.events & (ZMQ_POLLIN | ZMQ_POLLOUT);
                    if it.revents != 0 {
                        ready += 1;
                    }
                    let fd = s.get_fd().map_err(|e| e.to_raw())?;
                    fds.push(libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    });
                }
                None => {
                    let mut events = 0;
                    if it.events & ZMQ_POLLIN != 0 {
                        events |= libc::POLLIN;
                    }
                    if it.events & ZMQ_POLLOUT != 0 {
                        events |= libc::POLLOUT;
                    }
                    if it.events & ZMQ_POLLPRI != 0 {
                        events |= libc::POLLPRI;
                    }
                    fds.push(libc::pollfd {
                        fd: it.fd,
                        events,
                        revents: 0,
                    });
                }
            }
        }
        // With a socket ready, raw descriptors are only looked at.
        let wait = if ready > 0 {
            Some(Instant::now())
        } else {
            deadline
        };
        let n = crate::wait::wait_fds(&mut fds, wait)?;
        if n > 0 {
            for ((it, s), fd) in items.iter_mut().zip(sockets).zip(&fds) {
                if s.is_some() {
                    continue;
                }
                let r = fd.revents;
                let mut ev = 0;
                if r & libc::POLLIN != 0 {
                    ev |= ZMQ_POLLIN;
                }
                if r & libc::POLLOUT != 0 {
                    ev |= ZMQ_POLLOUT;
                }
                if r & libc::POLLPRI != 0 {
                    ev |= ZMQ_POLLPRI;
                }
                if r & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                    ev |= ZMQ_POLLERR;
                }
                it.revents = ev & (it.events | ZMQ_POLLERR);
                if it.revents != 0 {
                    ready += 1;
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

const ZMQ_POLLIN: c_short = 1;
const ZMQ_POLLOUT: c_short = 2;
const ZMQ_POLLERR: c_short = 4;
const ZMQ_POLLPRI: c_short = 8;

/// Forwards messages between `frontend` and `backend` (copies to
/// `capture` if not null) until the context ends (-1, ETERM).
///
/// # Safety
///
/// The sockets are null or came from `zmq_socket`, used by no other
/// thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zmq_proxy(
    frontend: *mut c_void,
    backend: *mut c_void,
    capture: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_proxy_steerable(frontend, backend, capture, std::ptr::null_mut()) }
}

/// `zmq_proxy` steered by `control` (if not null): PAUSE, RESUME,
/// TERMINATE (returns 0), STATISTICS.
///
/// # Safety
///
/// As `zmq_proxy`.
#[no_mangle]
pub unsafe extern "C" fn zmq_proxy_steerable(
    frontend: *mut c_void,
    backend: *mut c_void,
    capture: *mut c_void,
    control: *mut c_void,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let (f, b) = unsafe { (plain(frontend)?, plain(backend)?) };
        // SAFETY: forwarded contract.
        let cap = (!capture.is_null())
            .then(|| unsafe { plain(capture) })
            .transpose()?;
        // SAFETY: forwarded contract.
        let ctl = (!control.is_null())
            .then(|| unsafe { plain(control) })
            .transpose()?;
        if std::ptr::eq(f, b) {
            return single(f, cap, ctl).map(|()| 0).map_err(|e| e.to_raw());
        }
        let r = match (cap, ctl) {
            (None, None) => fabriq::proxy(f, b),
            (Some(c), None) => fabriq::proxy_with_capture(f, b, c),
            (None, Some(k)) => fabriq::proxy_steerable(f, b, k),
            (Some(c), Some(k)) => fabriq::proxy_steerable_with_capture(f, b, c, k),
        };
        r.map_err(|e| e.to_raw())?;
        Ok(0)
    })
}

/// The old `zmq_device`: a proxy (the type is ignored, as in libzmq).
///
/// # Safety
///
/// As `zmq_proxy`.
#[no_mangle]
pub unsafe extern "C" fn zmq_device(
    _type: c_int,
    frontend: *mut c_void,
    backend: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_proxy(frontend, backend, std::ptr::null_mut()) }
}

/// A proxy whose frontend and backend are one socket (libzmq allows it:
/// what comes in goes back out of the same socket, as a REP or ROUTER
/// echo service). fabriq's proxy takes two sockets, so this loop is here.
fn single(s: &Socket, capture: Option<&Socket>, control: Option<&Socket>) -> fabriq::Result<()> {
    let mut paused = false;
    let (mut msgs, mut bytes) = (0u64, 0u64);
    loop {
        let mut items = vec![s.as_poll_item(if paused { PollEvents::empty() } else { POLLIN })];
        if let Some(c) = control {
            items.push(c.as_poll_item(POLLIN));
        }
        fabriq::poll(&mut items, -1)?;
        let data_ready = items[0].is_readable();
        let control_ready = items.get(1).is_some_and(PollItem::is_readable);
        drop(items);
        if let (true, Some(c)) = (control_ready, control) {
            let cmd = c.recv_msg(DONTWAIT)?;
            if let Some(cap) = capture {
                cap.send(Message::from(&cmd[..]), 0)?;
            }
            match &cmd[..] {
                b"PAUSE" => paused = true,
                b"RESUME" => paused = false,
                b"TERMINATE" => return Ok(()),
                b"STATISTICS" => {
                    // Messages and bytes in from the frontend, out to the
                    // frontend, in from the backend, out to the backend:
                    // here one socket is both.
                    let stats = [msgs, bytes, msgs, bytes, msgs, bytes, msgs, bytes];
                    for (i, v) in stats.iter().enumerate() {
                        let more = if i + 1 < stats.len() { SNDMORE } else { 0 };
                        c.send(Message::from(&v.to_ne_bytes()[..]), more)?;
                    }
                }
                _ => {}
            }
            continue;
        }
        if data_ready && !paused {
            loop {
                let part = match s.recv_msg(DONTWAIT) {
                    Ok(p) => p,
                    Err(fabriq::Error::EAGAIN) => break,
                    Err(e) => return Err(e),
                };
                let more = if part.get_more() { SNDMORE } else { 0 };
                bytes += part.len() as u64;
                if more == 0 {
                    msgs += 1;
                }
                if let Some(cap) = capture {
                    cap.send(Message::from(&part[..]), more)?;
                }
                s.send(part, more)?;
                if more == 0 {
                    break;
                }
            }
        }
    }
}
