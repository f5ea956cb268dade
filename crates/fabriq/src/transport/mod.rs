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
//! `reactor/engine.rs`). `inproc://` is not a transport: its pipes join
//! sockets directly (see `inproc.rs`).

pub(crate) mod ipc;
#[cfg(test)]
pub(crate) mod mem;
pub(crate) mod tcp;

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

/// One endpoint scheme.
pub(crate) trait Transport: Sync + 'static {
    /// The scheme before `://`.
    fn scheme(&self) -> &'static str;

    /// Checks `address` (what follows `scheme://` in `endpoint`) for
    /// binding or connecting. Syntax only, no look-ups; the error says
    /// what is wrong and which forms are accepted.
    fn parse(&self, endpoint: &str, address: &str, role: Role) -> Result<()>;

    /// Binds now, so errors reach the caller; returns the listener and the
    /// endpoint text `LAST_ENDPOINT` reports (wildcards filled in).
    fn bind(&self, address: &str, opts: &Options) -> Result<(Box<dyn Listener>, String)>;

    /// What a connect can refuse at once, before the first attempt (tcp:
    /// an IPv6 literal without the ipv6 option). Names are looked up at
    /// each attempt, as libzmq does, so one that does not resolve yet is
    /// retried rather than refused.
    fn check_connect(&self, _address: &str, _opts: &Options) -> Result<()> {
        Ok(())
    }

    /// Starts one non-blocking connection attempt.
    fn connect(&self, address: &str, opts: &Options) -> io::Result<Box<dyn Stream>>;
}

/// The transport for `scheme`, if this build has one.
pub(crate) fn lookup(scheme: &str) -> Option<&'static dyn Transport> {
    match scheme {
        "tcp" => Some(&tcp::Tcp),
        "ipc" => Some(&ipc::Ipc),
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

    /// Writes from `bufs` in order; how much was taken.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;

    /// Whether an outgoing connect finished: `Ok(true)` connected,
    /// `Ok(false)` still in progress, `Err` failed.
    fn connect_result(&mut self) -> io::Result<bool>;

    /// The peer's address as text, for the `Peer-Address` property (empty
    /// where the transport has none).
    fn peer_address(&self) -> String;

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

/// A readiness source that serves many connections: one descriptor the
/// poller watches and the connections it has work for, so one event fans
/// out to many sessions (quinn-proto's `Endpoint::handle` is the shape). A
/// fabric's completion queue is one: one wait descriptor, many peers. The
/// in-memory transport has one per bound name.
///
/// Until the fabric transport lands, only the in-memory test transport
/// uses it, so a build without tests sees it unused.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) trait Demux: Send + Sync {
    /// The descriptor the poller watches. The poller is edge-triggered:
    /// the source must make it ready anew (write an eventfd) each time a
    /// connection gets work.
    fn fd(&self) -> RawFd;

    /// Moves the tokens of the connections that have work into `out`.
    fn take_ready(&self, out: &mut Vec<Token>);
}

/// What transports register with: the I/O thread's poller for their own
/// descriptors, and its table of shared sources ([`Demux`]).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Poller<'a> {
    pub registry: &'a Registry,
    pub shared: &'a mut SharedSources,
}

/// The shared sources the poller watches, with how many connections use
/// each.
#[derive(Default)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct SharedSources {
    by_token: HashMap<Token, (Arc<dyn Demux>, usize)>,
    next: usize,
}

/// Shared sources get tokens from the top of the range, far from the
/// I/O thread's own, which count up from 1.
#[cfg_attr(not(test), allow(dead_code))]
const FIRST_SHARED_TOKEN: usize = usize::MAX / 2;

#[cfg_attr(not(test), allow(dead_code))]
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
        self.by_token.len()
    }

    fn token_of(&self, demux: &Arc<dyn Demux>) -> Option<Token> {
        self.by_token
            .iter()
            .find(|(_, (d, _))| Arc::ptr_eq(d, demux))
            .map(|(t, _)| *t)
    }
}

#[cfg_attr(not(test), allow(dead_code))]
impl Poller<'_> {
    /// Adds a connection to `demux`, which the poller starts watching
    /// with its first connection.
    pub(crate) fn join(&mut self, demux: &Arc<dyn Demux>) -> io::Result<()> {
        if let Some(t) = self.shared.token_of(demux) {
            self.shared.by_token.get_mut(&t).expect("found").1 += 1;
            return Ok(());
        }
        let token = Token(FIRST_SHARED_TOKEN + self.shared.next);
        self.shared.next += 1;
        self.registry
            .register(&mut SourceFd(&demux.fd()), token, Interest::READABLE)?;
        self.shared.by_token.insert(token, (demux.clone(), 1));
        Ok(())
    }

    /// Takes a connection out of `demux`; the poller stops watching it
    /// with its last connection.
    pub(crate) fn leave(&mut self, demux: &Arc<dyn Demux>) {
        let Some(t) = self.shared.token_of(demux) else {
            return;
        };
        let entry = self.shared.by_token.get_mut(&t).expect("found");
        entry.1 -= 1;
        if entry.1 == 0 {
            let _ = self.registry.deregister(&mut SourceFd(&demux.fd()));
            self.shared.by_token.remove(&t);
        }
    }
}
