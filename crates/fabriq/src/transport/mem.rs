//! `mem://NAME`: an in-memory byte-stream transport, for the deterministic
//! tests of the reactor (`reactor/tests.rs`). It is a whole transport
//! behind the same trait as tcp and ipc, registered with one line in
//! [`super::lookup`], and it proves that line is all a transport needs.
//!
//! Bytes move through two bounded in-memory queues per connection. All
//! connections of one bound name share one readiness source, a
//! [`Demux`] with one eventfd (the way every peer of a fabric endpoint
//! shares its completion queue's wait descriptor): whenever something
//! changes for a registered end (bytes arrived, room was made, the peer
//! closed) its session's token joins the source's ready list and the
//! eventfd is written, so the edge-triggered poller reports the source and
//! the I/O thread runs each session on the list.
//!
//! The tests shape the wire per name ([`Wire`]): how many bytes one write
//! may move (partial writes), how many bytes a direction holds (slow
//! readers), and whether an end is frozen. They dial raw connections of
//! their own ([`dial`]) to speak bytes at a socket, and cut live ones
//! ([`cut`]) to kill a peer in the middle of a message.

use std::collections::{HashMap, VecDeque};
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::BytesMut;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::event::{eventfd, EventfdFlags};

use super::{Address, Demux, Listener, Poller, Role, Stream, Transport};
use crate::error::{err, fail, Error, Result};
use crate::options::Options;

/// The `mem://` transport.
pub(crate) struct Mem;

/// How the wire of one name behaves. The defaults are a fast, roomy wire.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wire {
    /// Bytes one write may move at most.
    pub max_write: usize,
    /// Bytes one direction holds before writes would block.
    pub capacity: usize,
}

impl Default for Wire {
    fn default() -> Self {
        Wire {
            max_write: usize::MAX,
            capacity: 1 << 20,
        }
    }
}

/// One direction of a connection.
#[derive(Debug, Default)]
struct Lane {
    bytes: VecDeque<u8>,
    /// The writer is gone: the reader sees end of stream once it has read
    /// what is left.
    closed: bool,
    /// The connection was cut: both ends fail at once.
    reset: bool,
}

/// The readiness source of one bound name: which registered ends have
/// work, and the eventfd the poller watches.
#[derive(Debug)]
struct Readiness {
    ready: Mutex<Vec<Token>>,
    fd: OwnedFd,
}

impl Readiness {
    fn new() -> io::Result<Arc<Readiness>> {
        Ok(Arc::new(Readiness {
            ready: Mutex::new(Vec::new()),
            fd: eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?,
        }))
    }

    fn mark(&self, token: Token) {
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(token);
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }
}

impl Demux for Readiness {
    fn fds(&self) -> Vec<RawFd> {
        vec![self.fd.as_raw_fd()]
    }

    fn take_ready(&self, out: &mut Vec<Token>) {
        let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut ready);
    }
}

/// Both directions, and which session (if any) each end is registered
/// for.
#[derive(Debug)]
struct Duplex {
    lanes: Mutex<[Lane; 2]>,
    /// The session token each end is registered under, if it is.
    tokens: Mutex<[Option<Token>; 2]>,
    readiness: Arc<Readiness>,
    wire: Wire,
}

impl Duplex {
    fn lanes(&self) -> MutexGuard<'_, [Lane; 2]> {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells end `side` that something changed for it.
    fn notify(&self, side: usize) {
        let token = self.tokens.lock().unwrap_or_else(|p| p.into_inner())[side];
        if let Some(t) = token {
            self.readiness.mark(t);
        }
    }
}

/// One end of a connection: end `side` reads lane `side` and writes lane
/// `1 - side`.
#[derive(Debug)]
pub(crate) struct MemStream {
    duplex: Arc<Duplex>,
    side: usize,
}

impl MemStream {
    fn pair(wire: Wire, readiness: Arc<Readiness>) -> (MemStream, MemStream) {
        let duplex = Arc::new(Duplex {
            lanes: Mutex::new(Default::default()),
            tokens: Mutex::new([None, None]),
            readiness,
            wire,
        });
        let a = MemStream {
            duplex: duplex.clone(),
            side: 0,
        };
        (a, MemStream { duplex, side: 1 })
    }

