//! Messages: `zmq_msg_t` and the `zmq_msg_*` functions.
//!
//! `zmq_msg_t` is libzmq's 64-byte, pointer-aligned opaque struct. Here it
//! holds a tag (live or closed), flags, and a pointer to a heap `Inner`
//! with the fabriq `Message` (null for an empty message, so `zmq_msg_init`
//! allocates nothing). `zmq_msg_close` frees it; a closed or never
//! initialised message answers EFAULT where libzmq's check does.

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;

use bytes::BytesMut;
use fabriq::Message;

use crate::util::{c_str, fail, guard, int_result};

mod io;
mod owned;
pub(crate) mod record;

pub use io::{zmq_msg_recv, zmq_msg_send, zmq_recvmsg, zmq_sendmsg};
pub use owned::{zmq_msg_init_data, FreeFn};
use record::{release, zeroed, Inner};

const MSG_LIVE: u32 = 0x1BAD_F00D;
const MSG_DEAD: u32 = 0;

/// Flag: more frames follow (set by a receive).
const MORE: u32 = 1;
/// Flag: made by `zmq_msg_init_size`, written in place.
const WRITABLE: u32 = 2;
/// Flag: shares its data with a copy (`ZMQ_SHARED`).
const SHARED: u32 = 4;
/// Flag: the data is the struct's own `body` (a message made by
/// `zmq_msg_init_size` that nothing has asked more of than its data, its
/// size or a send); `inner` is null.
const BODY: u32 = 8;

/// `ZMQ_MORE` for `zmq_msg_get`.
pub const ZMQ_MORE: c_int = 1;
/// `ZMQ_SRCFD` for `zmq_msg_get` (deprecated in libzmq).
pub const ZMQ_SRCFD: c_int = 2;
/// `ZMQ_SHARED` for `zmq_msg_get`.
pub const ZMQ_SHARED: c_int = 3;

/// libzmq's `zmq_msg_t`: 64 bytes, aligned as a pointer.
#[repr(C, align(8))]
pub struct ZmqMsg {
    tag: u32,
    flags: u32,
    inner: *mut Inner,
    /// The data of a `BODY` message, held in the struct: the common
    /// `zmq_msg_init_size`, fill, `zmq_msg_send`, `zmq_msg_close` needs
    /// no record (`Inner`), only the data's own allocation, as with the
    /// fabriq API. Anything else moves it into a record first (`promote`).
    body: MaybeUninit<BytesMut>,
    /// Unused; also where an empty message's data pointer points.
    rest: [u8; 16],
}

const _: () = assert!(std::mem::size_of::<ZmqMsg>() == 64);
const _: () = assert!(std::mem::align_of::<ZmqMsg>() == 8);

/// A live message: EFAULT for null or closed ones.
///
/// # Safety
///
/// `m` is null or points to a `zmq_msg_t` (64 bytes, initialised or not
/// with `zmq_msg_init*`) that no other thread uses during `'a`.
unsafe fn live<'a>(m: *mut ZmqMsg) -> Result<&'a mut ZmqMsg, c_int> {
    if m.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: non-null and exclusive by the caller's contract.
    let m = unsafe { &mut *m };
    if m.tag != MSG_LIVE {
        return Err(libc::EFAULT);
    }
    Ok(m)
}

impl ZmqMsg {
    /// Sets the content (a record or none); the struct's own body must
    /// have been taken already (`take`, `take_body`).
    fn set(&mut self, inner: Option<Box<Inner>>, flags: u32) {
        self.tag = MSG_LIVE;
        self.flags = flags & !BODY;
        self.inner = inner.map_or(std::ptr::null_mut(), Box::into_raw);
    }

    /// Takes the struct's own body out, if it holds one.
    fn take_body(&mut self) -> Option<BytesMut> {
        if self.flags & BODY == 0 {
            return None;
        }
        self.flags &= !BODY;
        // SAFETY: the `BODY` flag says `body` was written (`zmq_msg_init_size`)
        // and not read out since; clearing the flag first makes this the
        // only read.
        Some(unsafe { self.body.assume_init_read() })
    }

