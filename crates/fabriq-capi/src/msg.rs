//! Messages: `zmq_msg_t` and the `zmq_msg_*` functions.
//!
//! `zmq_msg_t` is libzmq's 64-byte, pointer-aligned opaque struct. Here it
//! holds a tag (live or closed), flags, and a pointer to a heap `Inner`
//! with the fabriq `Message` (null for an empty message, so `zmq_msg_init`
//! allocates nothing). `zmq_msg_close` frees it; a closed or never
//! initialised message answers EFAULT where libzmq's check does.

use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use fabriq::Message;

use crate::socket::held;
use crate::util::{c_str, fail, guard, int_result};

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

/// What a non-empty message holds.
struct Inner {
    msg: Message,
    /// C strings handed out by `zmq_msg_gets` and `zmq_msg_group`, alive
    /// as long as the message is.
    strings: Vec<(String, CString)>,
}

thread_local! {
    /// Records of closed messages, reused by this thread's next ones: a
    /// message in a send or receive loop then costs no allocation for its
    /// record. The boxes themselves are what is reused (each is the
    /// allocation a `zmq_msg_t` points to), hence `Vec<Box<_>>`.
    #[allow(clippy::vec_box)]
    static POOL: std::cell::RefCell<Vec<Box<Inner>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Data of at most this many bytes comes out of a per-thread chunk.
const SMALL: usize = 4096;
/// The size of those chunks.
const CHUNK: usize = 32 * 1024;

thread_local! {
    /// The rest of this thread's current chunk (`zeroed`).
    static ARENA: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::new());
}

/// `size` zero bytes of a message's own (`zmq_msg_init_size`). Up to
/// `SMALL` bytes are cut from a per-thread chunk of `CHUNK` bytes rather
/// than allocated each: a stream of small messages then costs one
/// allocation per chunk, not one per message, and the receiving thread
/// frees a chunk once, when the last message cut from it goes, instead of
/// every message's allocation one by one (a `malloc` on the sending thread
/// and a `free` on the receiving one were 47 % of `inproc_thr`'s time at
/// 64 B). The price: a small message kept long keeps up to 32 KiB alive,
/// as fabriq's own copies of small slices do (`Message::from(&[u8])`).
fn zeroed(size: usize) -> BytesMut {
    if size == 0 || size > SMALL {
        return BytesMut::zeroed(size);
    }
    ARENA
        .try_with(|a| {
            let mut a = a.borrow_mut();
            if a.capacity() < size {
                *a = BytesMut::with_capacity(CHUNK);
            }
            a.resize(size, 0);
            a.split()
        })
        .unwrap_or_else(|_| BytesMut::zeroed(size))
}

/// How many records a thread keeps.
const POOL_MAX: usize = 32;

impl Inner {
    fn new(msg: Message) -> Box<Inner> {
        let reused = POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten();
        match reused {
            Some(mut b) => {
                b.msg = msg;
                b
            }
            None => Box::new(Inner {
                msg,
                strings: Vec::new(),
            }),
        }
    }

    /// Frees a record's message (its data, its free callback) and keeps
    /// the record for reuse.
    fn release(mut b: Box<Inner>) {
        b.msg = Message::new();
        b.strings.clear();
        let _ = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < POOL_MAX {
                p.push(b);
            }
        });
    }

    fn cached(&mut self, key: &str, value: &str) -> *const c_char {
        if let Some((_, c)) = self
            .strings
            .iter()
            .find(|(k, c)| k == key && c.as_bytes() == value.as_bytes())
        {
            return c.as_ptr();
        }
        let c = CString::new(value.replace('\0', "")).unwrap_or_default();
        let p = c.as_ptr();
        self.strings.push((key.to_string(), c));
        p
    }
}

/// Releases a message's record, if it has one.
#[inline]
fn release(b: Option<Box<Inner>>) {
    if let Some(b) = b {
        Inner::release(b);
    }
}

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

/// libzmq's `zmq_free_fn`.
pub type FreeFn = unsafe extern "C" fn(data: *mut c_void, hint: *mut c_void);

/// A caller's buffer, given back through its free function when the last
/// reference to it drops, on whichever thread that is.
struct Owned {
    data: *mut c_void,
    size: usize,
    ffn: Option<FreeFn>,
    hint: *mut c_void,
}

