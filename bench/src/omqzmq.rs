//! omq.rs (the `omq-tokio` crate) in the `zmq` crate's shape, so that the
//! one source in [`crate::zmqlike`] (one timing loop for every library)
//! drives it too, as [`crate::zmqlike::omq`].
//!
//! How omq is driven: through its **blocking API**
//! (`omq_tokio::blocking::Socket`). [`Context::new`] is
//! `omq_tokio::Context::new()`: one owned I/O thread running a
//! current-thread tokio runtime (omq's libzmq-like default, fixed here
//! rather than read from `OMQ_IO_THREADS`); the calling thread sends and
//! receives, as it does with libzmq and fabriq. So a worker process has the
//! same two busy threads with all three libraries: the application thread
//! and one I/O thread.
//!
//! omq takes its options when a socket is created, the `zmq` crate sets
//! them on a live socket: [`Socket`] collects the `set_*` calls and creates
//! the omq socket at the first `bind` or `connect` (the bench sets every
//! option before that, except the receive timeout, which is ours).
//!
//! Defaults aligned with the libzmq and fabriq sides (see
//! `bench/notes/omq.md`):
//! * linger: whatever the bench sets (0 everywhere; omq's default is 0 too,
//!   set explicitly anyway);
//! * HWM: the bench's value, in messages, as for libzmq; the bench's 0
//!   ("no limit", PUB/SUB) becomes omq's largest queue,
//!   [`omq_tokio::options::MAX_QUEUE_CAPACITY`] messages, because omq clamps
//!   0 to 1;
//! * PUB: `xpub_nodrop` on. omq's PUB otherwise silently drops a message
//!   for a subscriber whose queue or per-subscriber transmit slot (512 KiB
//!   of encoded bytes) is full; with it, `send` waits, so every subscriber
//!   gets every message, as with libzmq and fabriq at HWM 0. (The receivers
//!   check the exact count anyway: a drop would fail the trial.)
//! * everything else at omq's defaults (NULL mechanism, except in the
//!   CURVE scenarios, which set `curve_server` / `curve_client`; no
//!   heartbeats, no receive spinning, the socket type's own workload
//!   profile).

use std::cell::{Cell, OnceCell, RefCell};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use omq_tokio::blocking;
use omq_tokio::options::MAX_QUEUE_CAPACITY;
use omq_tokio::{Options, SocketType};

/// PUSH.
pub const PUSH: SocketType = SocketType::Push;
/// PULL.
pub const PULL: SocketType = SocketType::Pull;
/// PUB.
pub const PUB: SocketType = SocketType::Pub;
/// SUB.
pub const SUB: SocketType = SocketType::Sub;
/// REQ.
pub const REQ: SocketType = SocketType::Req;
/// REP.
pub const REP: SocketType = SocketType::Rep;

/// An error, in the `zmq` crate's shape where the bench matches on it.
#[derive(Debug)]
#[allow(clippy::upper_case_acronyms)]
pub enum Error {
    /// A receive timed out (the `zmq` crate's `EAGAIN`).
    EAGAIN,
    /// An option set after the socket was created (omq takes options at
    /// creation only).
    TooLate(&'static str),
    /// omq's own error.
    Omq(omq_tokio::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::EAGAIN => write!(f, "timed out (EAGAIN)"),
            Error::TooLate(what) => write!(f, "omq takes {what} only before bind/connect"),
            Error::Omq(e) => write!(f, "omq: {e}"),
        }
    }
}

impl From<omq_tokio::Error> for Error {
    fn from(e: omq_tokio::Error) -> Error {
        match e {
            omq_tokio::Error::Timeout => Error::EAGAIN,
            e => Error::Omq(e),
        }
    }
}

/// An omq context: its runtime and I/O thread, and its inproc namespace.
pub struct Context {
    inner: omq_tokio::Context,
}

impl Context {
    /// A context with one owned I/O thread (omq's default).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Context {
        Context {
            inner: omq_tokio::Context::new(),
        }
    }

    /// A socket of `kind`, created in omq at its first bind or connect.
    pub fn socket(&self, kind: SocketType) -> Result<Socket, Error> {
        let mut options = Options::default().linger(Duration::ZERO);
        if kind == SocketType::Pub {
            options.xpub_nodrop = true;
        }
        Ok(Socket {
            ctx: self.inner.clone(),
            kind,
            options: RefCell::new(options),
            subscriptions: RefCell::new(Vec::new()),
            sock: OnceCell::new(),
            rcvtimeo: Cell::new(None),
            ipc_file: RefCell::new(None),
        })
    }
}

/// The scenario's options that omq has: the busy variant's receive spin
/// (`Options::recv_spin`), set before the socket is made.
pub fn tune(sock: &Socket, sc: &crate::scenario::Scenario) -> Result<(), String> {
    if sc.variant == crate::scenario::FabricVariant::Busy {
        sock.options.borrow_mut().recv_spin =
            Duration::from_micros(crate::scenario::BUSY_US as u64);
    }
    Ok(())
}

/// A received message, reused across `recv` calls like `zmq::Message`.
#[derive(Default)]
pub struct Message(omq_tokio::Message);

impl Message {
    /// An empty message.
    pub fn new() -> Message {
        Message::default()
    }
}

impl Deref for Message {
    type Target = [u8];

    /// The first (in this bench, only) frame.
    fn deref(&self) -> &[u8] {
        self.0.part_slice(0).unwrap_or(&[])
    }
}

/// A socket: the `zmq` crate's calls used by the bench, on omq's blocking
/// socket.
pub struct Socket {
    ctx: omq_tokio::Context,
    kind: SocketType,
    options: RefCell<Options>,
    subscriptions: RefCell<Vec<Vec<u8>>>,
    sock: OnceCell<blocking::Socket>,
    rcvtimeo: Cell<Option<Duration>>,
    ipc_file: RefCell<Option<PathBuf>>,
}

