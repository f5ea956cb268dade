//! `Error`: the zmq error kinds, with the details kept on the side.
//!
//! `Error` has exactly the variants of the `zmq` crate's `Error` so that
//! `match`es written for zmq keep working. A unit enum cannot say *what*
//! was wrong, so every failing call also records a human-readable detail
//! ("tcp endpoint has no port: tcp://localhost") that
//! [`last_error_detail`] returns on the same thread, the way `errno` and
//! `strerror` go together. The same text is logged at `debug` level.

use std::cell::RefCell;
use std::fmt;

/// `Result` with the zmq error kinds.
pub type Result<T> = std::result::Result<T, Error>;

// libzmq's own error numbers (ZMQ_HAUSNUMERO + n).
const HAUSNUMERO: i32 = 156_384_712;

/// The error kinds of libzmq, as the `zmq` crate names them.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Eq, PartialEq, Hash)]
pub enum Error {
    /// Permission denied.
    EACCES,
    /// Address already in use.
    EADDRINUSE,
    /// Resource temporarily unavailable (would block, or timed out).
    EAGAIN,
    /// Device or resource busy.
    EBUSY,
    /// Connection refused.
    ECONNREFUSED,
    /// Bad address.
    EFAULT,
    /// Interrupted.
    EINTR,
    /// No route to the addressed peer (ROUTER_MANDATORY).
    EHOSTUNREACH,
    /// Operation in progress.
    EINPROGRESS,
    /// Invalid argument.
    EINVAL,
    /// Too many open files.
    EMFILE,
    /// Message too long.
    EMSGSIZE,
    /// Name too long.
    ENAMETOOLONG,
    /// No such device (e.g. interface name in an endpoint).
    ENODEV,
    /// No such file, or endpoint not bound/connected.
    ENOENT,
    /// Out of memory.
    ENOMEM,
    /// Not connected.
    ENOTCONN,
    /// Not a socket.
    ENOTSOCK,
    /// Protocol error.
    EPROTO,
    /// Transport not supported.
    EPROTONOSUPPORT,
    /// Operation not supported by this socket type.
    ENOTSUP,
    /// No buffer space.
    ENOBUFS,
    /// Network down.
    ENETDOWN,
    /// Address not available.
    EADDRNOTAVAIL,
    /// Operation not valid in the socket's current state (REQ/REP).
    EFSM,
    /// Incompatible protocol.
    ENOCOMPATPROTO,
    /// The context was terminated.
    ETERM,
    /// No I/O thread available.
    EMTHREAD,
}

impl Error {
    /// The errno value (libzmq's own numbers for EFSM, ENOCOMPATPROTO,
    /// ETERM and EMTHREAD).
    pub fn to_raw(self) -> i32 {
        match self {
            Error::EACCES => libc::EACCES,
            Error::EADDRINUSE => libc::EADDRINUSE,
            Error::EAGAIN => libc::EAGAIN,
            Error::EBUSY => libc::EBUSY,
            Error::ECONNREFUSED => libc::ECONNREFUSED,
            Error::EFAULT => libc::EFAULT,
            Error::EINTR => libc::EINTR,
            Error::EHOSTUNREACH => libc::EHOSTUNREACH,
            Error::EINPROGRESS => libc::EINPROGRESS,
            Error::EINVAL => libc::EINVAL,
            Error::EMFILE => libc::EMFILE,
            Error::EMSGSIZE => libc::EMSGSIZE,
            Error::ENAMETOOLONG => libc::ENAMETOOLONG,
            Error::ENODEV => libc::ENODEV,
            Error::ENOENT => libc::ENOENT,
            Error::ENOMEM => libc::ENOMEM,
            Error::ENOTCONN => libc::ENOTCONN,
            Error::ENOTSOCK => libc::ENOTSOCK,
            Error::EPROTO => libc::EPROTO,
            Error::EPROTONOSUPPORT => libc::EPROTONOSUPPORT,
            Error::ENOTSUP => libc::ENOTSUP,
            Error::ENOBUFS => libc::ENOBUFS,
            Error::ENETDOWN => libc::ENETDOWN,
            Error::EADDRNOTAVAIL => libc::EADDRNOTAVAIL,
            Error::EFSM => HAUSNUMERO + 51,
            Error::ENOCOMPATPROTO => HAUSNUMERO + 52,
            Error::ETERM => HAUSNUMERO + 53,
            Error::EMTHREAD => HAUSNUMERO + 54,
        }
    }

    /// The error for an errno value. Values outside the table map to
    /// `EPROTO` (the zmq crate panics there; a panic helps nobody).
    pub fn from_raw(raw: i32) -> Error {
        ALL.iter()
            .copied()
            .find(|e| e.to_raw() == raw)
            .unwrap_or(Error::EPROTO)
    }

