//! The system's libzmq (Debian's `libzmq5`, built with libsodium, so with
//! CURVE), loaded at run time with `libloading`, in the `zmq` crate's shape
//! so that [`crate::zmqlike`]'s one source drives it too, as
//! [`crate::zmqlike::libzmq_curve`].
//!
//! Why: the `zmq` crate builds libzmq 4.3.4 from source without CURVE
//! (`zmq::has("curve")` is false), so it cannot be the CURVE reference.
//! `libzmq.so.5` is opened only in a worker process that plays the libzmq
//! side of a CURVE scenario, and that process never touches the `zmq`
//! crate (no context, no socket; [`crate::worker`] dispatches every CURVE
//! libzmq role here). The library is opened `RTLD_LOCAL`
//! ([`libloading::Library::new`]) and every function is looked up in it by
//! handle, so the calls go to `libzmq.so.5` and not to the statically
//! linked copy in the executable; that copy's symbols are not in the
//! executable's dynamic symbol table (`nm -D` lists no `zmq_*`), so they
//! cannot interpose on the loaded library's own calls either.
//!
//! All `unsafe` of the bench's CURVE reference is in this file, at the FFI
//! boundary, each block with its SAFETY argument.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// The library's file name (Debian's `libzmq5`).
pub const SONAME: &str = "libzmq.so.5";

/// What to do when it is missing.
pub const INSTALL_HINT: &str = "install Debian's libzmq5 (apt-get install -y libzmq5): the CURVE scenarios' libzmq side loads libzmq.so.5 at run time, because the zmq crate's libzmq is built without CURVE";

/// PUSH.
pub const PUSH: c_int = 8;
/// PULL.
pub const PULL: c_int = 7;
/// PUB.
pub const PUB: c_int = 1;
/// SUB.
pub const SUB: c_int = 2;
/// REQ.
pub const REQ: c_int = 3;
/// REP.
pub const REP: c_int = 4;

const ZMQ_SUBSCRIBE: c_int = 6;
const ZMQ_LINGER: c_int = 17;
const ZMQ_SNDHWM: c_int = 23;
const ZMQ_RCVHWM: c_int = 24;
const ZMQ_RCVTIMEO: c_int = 27;
const ZMQ_LAST_ENDPOINT: c_int = 32;
const ZMQ_MECHANISM: c_int = 43;
const ZMQ_CURVE_SERVER: c_int = 47;
const ZMQ_CURVE_PUBLICKEY: c_int = 48;
const ZMQ_CURVE_SECRETKEY: c_int = 49;
const ZMQ_CURVE_SERVERKEY: c_int = 50;
/// `ZMQ_CURVE`, the value of `ZMQ_MECHANISM` on a CURVE socket.
pub const ZMQ_CURVE: c_int = 2;
const EAGAIN: c_int = libc::EAGAIN;
const EINTR: c_int = libc::EINTR;

/// libzmq 4.3's `zmq_msg_t`: 64 opaque bytes, pointer-aligned.
#[repr(C, align(8))]
struct ZmqMsg([u8; 64]);

/// The functions used, resolved from the loaded library.
struct Api {
    ctx_new: unsafe extern "C" fn() -> *mut c_void,
    ctx_term: unsafe extern "C" fn(*mut c_void) -> c_int,
    socket: unsafe extern "C" fn(*mut c_void, c_int) -> *mut c_void,
    close: unsafe extern "C" fn(*mut c_void) -> c_int,
    setsockopt: unsafe extern "C" fn(*mut c_void, c_int, *const c_void, usize) -> c_int,
    getsockopt: unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, *mut usize) -> c_int,
    bind: unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int,
    connect: unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int,
    send: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    msg_init: unsafe extern "C" fn(*mut ZmqMsg) -> c_int,
    msg_recv: unsafe extern "C" fn(*mut ZmqMsg, *mut c_void, c_int) -> c_int,
    msg_data: unsafe extern "C" fn(*mut ZmqMsg) -> *mut c_void,
    msg_size: unsafe extern "C" fn(*const ZmqMsg) -> usize,
    msg_close: unsafe extern "C" fn(*mut ZmqMsg) -> c_int,
    errno: unsafe extern "C" fn() -> c_int,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    has: unsafe extern "C" fn(*const c_char) -> c_int,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int),
    /// Keeps the library mapped for as long as the process runs (the
    /// [`Api`] lives in a static that is never dropped).
    _lib: libloading::Library,
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

