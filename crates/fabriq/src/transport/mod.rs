//! Transports: how an endpoint's address becomes a listener or a
//! connection. They move bytes and report peers, nothing else; the
//! protocol and the session logic above them are the same for all.
//!
//! A [`Transport`] is one endpoint scheme (`tcp`, `ipc`). It checks the
//! address part of an endpoint, binds a [`Listener`] and starts a
//! [`Stream`] connection attempt. [`lookup`] is the one place that maps a
//! scheme to its transport: a new transport is a module here and one line
//! in `lookup`, and nothing else in the crate changes for it (the
//! in-memory test transport, `mem`, is exactly that).
//!
//! A [`Stream`] is one connection as the stream engine sees it: a
//! readiness source it registers with the I/O thread's poller, reads into
//! the protocol's buffer, and writes batches to with one vectored write.
//! Streams are byte streams; a transport that moves messages through
//! completions (libfabric) brings its own engine instead (see
//! `reactor/engine/`). `inproc://` is not a transport: its pipes join
//! sockets directly (see `inproc.rs`). Nor is `udp://`, which has no
//! connections: bind or connect opens its socket (`udp.rs`), and the I/O
//! thread moves its datagrams with an engine like the others
//! ([`DataPath::Datagram`]).

pub(crate) mod ipc;
#[cfg(test)]
pub(crate) mod mem;
pub(crate) mod ofi;
mod socks;
pub(crate) mod tcp;
pub(crate) mod udp;
mod use_fd;

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSlice};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Arc;

use bytes::BytesMut;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use crate::error::Result;
use crate::options::Options;

/// Whether an endpoint is being bound or connected: the rules differ
/// (wildcards only make sense for bind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Bind,
    Connect,
}

/// An endpoint of a transport, as its transport checked it.
#[derive(Clone)]
pub(crate) struct Address {
    pub transport: &'static dyn Transport,
    /// The scheme as written (`tcp`, `ofi+verbs`).
    pub scheme: String,
    /// What follows `scheme://`.
    pub address: String,
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.address)
    }
}

/// How messages move once a transport has a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataPath {
    /// ZMTP over the connection's byte stream.
    Stream,
    /// The connection is ZMTP's control channel; messages move through a
    /// libfabric endpoint of this provider (`None`: the first one
    /// `fi_getinfo` offers).
    Fabric { provider: Option<String> },
    /// No connection: each message is one datagram of a udp socket that
    /// bind or connect opened (`udp://` is no [`Transport`]; see
    /// `udp.rs`), framed so, moving the ways `dirs` says.
    Datagram {
        framing: udp::Framing,
        dirs: udp::Directions,
    },
}

/// One endpoint scheme (or family of schemes: `ofi+PROVIDER`).
pub(crate) trait Transport: Sync + 'static {
    /// Checks `address.address` (what follows `scheme://` in `endpoint`)
    /// for binding or connecting. Syntax only, no look-ups; the error says
    /// what is wrong and which forms are accepted.
    fn parse(&self, endpoint: &str, address: &Address, role: Role) -> Result<()>;

    /// Binds now, so errors reach the caller; returns the listener and the
    /// endpoint text `LAST_ENDPOINT` reports (wildcards filled in).
    fn bind(&self, address: &Address, opts: &Options) -> Result<(Box<dyn Listener>, String)>;

    /// What a connect can refuse at once, before the first attempt (tcp:
    /// an IPv6 literal without the ipv6 option). Names are looked up at
    /// each attempt, as libzmq does, so one that does not resolve yet is
    /// retried rather than refused.
    fn check_connect(&self, _address: &Address, _opts: &Options) -> Result<()> {
        Ok(())
    }

    /// Starts one non-blocking connection attempt.
    fn connect(&self, address: &Address, opts: &Options) -> io::Result<Box<dyn Stream>>;

    /// How messages move over this transport's connections.
    fn data_path(&self, _address: &Address) -> DataPath {
        DataPath::Stream
    }
}

/// The transport for `scheme`, if this build has one.
pub(crate) fn lookup(scheme: &str) -> Option<&'static dyn Transport> {
    match scheme {
        "tcp" => Some(&tcp::Tcp),
        "ipc" => Some(&ipc::Ipc),
        s if s == "ofi" || s.starts_with("ofi+") => Some(&ofi::Ofi),
        #[cfg(test)]
        "mem" => Some(&mem::Mem),
        _ => None,
    }
}

/// One connection.
pub(crate) trait Stream: Send + fmt::Debug {
    /// Reads up to `max` bytes and appends them to `buf` (which must have
    /// that much spare capacity).
    fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize>;

