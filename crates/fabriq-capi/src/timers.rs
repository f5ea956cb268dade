//! `zmq_timers_*`: libzmq's timer set, run by the application with
//! `zmq_timers_timeout` and `zmq_timers_execute`.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_long, c_void};
use std::time::{Duration, Instant};

use crate::util::{guard, int_result};

/// libzmq's `zmq_timer_fn`.
pub type TimerFn = unsafe extern "C" fn(timer_id: c_int, arg: *mut c_void);

struct Timer {
    interval: Duration,
    due: Instant,
    handler: TimerFn,
    arg: *mut c_void,
}

/// A timer set.
#[derive(Default)]
pub struct Timers {
    next_id: c_int,
    timers: BTreeMap<c_int, Timer>,
}

const TIMERS_TAG: u64 = 0xCAFE_D00D_7133_0001;

#[repr(C)]
struct Handle {
    tag: u64,
    timers: Timers,
}

/// # Safety
///
/// `p` is null or came from `zmq_timers_new` and is not destroyed.
unsafe fn timers<'a>(p: *mut c_void) -> Result<&'a mut Timers, c_int> {
    if p.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract; the tag guards against other pointers
    // of at least this size.
    let h = unsafe { &mut *(p as *mut Handle) };
    if h.tag != TIMERS_TAG {
        return Err(libc::EFAULT);
    }
    Ok(&mut h.timers)
}

/// A new timer set.
#[no_mangle]
pub extern "C" fn zmq_timers_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(Handle {
            tag: TIMERS_TAG,
            timers: Timers::default(),
        }))
        .cast()
    })
}

/// Frees a timer set and sets `*timers_p` to null.
///
/// # Safety
///
/// `timers_p` is null or points to a pointer from `zmq_timers_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_destroy(timers_p: *mut *mut c_void) -> c_int {
    int_result(|| {
        if timers_p.is_null() {
            return Err(libc::EFAULT);
        }
        // SAFETY: non-null by the check, the caller's pointer.
        let p = unsafe { *timers_p };
        // SAFETY: forwarded contract.
        unsafe { timers(p) }?;
        // SAFETY: checked to be a live set from `zmq_timers_new`; freed once
        // (its tag is cleared first and the caller's pointer nulled).
        unsafe {
            (*(p as *mut Handle)).tag = 0;
            drop(Box::from_raw(p as *mut Handle));
            *timers_p = std::ptr::null_mut();
        }
        Ok(0)
    })
}

/// Adds a timer calling `handler(id, arg)` every `interval` ms; returns its
/// id.
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`; `handler` may be called with `arg`
/// from `zmq_timers_execute`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_add(
    timers: *mut c_void,
    interval: usize,
    handler: Option<TimerFn>,
    arg: *mut c_void,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { self::timers(timers) }?;
        let handler = handler.ok_or(libc::EFAULT)?;
        t.next_id += 1;
        let interval = Duration::from_millis(interval as u64);
        t.timers.insert(
            t.next_id,
            Timer {
                interval,
                due: Instant::now() + interval,
                handler,
                arg,
            },
        );
        Ok(t.next_id)
    })
}

/// Cancels a timer.
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_cancel(timers: *mut c_void, timer_id: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { self::timers(timers) }?;
        t.timers.remove(&timer_id).ok_or(libc::EINVAL)?;
        Ok(0)
    })
}

/// Changes a timer's interval (and restarts it).
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_set_interval(
    timers: *mut c_void,
    timer_id: c_int,
    interval: usize,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { self::timers(timers) }?;
        let timer = t.timers.get_mut(&timer_id).ok_or(libc::EINVAL)?;
        timer.interval = Duration::from_millis(interval as u64);
        timer.due = Instant::now() + timer.interval;
        Ok(0)
    })
}

/// Restarts a timer's interval from now.
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_reset(timers: *mut c_void, timer_id: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { self::timers(timers) }?;
        let timer = t.timers.get_mut(&timer_id).ok_or(libc::EINVAL)?;
        timer.due = Instant::now() + timer.interval;
        Ok(0)
    })
}

/// Milliseconds until the next timer is due (0 if one is), -1 if none.
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_timeout(timers: *mut c_void) -> c_long {
    // SAFETY: forwarded contract.
    let t = match unsafe { self::timers(timers) } {
        Ok(t) => t,
        Err(e) => return crate::util::fail(e) as c_long,
    };
    let now = Instant::now();
    match t.timers.values().map(|x| x.due).min() {
        None => -1,
        Some(due) => {
            let d = due.saturating_duration_since(now);
            // Round up, so that waiting this long makes the timer due.
            (d.as_micros().div_ceil(1000)).min(c_long::MAX as u128) as c_long
        }
    }
}

/// Calls the handlers of the timers that are due.
///
/// # Safety
///
/// `timers` came from `zmq_timers_new`. Handlers may add or cancel timers.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_execute(timers: *mut c_void) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { self::timers(timers) }?;
        let now = Instant::now();
        let due: Vec<(c_int, TimerFn, *mut c_void)> = t
            .timers
            .iter_mut()
            .filter(|(_, x)| x.due <= now)
            .map(|(id, x)| {
                x.due = now + x.interval;
                (*id, x.handler, x.arg)
            })
            .collect();
        for (id, handler, arg) in due {
            // A handler earlier in this round may have cancelled this one.
            // SAFETY: forwarded contract; `timers` stays valid.
            if unsafe { self::timers(timers) }?.timers.contains_key(&id) {
                // SAFETY: the caller's handler with its own argument.
                unsafe { handler(id, arg) };
            }
        }
        Ok(0)
    })
}