fn load() -> Result<Api, String> {
    // SAFETY: opening libzmq.so.5 runs its ELF constructors (libzmq's and
    // libsodium's static initialisers), which have no preconditions on
    // the caller; nothing else in this process uses that library.
    let lib = unsafe { libloading::Library::new(SONAME) }
        .map_err(|e| format!("cannot load {SONAME} ({e}): {INSTALL_HINT}"))?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is libzmq 4.x's public C function of that
            // name, and the field it is stored in has its exact C
            // signature (zmq.h of 4.3.4); the pointer stays valid because
            // `lib` is kept in the same `Api` for the process's lifetime.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{SONAME} has no {}: {e}", $name))?
        };
    }
    Ok(Api {
        ctx_new: sym!("zmq_ctx_new"),
        ctx_term: sym!("zmq_ctx_term"),
        socket: sym!("zmq_socket"),
        close: sym!("zmq_close"),
        setsockopt: sym!("zmq_setsockopt"),
        getsockopt: sym!("zmq_getsockopt"),
        bind: sym!("zmq_bind"),
        connect: sym!("zmq_connect"),
        send: sym!("zmq_send"),
        msg_init: sym!("zmq_msg_init"),
        msg_recv: sym!("zmq_msg_recv"),
        msg_data: sym!("zmq_msg_data"),
        msg_size: sym!("zmq_msg_size"),
        msg_close: sym!("zmq_msg_close"),
        errno: sym!("zmq_errno"),
        strerror: sym!("zmq_strerror"),
        has: sym!("zmq_has"),
        version: sym!("zmq_version"),
        _lib: lib,
    })
}

fn api() -> Result<&'static Api, Error> {
    API.get_or_init(load)
        .as_ref()
        .map_err(|e| Error::Unavailable(e.clone()))
}

/// The loaded library's description: its version (`zmq_version`), whether
/// it has CURVE (`zmq_has("curve")`), and the file mapped into this
/// process. Loads the library if it is not loaded yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// `zmq_version`, as `MAJOR.MINOR.PATCH`.
    pub version: String,
    /// `zmq_has("curve") == 1`.
    pub curve: bool,
    /// The mapped file, from `/proc/self/maps` (empty if not found).
    pub path: String,
}

/// Loads the library (once) and describes it; errors say how to install it.
pub fn loaded() -> Result<Loaded, String> {
    let api = api().map_err(|e| e.to_string())?;
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: zmq_version writes three ints through valid pointers.
    unsafe { (api.version)(&mut major, &mut minor, &mut patch) };
    // SAFETY: a NUL-terminated capability name; zmq_has only reads it.
    let curve = unsafe { (api.has)(c"curve".as_ptr()) } == 1;
    let path = std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains(SONAME))
        .unwrap_or_default()
        .to_string();
    Ok(Loaded {
        version: format!("{major}.{minor}.{patch}"),
        curve,
        path,
    })
}

/// An error, in the `zmq` crate's shape where the bench matches on it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Error {
    /// Resource temporarily unavailable (a receive timed out).
    EAGAIN,
    /// Another libzmq errno, with `zmq_strerror`'s text.
    Errno(c_int, String),
    /// The library could not be loaded (the text says how to install it).
    Unavailable(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::EAGAIN => write!(f, "Resource temporarily unavailable"),
            Error::Errno(n, text) => write!(f, "{text} (errno {n})"),
            Error::Unavailable(text) => write!(f, "{text}"),
        }
    }
}

fn last_error(api: &Api) -> Error {
    // SAFETY: zmq_errno has no arguments and returns this thread's errno.
    let n = unsafe { (api.errno)() };
    if n == EAGAIN {
        return Error::EAGAIN;
    }
    // SAFETY: zmq_strerror returns a static NUL-terminated string for
    // every errno value.
    let text = unsafe { CStr::from_ptr((api.strerror)(n)) }
        .to_string_lossy()
        .into_owned();
    Error::Errno(n, text)
}

/// A context pointer, freed when the last socket and the [`Context`] are gone.
struct CtxHandle {
    api: &'static Api,
    ptr: *mut c_void,
}

// SAFETY: a libzmq context is thread-safe (zmq_ctx_* and zmq_socket may be
// called from any thread).
unsafe impl Send for CtxHandle {}
// SAFETY: as above.
unsafe impl Sync for CtxHandle {}

impl Drop for CtxHandle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from zmq_ctx_new and every socket of it
        // holds an Arc of this handle, so all are closed by now.
        unsafe { (self.api.ctx_term)(self.ptr) };
    }
}

