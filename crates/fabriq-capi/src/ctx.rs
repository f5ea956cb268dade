//! Contexts: `zmq_ctx_new`, `zmq_ctx_term`, `zmq_ctx_shutdown`,
//! `zmq_ctx_set`/`get`, and the old `zmq_init`/`zmq_term`/`zmq_ctx_destroy`.
//!
//! A context handle is a small heap record that is never freed: once the
//! context is terminated its tag says so and its state is gone, so a stale
//! handle answers EFAULT, as libzmq's tag check does, instead of touching
//! freed memory. The records of terminated contexts stay reachable from a
//! list (one small allocation per context ever made).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use fabriq::Context;

use crate::util::{guard, int_result};

const CTX_LIVE: u32 = 0xABAD_CAFE;
const CTX_DEAD: u32 = 0xDEAD_CAFE;

/// `ZMQ_IO_THREADS`.
pub const ZMQ_IO_THREADS: c_int = 1;
/// `ZMQ_MAX_SOCKETS`.
pub const ZMQ_MAX_SOCKETS: c_int = 2;
/// `ZMQ_SOCKET_LIMIT` (read only).
pub const ZMQ_SOCKET_LIMIT: c_int = 3;
/// `ZMQ_THREAD_PRIORITY`.
pub const ZMQ_THREAD_PRIORITY: c_int = 3;
/// `ZMQ_THREAD_SCHED_POLICY`.
pub const ZMQ_THREAD_SCHED_POLICY: c_int = 4;
/// `ZMQ_MAX_MSGSZ`.
pub const ZMQ_MAX_MSGSZ: c_int = 5;
/// `ZMQ_MSG_T_SIZE` (read only).
pub const ZMQ_MSG_T_SIZE: c_int = 6;
/// `ZMQ_THREAD_AFFINITY_CPU_ADD`.
pub const ZMQ_THREAD_AFFINITY_CPU_ADD: c_int = 7;
/// `ZMQ_THREAD_AFFINITY_CPU_REMOVE`.
pub const ZMQ_THREAD_AFFINITY_CPU_REMOVE: c_int = 8;
/// `ZMQ_THREAD_NAME_PREFIX`.
pub const ZMQ_THREAD_NAME_PREFIX: c_int = 9;
/// `ZMQ_ZERO_COPY_RECV` (draft).
pub const ZMQ_ZERO_COPY_RECV: c_int = 10;
/// `ZMQ_IPV6`.
pub const ZMQ_IPV6: c_int = 42;
/// `ZMQ_BLOCKY`.
pub const ZMQ_BLOCKY: c_int = 70;

/// What a context's sockets share beyond the fabriq `Context`.
pub struct CtxState {
    /// The fabriq context.
    pub ctx: Context,
    /// Sockets open now (for `ZMQ_MAX_SOCKETS`).
    pub sockets: AtomicUsize,
    max_sockets: AtomicI32,
    /// `ZMQ_BLOCKY`: when false new sockets get a linger of 0.
    pub blocky: AtomicBool,
    /// `ZMQ_IPV6`: the default of new sockets' `ZMQ_IPV6`.
    pub ipv6: AtomicBool,
    thread_priority: AtomicI32,
    thread_sched_policy: AtomicI32,
    thread_name_prefix: AtomicI32,
    max_msgsz: AtomicI32,
    zero_copy_recv: AtomicI32,
    shutdown: Mutex<Option<JoinHandle<()>>>,
}

impl CtxState {
    fn new() -> CtxState {
        CtxState {
            ctx: Context::new(),
            sockets: AtomicUsize::new(0),
            max_sockets: AtomicI32::new(1023),
            blocky: AtomicBool::new(true),
            ipv6: AtomicBool::new(false),
            thread_priority: AtomicI32::new(-1),
            thread_sched_policy: AtomicI32::new(-1),
            thread_name_prefix: AtomicI32::new(-1),
            max_msgsz: AtomicI32::new(i32::MAX),
            zero_copy_recv: AtomicI32::new(1),
            shutdown: Mutex::new(None),
        }
    }

    /// `ZMQ_MAX_SOCKETS`.
    pub fn max_sockets(&self) -> usize {
        self.max_sockets.load(Ordering::Relaxed).max(0) as usize
    }
}

/// A context handle, the `void *` C code holds.
pub struct CtxHandle {
    tag: AtomicU32,
    state: Mutex<Option<Arc<CtxState>>>,
}

/// Handles of terminated contexts, kept so that stale pointers stay valid
/// memory (see the module comment).
static RETIRED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The state behind a context handle: EFAULT for null, unknown or
/// terminated handles.
///
/// # Safety
///
/// `p` is null or a pointer `zmq_ctx_new` returned (context handles are
/// never freed, so any such pointer stays readable).
pub unsafe fn state(p: *mut c_void) -> Result<Arc<CtxState>, c_int> {
    if p.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: a non-null pointer from `zmq_ctx_new` points to a `CtxHandle`
    // that is never freed (the caller's contract above).
    let h = unsafe { &*(p as *const CtxHandle) };
    if h.tag.load(Ordering::Acquire) != CTX_LIVE {
        return Err(libc::EFAULT);
    }
    let state = h.state.lock().unwrap_or_else(|e| e.into_inner());
    state.clone().ok_or(libc::EFAULT)
}

/// Creates a context.
#[no_mangle]
pub extern "C" fn zmq_ctx_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let h = Box::new(CtxHandle {
            tag: AtomicU32::new(CTX_LIVE),
            state: Mutex::new(Some(Arc::new(CtxState::new()))),
        });
        Box::into_raw(h).cast()
    })
}

