//! One socket API over both implementations.
//!
//! [`Sock`] wraps a `zmq::Socket` (libzmq 4.3.4) or a `fabriq::Socket`;
//! their APIs have the same shape, so every method forwards with the
//! [`fwd!`] macro. Errors become [`Fail`]: the error kind ([`Errno`]) and
//! the operation that failed, so scenarios can both match on the kind and
//! report a readable reason with `?`.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which library a socket comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Impl {
    /// libzmq 4.3.4 through the `zmq` crate.
    Libzmq,
    /// fabriq.
    Fabriq,
}

impl Impl {
    /// Lower-case name used in the matrix.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Libzmq => "libzmq",
            Impl::Fabriq => "fabriq",
        }
    }
}

/// The transport a scenario runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// `tcp://127.0.0.1:*`.
    Tcp,
    /// `ipc://` under the run's scratch directory.
    Ipc,
    /// `inproc://` (only within one implementation).
    Inproc,
    /// `ofi+tcp://127.0.0.1:*`: fabriq's fabric transport over libfabric's
    /// `tcp;ofi_rxm` provider (fabriq on both sides only: libzmq has no
    /// fabric). The address is the TCP control connection's.
    OfiTcp,
    /// `ofi+shm://127.0.0.1:*`: the fabric transport over libfabric's shared
    /// memory provider, control connection over TCP as for `ofi+tcp`.
    OfiShm,
}

impl Transport {
    /// Every transport, in matrix order.
    pub const ALL: [Transport; 5] = [
        Transport::Tcp,
        Transport::Ipc,
        Transport::Inproc,
        Transport::OfiTcp,
        Transport::OfiShm,
    ];
}

/// The fabric transports, in matrix order.
pub const FABRIC: &[Transport] = &[Transport::OfiTcp, Transport::OfiShm];

impl Transport {
    /// Lower-case name used in the matrix (the endpoint's scheme).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Inproc => "inproc",
            Transport::OfiTcp => "ofi+tcp",
            Transport::OfiShm => "ofi+shm",
        }
    }

    /// Whether messages go over a libfabric endpoint (`ofi+...`).
    pub fn is_fabric(self) -> bool {
        matches!(self, Transport::OfiTcp | Transport::OfiShm)
    }

    /// The scheme of a transport whose address is `HOST:PORT` (tcp and
    /// the fabric transports, whose control connection is TCP); `None`
    /// for ipc and inproc.
    pub fn host_port_scheme(self) -> Option<&'static str> {
        match self {
            Transport::Tcp | Transport::OfiTcp | Transport::OfiShm => Some(self.name()),
            Transport::Ipc | Transport::Inproc => None,
        }
    }

    /// `SCHEME://127.0.0.1:PORT` for a transport with a `HOST:PORT`
    /// address; panics for ipc and inproc (a scenario bug).
    pub fn local(self, port: &str) -> String {
        let scheme = self
            .host_port_scheme()
            .unwrap_or_else(|| panic!("{} has no HOST:PORT addresses", self.name()));
        format!("{scheme}://127.0.0.1:{port}")
    }
}

/// Socket types both libraries have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// PAIR.
    Pair,
    /// PUB.
    Pub,
    /// SUB.
    Sub,
    /// REQ.
    Req,
    /// REP.
    Rep,
    /// DEALER.
    Dealer,
    /// ROUTER.
    Router,
    /// PULL.
    Pull,
    /// PUSH.
    Push,
    /// XPUB.
    XPub,
    /// XSUB.
    XSub,
}

impl Kind {
    fn libzmq(self) -> zmq::SocketType {
        match self {
            Kind::Pair => zmq::PAIR,
            Kind::Pub => zmq::PUB,
            Kind::Sub => zmq::SUB,
            Kind::Req => zmq::REQ,
            Kind::Rep => zmq::REP,
            Kind::Dealer => zmq::DEALER,
            Kind::Router => zmq::ROUTER,
            Kind::Pull => zmq::PULL,
            Kind::Push => zmq::PUSH,
            Kind::XPub => zmq::XPUB,
            Kind::XSub => zmq::XSUB,
        }
    }

