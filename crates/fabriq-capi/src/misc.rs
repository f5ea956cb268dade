//! Everything that is not a context, socket or message: version,
//! capabilities, errors, Z85, CURVE keys, atomic counters, the stopwatch,
//! `zmq_sleep` and threads.

use std::ffi::{c_char, c_int, c_ulong, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::util::{c_str, errno, fail, guard, set_errno, strerror};

/// The libzmq version fabriq's C API answers for.
///
/// # Safety
///
/// Each pointer is null or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn zmq_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) {
    let (a, b, c) = fabriq::version();
    for (p, v) in [(major, a), (minor, b), (patch, c)] {
        if !p.is_null() {
            // SAFETY: non-null, writable by the caller's contract.
            unsafe { *p = v };
        }
    }
}

/// Whether a capability is built in: `ipc`, `curve`, `plain` (and `draft`
/// when built with the `draft` feature).
///
/// # Safety
///
/// `capability` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_has(capability: *const c_char) -> c_int {
    guard(0, || {
        // SAFETY: forwarded contract.
        match unsafe { c_str(capability) } {
            Ok("draft") => cfg!(feature = "draft") as c_int,
            Ok(name) => fabriq::has(name).unwrap_or(false) as c_int,
            Err(_) => 0,
        }
    })
}

/// The calling thread's errno.
#[no_mangle]
pub extern "C" fn zmq_errno() -> c_int {
    errno()
}

/// The text of an error number (libzmq's for its own numbers).
#[no_mangle]
pub extern "C" fn zmq_strerror(errnum: c_int) -> *const c_char {
    strerror(errnum)
}

/// Encodes `size` bytes (a multiple of 4) as Z85 into `dest`
/// (`size * 5 / 4 + 1` bytes); returns `dest`, or null.
///
/// # Safety
///
/// `dest` has room for the text and its NUL; `data` points to `size`
/// readable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_z85_encode(
    dest: *mut c_char,
    data: *const u8,
    size: usize,
) -> *mut c_char {
    guard(std::ptr::null_mut(), || {
        if dest.is_null() || (data.is_null() && size > 0) || size % 4 != 0 {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        let input: &[u8] = if size == 0 {
            &[]
        } else {
            // SAFETY: non-null, `size` readable bytes.
            unsafe { std::slice::from_raw_parts(data, size) }
        };
        let Ok(text) = fabriq::z85_encode(input) else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        // SAFETY: `dest` has room for `size * 5 / 4 + 1` bytes, the text's
        // length plus its NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), dest.cast(), text.len());
            *dest.add(text.len()) = 0;
        }
        dest
    })
}

/// Decodes Z85 text (a multiple of 5 characters) into `dest`
/// (`strlen * 4 / 5` bytes); returns `dest`, or null.
///
/// # Safety
///
/// `string` is NUL-terminated; `dest` has room for the bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_z85_decode(dest: *mut u8, string: *const c_char) -> *mut u8 {
    guard(std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        let text = match unsafe { c_str(string) } {
            Ok(t) if !dest.is_null() && t.len() % 5 == 0 => t,
            _ => {
                set_errno(libc::EINVAL);
                return std::ptr::null_mut();
            }
        };
        let Ok(bytes) = fabriq::z85_decode(text) else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        // SAFETY: `dest` has room for `len * 4 / 5` bytes, what this is.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dest, bytes.len()) };
        dest
    })
}

/// Writes 40 Z85 characters and a NUL to `out` from a 32-byte key.
///
/// # Safety
///
/// `out` has room for 41 bytes.
unsafe fn write_key(out: *mut c_char, key: &[u8; 32]) -> Result<(), c_int> {
    let text = fabriq::z85_encode(key).map_err(|_| libc::EINVAL)?;
    // SAFETY: 41 writable bytes by the caller's contract; the text is 40.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast(), 40);
        *out.add(40) = 0;
    }
    Ok(())
}

/// A new CURVE key pair, each key as 40 Z85 characters and a NUL.
///
/// # Safety
///
/// Both are null or have room for 41 bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_curve_keypair(
    public_key: *mut c_char,
    secret_key: *mut c_char,
) -> c_int {
    crate::util::int_result(|| {
        if public_key.is_null() || secret_key.is_null() {
            return Err(libc::EINVAL);
        }
        let pair = fabriq::CurveKeyPair::new().map_err(|e| e.to_raw())?;
        // SAFETY: forwarded contract.
        unsafe {
            write_key(public_key, &pair.public_key)?;
            write_key(secret_key, &pair.secret_key)?;
        }
        Ok(0)
    })
}

/// The public key of a Z85 secret key, as 40 Z85 characters and a NUL.
///
/// # Safety
///
/// `public_key` has room for 41 bytes; `secret_key` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn zmq_curve_public(
    public_key: *mut c_char,
    secret_key: *const c_char,
) -> c_int {
    crate::util::int_result(|| {
        if public_key.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: forwarded contract.
        let text = unsafe { c_str(secret_key) }.map_err(|_| libc::EINVAL)?;
        let bytes = fabriq::z85_decode(text).map_err(|_| libc::EINVAL)?;
        let secret: [u8; 32] = bytes.try_into().map_err(|_| libc::EINVAL)?;
        let pair = fabriq::CurveKeyPair::from_secret_key(&secret);
        // SAFETY: forwarded contract.
        unsafe { write_key(public_key, &pair.public_key) }?;
        Ok(0)
    })
}

