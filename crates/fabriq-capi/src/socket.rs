//! Sockets: `zmq_socket`, `zmq_close`, endpoints, `zmq_send`,
//! `zmq_send_const`, `zmq_recv`, `zmq_socket_monitor`.
//!
//! A socket handle is a heap record with a tag. `zmq_close` changes the tag
//! and drops the fabriq socket but keeps the record on a free list for the
//! next `zmq_socket`, so a closed handle answers ENOTSOCK (libzmq's tag
//! check) without touching freed memory, and the records do not pile up.
//! As in libzmq, a socket of a non-thread-safe type is used by one thread
//! at a time; the thread-safe draft types (CLIENT, SERVER, RADIO, DISH,
//! SCATTER, GATHER, PEER, CHANNEL) go through `fabriq::ThreadSafeSocket`.

use std::cell::{RefCell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use fabriq::copies::INLINE_MAX;
use fabriq::{Message, Socket, SocketType, ThreadSafeSocket};

use crate::ctx::CtxState;
use crate::msg::record::{CHUNK, SMALL};
use crate::options::Extra;
use crate::util::{c_str, fail, guard, int_result};

const SOCK_LIVE: u32 = 0xBABE_FACE;
const SOCK_DEAD: u32 = 0xDEAD_FACE;

/// The fabriq socket behind a handle.
pub enum Kind {
    /// One thread at a time, as libzmq's classic sockets.
    Plain(Socket),
    /// libzmq's thread-safe (draft) types.
    Safe(ThreadSafeSocket),
}

/// What an open socket handle holds.
pub struct Held {
    /// The socket.
    pub kind: Kind,
    /// Its context's shared state.
    pub ctx: Arc<CtxState>,
    /// Options fabriq has no field for, recorded here.
    pub extra: Mutex<Extra>,
    /// The chunk `zmq_send` copies small frames into (a classic socket's,
    /// used by one thread at a time; see [`Held::copy_in`]).
    pub copy: RefCell<BytesMut>,
}

impl Held {
    /// Runs `f` on the socket (under the lock of a thread-safe one).
    pub fn with<R>(&self, f: impl FnOnce(&Socket) -> R) -> R {
        match &self.kind {
            Kind::Plain(s) => f(s),
            Kind::Safe(t) => t.with(f),
        }
    }

    /// Sends the frame in `msg`, blocking as the flags and SNDTIMEO say
    /// (EINTR if a signal comes while it waits); errno values on failure,
    /// `msg` then intact (libzmq's `zmq_msg_send` keeps a message it could
    /// not send). Sent, `msg` holds an empty frame.
    #[inline]
    pub fn send(&self, msg: &mut Message, flags: c_int) -> Result<(), c_int> {
        match &self.kind {
            // Each try takes the frame only if it goes: nothing is copied.
            Kind::Plain(s) => {
                crate::wait::blocking(s, flags, Socket::get_sndtimeo, fabriq::POLLOUT, |f| {
                    s.send_from(msg, f)
                })
            }
            // The thread-safe types take the message apart before they can
            // fail: they send a clone (a reference count, or a small
            // inline copy).
            Kind::Safe(t) => {
                t.send(msg.clone(), flags).map_err(|e| e.to_raw())?;
                *msg = Message::new();
                Ok(())
            }
        }
    }

    /// Sends a copy of `data` as one frame, as [`Held::send`] does (each
    /// try copies: only a try that would block wastes its copy).
    #[inline]
    pub fn send_slice(&self, data: &[u8], flags: c_int) -> Result<(), c_int> {
        match &self.kind {
            Kind::Plain(s) => {
                if data.len() <= INLINE_MAX || data.len() > SMALL {
                    // Held inline in the frame, or allocated for itself:
                    // as `send(&[u8])`. `move`: the slice is copied into
                    // the closure, kept in registers.
                    return crate::wait::blocking(
                        s,
                        flags,
                        Socket::get_sndtimeo,
                        fabriq::POLLOUT,
                        move |f| s.send(data, f),
                    );
                }
                // Copied once; each try takes the frame only if it goes.
                let mut msg = Message::from(self.copy_in(data));
                crate::wait::blocking(s, flags, Socket::get_sndtimeo, fabriq::POLLOUT, |f| {
                    s.send_from(&mut msg, f)
                })
            }
            Kind::Safe(t) => send_safe(t, Message::from(data), flags),
        }
    }

    /// A copy of `data` (of more than `INLINE_MAX` and at most `SMALL`
    /// bytes) cut from this socket's chunk of `CHUNK` bytes, as
    /// `Message::from(&[u8])` cuts one from its thread's: a chunk is one
    /// allocation for many frames, freed when the last of them goes. The
    /// socket's own chunk rather than the thread's: a shared library
    /// reaches its thread-locals through `__tls_get_addr`, and a lazy
    /// thread-local checks its state and its `RefCell` on every use (the
    /// socket's chunk took 50 instructions a message off
    /// `suites/msg-cost.sh`'s copy mode). A small frame kept long keeps
    /// up to 32 KiB alive, as with the thread's chunks.
    #[inline]
    fn copy_in(&self, data: &[u8]) -> Bytes {
        fabriq::copies::count(fabriq::copies::Site::FromSlice, data.len());
        let mut chunk = self.copy.borrow_mut();
        if chunk.capacity() < data.len() {
            *chunk = BytesMut::with_capacity(CHUNK);
        }
        chunk.extend_from_slice(data);
        chunk.split().freeze()
    }

    /// Receives one frame into `msg`, blocking as the flags and RCVTIMEO
    /// say (EINTR if a signal comes while it waits); errno values on
    /// failure, `msg` then unchanged.
    #[inline]
    pub fn recv(&self, msg: &mut Message, flags: c_int) -> Result<(), c_int> {
        match &self.kind {
            Kind::Plain(s) => {
                crate::wait::blocking(s, flags, Socket::get_rcvtimeo, fabriq::POLLIN, |f| {
                    s.recv(msg, f)
                })
            }
            Kind::Safe(t) => {
                *msg = t.recv_msg(flags).map_err(|e| e.to_raw())?;
                Ok(())
            }
        }
    }
}

/// A thread-safe socket's send, out of line (its message, built on the
/// stack, would otherwise take room in every caller's frame).
#[inline(never)]
fn send_safe(t: &ThreadSafeSocket, msg: Message, flags: c_int) -> Result<(), c_int> {
    t.send(msg, flags).map_err(|e| e.to_raw())
}

/// A socket handle, the `void *` C code holds.
pub struct SockHandle {
    tag: AtomicU32,
    held: UnsafeCell<Option<Box<Held>>>,
}

// SAFETY: `held` is written only by `zmq_socket` (before the handle is
// published) and `zmq_close` (which C code, as with libzmq, does not call
// while another thread uses the socket); the socket inside is either used
// by one thread at a time (libzmq's contract for classic sockets) or is a
// `ThreadSafeSocket`.
unsafe impl Sync for SockHandle {}

/// Closed handles, reused by `zmq_socket`.
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The socket behind a handle: ENOTSOCK for null or closed handles, as
/// libzmq.
///
/// # Safety
///
/// `p` is null or a pointer `zmq_socket` returned (handles are never
/// freed, so it stays readable), and no other thread closes the socket
/// during `'a`.
pub unsafe fn held<'a>(p: *mut c_void) -> Result<&'a Held, c_int> {
    if p.is_null() {
        return Err(libc::ENOTSOCK);
    }
    // SAFETY: a non-null pointer from `zmq_socket` points to a
    // `SockHandle`, never freed.
    let h = unsafe { &*(p as *const SockHandle) };
    if h.tag.load(Ordering::Acquire) != SOCK_LIVE {
        return Err(libc::ENOTSOCK);
    }
    // SAFETY: the tag is live, so `held` was set before the tag was
    // published and is not being taken (the caller's contract).
    unsafe { (*h.held.get()).as_deref() }.ok_or(libc::ENOTSOCK)
}

/// libzmq's socket type numbers.
pub fn socket_type(n: c_int) -> Option<SocketType> {
    use fabriq::*;
    Some(match n {
        0 => PAIR,
        1 => PUB,
        2 => SUB,
        3 => REQ,
        4 => REP,
        5 => DEALER,
        6 => ROUTER,
        7 => PULL,
        8 => PUSH,
        9 => XPUB,
        10 => XSUB,
        11 => STREAM,
        12 => SERVER,
        13 => CLIENT,
        14 => RADIO,
        15 => DISH,
        16 => GATHER,
        17 => SCATTER,
        18 => DGRAM,
        19 => PEER,
        20 => CHANNEL,
        _ => return None,
    })
}

/// The number of a socket type.
pub fn socket_type_number(t: SocketType) -> c_int {
    (0..=20).find(|&n| socket_type(n) == Some(t)).unwrap_or(-1)
}

/// Creates a socket of `type_` in `context`.
///
/// # Safety
///
/// `context` is null or came from `zmq_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_socket(context: *mut c_void, type_: c_int) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        match unsafe { open(context, type_) } {
            Ok(p) => p,
            Err(e) => {
                fail(e);
                std::ptr::null_mut()
            }
        }
    })
}