    fn fabriq(self) -> fabriq::SocketType {
        match self {
            Kind::Pair => fabriq::PAIR,
            Kind::Pub => fabriq::PUB,
            Kind::Sub => fabriq::SUB,
            Kind::Req => fabriq::REQ,
            Kind::Rep => fabriq::REP,
            Kind::Dealer => fabriq::DEALER,
            Kind::Router => fabriq::ROUTER,
            Kind::Pull => fabriq::PULL,
            Kind::Push => fabriq::PUSH,
            Kind::XPub => fabriq::XPUB,
            Kind::XSub => fabriq::XSUB,
        }
    }
}

/// Error kinds the scenarios tell apart; the rest keep their name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Errno {
    /// Would block, or timed out.
    EAGAIN,
    /// Wrong state for this operation (REQ/REP).
    EFSM,
    /// Unroutable (ROUTER_MANDATORY).
    EHOSTUNREACH,
    /// Invalid argument.
    EINVAL,
    /// Context terminated.
    ETERM,
    /// Address in use.
    EADDRINUSE,
    /// Endpoint not bound or connected.
    ENOENT,
    /// Unknown transport.
    EPROTONOSUPPORT,
    /// Not supported by this socket type.
    ENOTSUP,
    /// No such device (an interface name that is not one).
    ENODEV,
    /// Any other kind, by name.
    Other(String),
    /// Not an error of either library: a check in the adapter failed.
    Adapter(String),
}

macro_rules! errno_from {
    ($lib:ident) => {
        impl From<$lib::Error> for Errno {
            fn from(e: $lib::Error) -> Errno {
                match e {
                    $lib::Error::EAGAIN => Errno::EAGAIN,
                    $lib::Error::EFSM => Errno::EFSM,
                    $lib::Error::EHOSTUNREACH => Errno::EHOSTUNREACH,
                    $lib::Error::EINVAL => Errno::EINVAL,
                    $lib::Error::ETERM => Errno::ETERM,
                    $lib::Error::EADDRINUSE => Errno::EADDRINUSE,
                    $lib::Error::ENOENT => Errno::ENOENT,
                    $lib::Error::EPROTONOSUPPORT => Errno::EPROTONOSUPPORT,
                    $lib::Error::ENOTSUP => Errno::ENOTSUP,
                    $lib::Error::ENODEV => Errno::ENODEV,
                    other => Errno::Other(format!("{} ({})", other.message(), other.to_raw())),
                }
            }
        }
    };
}

errno_from!(zmq);
errno_from!(fabriq);

/// A failed socket operation: what was tried and the error kind.
#[derive(Clone, Debug)]
pub struct Fail {
    /// The error kind.
    pub errno: Errno,
    /// The operation, e.g. `libzmq PUSH send`.
    pub what: String,
}

impl Fail {
    /// Whether the error is of kind `errno`.
    pub fn is(&self, errno: Errno) -> bool {
        self.errno == errno
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}", self.what, self.errno)
    }
}

impl From<Fail> for String {
    fn from(f: Fail) -> String {
        f.to_string()
    }
}

/// Result of a socket operation.
pub type Res<T> = Result<T, Fail>;

/// How long a blocking call waits by default (RCVTIMEO/SNDTIMEO), in ms.
pub const WAIT_MS: i32 = 3000;

/// A number unique in this process (endpoint names).
pub fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The run's scratch directory: ipc socket files live here. Made on first
/// use under the system temporary directory.
pub fn scratch_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("fabriq-compat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("make the scratch directory");
        dir
    })
}

/// A fresh ipc endpoint in the scratch directory.
pub fn ipc_endpoint() -> String {
    format!("ipc://{}/s{}.ipc", scratch_dir().display(), unique())
}

/// A context of either library.
#[derive(Clone)]
pub enum Ctx {
    /// libzmq.
    Z(zmq::Context),
    /// fabriq.
    F(fabriq::Context),
}

