//! What every entry point shares: errno, the panic guard, and libzmq's
//! error numbers.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// libzmq's base for its own error numbers.
pub const HAUSNUMERO: c_int = 156_384_712;
/// Operation cannot be accomplished in current state.
pub const EFSM: c_int = HAUSNUMERO + 51;
/// The protocol is not compatible with the socket type.
pub const ENOCOMPATPROTO: c_int = HAUSNUMERO + 52;
/// Context was terminated.
pub const ETERM: c_int = HAUSNUMERO + 53;
/// No thread available.
pub const EMTHREAD: c_int = HAUSNUMERO + 54;

/// Sets the calling thread's `errno`, which is what `zmq_errno` and C
/// callers read, as with libzmq.
pub fn set_errno(e: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot,
    // valid for the thread's whole life.
    unsafe { *libc::__errno_location() = e };
}

/// The calling thread's `errno`.
pub fn errno() -> c_int {
    // SAFETY: as in `set_errno`.
    unsafe { *libc::__errno_location() }
}

/// Fails with `e`: sets errno, returns -1.
pub fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// Fails with a fabriq error's errno.
pub fn fail_with(e: fabriq::Error) -> c_int {
    fail(e.to_raw())
}

/// Runs `f`, turning a panic into `on_panic` with errno EFAULT, so that no
/// panic unwinds into C.
#[inline(always)]
pub fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            set_errno(libc::EFAULT);
            on_panic
        }
    }
}

/// `-1`-returning entry points: the value of `f`, or -1 with errno.
#[inline(always)]
pub fn int_result(f: impl FnOnce() -> Result<c_int, c_int>) -> c_int {
    guard(-1, || match f() {
        Ok(v) => v,
        Err(e) => fail(e),
    })
}

/// A C string argument as UTF-8: EFAULT if null, EINVAL if not UTF-8.
///
/// # Safety
///
/// `s` is null or points to a NUL-terminated string that stays valid and
/// unchanged for `'a`.
pub unsafe fn c_str<'a>(s: *const c_char) -> Result<&'a str, c_int> {
    if s.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| libc::EINVAL)
}

/// libzmq's text for its own error numbers, else the C library's.
pub fn strerror(e: c_int) -> *const c_char {
    let own: Option<&'static CStr> = match e {
        EFSM => Some(c"Operation cannot be accomplished in current state"),
        ENOCOMPATPROTO => Some(c"The protocol is not compatible with the socket type"),
        ETERM => Some(c"Context was terminated"),
        EMTHREAD => Some(c"No thread available"),
        _ => None,
    };
    match own {
        Some(s) => s.as_ptr(),
        // SAFETY: `strerror` returns a pointer to a static (or thread-local
        // in glibc for unknown numbers) string; we hand it on as libzmq does.
        None => unsafe { libc::strerror(e) },
    }
}