    /// Whether a read that returned less than it asked for took all the
    /// stream had, so that the next bytes (or the peer's close) make the
    /// edge-triggered poller report the stream again. True of kernel
    /// sockets (tcp, ipc): each arrival wakes the poller anew. A stream
    /// that cannot promise it is read until `WouldBlock`.
    fn short_read_drains(&self) -> bool {
        false
    }

    /// Writes from `bufs` in order; how much was taken.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;

    /// Whether an outgoing connect finished: `Ok(true)` connected,
    /// `Ok(false)` still in progress, `Err` failed.
    fn connect_result(&mut self) -> io::Result<bool>;

    /// The peer's address as text, for the `Peer-Address` property (empty
    /// where the transport has none).
    fn peer_address(&self) -> String;

    /// Our own address on the connection (the IP for tcp; empty where the
    /// transport has none).
    fn local_address(&self) -> String {
        String::new()
    }

    /// The value monitor events report for this connection: the OS
    /// descriptor for tcp and ipc, as libzmq does.
    fn monitor_value(&self) -> u32;

    /// Applies the socket options the transport understands.
    fn tune(&self, _opts: &Options) {}

    /// Registers for read and write readiness under `token`: its own
    /// descriptor with the poller, or with a shared source.
    fn register(&mut self, poller: &mut Poller<'_>, token: Token) -> io::Result<()>;

    /// Undoes [`Stream::register`].
    fn deregister(&mut self, poller: &mut Poller<'_>);
}

/// A bound endpoint accepting connections.
pub(crate) trait Listener: Send + fmt::Debug {
    /// The next pending connection, `Ok(None)` when there is none.
    fn accept(&mut self) -> io::Result<Option<Box<dyn Stream>>>;

    /// Registers for readiness (pending connections) under `token`.
    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()>;

    /// Undoes [`Listener::register`].
    fn deregister(&mut self, registry: &Registry);

    /// The value monitor events report for this listener (its descriptor).
    fn monitor_value(&self) -> u32;
}

/// `read(2)` on `fd` into the spare capacity of `buf`, for the OS streams.
/// The spare bytes are not zeroed first: at 16 KiB or more per read,
/// zero-filling costs as much as decoding the small messages that arrive
/// in it.
#[allow(unsafe_code)]
pub(crate) fn read_fd(fd: BorrowedFd<'_>, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
    let len = buf.len();
    let spare = buf.spare_capacity_mut();
    let want = max.min(spare.len());
    let (filled, _) = rustix::io::read(fd, &mut spare[..want])?;
    let n = filled.len();
    // SAFETY: read(2) initialized the first `n` spare bytes (rustix
    // returns exactly the initialized prefix), and `n <= want <= spare
    // capacity`, so the new length covers initialized bytes only.
    unsafe { buf.set_len(len + n) };
    Ok(n)
}

/// `sendmsg(2)` of `bufs` on the socket `fd` with `MSG_NOSIGNAL`, for the
/// OS streams: a peer that closed its end gives `EPIPE` here instead of
/// killing the process with `SIGPIPE` (libzmq sends the same way, so C
/// programs need not ignore the signal).
pub(crate) fn write_fd(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    let mut control = rustix::net::SendAncillaryBuffer::default();
    Ok(rustix::net::sendmsg(
        fd,
        bufs,
        &mut control,
        rustix::net::SendFlags::NOSIGNAL,
    )?)
}

/// A readiness source that serves many connections: one descriptor the
/// poller watches and the connections it has work for, so one event fans
/// out to many sessions (quinn-proto's `Endpoint::handle` is the shape). A
/// fabric's completion queue is one: one wait descriptor, many peers. The
/// in-memory transport has one per bound name.
pub(crate) trait Demux: Send + Sync {
    /// The descriptors the poller watches (none: the source is polled).
    /// The poller is edge-triggered: the source must make one ready anew
    /// (write an eventfd, complete an operation) each time a connection
    /// gets work.
    fn fds(&self) -> Vec<RawFd>;

    /// Moves the tokens of the connections that have work into `out`; a
    /// token may come more than once (the loop runs each session once).
    fn take_ready(&self, out: &mut Vec<Token>);

    /// Asked before the I/O thread sleeps: false if it must not sleep on
    /// the descriptors yet (libfabric's `fi_trywait` said to read the
    /// completion queues first).
    fn may_sleep(&self) -> bool {
        true
    }

    /// For a source whose descriptors cannot be trusted to wake the poller
    /// (none, or a provider's that never fire): how often to poll it while
    /// it has connections.
    fn poll_interval(&self) -> Option<std::time::Duration> {
        None
    }
}

/// What transports register with: the I/O thread's poller for their own
/// descriptors, and its table of shared sources ([`Demux`]).
pub(crate) struct Poller<'a> {
    pub registry: &'a Registry,
    pub shared: &'a mut SharedSources,
}

/// The shared sources the poller watches, with how many connections use
/// each.
#[derive(Default)]
pub(crate) struct SharedSources {
    by_token: HashMap<Token, (Arc<dyn Demux>, usize)>,
    /// Sources without descriptors, only ever polled.
    polled: HashMap<Token, (Arc<dyn Demux>, usize)>,
    next: usize,
    /// State a transport keeps per I/O thread (the fabric's endpoint per
    /// provider), by a key of its choosing.
    locals: HashMap<String, Arc<dyn Any + Send + Sync>>,
}

/// Shared sources get tokens from the top of the range, far from the
/// I/O thread's own, which count up from 1.
const FIRST_SHARED_TOKEN: usize = usize::MAX / 2;

impl SharedSources {
    /// If `token` is a shared source's, moves its ready connections into
    /// `out` and returns true.
    pub(crate) fn take_ready(&self, token: Token, out: &mut Vec<Token>) -> bool {
        match self.by_token.get(&token) {
            Some((demux, _)) => {
                demux.take_ready(out);
                true
            }
            None => false,
        }
    }