    /// Moves a body held in the struct into a record.
    fn promote(&mut self) {
        if let Some(b) = self.take_body() {
            self.inner = Box::into_raw(Inner::new(Message::from(b)));
        }
    }

    /// The message, if not empty.
    fn get_mut(&mut self) -> Option<&mut Inner> {
        self.promote();
        // SAFETY: `inner` is null or came from `Box::into_raw` in `set`
        // or `promote` and is owned by this live message; `&mut self`
        // makes the access exclusive.
        unsafe { self.inner.as_mut() }
    }

    /// The message's record, if it has one and holds no body (a body
    /// stays where it is).
    #[inline(always)]
    fn record(&mut self) -> Option<&mut Inner> {
        if self.flags & BODY != 0 {
            return None;
        }
        // SAFETY: `inner` is null or came from `Box::into_raw` in `set`
        // or `promote` and is owned by this live message; `&mut self`
        // makes the access exclusive.
        unsafe { self.inner.as_mut() }
    }

    /// The message, made non-empty if it was.
    fn make(&mut self) -> &mut Inner {
        self.promote();
        if self.inner.is_null() {
            self.inner = Box::into_raw(Inner::new(Message::new()));
        }
        // SAFETY: just ensured non-null; owned by this message.
        unsafe { &mut *self.inner }
    }

    /// Takes the content out, leaving the struct closed.
    fn take(&mut self) -> Option<Box<Inner>> {
        self.promote();
        self.tag = MSG_DEAD;
        let p = std::mem::replace(&mut self.inner, std::ptr::null_mut());
        // SAFETY: `p` is null or came from `Box::into_raw` and was owned
        // by this message, which no longer points to it.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }

    fn len(&self) -> usize {
        if self.flags & BODY != 0 {
            // SAFETY: the `BODY` flag says `body` is written.
            return unsafe { self.body.assume_init_ref() }.len();
        }
        // SAFETY: `inner` is null or a record owned by this message.
        unsafe { self.inner.as_ref() }.map_or(0, |i| i.msg.len())
    }
}

/// Initialises an empty message.
///
/// # Safety
///
/// `msg` is null or points to writable memory of `zmq_msg_t`'s size.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init(msg: *mut ZmqMsg) -> c_int {
    int_result(|| {
        if msg.is_null() {
            return Err(libc::EFAULT);
        }
        // SAFETY: non-null, writable; whatever was there is overwritten
        // without being read, as libzmq does.
        unsafe { msg.write(empty()) };
        Ok(0)
    })
}

fn empty() -> ZmqMsg {
    ZmqMsg {
        tag: MSG_LIVE,
        flags: 0,
        inner: std::ptr::null_mut(),
        body: MaybeUninit::uninit(),
        rest: [0; 16],
    }
}

/// Initialises a message of `size` bytes for the caller to fill in.
///
/// # Safety
///
/// As `zmq_msg_init`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init_size(msg: *mut ZmqMsg, size: usize) -> c_int {
    int_result(|| {
        if msg.is_null() {
            return Err(libc::EFAULT);
        }
        // As `Message::with_size`, held in the struct (see `ZmqMsg::body`).
        let mut m = empty();
        m.body.write(zeroed(size));
        m.flags = WRITABLE | BODY;
        // SAFETY: non-null, writable.
        unsafe { msg.write(m) };
        Ok(0)
    })
}

/// Initialises a message with a copy of `size` bytes at `buf` (libzmq
/// 4.3.5's draft `zmq_msg_init_buffer`).
///
/// # Safety
///
/// As `zmq_msg_init`; `buf` points to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init_buffer(
    msg: *mut ZmqMsg,
    buf: *const c_void,
    size: usize,
) -> c_int {
    int_result(|| {
        if msg.is_null() || (buf.is_null() && size > 0) {
            return Err(libc::EFAULT);
        }
        let data: &[u8] = if size == 0 {
            &[]
        } else {
            // SAFETY: non-null, `size` readable bytes.
            unsafe { std::slice::from_raw_parts(buf.cast(), size) }
        };
        let mut m = empty();
        m.set(Some(Inner::new(Message::from(data))), 0);
        // SAFETY: non-null, writable.
        unsafe { msg.write(m) };
        Ok(0)
    })
}