impl Ctx {
    /// A new context of `imp`.
    pub fn new(imp: Impl) -> Ctx {
        match imp {
            Impl::Libzmq => Ctx::Z(zmq::Context::new()),
            Impl::Fabriq => Ctx::F(fabriq::Context::new()),
        }
    }

    /// Its implementation.
    pub fn imp(&self) -> Impl {
        match self {
            Ctx::Z(_) => Impl::Libzmq,
            Ctx::F(_) => Impl::Fabriq,
        }
    }

    /// A socket with the harness defaults: RCVTIMEO and SNDTIMEO
    /// [`WAIT_MS`], LINGER 0.
    pub fn socket(&self, kind: Kind) -> Res<Sock> {
        let s = self.raw_socket(kind)?;
        s.set_rcvtimeo(WAIT_MS)?;
        s.set_sndtimeo(WAIT_MS)?;
        s.set_linger(0)?;
        Ok(s)
    }

    /// A socket with the library's own defaults.
    pub fn raw_socket(&self, kind: Kind) -> Res<Sock> {
        let what = || format!("{} {:?} socket", self.imp().name(), kind);
        let inner = match self {
            Ctx::Z(c) => Inner::Z(c.socket(kind.libzmq()).map_err(|e| fail(e, what()))?),
            Ctx::F(c) => Inner::F(Box::new(
                c.socket(kind.fabriq()).map_err(|e| fail(e, what()))?,
            )),
        };
        Ok(Sock {
            inner,
            kind,
            ctx: self.clone(),
        })
    }

    /// Terminates the context (zmq_ctx_term): blocks until every socket
    /// of it is closed, with blocked calls in other threads failing with
    /// ETERM.
    pub fn destroy(mut self) -> Res<()> {
        let what = format!("{} context destroy", self.imp().name());
        match &mut self {
            Ctx::Z(c) => c.destroy().map_err(|e| fail(e, what)),
            Ctx::F(c) => c.destroy().map_err(|e| fail(e, what)),
        }
    }
}

fn fail(e: impl Into<Errno>, what: String) -> Fail {
    Fail {
        errno: e.into(),
        what,
    }
}

enum Inner {
    Z(zmq::Socket),
    // Boxed: a fabriq::Socket is much larger than a zmq::Socket.
    F(Box<fabriq::Socket>),
}

/// A socket of either library, keeping its context alive.
pub struct Sock {
    inner: Inner,
    kind: Kind,
    ctx: Ctx,
}

/// Calls the same method on whichever socket is inside; errors become
/// [`Fail`]s naming the operation.
macro_rules! fwd {
    ($self:expr, $op:expr, $s:ident => $body:expr) => {
        match &$self.inner {
            Inner::Z($s) => $body.map_err(|e| fail(e, $self.what($op))),
            Inner::F($s) => $body.map_err(|e| fail(e, $self.what($op))),
        }
    };
}

/// Forwards option setters and getters.
macro_rules! options {
    ($( $get:ident / $set:ident : $ty:ty ),* $(,)?) => {
        impl Sock {
            $(
                #[doc = concat!("`", stringify!($set), "`.")]
                pub fn $set(&self, value: $ty) -> Res<()> {
                    fwd!(self, stringify!($set), s => s.$set(value))
                }

                #[doc = concat!("`", stringify!($get), "`.")]
                pub fn $get(&self) -> Res<$ty> {
                    fwd!(self, stringify!($get), s => s.$get())
                }
            )*
        }
    };
}

/// Forwards setters that have no getter in the zmq crate.
macro_rules! setters {
    ($( $set:ident : $ty:ty ),* $(,)?) => {
        impl Sock {
            $(
                #[doc = concat!("`", stringify!($set), "`.")]
                pub fn $set(&self, value: $ty) -> Res<()> {
                    fwd!(self, stringify!($set), s => s.$set(value))
                }
            )*
        }
    };
}