// SAFETY: `zmq_msg_init_data`'s contract: the buffer stays valid and
// unchanged until `ffn` is called, and `ffn` may be called from any
// thread (libzmq calls it from its I/O threads too).
unsafe impl Send for Owned {}

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        if self.size == 0 {
            return &[];
        }
        // SAFETY: non-null `data` of `size` bytes, valid until `ffn` runs
        // in `drop`.
        unsafe { std::slice::from_raw_parts(self.data.cast(), self.size) }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(ffn) = self.ffn {
            // SAFETY: the caller's free function with its own arguments,
            // called once, after the last use of the buffer.
            unsafe { ffn(self.data, self.hint) };
        }
    }
}

/// Initialises a message over the caller's buffer without copying;
/// `ffn(data, hint)` is called when the library no longer needs it (null
/// `ffn`: never).
///
/// # Safety
///
/// As `zmq_msg_init`; `data` points to `size` bytes that stay valid until
/// `ffn` is called; `ffn` may run on any thread.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init_data(
    msg: *mut ZmqMsg,
    data: *mut c_void,
    size: usize,
    ffn: Option<FreeFn>,
    hint: *mut c_void,
) -> c_int {
    int_result(|| {
        if msg.is_null() || (data.is_null() && size > 0) {
            return Err(libc::EFAULT);
        }
        let owner = Owned {
            data,
            size,
            ffn,
            hint,
        };
        // Without a free function the data is the caller's constant:
        // libzmq reports such a message as shared.
        let flags = if ffn.is_none() { SHARED } else { 0 };
        let mut m = empty();
        m.set(
            Some(Inner::new(Message::from(Bytes::from_owner(owner)))),
            flags,
        );
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

/// Sends a message; on success `msg` becomes empty, on failure it is kept.
/// Returns the number of bytes sent.
///
/// # Safety
///
/// `msg` as `zmq_msg_data`; `socket` is null or came from `zmq_socket`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_send(
    msg: *mut ZmqMsg,
    socket: *mut c_void,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        // SAFETY: forwarded contract.
        let m = match unsafe { live(msg) } {
            Ok(m) => m,
            Err(e) => return fail(e),
        };
        let len = m.len();
        // The frame is taken out of the message only if it is sent: a
        // failed send leaves the message intact, and nothing is copied.
        let r = if let Some(body) = m.take_body() {
            // Data held in the struct: sent without a record, unless the
            // send fails and the message must keep it.
            let mut out = Message::from(body);
            let r = h.send(&mut out, flags);
            if r.is_err() {
                m.inner = Box::into_raw(Inner::new(out));
            }
            r
        } else {
            match m.get_mut() {
                Some(i) => h.send(&mut i.msg, flags),
                None => h.send(&mut Message::new(), flags),
            }
        };
        match r {
            Ok(()) => {
                // As libzmq, a sent message is empty again, holding no
                // memory: C code that copies a zmq_msg_t by value (pyzmq's
                // monitored queue does) must not end up with two structs
                // that point to one allocation.
                release(m.take());
                m.set(None, 0);
                len.min(c_int::MAX as usize) as c_int
            }
            Err(e) => fail(e),
        }
    })
}

/// Receives a frame into `msg` (released first); returns its size.
///
/// # Safety
///
/// As `zmq_msg_send`.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_recv(
    msg: *mut ZmqMsg,
    socket: *mut c_void,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        // SAFETY: forwarded contract.
        let m = match unsafe { live(msg) } {
            Ok(m) => m,
            Err(e) => return fail(e),
        };
        // Received in place, into the message's record (made if the
        // message was empty; a failed receive leaves it empty again).
        let had_record = !m.inner.is_null();
        let inner = m.make();
        match h.recv(&mut inner.msg, flags) {
            Ok(()) => {
                if !inner.strings.is_empty() {
                    inner.strings.clear();
                }
                let len = inner.msg.len();
                m.flags = if inner.msg.get_more() { MORE } else { 0 };
                len.min(c_int::MAX as usize) as c_int
            }
            Err(e) => {
                if !had_record {
                    let flags = m.flags;
                    release(m.take());
                    m.set(None, flags);
                }
                fail(e)
            }
        }
    })
}

/// The old name of `zmq_msg_send` (argument order differs).
///
/// # Safety
///
/// As `zmq_msg_send`.
#[no_mangle]
pub unsafe extern "C" fn zmq_sendmsg(socket: *mut c_void, msg: *mut ZmqMsg, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_msg_send(msg, socket, flags) }
}

/// The old name of `zmq_msg_recv` (argument order differs).
///
/// # Safety
///
/// As `zmq_msg_recv`.
#[no_mangle]
pub unsafe extern "C" fn zmq_recvmsg(socket: *mut c_void, msg: *mut ZmqMsg, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_msg_recv(msg, socket, flags) }
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