    /// Reads what has arrived (at most `max` bytes), `Ok(0)` at end of
    /// stream, `WouldBlock` if nothing is there yet.
    pub(crate) fn read_some(&mut self, max: usize) -> io::Result<Vec<u8>> {
        let mut lanes = self.duplex.lanes();
        let lane = &mut lanes[self.side];
        if lane.reset {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if lane.bytes.is_empty() {
            if lane.closed {
                return Ok(Vec::new());
            }
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = max.min(lane.bytes.len());
        let out: Vec<u8> = lane.bytes.drain(..n).collect();
        drop(lanes);
        // Room was made for the writer.
        self.duplex.notify(1 - self.side);
        Ok(out)
    }

    /// Writes as much of `data` as the wire takes now.
    pub(crate) fn write_some(&mut self, data: &[u8]) -> io::Result<usize> {
        let wire = self.duplex.wire;
        let mut lanes = self.duplex.lanes();
        if lanes[0].reset || lanes[1].reset {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        let lane = &mut lanes[1 - self.side];
        if lane.closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let room = wire.capacity.saturating_sub(lane.bytes.len());
        let n = data.len().min(room).min(wire.max_write);
        if n == 0 && !data.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        lane.bytes.extend(&data[..n]);
        drop(lanes);
        self.duplex.notify(1 - self.side);
        Ok(n)
    }

    /// Writes all of `data`, which must fit the wire's capacity.
    pub(crate) fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.write_some(data)?;
            data = &data[n..];
        }
        Ok(())
    }
}

impl Drop for MemStream {
    fn drop(&mut self) {
        let mut lanes = self.duplex.lanes();
        lanes[1 - self.side].closed = true;
        drop(lanes);
        self.duplex.notify(1 - self.side);
    }
}

impl Stream for MemStream {
    fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        let want = max.min(buf.capacity() - buf.len());
        let bytes = self.read_some(want)?;
        buf.extend_from_slice(&bytes);
        Ok(bytes.len())
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut total = 0;
        for b in bufs {
            match self.write_some(b) {
                Ok(n) => {
                    total += n;
                    if n < b.len() {
                        break;
                    }
                }
                Err(e) if total > 0 && e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
            if total >= self.duplex.wire.max_write {
                break;
            }
        }
        Ok(total)
    }

    fn connect_result(&mut self) -> io::Result<bool> {
        Ok(true)
    }

    fn peer_address(&self) -> String {
        String::new()
    }

    fn monitor_value(&self) -> u32 {
        // No descriptor of its own: the end's place in its connection.
        self.side as u32
    }

    fn register(&mut self, poller: &mut Poller<'_>, token: Token) -> io::Result<()> {
        let demux: Arc<dyn Demux> = self.duplex.readiness.clone();
        poller.join(&demux)?;
        self.duplex.tokens.lock().unwrap_or_else(|p| p.into_inner())[self.side] = Some(token);
        // Ready from the start, as a new socket is writable.
        self.duplex.notify(self.side);
        Ok(())
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        self.duplex.tokens.lock().unwrap_or_else(|p| p.into_inner())[self.side] = None;
        let demux: Arc<dyn Demux> = self.duplex.readiness.clone();
        poller.leave(&demux);
    }
}

/// A bound name: connections wait here until the poller has the listener
/// accept them.
#[derive(Debug)]
struct Bound {
    pending: Mutex<VecDeque<MemStream>>,
    /// Made readable when a connection is pending.
    notify: OwnedFd,
    wire: Wire,
    /// The readiness source every connection to this name shares.
    readiness: Arc<Readiness>,
    /// Both ends of every connection made to this name, for [`cut`].
    live: Mutex<Vec<std::sync::Weak<Duplex>>>,
}

/// The bound names of the process, and the wire of each name.
#[derive(Default)]
struct Names {
    bound: HashMap<String, Arc<Bound>>,
    wires: HashMap<String, Wire>,
}

fn names() -> MutexGuard<'static, Names> {
    static NAMES: std::sync::OnceLock<Mutex<Names>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Sets how connections to `name` made from now on behave.
pub(crate) fn set_wire(name: &str, wire: Wire) {
    names().wires.insert(name.to_string(), wire);
}

/// A raw connection to the socket bound at `name`, for a test to speak
/// bytes with.
pub(crate) fn dial(name: &str) -> io::Result<MemStream> {
    let bound = names()
        .bound
        .get(name)
        .cloned()
        .ok_or(io::ErrorKind::ConnectionRefused)?;
    let (ours, theirs) = MemStream::pair(bound.wire, bound.readiness.clone());
    bound
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Arc::downgrade(&ours.duplex));
    bound
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push_back(theirs);
    let _ = rustix::io::write(&bound.notify, &1u64.to_ne_bytes());
    Ok(ours)
}

