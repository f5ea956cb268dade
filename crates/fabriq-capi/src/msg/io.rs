//! Sending and receiving messages: `zmq_msg_send`, `zmq_msg_recv` and
//! their old names.

use std::ffi::{c_int, c_void};

use fabriq::{Message, DONTWAIT};

use super::record::{release, Inner};
use super::{live, ZmqMsg, MORE};
use crate::socket::{held, Held, Kind};
use crate::util::{fail, guard};

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
    // SAFETY: forwarded contract.
    guard(-1, || unsafe { send(msg, socket, flags) })
}

/// `zmq_msg_send`, inlined into both of its names (each with a panic
/// guard of its own, which is then inlined too).
///
/// # Safety
///
/// As `zmq_msg_send`.
#[inline(always)]
unsafe fn send(msg: *mut ZmqMsg, socket: *mut c_void, flags: c_int) -> c_int {
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
    // SAFETY: forwarded contract.
    guard(-1, || unsafe { recv(msg, socket, flags) })
}

/// `zmq_msg_recv`, inlined into both of its names (each with a panic
/// guard of its own, which is then inlined too).
///
/// # Safety
///
/// As `zmq_msg_recv`.
#[inline(always)]
unsafe fn recv(msg: *mut ZmqMsg, socket: *mut c_void, flags: c_int) -> c_int {
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
    // The common case, inline: a classic socket receiving into a
    // message that already has a record (every receive into one
    // `zmq_msg_t` but its first), whose first try finds a frame.
    // Anything else (a wait, a failure, a message to make a record
    // for, a thread-safe socket) goes out of line.
    if let (Kind::Plain(s), Some(inner)) = (&h.kind, m.record()) {
        return match s.recv(&mut inner.msg, flags | DONTWAIT) {
            Ok(()) => {
                let (len, more) = received(inner);
                m.flags = more;
                len
            }
            // A failed receive leaves the message as it was.
            Err(e) => recv_again(h, m, flags, e),
        };
    }
    recv_slow(h, m, flags)
}

/// What a received frame's message reports: its size for C, and its flags.
#[inline(always)]
fn received(inner: &mut Inner) -> (c_int, u32) {
    if !inner.strings.is_empty() {
        inner.strings.clear();
    }
    let len = inner.msg.len().min(c_int::MAX as usize) as c_int;
    (len, if inner.msg.get_more() { MORE } else { 0 })
}

/// `recv` after a first try that failed with `first`: a blocking call
/// that would have blocked waits and tries again; anything else fails.
#[cold]
#[inline(never)]
fn recv_again(h: &Held, m: &mut ZmqMsg, flags: c_int, first: fabriq::Error) -> c_int {
    if first == fabriq::Error::EAGAIN && flags & DONTWAIT == 0 {
        recv_slow(h, m, flags)
    } else {
        fail(first.to_raw())
    }
}

/// `recv` in general: into a message with or without a record, on any
/// socket, blocking as the flags and RCVTIMEO say.
#[inline(never)]
fn recv_slow(h: &Held, m: &mut ZmqMsg, flags: c_int) -> c_int {
    // Received in place, into the message's record (made if the message
    // was empty; a failed receive leaves it empty again).
    let had_record = !m.inner.is_null();
    let inner = m.make();
    match h.recv(&mut inner.msg, flags) {
        Ok(()) => {
            let (len, more) = received(inner);
            m.flags = more;
            len
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
}

/// The old name of `zmq_msg_send` (argument order differs).
///
/// # Safety
///
/// As `zmq_msg_send`.
#[no_mangle]
pub unsafe extern "C" fn zmq_sendmsg(socket: *mut c_void, msg: *mut ZmqMsg, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    guard(-1, || unsafe { send(msg, socket, flags) })
}

/// The old name of `zmq_msg_recv` (argument order differs).
///
/// # Safety
///
/// As `zmq_msg_recv`.
#[no_mangle]
pub unsafe extern "C" fn zmq_recvmsg(socket: *mut c_void, msg: *mut ZmqMsg, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    guard(-1, || unsafe { recv(msg, socket, flags) })
}