/// The zmq HWM `hwm` as an omq message count: 0 (no limit) is omq's largest.
fn omq_hwm(hwm: i32) -> u32 {
    match hwm {
        h if h <= 0 => MAX_QUEUE_CAPACITY as u32,
        h => h as u32,
    }
}

/// A zmq millisecond option (-1: forever) as a duration (None: forever).
fn millis(ms: i32) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

static IPC_SEQ: AtomicU64 = AtomicU64::new(0);

impl Socket {
    fn configure(&self, what: &'static str, f: impl FnOnce(&mut Options)) -> Result<(), Error> {
        if self.sock.get().is_some() {
            return Err(Error::TooLate(what));
        }
        f(&mut self.options.borrow_mut());
        Ok(())
    }

    /// The omq socket, created with the collected options on first use.
    fn sock(&self) -> Result<&blocking::Socket, Error> {
        if let Some(s) = self.sock.get() {
            return Ok(s);
        }
        let s = self
            .ctx
            .blocking_socket(self.kind, self.options.borrow().clone());
        for prefix in self.subscriptions.borrow_mut().drain(..) {
            s.subscribe(prefix)?;
        }
        Ok(self.sock.get_or_init(|| s))
    }

    /// `ZMQ_SNDHWM`, in messages.
    pub fn set_sndhwm(&self, hwm: i32) -> Result<(), Error> {
        self.configure("the send HWM", |o| o.send_hwm = omq_hwm(hwm))
    }

    /// `ZMQ_RCVHWM`, in messages.
    pub fn set_rcvhwm(&self, hwm: i32) -> Result<(), Error> {
        self.configure("the receive HWM", |o| o.recv_hwm = omq_hwm(hwm))
    }

    /// `ZMQ_LINGER`, milliseconds (-1: forever).
    pub fn set_linger(&self, ms: i32) -> Result<(), Error> {
        self.configure("linger", |o| o.linger = millis(ms))
    }

    /// Makes the socket a CURVE server with `keypair` (omq's
    /// `Options::curve_server`; before bind).
    pub fn curve_server(&self, keypair: omq_tokio::CurveKeypair) -> Result<(), Error> {
        self.configure("CURVE", |o| *o = o.clone().curve_server(keypair))
    }

    /// Makes the socket a CURVE client of `server` with `keypair` (omq's
    /// `Options::curve_client`; before connect).
    pub fn curve_client(
        &self,
        keypair: omq_tokio::CurveKeypair,
        server: omq_tokio::CurvePublicKey,
    ) -> Result<(), Error> {
        self.configure("CURVE", |o| *o = o.clone().curve_client(keypair, server))
    }

    /// `ZMQ_RCVTIMEO`, milliseconds (-1: forever); applied by `recv`.
    pub fn set_rcvtimeo(&self, ms: i32) -> Result<(), Error> {
        self.rcvtimeo.set(millis(ms));
        Ok(())
    }

    /// `ZMQ_SUBSCRIBE`.
    pub fn set_subscribe(&self, prefix: &[u8]) -> Result<(), Error> {
        match self.sock.get() {
            Some(s) => Ok(s.subscribe(prefix.to_vec())?),
            None => {
                self.subscriptions.borrow_mut().push(prefix.to_vec());
                Ok(())
            }
        }
    }

    /// Binds; `ipc://*` (which omq does not expand) becomes a fresh path in
    /// the temporary directory, as libzmq does.
    pub fn bind(&self, endpoint: &str) -> Result<(), Error> {
        let endpoint = if endpoint == "ipc://*" {
            let path = std::env::temp_dir().join(format!(
                "fabriq-bench-omq-{}-{}.sock",
                std::process::id(),
                IPC_SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_file(&path);
            let ep = format!("ipc://{}", path.display());
            *self.ipc_file.borrow_mut() = Some(path);
            ep
        } else {
            endpoint.to_string()
        };
        self.sock()?.bind(endpoint.as_str())?;
        Ok(())
    }

    /// Connects.
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        self.sock()?.connect(endpoint)?;
        Ok(())
    }

    /// `ZMQ_LAST_ENDPOINT`: the bound endpoint with its real port or path.
    pub fn get_last_endpoint(&self) -> Result<Result<String, Vec<u8>>, Error> {
        let ep = self
            .sock()?
            .last_bound_endpoint()
            .ok_or(Error::Omq(omq_tokio::Error::Closed))?;
        Ok(Ok(ep.to_string()))
    }

    /// Sends one single-frame message copied from `data` (as the `zmq`
    /// crate copies a `&[u8]` into a `zmq_msg_t`); blocks while muted.
    pub fn send(&self, data: &[u8], _flags: i32) -> Result<(), Error> {
        self.sock()?.send(omq_tokio::Message::from_slice(data))?;
        Ok(())
    }

    /// Receives into `msg`, waiting at most the receive timeout.
    pub fn recv(&self, msg: &mut Message, _flags: i32) -> Result<(), Error> {
        let s = self.sock()?;
        msg.0 = match self.rcvtimeo.get() {
            Some(t) => s.recv_timeout(t)?,
            None => s.recv()?,
        };
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if let Some(s) = self.sock.take() {
            let _ = s.close();
        }
        if let Some(path) = self.ipc_file.borrow_mut().take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwm_zero_is_the_largest_queue_and_linger_maps() {
        assert_eq!(omq_hwm(0), MAX_QUEUE_CAPACITY as u32);
        assert_eq!(omq_hwm(1000), 1000);
        assert_eq!(millis(-1), None);
        assert_eq!(millis(0), Some(Duration::ZERO));
    }
}