options! {
    get_sndhwm / set_sndhwm: i32,
    get_rcvhwm / set_rcvhwm: i32,
    get_linger / set_linger: i32,
    get_rcvtimeo / set_rcvtimeo: i32,
    get_sndtimeo / set_sndtimeo: i32,
    get_reconnect_ivl / set_reconnect_ivl: i32,
    get_reconnect_ivl_max / set_reconnect_ivl_max: i32,
    get_heartbeat_ivl / set_heartbeat_ivl: i32,
    get_heartbeat_ttl / set_heartbeat_ttl: i32,
    get_heartbeat_timeout / set_heartbeat_timeout: i32,
    get_handshake_ivl / set_handshake_ivl: i32,
    get_maxmsgsize / set_maxmsgsize: i64,
    get_backlog / set_backlog: i32,
    is_immediate / set_immediate: bool,
    is_conflate / set_conflate: bool,
    is_router_mandatory / set_router_mandatory: bool,
    is_router_handover / set_router_handover: bool,
}

setters! {
    set_req_relaxed: bool,
    set_req_correlate: bool,
    set_xpub_verbose: bool,
    set_subscribe: &[u8],
    set_unsubscribe: &[u8],
    set_identity: &[u8],
    set_xpub_welcome_msg: Option<&str>,
}

impl Sock {
    fn what(&self, op: &str) -> String {
        format!("{} {:?} {op}", self.imp().name(), self.kind)
    }

    /// The implementation this socket comes from.
    pub fn imp(&self) -> Impl {
        self.ctx.imp()
    }

    /// The socket type.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The context the socket was made in.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// Another socket in the same context (harness defaults).
    pub fn sibling(&self, kind: Kind) -> Res<Sock> {
        self.ctx.socket(kind)
    }

    /// Binds `endpoint`.
    pub fn bind(&self, endpoint: &str) -> Res<()> {
        fwd!(self, &format!("bind {endpoint}"), s => s.bind(endpoint))
    }

    /// Binds a fresh endpoint on `t` and returns the endpoint to connect
    /// to (LAST_ENDPOINT).
    pub fn bind_any(&self, t: Transport) -> Res<String> {
        let endpoint = match t {
            Transport::Tcp | Transport::OfiTcp | Transport::OfiShm => t.local("*"),
            Transport::Ipc => ipc_endpoint(),
            Transport::Inproc => format!("inproc://compat-{}", unique()),
        };
        self.bind(&endpoint)?;
        self.last_endpoint()
    }

    /// LAST_ENDPOINT as text.
    pub fn last_endpoint(&self) -> Res<String> {
        match fwd!(self, "get_last_endpoint", s => s.get_last_endpoint())? {
            Ok(text) => Ok(text),
            Err(bytes) => Err(fail(
                Errno::Adapter(format!("last endpoint is not UTF-8: {bytes:?}")),
                self.what("get_last_endpoint"),
            )),
        }
    }

    /// Unbinds `endpoint`.
    pub fn unbind(&self, endpoint: &str) -> Res<()> {
        fwd!(self, &format!("unbind {endpoint}"), s => s.unbind(endpoint))
    }

    /// Connects to `endpoint`.
    pub fn connect(&self, endpoint: &str) -> Res<()> {
        fwd!(self, &format!("connect {endpoint}"), s => s.connect(endpoint))
    }

    /// Disconnects from `endpoint`.
    pub fn disconnect(&self, endpoint: &str) -> Res<()> {
        fwd!(self, &format!("disconnect {endpoint}"), s => s.disconnect(endpoint))
    }

    /// Sends one frame (flags: [`DONTWAIT`], [`SNDMORE`]).
    pub fn send(&self, data: &[u8], flags: i32) -> Res<()> {
        fwd!(self, "send", s => s.send(data, flags))
    }

    /// Sends a whole message.
    pub fn send_parts<P: AsRef<[u8]>>(&self, parts: &[P], flags: i32) -> Res<()> {
        fwd!(self, "send_multipart", s => s.send_multipart(parts.iter().map(|p| p.as_ref()), flags))
    }

    /// Receives one frame.
    pub fn recv(&self, flags: i32) -> Res<Vec<u8>> {
        fwd!(self, "recv", s => s.recv_bytes(flags))
    }