/// Releases a message.
///
/// # Safety
///
/// `msg` is null or points to a `zmq_msg_t` not used by another thread.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_close(msg: *mut ZmqMsg) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let m = unsafe { live(msg) }?;
        drop(m.take_body());
        release(m.take());
        Ok(0)
    })
}

/// Moves `src`'s content to `dest` (released first); `src` becomes empty.
///
/// # Safety
///
/// Both are null or point to distinct `zmq_msg_t`s not used elsewhere.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_move(dest: *mut ZmqMsg, src: *mut ZmqMsg) -> c_int {
    int_result(|| {
        if dest == src {
            // SAFETY: forwarded contract.
            unsafe { live(src) }?;
            return Ok(0);
        }
        // SAFETY: forwarded contract; distinct pointers.
        let (d, s) = unsafe { (live(dest)?, live(src)?) };
        drop(d.take_body());
        release(d.take());
        let flags = s.flags;
        let inner = s.take();
        d.set(inner, flags);
        s.set(None, 0);
        Ok(0)
    })
}

/// Makes `dest` (released first) a copy of `src`, sharing its data.
///
/// # Safety
///
/// As `zmq_msg_move`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_copy(dest: *mut ZmqMsg, src: *mut ZmqMsg) -> c_int {
    int_result(|| {
        if dest == src {
            // SAFETY: forwarded contract.
            unsafe { live(src) }?;
            return Ok(0);
        }
        // SAFETY: forwarded contract; distinct pointers.
        let (d, s) = unsafe { (live(dest)?, live(src)?) };
        freeze(s);
        let copy = s.get_mut().map(|i| Inner::new(i.msg.clone()));
        if copy.is_some() {
            s.flags |= SHARED;
        }
        drop(d.take_body());
        release(d.take());
        d.set(copy, s.flags);
        Ok(0)
    })
}

/// Turns a message written in place into a shared one, so that clones
/// share the data instead of copying it.
fn freeze(m: &mut ZmqMsg) {
    if m.flags & WRITABLE == 0 {
        return;
    }
    m.flags &= !WRITABLE;
    if let Some(inner) = m.get_mut() {
        let old = std::mem::take(&mut inner.msg);
        let routing_id = old.routing_id();
        let group = old.group().map(str::to_owned);
        let mut new = Message::from(old.into_bytes());
        if let Some(id) = routing_id {
            let _ = new.set_routing_id(id);
        }
        if let Some(g) = group {
            let _ = new.set_group(&g);
        }
        inner.msg = new;
    }
}

/// The message's data (writable for a message made with
/// `zmq_msg_init_size`).
///
/// # Safety
///
/// `msg` is null or points to a `zmq_msg_t` not used by another thread.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_data(msg: *mut ZmqMsg) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        let m = match unsafe { live(msg) } {
            Ok(m) => m,
            Err(e) => {
                fail(e);
                return std::ptr::null_mut();
            }
        };
        if m.flags & BODY != 0 {
            // SAFETY: the `BODY` flag says `body` is written; the
            // message's own bytes, written in place.
            return unsafe { m.body.assume_init_mut() }.as_mut_ptr().cast();
        }
        match m.get_mut() {
            // The data where it is, never a copy (libzmq's pointer stays
            // the same for a message's life, a failed send included). A
            // `WRITABLE` message's bytes are its own (no copy shares
            // them: `zmq_msg_copy` clears the flag), even where they sit
            // in a shared allocation (a chunk of `zeroed`), or came back
            // from a failed send as shared `Bytes`; no Rust reference to
            // them is alive while C code writes. Received, copied or
            // caller-owned data: writing to it is the caller's business,
            // as in libzmq (it must not for shared or constant data).
            Some(i) => i.msg.as_ptr().cast_mut().cast(),
            None => m.rest.as_mut_ptr().cast(),
        }
    })
}

/// The message's size in bytes.
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_size(msg: *const ZmqMsg) -> usize {
    guard(0, || {
        // SAFETY: forwarded contract (read only).
        match unsafe { live(msg.cast_mut()) } {
            Ok(m) => m.len(),
            Err(e) => {
                fail(e);
                0
            }
        }
    })
}

/// Whether more frames follow this received one.
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_more(msg: *const ZmqMsg) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_msg_get(msg, ZMQ_MORE) }
}