/// A new atomic counter, at 0.
#[no_mangle]
pub extern "C" fn zmq_atomic_counter_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(AtomicI32::new(0))).cast()
    })
}

/// # Safety
///
/// `counter` came from `zmq_atomic_counter_new` and is not destroyed.
unsafe fn counter<'a>(counter: *mut c_void) -> &'a AtomicI32 {
    // SAFETY: the caller's contract.
    unsafe { &*(counter as *const AtomicI32) }
}

/// Sets a counter.
///
/// # Safety
///
/// `counter` came from `zmq_atomic_counter_new` and is not destroyed.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_set(c: *mut c_void, value: c_int) {
    if !c.is_null() {
        // SAFETY: forwarded contract.
        unsafe { counter(c) }.store(value, Ordering::SeqCst);
    }
}

/// Adds one; returns the value before.
///
/// # Safety
///
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_inc(c: *mut c_void) -> c_int {
    if c.is_null() {
        return fail(libc::EFAULT);
    }
    // SAFETY: forwarded contract.
    unsafe { counter(c) }.fetch_add(1, Ordering::SeqCst)
}

/// Subtracts one; returns 1 if the value is still not zero, else 0.
///
/// # Safety
///
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_dec(c: *mut c_void) -> c_int {
    if c.is_null() {
        return fail(libc::EFAULT);
    }
    // SAFETY: forwarded contract.
    (unsafe { counter(c) }.fetch_sub(1, Ordering::SeqCst) - 1 != 0) as c_int
}

/// The value.
///
/// # Safety
///
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_value(c: *mut c_void) -> c_int {
    if c.is_null() {
        return fail(libc::EFAULT);
    }
    // SAFETY: forwarded contract.
    unsafe { counter(c) }.load(Ordering::SeqCst)
}

/// Frees a counter and sets `*counter_p` to null.
///
/// # Safety
///
/// `counter_p` is null or points to a pointer from
/// `zmq_atomic_counter_new` (or null).
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_destroy(counter_p: *mut *mut c_void) {
    if counter_p.is_null() {
        return;
    }
    // SAFETY: non-null, points to the counter pointer.
    let c = unsafe { std::ptr::replace(counter_p, std::ptr::null_mut()) };
    if !c.is_null() {
        // SAFETY: from `Box::into_raw` in `zmq_atomic_counter_new`, freed once.
        drop(unsafe { Box::from_raw(c as *mut AtomicI32) });
    }
}

/// Starts a stopwatch.
#[no_mangle]
pub extern "C" fn zmq_stopwatch_start() -> *mut c_void {
    Box::into_raw(Box::new(Instant::now())).cast()
}

fn micros(d: Duration) -> c_ulong {
    d.as_micros().min(c_ulong::MAX as u128) as c_ulong
}

/// Microseconds since the stopwatch started.
///
/// # Safety
///
/// `watch` came from `zmq_stopwatch_start` and is not stopped.
#[no_mangle]
pub unsafe extern "C" fn zmq_stopwatch_intermediate(watch: *mut c_void) -> c_ulong {
    if watch.is_null() {
        return 0;
    }
    // SAFETY: forwarded contract.
    micros(unsafe { &*(watch as *const Instant) }.elapsed())
}

/// Microseconds since the stopwatch started; frees it.
///
/// # Safety
///
/// As `zmq_stopwatch_intermediate`; `watch` is not used again.
#[no_mangle]
pub unsafe extern "C" fn zmq_stopwatch_stop(watch: *mut c_void) -> c_ulong {
    if watch.is_null() {
        return 0;
    }
    // SAFETY: from `Box::into_raw` in `zmq_stopwatch_start`, freed once.
    let start = unsafe { Box::from_raw(watch as *mut Instant) };
    micros(start.elapsed())
}

/// Sleeps `seconds` seconds.
#[no_mangle]
pub extern "C" fn zmq_sleep(seconds: c_int) {
    std::thread::sleep(Duration::from_secs(seconds.max(0) as u64));
}

/// libzmq's `zmq_thread_fn`.
pub type ThreadFn = unsafe extern "C" fn(arg: *mut c_void);

struct Arg(ThreadFn, *mut c_void);

// SAFETY: `zmq_threadstart`'s contract: the function and its argument are
// meant to run on the new thread.
unsafe impl Send for Arg {}

/// Runs `func(arg)` on a new thread; `zmq_threadclose` joins it.
///
/// # Safety
///
/// `func` may be called with `arg` on another thread.
#[no_mangle]
pub unsafe extern "C" fn zmq_threadstart(func: Option<ThreadFn>, arg: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let Some(f) = func else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        let a = Arg(f, arg);
        let handle = std::thread::spawn(move || {
            let a = a;
            // SAFETY: the caller's function and argument, as promised.
            unsafe { (a.0)(a.1) }
        });
        Box::into_raw(Box::new(handle)).cast()
    })
}

/// Waits for a thread from `zmq_threadstart` to end and frees it.
///
/// # Safety
///
/// `thread` came from `zmq_threadstart` and is closed once.
#[no_mangle]
pub unsafe extern "C" fn zmq_threadclose(thread: *mut c_void) {
    if thread.is_null() {
        return;
    }
    // SAFETY: from `Box::into_raw` in `zmq_threadstart`, freed once.
    let handle = unsafe { Box::from_raw(thread as *mut std::thread::JoinHandle<()>) };
    let _ = handle.join();
}