    /// Receives a whole message.
    pub fn recv_parts(&self, flags: i32) -> Res<Vec<Vec<u8>>> {
        fwd!(self, "recv_multipart", s => s.recv_multipart(flags))
    }

    /// Whether more frames of the current message follow.
    pub fn get_rcvmore(&self) -> Res<bool> {
        fwd!(self, "get_rcvmore", s => s.get_rcvmore())
    }

    /// ROUTING_ID.
    pub fn get_identity(&self) -> Res<Vec<u8>> {
        fwd!(self, "get_identity", s => s.get_identity())
    }

    /// Waits up to `ms` for a message; true if one can be received.
    pub fn poll_in(&self, ms: i64) -> Res<bool> {
        match &self.inner {
            Inner::Z(s) => s
                .poll(zmq::POLLIN, ms)
                .map(|n| n > 0)
                .map_err(|e| fail(e, self.what("poll"))),
            Inner::F(s) => s
                .poll(fabriq::POLLIN, ms)
                .map(|n| n > 0)
                .map_err(|e| fail(e, self.what("poll"))),
        }
    }

    /// Waits up to `ms` until a message can be sent.
    pub fn poll_out(&self, ms: i64) -> Res<bool> {
        match &self.inner {
            Inner::Z(s) => s
                .poll(zmq::POLLOUT, ms)
                .map(|n| n > 0)
                .map_err(|e| fail(e, self.what("poll"))),
            Inner::F(s) => s
                .poll(fabriq::POLLOUT, ms)
                .map(|n| n > 0)
                .map_err(|e| fail(e, self.what("poll"))),
        }
    }

    /// ZMQ_EVENTS: (POLLIN, POLLOUT). Also lets the socket process its
    /// pending commands, as any call into it does.
    pub fn events(&self) -> Res<(bool, bool)> {
        match &self.inner {
            Inner::Z(s) => s
                .get_events()
                .map(|e| (e.contains(zmq::POLLIN), e.contains(zmq::POLLOUT)))
                .map_err(|e| fail(e, self.what("get_events"))),
            Inner::F(s) => s
                .get_events()
                .map(|e| (e.contains(fabriq::POLLIN), e.contains(fabriq::POLLOUT)))
                .map_err(|e| fail(e, self.what("get_events"))),
        }
    }

    /// Receives a message if one comes within `ms`.
    pub fn recv_within(&self, ms: i64) -> Res<Option<Vec<Vec<u8>>>> {
        if self.poll_in(ms)? {
            Ok(Some(self.recv_parts(0)?))
        } else {
            Ok(None)
        }
    }

    /// Starts monitoring `events` (a mask of [`event`] numbers) and
    /// returns the socket they arrive on.
    pub fn monitor(&self, events: u16) -> Res<Monitor> {
        let endpoint = format!("inproc://compat-monitor-{}", unique());
        fwd!(self, "monitor", s => s.monitor(&endpoint, events as i32))?;
        let pair = self.sibling(Kind::Pair)?;
        pair.connect(&endpoint)?;
        Ok(Monitor { pair })
    }
}

/// Waits up to `ms` on several sockets of one implementation with the
/// library's `poll`; returns which are readable.
pub fn poll_readable(socks: &[&Sock], ms: i64) -> Res<Vec<bool>> {
    let what = || "poll".to_string();
    let mut z = Vec::new();
    let mut f = Vec::new();
    for s in socks {
        match &s.inner {
            Inner::Z(s) => z.push(s.as_poll_item(zmq::POLLIN)),
            Inner::F(s) => f.push(s.as_poll_item(fabriq::POLLIN)),
        }
    }
    if !z.is_empty() && !f.is_empty() {
        return Err(fail(
            Errno::Adapter("poll over two implementations".into()),
            what(),
        ));
    }
    if !z.is_empty() {
        zmq::poll(&mut z, ms).map_err(|e| fail(e, what()))?;
        Ok(z.iter().map(|i| i.is_readable()).collect())
    } else {
        fabriq::poll(&mut f, ms).map_err(|e| fail(e, what()))?;
        Ok(f.iter().map(|i| i.is_readable()).collect())
    }
}