/// # Safety
///
/// As `zmq_socket`.
unsafe fn open(context: *mut c_void, type_: c_int) -> Result<*mut c_void, c_int> {
    // SAFETY: forwarded contract.
    let ctx = unsafe { crate::ctx::state(context) }?;
    let ty = socket_type(type_).ok_or(libc::EINVAL)?;
    if ctx.sockets.load(Ordering::Relaxed) >= ctx.max_sockets() {
        return Err(libc::EMFILE);
    }
    let socket = ctx.ctx.socket(ty).map_err(|e| e.to_raw())?;
    if !ctx.blocky.load(Ordering::Relaxed) {
        socket.set_linger(0).map_err(|e| e.to_raw())?;
    }
    if ctx.ipv6.load(Ordering::Relaxed) {
        socket.set_ipv6(true).map_err(|e| e.to_raw())?;
    }
    let kind = if socket.is_thread_safe().map_err(|e| e.to_raw())? {
        Kind::Safe(ThreadSafeSocket::new(socket).map_err(|e| e.to_raw())?)
    } else {
        Kind::Plain(socket)
    };
    ctx.sockets.fetch_add(1, Ordering::Relaxed);
    let held = Box::new(Held {
        kind,
        ctx,
        extra: Mutex::new(Extra::default()),
        copy: RefCell::new(BytesMut::new()),
    });
    let reused = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let p = match reused {
        Some(p) => p as *mut SockHandle,
        None => Box::into_raw(Box::new(SockHandle {
            tag: AtomicU32::new(SOCK_DEAD),
            held: UnsafeCell::new(None),
        })),
    };
    // SAFETY: `p` is a handle no one else holds as open: fresh, or closed
    // and taken off the free list under its lock. Its `held` is set before
    // the tag makes it live.
    unsafe {
        *(*p).held.get() = Some(held);
        (*p).tag.store(SOCK_LIVE, Ordering::Release);
    }
    Ok(p.cast())
}