    /// How many shared sources the poller watches.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_token.len() + self.polled.len()
    }

    /// Sources that must be read now rather than slept on (see
    /// [`Demux::may_sleep`] and [`Demux::poll_interval`]): their ready
    /// connections go to `out`. Returns how long the loop may sleep at most
    /// (`Some(ZERO)`: not at all).
    pub(crate) fn before_sleep(&self, out: &mut Vec<Token>) -> Option<std::time::Duration> {
        let mut limit: Option<std::time::Duration> = None;
        for (demux, _) in self.by_token.values().chain(self.polled.values()) {
            if let Some(every) = demux.poll_interval() {
                demux.take_ready(out);
                limit = Some(limit.map_or(every, |l| l.min(every)));
            } else if !demux.may_sleep() {
                demux.take_ready(out);
                limit = Some(std::time::Duration::ZERO);
            }
        }
        limit
    }

    fn token_of(&self, demux: &Arc<dyn Demux>) -> Option<Token> {
        self.by_token
            .iter()
            .chain(self.polled.iter())
            .find(|(_, (d, _))| Arc::ptr_eq(d, demux))
            .map(|(t, _)| *t)
    }

    fn entry(&mut self, token: Token) -> Option<&mut (Arc<dyn Demux>, usize)> {
        match self.by_token.get_mut(&token) {
            Some(e) => Some(e),
            None => self.polled.get_mut(&token),
        }
    }
}

impl Poller<'_> {
    /// Adds a connection to `demux`, which the poller starts watching
    /// with its first connection.
    pub(crate) fn join(&mut self, demux: &Arc<dyn Demux>) -> io::Result<()> {
        if let Some(t) = self.shared.token_of(demux) {
            self.shared.entry(t).expect("found").1 += 1;
            return Ok(());
        }
        let token = Token(FIRST_SHARED_TOKEN + self.shared.next);
        self.shared.next += 1;
        let fds = demux.fds();
        for fd in &fds {
            self.registry
                .register(&mut SourceFd(fd), token, Interest::READABLE)?;
        }
        if fds.is_empty() {
            self.shared.polled.insert(token, (demux.clone(), 1));
        } else {
            self.shared.by_token.insert(token, (demux.clone(), 1));
        }
        Ok(())
    }

    /// The per-I/O-thread state `key` names, made by `make` the first
    /// time.
    pub(crate) fn local<T: Any + Send + Sync>(
        &mut self,
        key: &str,
        make: impl FnOnce() -> std::result::Result<T, String>,
    ) -> std::result::Result<Arc<T>, String> {
        if let Some(v) = self.shared.locals.get(key) {
            return v
                .clone()
                .downcast::<T>()
                .map_err(|_| format!("{key}: state of another type"));
        }
        let v = Arc::new(make()?);
        self.shared.locals.insert(key.to_string(), v.clone());
        Ok(v)
    }

    /// Takes a connection out of `demux`; the poller stops watching it
    /// with its last connection.
    pub(crate) fn leave(&mut self, demux: &Arc<dyn Demux>) {
        let Some(t) = self.shared.token_of(demux) else {
            return;
        };
        let entry = self.shared.entry(t).expect("found");
        entry.1 -= 1;
        if entry.1 == 0 {
            for fd in demux.fds() {
                let _ = self.registry.deregister(&mut SourceFd(&fd));
            }
            self.shared.by_token.remove(&t);
            self.shared.polled.remove(&t);
        }
    }
}
