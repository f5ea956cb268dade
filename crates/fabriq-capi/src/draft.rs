//! The draft API of libzmq 4.3: `zmq_join`, `zmq_leave`,
//! `zmq_connect_peer` (declared in zmq.h under ZMQ_BUILD_DRAFT_API).

use std::ffi::{c_char, c_int, c_void};

use crate::socket::held;
use crate::util::{c_str, int_result};

/// Joins a group (DISH).
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `group` is null or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn zmq_join(socket: *mut c_void, group: *const c_char) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        // SAFETY: forwarded contract.
        let g = unsafe { c_str(group) }.map_err(|_| libc::EINVAL)?;
        h.with(|s| s.join(g)).map_err(|e| e.to_raw())?;
        Ok(0)
    })
}

/// Leaves a group (DISH).
///
/// # Safety
///
/// As `zmq_join`.
#[no_mangle]
pub unsafe extern "C" fn zmq_leave(socket: *mut c_void, group: *const c_char) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        // SAFETY: forwarded contract.
        let g = unsafe { c_str(group) }.map_err(|_| libc::EINVAL)?;
        h.with(|s| s.leave(g)).map_err(|e| e.to_raw())?;
        Ok(0)
    })
}

/// Connects a PEER and returns the new peer's routing id (0 on failure).
///
/// # Safety
///
/// As `zmq_join`, with an endpoint.
#[no_mangle]
pub unsafe extern "C" fn zmq_connect_peer(socket: *mut c_void, endpoint: *const c_char) -> u32 {
    let mut id = 0;
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        // SAFETY: forwarded contract.
        let ep = unsafe { c_str(endpoint) }.map_err(|_| libc::EINVAL)?;
        id = h.with(|s| s.connect_peer(ep)).map_err(|e| e.to_raw())?;
        Ok(0)
    });
    id
}