/// A libzmq context; creating sockets loads the library on first use and
/// fails with [`Error::Unavailable`] if it cannot be loaded.
pub struct Context {
    inner: Result<Arc<CtxHandle>, Error>,
}

impl Context {
    /// A context (the library is loaded here; an error shows at `socket`).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Context {
        let inner = api().and_then(|api| {
            // SAFETY: zmq_ctx_new has no arguments; null means failure.
            let ptr = unsafe { (api.ctx_new)() };
            if ptr.is_null() {
                Err(last_error(api))
            } else {
                Ok(Arc::new(CtxHandle { api, ptr }))
            }
        });
        Context { inner }
    }

    /// A socket of `kind`.
    pub fn socket(&self, kind: c_int) -> Result<Socket, Error> {
        let ctx = self.inner.as_ref().map_err(Clone::clone)?;
        // SAFETY: a live context pointer and a socket type number.
        let ptr = unsafe { (ctx.api.socket)(ctx.ptr, kind) };
        if ptr.is_null() {
            return Err(last_error(ctx.api));
        }
        Ok(Socket {
            ctx: Arc::clone(ctx),
            ptr,
        })
    }
}

/// A libzmq socket (used from one thread, as libzmq requires).
pub struct Socket {
    ctx: Arc<CtxHandle>,
    ptr: *mut c_void,
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: a live socket pointer, closed once, before its context
        // (which this socket keeps alive through `ctx`).
        unsafe { (self.ctx.api.close)(self.ptr) };
    }
}

fn cstring(s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::Errno(libc::EINVAL, "NUL in a string".into()))
}

impl Socket {
    fn check(&self, rc: c_int) -> Result<(), Error> {
        if rc == -1 {
            Err(last_error(self.ctx.api))
        } else {
            Ok(())
        }
    }

    fn set_bytes(&self, option: c_int, value: &[u8]) -> Result<(), Error> {
        // SAFETY: a live socket; `value` is valid for `value.len()` bytes
        // and libzmq copies it before returning.
        let rc = unsafe {
            (self.ctx.api.setsockopt)(self.ptr, option, value.as_ptr().cast(), value.len())
        };
        self.check(rc)
    }

    fn set_int(&self, option: c_int, value: c_int) -> Result<(), Error> {
        self.set_bytes(option, &value.to_ne_bytes())
    }

    fn get_int(&self, option: c_int) -> Result<c_int, Error> {
        let mut value: c_int = 0;
        let mut len = std::mem::size_of::<c_int>();
        // SAFETY: a live socket; `value` and `len` are valid for writes
        // and `len` is the size of `value`.
        let rc = unsafe {
            (self.ctx.api.getsockopt)(
                self.ptr,
                option,
                (&mut value as *mut c_int).cast(),
                &mut len,
            )
        };
        self.check(rc).map(|()| value)
    }

    /// `ZMQ_SNDHWM`.
    pub fn set_sndhwm(&self, hwm: i32) -> Result<(), Error> {
        self.set_int(ZMQ_SNDHWM, hwm)
    }

    /// `ZMQ_RCVHWM`.
    pub fn set_rcvhwm(&self, hwm: i32) -> Result<(), Error> {
        self.set_int(ZMQ_RCVHWM, hwm)
    }

    /// `ZMQ_LINGER`, milliseconds.
    pub fn set_linger(&self, ms: i32) -> Result<(), Error> {
        self.set_int(ZMQ_LINGER, ms)
    }

    /// `ZMQ_RCVTIMEO`, milliseconds.
    pub fn set_rcvtimeo(&self, ms: i32) -> Result<(), Error> {
        self.set_int(ZMQ_RCVTIMEO, ms)
    }

    /// `ZMQ_SUBSCRIBE`.
    pub fn set_subscribe(&self, prefix: &[u8]) -> Result<(), Error> {
        self.set_bytes(ZMQ_SUBSCRIBE, prefix)
    }

    /// `ZMQ_CURVE_SERVER`.
    pub fn set_curve_server(&self, on: bool) -> Result<(), Error> {
        self.set_int(ZMQ_CURVE_SERVER, on as c_int)
    }

    /// `ZMQ_CURVE_PUBLICKEY`, 40 Z85 characters.
    pub fn set_curve_publickey(&self, z85: &str) -> Result<(), Error> {
        self.set_bytes(ZMQ_CURVE_PUBLICKEY, z85.as_bytes())
    }