/// A message property: `ZMQ_MORE`, `ZMQ_SRCFD` (the connection's
/// descriptor; -1: not known, e.g. inproc),
/// `ZMQ_SHARED`.
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_get(msg: *const ZmqMsg, property: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract (read only).
        let m = unsafe { live(msg.cast_mut()) }?;
        match property {
            ZMQ_MORE => Ok((m.flags & MORE != 0) as c_int),
            ZMQ_SRCFD => Ok(m.get_mut().and_then(|i| i.msg.source_fd()).unwrap_or(-1)),
            ZMQ_SHARED => Ok((m.flags & SHARED != 0) as c_int),
            _ => Err(libc::EINVAL),
        }
    })
}

/// Sets a message property: none can be set (EINVAL), as in libzmq.
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_set(msg: *mut ZmqMsg, _property: c_int, _optval: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        unsafe { live(msg) }?;
        Err(libc::EINVAL)
    })
}

/// A metadata property of the connection a received message came from
/// (`Socket-Type`, `Peer-Address`, `User-Id`, `Routing-Id`/`Identity`,
/// application `X-` properties); null with EINVAL if it has none.
///
/// # Safety
///
/// As `zmq_msg_data`; `property` is null or a NUL-terminated string. The
/// result lives as long as the message.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_gets(
    msg: *const ZmqMsg,
    property: *const c_char,
) -> *const c_char {
    guard(std::ptr::null(), || {
        let r = (|| {
            // SAFETY: forwarded contract; the cache of strings is the
            // message's own, written only by its single user thread.
            let m = unsafe { live(msg.cast_mut()) }?;
            // SAFETY: forwarded contract.
            let name = unsafe { c_str(property) }.map_err(|_| libc::EINVAL)?;
            let inner = m.get_mut().ok_or(libc::EINVAL)?;
            let value = inner
                .msg
                .gets(name)
                .map(str::to_owned)
                .ok_or(libc::EINVAL)?;
            Ok(inner.cached(name, &value))
        })();
        r.unwrap_or_else(|e| {
            fail(e);
            std::ptr::null()
        })
    })
}

/// Sets the routing id a SERVER or PEER sends the message to (not 0).
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_set_routing_id(msg: *mut ZmqMsg, routing_id: u32) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let m = unsafe { live(msg) }?;
        if routing_id == 0 {
            return Err(libc::EINVAL);
        }
        freeze(m);
        m.make()
            .msg
            .set_routing_id(routing_id)
            .map_err(|e| e.to_raw())?;
        Ok(0)
    })
}

/// The routing id a SERVER or PEER received the message with (0: none).
///
/// # Safety
///
/// As `zmq_msg_data`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_routing_id(msg: *mut ZmqMsg) -> u32 {
    guard(0, || {
        // SAFETY: forwarded contract.
        match unsafe { live(msg) } {
            Ok(m) => m.get_mut().and_then(|i| i.msg.routing_id()).unwrap_or(0),
            Err(e) => {
                fail(e);
                0
            }
        }
    })
}

/// Sets the group a RADIO publishes the message to (at most 255 bytes).
///
/// # Safety
///
/// As `zmq_msg_data`; `group` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_set_group(msg: *mut ZmqMsg, group: *const c_char) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let m = unsafe { live(msg) }?;
        // SAFETY: forwarded contract.
        let g = unsafe { c_str(group) }.map_err(|_| libc::EINVAL)?;
        freeze(m);
        m.make().msg.set_group(g).map_err(|e| e.to_raw())?;
        Ok(0)
    })
}

/// The group a DISH received the message in ("" if none).
///
/// # Safety
///
/// As `zmq_msg_data`. The result lives as long as the message.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_group(msg: *mut ZmqMsg) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: forwarded contract.
        let m = match unsafe { live(msg) } {
            Ok(m) => m,
            Err(e) => {
                fail(e);
                return std::ptr::null();
            }
        };
        match m.get_mut() {
            Some(inner) => {
                let g = inner.msg.group().unwrap_or("").to_owned();
                inner.cached("\0group", &g)
            }
            None => c"".as_ptr(),
        }
    })
}