/// Closes a socket. Pending messages are sent within its linger period,
/// in the background.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; no other thread uses it
/// during the call.
#[no_mangle]
pub unsafe extern "C" fn zmq_close(socket: *mut c_void) -> c_int {
    int_result(|| {
        if socket.is_null() {
            return Err(libc::ENOTSOCK);
        }
        // SAFETY: a non-null pointer from `zmq_socket`, never freed.
        let h = unsafe { &*(socket as *const SockHandle) };
        if h.tag
            .compare_exchange(SOCK_LIVE, SOCK_DEAD, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(libc::ENOTSOCK);
        }
        // SAFETY: this thread won the tag, so it alone takes `held`; no
        // other thread uses the socket (the caller's contract).
        let held = unsafe { (*h.held.get()).take() };
        if let Some(held) = held {
            let ctx = held.ctx.clone();
            drop(held);
            ctx.sockets.fetch_sub(1, Ordering::Relaxed);
        }
        FREE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(socket as usize);
        Ok(0)
    })
}

/// An endpoint argument: EINVAL when null or not UTF-8, as libzmq.
///
/// # Safety
///
/// `s` is null or a NUL-terminated string.
unsafe fn endpoint<'a>(s: *const c_char) -> Result<&'a str, c_int> {
    // SAFETY: forwarded contract.
    unsafe { c_str(s) }.map_err(|_| libc::EINVAL)
}

macro_rules! endpoint_call {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `socket` is null or came from `zmq_socket`; `endpoint` is null
        /// or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $name(socket: *mut c_void, endpoint: *const c_char) -> c_int {
            int_result(|| {
                // SAFETY: forwarded contract.
                let h = unsafe { held(socket) }?;
                // SAFETY: forwarded contract.
                let ep = unsafe { self::endpoint(endpoint) }?;
                // An abstract ipc name must not be empty (libzmq: EINVAL).
                if ep == "ipc://@" {
                    return Err(libc::EINVAL);
                }
                h.with(|s| s.$method(ep)).map_err(|e| e.to_raw())?;
                Ok(0)
            })
        }
    };
}