    /// The message libzmq's `zmq_strerror` gives.
    pub fn message(self) -> &'static str {
        match self {
            Error::EACCES => "Permission denied",
            Error::EADDRINUSE => "Address already in use",
            Error::EAGAIN => "Resource temporarily unavailable",
            Error::EBUSY => "Device or resource busy",
            Error::ECONNREFUSED => "Connection refused",
            Error::EFAULT => "Bad address",
            Error::EINTR => "Interrupted system call",
            Error::EHOSTUNREACH => "Host unreachable",
            Error::EINPROGRESS => "Operation in progress",
            Error::EINVAL => "Invalid argument",
            Error::EMFILE => "Too many open files",
            Error::EMSGSIZE => "Message too long",
            Error::ENAMETOOLONG => "File name too long",
            Error::ENODEV => "No such device",
            Error::ENOENT => "No such file or directory",
            Error::ENOMEM => "Cannot allocate memory",
            Error::ENOTCONN => "Transport endpoint is not connected",
            Error::ENOTSOCK => "Socket operation on non-socket",
            Error::EPROTO => "Protocol error",
            Error::EPROTONOSUPPORT => "Protocol not supported",
            Error::ENOTSUP => "Operation not supported",
            Error::ENOBUFS => "No buffer space available",
            Error::ENETDOWN => "Network is down",
            Error::EADDRNOTAVAIL => "Cannot assign requested address",
            Error::EFSM => "Operation cannot be accomplished in current state",
            Error::ENOCOMPATPROTO => "The protocol is not compatible with the socket type",
            Error::ETERM => "Context was terminated",
            Error::EMTHREAD => "No thread available",
        }
    }

    /// Maps an I/O error from the operating system.
    pub(crate) fn from_io(e: &std::io::Error) -> Error {
        match e.raw_os_error() {
            Some(raw) => Error::from_raw(raw),
            None => match e.kind() {
                std::io::ErrorKind::WouldBlock => Error::EAGAIN,
                std::io::ErrorKind::InvalidInput => Error::EINVAL,
                std::io::ErrorKind::AddrInUse => Error::EADDRINUSE,
                std::io::ErrorKind::AddrNotAvailable => Error::EADDRNOTAVAIL,
                std::io::ErrorKind::PermissionDenied => Error::EACCES,
                std::io::ErrorKind::NotFound => Error::ENOENT,
                _ => Error::EPROTO,
            },
        }
    }
}

const ALL: [Error; 28] = [
    Error::EACCES,
    Error::EADDRINUSE,
    Error::EAGAIN,
    Error::EBUSY,
    Error::ECONNREFUSED,
    Error::EFAULT,
    Error::EINTR,
    Error::EHOSTUNREACH,
    Error::EINPROGRESS,
    Error::EINVAL,
    Error::EMFILE,
    Error::EMSGSIZE,
    Error::ENAMETOOLONG,
    Error::ENODEV,
    Error::ENOENT,
    Error::ENOMEM,
    Error::ENOTCONN,
    Error::ENOTSOCK,
    Error::EPROTO,
    Error::EPROTONOSUPPORT,
    Error::ENOTSUP,
    Error::ENOBUFS,
    Error::ENETDOWN,
    Error::EADDRNOTAVAIL,
    Error::EFSM,
    Error::ENOCOMPATPROTO,
    Error::ETERM,
    Error::EMTHREAD,
];

impl std::error::Error for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As the zmq crate: the message alone (its tests compare Debug,
        // Display and message()).
        f.write_str(self.message())
    }
}

impl From<Error> for std::io::Error {
    fn from(error: Error) -> Self {
        use std::io::ErrorKind;
        let kind = match error {
            Error::ENOENT => ErrorKind::NotFound,
            Error::EACCES => ErrorKind::PermissionDenied,
            Error::ECONNREFUSED => ErrorKind::ConnectionRefused,
            Error::ENOTCONN => ErrorKind::NotConnected,
            Error::EADDRINUSE => ErrorKind::AddrInUse,
            Error::EADDRNOTAVAIL => ErrorKind::AddrNotAvailable,
            Error::EAGAIN => ErrorKind::WouldBlock,
            Error::EINVAL => ErrorKind::InvalidInput,
            Error::EINTR => ErrorKind::Interrupted,
            _ => ErrorKind::Other,
        };
        std::io::Error::new(kind, error)
    }
}

thread_local! {
    static DETAIL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What the last failing fabriq call on this thread said about its error,
/// e.g. `"ipc endpoint path is longer than 107 bytes"`. `None` if the last
/// error had nothing to add to its kind.
///
/// ```
/// let ctx = fabriq::Context::new();
/// let s = ctx.socket(fabriq::PUSH).unwrap();
/// assert_eq!(s.bind("tcp://127.0.0.1"), Err(fabriq::Error::EINVAL));
/// assert!(fabriq::last_error_detail().unwrap().contains("port"));
/// ```
pub fn last_error_detail() -> Option<String> {
    DETAIL.with(|d| d.borrow().clone())
}

/// Returns `kind`, recording `detail` for [`last_error_detail`].
pub(crate) fn fail(kind: Error, detail: impl Into<String>) -> Error {
    let detail = detail.into();
    tracing::debug!(error = ?kind, "{detail}");
    DETAIL.with(|d| *d.borrow_mut() = Some(detail));
    kind
}

/// `Err(kind)` with a recorded detail.
pub(crate) fn err<T>(kind: Error, detail: impl Into<String>) -> Result<T> {
    Err(fail(kind, detail))
}
