//! `zmq_sendiov` and `zmq_recviov`: multipart messages from and into
//! `struct iovec` arrays.

use std::ffi::{c_int, c_void};

use fabriq::Message;

use crate::socket::held;
use crate::util::{fail, guard};

/// Sends `count` buffers (copied), each with `flags`, the last without
/// `ZMQ_SNDMORE`; returns the last one's size.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `iov` points to `count`
/// `iovec`s of readable buffers.
#[no_mangle]
pub unsafe extern "C" fn zmq_sendiov(
    socket: *mut c_void,
    iov: *mut libc::iovec,
    count: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        if count == 0 || iov.is_null() {
            return fail(libc::EINVAL);
        }
        // SAFETY: non-null, `count` iovecs.
        let parts = unsafe { std::slice::from_raw_parts(iov, count) };
        let mut last = 0usize;
        for (i, p) in parts.iter().enumerate() {
            let data: &[u8] = if p.iov_len == 0 {
                &[]
            } else if p.iov_base.is_null() {
                return fail(libc::EFAULT);
            } else {
                // SAFETY: non-null, `iov_len` readable bytes.
                unsafe { std::slice::from_raw_parts(p.iov_base.cast(), p.iov_len) }
            };
            // As libzmq: the caller's flags go with every part, except
            // that the last part never has SNDMORE.
            let f = if i + 1 == count {
                flags & !fabriq::SNDMORE
            } else {
                flags
            };
            if let Err(e) = h.send_slice(data, f) {
                return fail(e);
            }
            last = p.iov_len;
        }
        // libzmq returns the size of the last part.
        last.min(c_int::MAX as usize) as c_int
    })
}

/// Receives up to `*count` frames of a multipart message into buffers it
/// allocates with `malloc` (the caller frees them); sets `*count`.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `count` points to the
/// number of `iovec`s at `iov`.
#[no_mangle]
pub unsafe extern "C" fn zmq_recviov(
    socket: *mut c_void,
    iov: *mut libc::iovec,
    count: *mut usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded contract.
        let h = match unsafe { held(socket) } {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        // SAFETY: `count` is null or points to a size_t.
        if count.is_null() || iov.is_null() || unsafe { *count } == 0 {
            return fail(libc::EINVAL);
        }
        // SAFETY: as above.
        let room = unsafe { *count };
        // SAFETY: non-null, `room` iovecs.
        let parts = unsafe { std::slice::from_raw_parts_mut(iov, room) };
        let mut n = 0;
        while n < room {
            let mut m = Message::new();
            if let Err(e) = h.recv(&mut m, flags) {
                return fail(e);
            }
            // SAFETY: plain malloc of at least one byte; checked below.
            let buf = unsafe { libc::malloc(m.len().max(1)) };
            if buf.is_null() {
                return fail(libc::ENOMEM);
            }
            // SAFETY: `buf` has room for `m.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), buf.cast(), m.len()) };
            parts[n] = libc::iovec {
                iov_base: buf,
                iov_len: m.len(),
            };
            n += 1;
            if !m.get_more() {
                break;
            }
        }
        // SAFETY: non-null, checked above.
        unsafe { *count = n };
        // libzmq returns the number of parts received.
        n.min(c_int::MAX as usize) as c_int
    })
}