endpoint_call!(
    /// Accepts connections on an endpoint.
    zmq_bind => bind
);
endpoint_call!(
    /// Connects to an endpoint.
    zmq_connect => connect
);
/// Stops accepting on an endpoint: the resolved one (`ZMQ_LAST_ENDPOINT`),
/// not a wildcard (ENOENT, as libzmq).
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `endpoint` is null or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_unbind(socket: *mut c_void, endpoint: *const c_char) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        // SAFETY: forwarded contract.
        let ep = unsafe { self::endpoint(endpoint) }?;
        if ep.ends_with(":*") || ep == "ipc://*" {
            return Err(libc::ENOENT);
        }
        h.with(|s| s.unbind(ep)).map_err(|e| e.to_raw())?;
        Ok(0)
    })
}
endpoint_call!(
    /// Drops the connection to an endpoint.
    zmq_disconnect => disconnect
);

/// A send's byte count, or -1 with errno.
fn sent(r: Result<(), c_int>, len: usize) -> c_int {
    match r {
        Ok(()) => len.min(c_int::MAX as usize) as c_int,
        Err(e) => fail(e),
    }
}

/// Sends `len` bytes from `buf` as one frame (copied).
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `buf` points to `len`
/// readable bytes (or is null with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_send(
    socket: *mut c_void,
    buf: *const c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        if buf.is_null() && len > 0 {
            return fail(libc::EFAULT);
        }
        let data: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: `buf` is non-null and points to `len` bytes.
            unsafe { std::slice::from_raw_parts(buf.cast(), len) }
        };
        sent(h.send_slice(data, flags), len)
    })
}

/// A constant buffer the caller promises outlives every use.
struct ConstBuf(*const u8, usize);

// SAFETY: the buffer is constant and outlives the message (zmq_send_const's
// contract), so reading it from any thread is sound.
unsafe impl Send for ConstBuf {}
// SAFETY: as above.
unsafe impl Sync for ConstBuf {}

impl AsRef<[u8]> for ConstBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `zmq_send_const` made this from a non-null pointer to
        // `len` bytes that stay valid and unchanged.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

/// Sends `len` bytes from a constant buffer without copying it.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `buf` points to `len`
/// bytes that stay valid and unchanged for as long as the library may
/// read them (in practice, for the program's life).
#[no_mangle]
pub unsafe extern "C" fn zmq_send_const(
    socket: *mut c_void,
    buf: *const c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        if buf.is_null() && len > 0 {
            return fail(libc::EFAULT);
        }
        let msg = if len == 0 {
            Message::new()
        } else {
            Message::from(Bytes::from_owner(ConstBuf(buf.cast(), len)))
        };
        sent(h.send(&mut { msg }, flags), len)
    })
}

/// Receives one frame into `buf`, truncated to `len` bytes; returns the
/// frame's full size.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `buf` points to `len`
/// writable bytes (or is null with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_recv(
    socket: *mut c_void,
    buf: *mut c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        if buf.is_null() && len > 0 {
            return fail(libc::EFAULT);
        }
        let out: &mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: `buf` is non-null and points to `len` writable bytes.
            unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) }
        };
        let r = match &h.kind {
            Kind::Plain(s) => {
                crate::wait::blocking(s, flags, Socket::get_rcvtimeo, fabriq::POLLIN, |f| {
                    s.recv_into(out, f)
                })
            }
            Kind::Safe(t) => t
                .recv_msg(flags)
                .map(|m| {
                    let n = m.len().min(out.len());
                    out[..n].copy_from_slice(&m[..n]);
                    m.len()
                })
                .map_err(|e| e.to_raw()),
        };
        match r {
            Ok(n) => n.min(c_int::MAX as usize) as c_int,
            Err(e) => fail(e),
        }
    })
}

/// Reports the socket's events on a PAIR socket bound at `addr` (an
/// `inproc://` endpoint), in libzmq's two-frame format; a null `addr`
/// stops monitoring.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `addr` is null or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_socket_monitor(
    socket: *mut c_void,
    addr: *const c_char,
    events: c_int,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        let ep = if addr.is_null() {
            ""
        } else {
            // SAFETY: forwarded contract.
            unsafe { endpoint(addr) }?
        };
        h.with(|s| s.monitor(ep, events)).map_err(|e| e.to_raw())?;
        Ok(0)
    })
}
