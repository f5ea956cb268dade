//! The draft `zmq_poller_*` API over `fabriq::poll`.
//!
//! Classic sockets and file descriptors are waited for with one
//! `fabriq::poll`. Thread-safe (draft) sockets have no `zmq_poll` item in
//! fabriq, so when a poller holds one, the wait goes in slices of at most
//! 10 ms over the socket's wake-up descriptor, re-reading every socket's
//! events after each slice: a wake-up is never lost, at worst it is seen
//! up to 10 ms late.

use std::ffi::{c_int, c_long, c_short, c_void};
use std::time::{Duration, Instant};

use fabriq::{PollEvents, PollItem};

use crate::socket::{held, Held, Kind};
use crate::util::{guard, int_result};

/// libzmq's `zmq_poller_event_t`.
#[repr(C)]
pub struct PollerEvent {
    /// The socket, or null for a descriptor.
    pub socket: *mut c_void,
    /// The descriptor (for a socket: unspecified).
    pub fd: c_int,
    /// The user data given to `zmq_poller_add`.
    pub user_data: *mut c_void,
    /// What is ready.
    pub events: c_short,
}

enum Target {
    Socket(*mut c_void),
    Fd(c_int),
}

struct Entry {
    target: Target,
    user_data: *mut c_void,
    events: c_short,
}

const POLLER_TAG: u64 = 0xCAFE_D00D_9011_0001;

#[repr(C)]
struct Poller {
    tag: u64,
    entries: Vec<Entry>,
}

/// # Safety
///
/// `p` is null or came from `zmq_poller_new` and is not destroyed.
unsafe fn poller<'a>(p: *mut c_void) -> Result<&'a mut Poller, c_int> {
    if p.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract; the tag guards against other pointers.
    let h = unsafe { &mut *(p as *mut Poller) };
    if h.tag != POLLER_TAG {
        return Err(libc::EFAULT);
    }
    Ok(h)
}

/// A new poller.
#[no_mangle]
pub extern "C" fn zmq_poller_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(Poller {
            tag: POLLER_TAG,
            entries: Vec::new(),
        }))
        .cast()
    })
}

/// Frees a poller and sets `*poller_p` to null.
///
/// # Safety
///
/// `poller_p` is null or points to a pointer from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_destroy(poller_p: *mut *mut c_void) -> c_int {
    int_result(|| {
        if poller_p.is_null() {
            return Err(libc::EFAULT);
        }
        // SAFETY: non-null, the caller's pointer.
        let p = unsafe { *poller_p };
        // SAFETY: forwarded contract.
        unsafe { poller(p) }?.tag = 0;
        // SAFETY: a live poller from `zmq_poller_new`, freed once.
        unsafe {
            drop(Box::from_raw(p as *mut Poller));
            *poller_p = std::ptr::null_mut();
        }
        Ok(0)
    })
}

/// How many items the poller has.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_size(p: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    int_result(|| Ok(unsafe { poller(p) }?.entries.len() as c_int))
}

fn find(p: &Poller, socket: *mut c_void, fd: c_int) -> Option<usize> {
    p.entries.iter().position(|e| match e.target {
        Target::Socket(s) => !socket.is_null() && s == socket,
        Target::Fd(f) => socket.is_null() && f == fd,
    })
}

/// Adds a socket.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`; `socket` is null or from `zmq_socket`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_add(
    p: *mut c_void,
    socket: *mut c_void,
    user_data: *mut c_void,
    events: c_short,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let p = unsafe { poller(p) }?;
        // SAFETY: forwarded contract.
        unsafe { held(socket) }?;
        if find(p, socket, -1).is_some() {
            return Err(libc::EINVAL);
        }
        p.entries.push(Entry {
            target: Target::Socket(socket),
            user_data,
            events,
        });
        Ok(0)
    })
}

/// Adds a file descriptor.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_add_fd(
    p: *mut c_void,
    fd: c_int,
    user_data: *mut c_void,
    events: c_short,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let p = unsafe { poller(p) }?;
        if fd < 0 {
            return Err(libc::EBADF);
        }
        if find(p, std::ptr::null_mut(), fd).is_some() {
            return Err(libc::EINVAL);
        }
        p.entries.push(Entry {
            target: Target::Fd(fd),
            user_data,
            events,
        });
        Ok(0)
    })
}

/// # Safety
///
/// `p` came from `zmq_poller_new`.
unsafe fn modify(p: *mut c_void, socket: *mut c_void, fd: c_int, events: Option<c_short>) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let p = unsafe { poller(p) }?;
        if !socket.is_null() {
            // SAFETY: forwarded contract.
            unsafe { held(socket) }?;
        } else if fd < 0 {
            return Err(libc::EBADF);
        }
        let i = find(p, socket, fd).ok_or(libc::EINVAL)?;
        match events {
            Some(e) => p.entries[i].events = e,
            None => {
                p.entries.remove(i);
            }
        }
        Ok(0)
    })
}

/// Changes the events a socket is polled for.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`; `socket` is null or from `zmq_socket`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_modify(
    p: *mut c_void,
    socket: *mut c_void,
    events: c_short,
) -> c_int {
    if socket.is_null() {
        return crate::util::fail(libc::ENOTSOCK);
    }
    // SAFETY: forwarded contract.
    unsafe { modify(p, socket, -1, Some(events)) }
}