    /// `ZMQ_CURVE_SECRETKEY`, 40 Z85 characters.
    pub fn set_curve_secretkey(&self, z85: &str) -> Result<(), Error> {
        self.set_bytes(ZMQ_CURVE_SECRETKEY, z85.as_bytes())
    }

    /// `ZMQ_CURVE_SERVERKEY`, 40 Z85 characters.
    pub fn set_curve_serverkey(&self, z85: &str) -> Result<(), Error> {
        self.set_bytes(ZMQ_CURVE_SERVERKEY, z85.as_bytes())
    }

    /// `ZMQ_MECHANISM` (0 NULL, 1 PLAIN, 2 CURVE).
    pub fn get_mechanism(&self) -> Result<c_int, Error> {
        self.get_int(ZMQ_MECHANISM)
    }

    /// Binds.
    pub fn bind(&self, endpoint: &str) -> Result<(), Error> {
        let ep = cstring(endpoint)?;
        // SAFETY: a live socket and a NUL-terminated endpoint.
        let rc = unsafe { (self.ctx.api.bind)(self.ptr, ep.as_ptr()) };
        self.check(rc)
    }

    /// Connects.
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        let ep = cstring(endpoint)?;
        // SAFETY: a live socket and a NUL-terminated endpoint.
        let rc = unsafe { (self.ctx.api.connect)(self.ptr, ep.as_ptr()) };
        self.check(rc)
    }

    /// `ZMQ_LAST_ENDPOINT`, in the `zmq` crate's shape.
    pub fn get_last_endpoint(&self) -> Result<Result<String, Vec<u8>>, Error> {
        let mut buf = [0u8; 256];
        let mut len = buf.len();
        // SAFETY: a live socket; `buf` is valid for `len` bytes of writes.
        let rc = unsafe {
            (self.ctx.api.getsockopt)(
                self.ptr,
                ZMQ_LAST_ENDPOINT,
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        self.check(rc)?;
        // libzmq counts the trailing NUL.
        let bytes = buf[..len.min(buf.len())]
            .split(|&b| b == 0)
            .next()
            .unwrap_or_default()
            .to_vec();
        Ok(String::from_utf8(bytes).map_err(|e| e.into_bytes()))
    }

    /// Sends one single-frame message copied from `data`; blocks while muted.
    pub fn send(&self, data: &[u8], flags: i32) -> Result<(), Error> {
        loop {
            // SAFETY: a live socket; `data` is valid for its length and
            // zmq_send copies it before returning.
            let rc =
                unsafe { (self.ctx.api.send)(self.ptr, data.as_ptr().cast(), data.len(), flags) };
            match self.check(rc) {
                Err(Error::Errno(EINTR, _)) => continue,
                r => return r,
            }
        }
    }

    /// Receives into `msg`, waiting at most the receive timeout.
    pub fn recv(&self, msg: &mut Message, flags: i32) -> Result<(), Error> {
        loop {
            // SAFETY: a live socket and an initialised message, which
            // zmq_msg_recv closes and refills.
            let rc = unsafe { (self.ctx.api.msg_recv)(&mut msg.msg, self.ptr, flags) };
            match self.check(rc) {
                Err(Error::Errno(EINTR, _)) => continue,
                r => return r,
            }
        }
    }
}

/// A received message, reused across `recv` calls like `zmq::Message`.
pub struct Message {
    api: Option<&'static Api>,
    msg: ZmqMsg,
}

impl Message {
    /// An empty message (the library is loaded here if it is not yet; a
    /// message made without it stays empty and cannot be received into).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Message {
        let mut msg = ZmqMsg([0; 64]);
        let api = api().ok();
        if let Some(api) = api {
            // SAFETY: zmq_msg_init initialises the 64-byte message in place.
            unsafe { (api.msg_init)(&mut msg) };
        }
        Message { api, msg }
    }
}

impl Deref for Message {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let Some(api) = self.api else { return &[] };
        // zmq_msg_data takes a mutable pointer but does not change the
        // message; the zmq crate makes the same cast.
        let msg = (&self.msg as *const ZmqMsg).cast_mut();
        // SAFETY: an initialised message; data and size describe its
        // bytes, which live as long as the message is not changed, and
        // `&self` keeps it unchanged for the slice's lifetime.
        unsafe {
            let size = (api.msg_size)(msg);
            if size == 0 {
                return &[];
            }
            std::slice::from_raw_parts((api.msg_data)(msg).cast::<u8>(), size)
        }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if let Some(api) = self.api {
            // SAFETY: an initialised message, closed once.
            unsafe { (api.msg_close)(&mut self.msg) };
        }
    }
}