/// Terminates a context: blocking calls on its sockets fail with ETERM;
/// returns once every socket is closed.
///
/// # Safety
///
/// `context` is null or came from `zmq_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_term(context: *mut c_void) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { state(context) }?;
        let mut ctx = state.ctx.clone();
        ctx.destroy().map_err(|e| e.to_raw())?;
        let pending = state
            .shutdown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(t) = pending {
            let _ = t.join();
        }
        // SAFETY: checked non-null and live in `state` above.
        let h = unsafe { &*(context as *const CtxHandle) };
        if h.tag.swap(CTX_DEAD, Ordering::AcqRel) == CTX_DEAD {
            // Another thread's term of the same context retired it.
            return Ok(0);
        }
        h.state.lock().unwrap_or_else(|e| e.into_inner()).take();
        RETIRED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(context as usize);
        Ok(0)
    })
}

/// Starts terminating a context without waiting: blocking calls on its
/// sockets fail with ETERM, new sockets cannot be made. `zmq_ctx_term`
/// must still be called.
///
/// # Safety
///
/// `context` is null or came from `zmq_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_shutdown(context: *mut c_void) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { state(context) }?;
        let mut slot = state.shutdown.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            // fabriq's `destroy` marks the context terminated and wakes
            // blocked calls at once, then waits for the sockets to close:
            // that wait happens on this thread, which `zmq_ctx_term` joins.
            let mut ctx = state.ctx.clone();
            *slot = Some(std::thread::spawn(move || {
                let _ = ctx.destroy();
            }));
            // Return once the context refuses new sockets (ETERM), as
            // libzmq's shutdown does, within a bound.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                if let Err(fabriq::Error::ETERM) = state.ctx.socket(fabriq::PAIR) {
                    break;
                }
                std::thread::yield_now();
            }
        }
        Ok(0)
    })
}

/// Sets a context option.
///
/// # Safety
///
/// `context` is null or came from `zmq_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_set(context: *mut c_void, option: c_int, optval: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let s = unsafe { state(context) }?;
        let set = |a: &AtomicI32| {
            a.store(optval, Ordering::Relaxed);
            Ok(0)
        };
        match option {
            ZMQ_IO_THREADS if optval >= 0 => {
                s.ctx.set_io_threads(optval).map_err(|e| e.to_raw())?;
                Ok(0)
            }
            ZMQ_MAX_SOCKETS if optval >= 1 => set(&s.max_sockets),
            ZMQ_THREAD_PRIORITY if optval >= 0 => set(&s.thread_priority),
            ZMQ_THREAD_SCHED_POLICY if optval >= 0 => set(&s.thread_sched_policy),
            ZMQ_THREAD_NAME_PREFIX => set(&s.thread_name_prefix),
            ZMQ_THREAD_AFFINITY_CPU_ADD | ZMQ_THREAD_AFFINITY_CPU_REMOVE if optval >= 0 => Ok(0),
            ZMQ_MAX_MSGSZ if optval >= 0 => set(&s.max_msgsz),
            ZMQ_ZERO_COPY_RECV => set(&s.zero_copy_recv),
            ZMQ_IPV6 => {
                s.ipv6.store(optval != 0, Ordering::Relaxed);
                Ok(0)
            }
            ZMQ_BLOCKY => {
                s.blocky.store(optval != 0, Ordering::Relaxed);
                Ok(0)
            }
            _ => Err(libc::EINVAL),
        }
    })
}

/// Reads a context option.
///
/// # Safety
///
/// `context` is null or came from `zmq_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_get(context: *mut c_void, option: c_int) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let s = unsafe { state(context) }?;
        let get = |a: &AtomicI32| Ok(a.load(Ordering::Relaxed));
        match option {
            ZMQ_IO_THREADS => s.ctx.get_io_threads().map_err(|e| e.to_raw()),
            ZMQ_MAX_SOCKETS => get(&s.max_sockets),
            // 3 is both ZMQ_SOCKET_LIMIT (read) and ZMQ_THREAD_PRIORITY
            // (write) in libzmq.
            ZMQ_SOCKET_LIMIT => Ok(65535),
            ZMQ_THREAD_SCHED_POLICY => get(&s.thread_sched_policy),
            ZMQ_THREAD_NAME_PREFIX => get(&s.thread_name_prefix),
            ZMQ_MAX_MSGSZ => get(&s.max_msgsz),
            ZMQ_MSG_T_SIZE => Ok(std::mem::size_of::<crate::msg::ZmqMsg>() as c_int),
            ZMQ_ZERO_COPY_RECV => get(&s.zero_copy_recv),
            ZMQ_IPV6 => Ok(s.ipv6.load(Ordering::Relaxed) as c_int),
            ZMQ_BLOCKY => Ok(s.blocky.load(Ordering::Relaxed) as c_int),
            _ => Err(libc::EINVAL),
        }
    })
}

/// The old API: a context with `io_threads` I/O threads.
#[no_mangle]
pub extern "C" fn zmq_init(io_threads: c_int) -> *mut c_void {
    if io_threads < 0 {
        crate::util::set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let ctx = zmq_ctx_new();
    // SAFETY: `ctx` was just made by `zmq_ctx_new` (or is null, refused).
    if !ctx.is_null() && unsafe { zmq_ctx_set(ctx, ZMQ_IO_THREADS, io_threads) } != 0 {
        // SAFETY: as above.
        unsafe { zmq_ctx_term(ctx) };
        return std::ptr::null_mut();
    }
    ctx
}

/// The old name of `zmq_ctx_term`.
///
/// # Safety
///
/// As `zmq_ctx_term`.
#[no_mangle]
pub unsafe extern "C" fn zmq_term(context: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_ctx_term(context) }
}

/// The old name of `zmq_ctx_term`.
///
/// # Safety
///
/// As `zmq_ctx_term`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_destroy(context: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { zmq_ctx_term(context) }
}
