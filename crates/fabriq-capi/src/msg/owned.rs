//! Messages over the caller's own buffer (`zmq_msg_init_data`), given
//! back through the caller's free function.

use std::ffi::{c_int, c_void};

use bytes::Bytes;
use fabriq::Message;

use super::record::Inner;
use super::{empty, ZmqMsg, SHARED};
use crate::util::int_result;

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