/// Changes the events a descriptor is polled for.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_modify_fd(p: *mut c_void, fd: c_int, events: c_short) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { modify(p, std::ptr::null_mut(), fd, Some(events)) }
}

/// Removes a socket.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`; `socket` is null or from `zmq_socket`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_remove(p: *mut c_void, socket: *mut c_void) -> c_int {
    if socket.is_null() {
        return crate::util::fail(libc::ENOTSOCK);
    }
    // SAFETY: forwarded contract.
    unsafe { modify(p, socket, -1, None) }
}

/// Removes a descriptor.
///
/// # Safety
///
/// `p` came from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_remove_fd(p: *mut c_void, fd: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { modify(p, std::ptr::null_mut(), fd, None) }
}

/// A poller's own descriptor: only pollers of thread-safe sockets have
/// one in libzmq; fabriq's has none (EINVAL, as libzmq for the others).
///
/// # Safety
///
/// `p` came from `zmq_poller_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_fd(p: *mut c_void, _fd: *mut c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        unsafe { poller(p) }?;
        Err(libc::EINVAL)
    })
}

/// Waits for one event.
///
/// # Safety
///
/// As `zmq_poller_wait_all` with one event.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_wait(
    p: *mut c_void,
    event: *mut PollerEvent,
    timeout: c_long,
) -> c_int {
    // SAFETY: forwarded contract.
    let r = unsafe { zmq_poller_wait_all(p, event, 1, timeout) };
    if r < 0 {
        r
    } else {
        0
    }
}

/// Waits until items are ready or `timeout` ms pass (-1: forever); fills
/// up to `n_events` events and returns how many (-1, EAGAIN on timeout).
///
/// # Safety
///
/// `p` came from `zmq_poller_new`; `events` points to `n_events` writable
/// events; the sockets are open and not used by other threads (except
/// thread-safe ones).
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_wait_all(
    p: *mut c_void,
    events: *mut PollerEvent,
    n_events: c_int,
    timeout: c_long,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let p = unsafe { poller(p) }?;
        if events.is_null() || n_events < 0 {
            return Err(libc::EFAULT);
        }
        if n_events == 0 {
            return Err(libc::EINVAL);
        }
        if p.entries.is_empty() {
            if timeout < 0 {
                return Err(libc::EFAULT);
            }
            std::thread::sleep(Duration::from_millis(timeout as u64));
            return Err(libc::EAGAIN);
        }
        let mut sockets: Vec<Option<&Held>> = Vec::with_capacity(p.entries.len());
        for e in &p.entries {
            sockets.push(match e.target {
                // SAFETY: forwarded contract.
                Target::Socket(s) => Some(unsafe { held(s) }?),
                Target::Fd(_) => None,
            });
        }
        let any_safe = sockets
            .iter()
            .flatten()
            .any(|h| matches!(h.kind, Kind::Safe(_)));
        let deadline =
            (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        loop {
            let slice = if any_safe {
                deadline.map_or(10, |d| {
                    d.saturating_duration_since(Instant::now())
                        .as_millis()
                        .min(10) as i64
                })
            } else {
                deadline.map_or(-1, |d| {
                    d.saturating_duration_since(Instant::now()).as_millis() as i64
                })
            };
            let mut items = Vec::with_capacity(p.entries.len());
            for (e, h) in p.entries.iter().zip(&sockets) {
                let ev = PollEvents::from_bits_truncate(e.events);
                items.push(match (h, &e.target) {
                    (Some(h), _) => match &h.kind {
                        Kind::Plain(s) => s.as_poll_item(ev),
                        Kind::Safe(t) => {
                            let fd = t.with(|s| s.get_fd()).map_err(|e| e.to_raw())?;
                            PollItem::from_fd(fd, PollEvents::POLLIN)
                        }
                    },
                    (None, Target::Fd(fd)) => PollItem::from_fd(*fd, ev),
                    (None, Target::Socket(_)) => unreachable!("sockets have a handle"),
                });
            }
            fabriq::poll(&mut items, slice).map_err(|e| e.to_raw())?;
            let mut n = 0usize;
            for ((e, h), item) in p.entries.iter().zip(&sockets).zip(&items) {
                if n as c_int >= n_events {
                    break;
                }
                let wanted = PollEvents::from_bits_truncate(e.events);
                let got = match h.map(|h| &h.kind) {
                    Some(Kind::Safe(t)) => {
                        t.with(|s| s.get_events()).map_err(|e| e.to_raw())? & wanted
                    }
                    _ => item.get_revents(),
                };
                if got.is_empty() {
                    continue;
                }
                let (socket, fd) = match e.target {
                    Target::Socket(s) => (s, -1),
                    Target::Fd(f) => (std::ptr::null_mut(), f),
                };
                // SAFETY: `n < n_events`, within the caller's array.
                unsafe {
                    events.add(n).write(PollerEvent {
                        socket,
                        fd,
                        user_data: e.user_data,
                        events: got.bits(),
                    })
                };
                n += 1;
            }
            if n > 0 {
                return Ok(n as c_int);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(libc::EAGAIN);
            }
        }
    })
}