/// Runs the library's `proxy` between two sockets of one implementation
/// until their context is terminated (then it fails with ETERM).
pub fn proxy(frontend: &Sock, backend: &Sock) -> Res<()> {
    let what = || format!("{} proxy", frontend.imp().name());
    match (&frontend.inner, &backend.inner) {
        (Inner::Z(f), Inner::Z(b)) => zmq::proxy(f, b).map_err(|e| fail(e, what())),
        (Inner::F(f), Inner::F(b)) => fabriq::proxy(f, b).map_err(|e| fail(e, what())),
        _ => Err(fail(
            Errno::Adapter("proxy over two implementations".into()),
            what(),
        )),
    }
}

/// Monitor event numbers (the same in both libraries).
pub mod event {
    /// CONNECTED.
    pub const CONNECTED: u16 = 0x0001;
    /// CONNECT_DELAYED.
    pub const CONNECT_DELAYED: u16 = 0x0002;
    /// CONNECT_RETRIED.
    pub const CONNECT_RETRIED: u16 = 0x0004;
    /// LISTENING.
    pub const LISTENING: u16 = 0x0008;
    /// ACCEPTED.
    pub const ACCEPTED: u16 = 0x0020;
    /// CLOSED.
    pub const CLOSED: u16 = 0x0080;
    /// DISCONNECTED.
    pub const DISCONNECTED: u16 = 0x0200;
    /// MONITOR_STOPPED.
    pub const MONITOR_STOPPED: u16 = 0x0400;
    /// HANDSHAKE_SUCCEEDED.
    pub const HANDSHAKE_SUCCEEDED: u16 = 0x1000;
    /// Every event.
    pub const ALL: u16 = 0xFFFF;
}

/// One monitor event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Event number.
    pub event: u16,
    /// Its value (fd, errno, interval...).
    pub value: u32,
    /// The endpoint it is about.
    pub address: String,
}

/// The receiving end of a socket monitor.
pub struct Monitor {
    pair: Sock,
}

impl Monitor {
    /// The next event within `ms`, if any.
    pub fn next(&self, ms: i64) -> Result<Option<Event>, String> {
        let Some(msg) = self.pair.recv_within(ms)? else {
            return Ok(None);
        };
        if msg.len() != 2 || msg[0].len() != 6 {
            return Err(format!("malformed monitor message: {msg:?}"));
        }
        Ok(Some(Event {
            event: u16::from_le_bytes([msg[0][0], msg[0][1]]),
            value: u32::from_le_bytes([msg[0][2], msg[0][3], msg[0][4], msg[0][5]]),
            address: String::from_utf8_lossy(&msg[1]).into_owned(),
        }))
    }

    /// Waits up to `ms` for `event`, passing over others; returns it and
    /// the events passed over.
    pub fn expect(&self, event: u16, ms: u64) -> Result<(Event, Vec<Event>), String> {
        let end = Instant::now() + Duration::from_millis(ms);
        let mut seen = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now()).as_millis() as i64;
            match self.next(left.max(1))? {
                Some(e) if e.event == event => return Ok((e, seen)),
                Some(e) => seen.push(e),
                None if Instant::now() >= end => {
                    return Err(format!(
                        "no monitor event {event:#06x} within {ms} ms; saw {:?}",
                        seen.iter().map(|e| e.event).collect::<Vec<_>>()
                    ))
                }
                None => {}
            }
        }
    }

    /// Every event that arrives within `ms`.
    pub fn collect(&self, ms: u64) -> Result<Vec<Event>, String> {
        let end = Instant::now() + Duration::from_millis(ms);
        let mut seen = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now()).as_millis() as i64;
            if left <= 0 {
                return Ok(seen);
            }
            if let Some(e) = self.next(left)? {
                seen.push(e);
            }
        }
    }
}

/// Send flag: do not block.
pub const DONTWAIT: i32 = 1;
/// Send flag: more frames follow.
pub const SNDMORE: i32 = 2;