/// Cuts every live connection to `name`: both ends fail at their next
/// read or write, whatever was in flight is lost (a peer killed, a cable
/// pulled). Returns how many were cut.
pub(crate) fn cut(name: &str) -> usize {
    let Some(bound) = names().bound.get(name).cloned() else {
        return 0;
    };
    let live = std::mem::take(&mut *bound.live.lock().unwrap_or_else(|p| p.into_inner()));
    let mut n = 0;
    for duplex in live.iter().filter_map(std::sync::Weak::upgrade) {
        for lane in duplex.lanes().iter_mut() {
            lane.reset = true;
        }
        duplex.notify(0);
        duplex.notify(1);
        n += 1;
    }
    n
}

/// A listener on a name.
#[derive(Debug)]
pub(crate) struct MemListener {
    name: String,
    bound: Arc<Bound>,
}

impl Drop for MemListener {
    fn drop(&mut self) {
        let mut names = names();
        if names
            .bound
            .get(&self.name)
            .is_some_and(|b| Arc::ptr_eq(b, &self.bound))
        {
            names.bound.remove(&self.name);
        }
    }
}

impl Listener for MemListener {
    fn accept(&mut self) -> io::Result<Option<Box<dyn Stream>>> {
        let next = self
            .bound
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        Ok(next.map(|s| Box::new(s) as Box<dyn Stream>))
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let fd = self.bound.notify.as_raw_fd();
        registry.register(&mut SourceFd(&fd), token, Interest::READABLE)
    }

    fn deregister(&mut self, registry: &Registry) {
        let fd = self.bound.notify.as_raw_fd();
        let _ = registry.deregister(&mut SourceFd(&fd));
    }

    fn monitor_value(&self) -> u32 {
        self.bound.notify.as_raw_fd() as u32
    }
}

impl Transport for Mem {
    fn parse(&self, text: &str, address: &Address, _role: Role) -> Result<()> {
        if address.address.is_empty() {
            return err(Error::EINVAL, format!("mem endpoint {text:?} has no name"));
        }
        Ok(())
    }

    fn bind(&self, address: &Address, _opts: &Options) -> Result<(Box<dyn Listener>, String)> {
        let address = address.address.as_str();
        let mut names = names();
        if names.bound.contains_key(address) {
            return err(Error::EADDRINUSE, format!("mem://{address} is bound"));
        }
        let notify = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)
            .map_err(|e| fail(Error::EMFILE, e.to_string()))?;
        let wire = names.wires.get(address).copied().unwrap_or_default();
        let readiness = Readiness::new().map_err(|e| fail(Error::EMFILE, e.to_string()))?;
        let bound = Arc::new(Bound {
            pending: Mutex::new(VecDeque::new()),
            notify,
            wire,
            readiness,
            live: Mutex::new(Vec::new()),
        });
        names.bound.insert(address.to_string(), bound.clone());
        let listener = MemListener {
            name: address.to_string(),
            bound,
        };
        Ok((Box::new(listener), format!("mem://{address}")))
    }

    fn connect(&self, address: &Address, _opts: &Options) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(dial(&address.address)?))
    }
}
