//! Transports: they move bytes and report peers, nothing else.
//!
//! A [`Stream`] is one connection as the reactor sees it: a readiness
//! source it can register, read into the protocol engine's buffer, and
//! write the engine's batches to with one vectored write. A [`Listener`]
//! yields new streams. TCP and IPC are byte streams of the OS; the fabric
//! transport (a later issue) implements the same three operations over
//! libfabric, registering its completion queue's wait descriptor in place
//! of a socket and moving the encoder's batches as registered pages, so
//! neither the reactor's session logic nor any pattern changes for it.
//! `inproc://` needs no stream at all: its pipes join sockets directly
//! (see `inproc.rs`).

pub(crate) mod ipc;
pub(crate) mod tcp;

use std::io::{self, IoSlice, Write};

use bytes::BytesMut;

use mio::event::Source;
use mio::{Interest, Registry, Token};

/// One connection.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(mio::net::TcpStream),
    Ipc(mio::net::UnixStream),
}

impl Stream {
    /// Reads up to `max` bytes and appends them to `buf` (which must have
    /// that much spare capacity). The spare bytes are not zeroed first:
    /// at 16 KiB or more per read, zero-filling costs as much as decoding
    /// the small messages that arrive in it.
    #[allow(unsafe_code)]
    pub(crate) fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        use std::os::fd::AsFd;
        let len = buf.len();
        let spare = buf.spare_capacity_mut();
        let want = max.min(spare.len());
        let fd = match &*self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Ipc(s) => s.as_fd(),
        };
        let (filled, _) = rustix::io::read(fd, &mut spare[..want])?;
        let n = filled.len();
        // SAFETY: read(2) initialized the first `n` spare bytes (rustix
        // returns exactly the initialized prefix), and `n <= want <=
        // spare capacity`, so the new length covers initialized bytes only.
        unsafe { buf.set_len(len + n) };
        Ok(n)
    }

    pub(crate) fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Ipc(s) => s.write_vectored(bufs),
        }
    }

    /// Whether an outgoing connect finished: `Ok(true)` connected,
    /// `Ok(false)` still in progress, `Err` failed.
    pub(crate) fn connect_result(&mut self) -> io::Result<bool> {
        match self {
            Stream::Tcp(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Stream::Ipc(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                Ok(true)
            }
        }
    }

    /// The peer's address as text (for monitor events and `Peer-Address`).
    pub(crate) fn peer_text(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
            Stream::Ipc(_) => String::new(),
        }
    }

    /// The OS descriptor, which libzmq reports as the value of several
    /// monitor events.
    pub(crate) fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Ipc(s) => s.as_raw_fd(),
        }
    }

    /// Applies socket options that the transport understands.
    pub(crate) fn tune(&self, opts: &crate::options::Options) {
        if let Stream::Tcp(s) = self {
            tcp::tune(s, opts);
        }
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        match self {
            Stream::Tcp(s) => s.register(registry, token, interest),
            Stream::Ipc(s) => s.register(registry, token, interest),
        }
    }

    pub(crate) fn deregister(&mut self, registry: &Registry) {
        let _ = match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Ipc(s) => s.deregister(registry),
        };
    }
}

/// A bound endpoint accepting connections.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(mio::net::TcpListener),
    Ipc(ipc::IpcListener),
}

impl Listener {
    /// The next pending connection, `Ok(None)` when there is none.
    pub(crate) fn accept(&mut self) -> io::Result<Option<Stream>> {
        let r = match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }),
            Listener::Ipc(l) => l.listener.accept().map(|(s, _)| Stream::Ipc(s)),
        };
        match r {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.register(registry, token, Interest::READABLE),
            Listener::Ipc(l) => l.listener.register(registry, token, Interest::READABLE),
        }
    }

    pub(crate) fn deregister(&mut self, registry: &Registry) {
        let _ = match self {
            Listener::Tcp(l) => l.deregister(registry),
            Listener::Ipc(l) => l.listener.deregister(registry),
        };
    }

    pub(crate) fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Ipc(l) => l.listener.as_raw_fd(),
        }
    }
}

/// Where an outgoing connection goes.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Host (name or address literal) and port, resolved at each attempt.
    Tcp {
        host: String,
        port: u16,
        ipv6: bool,
    },
    Ipc(crate::endpoint::IpcAddr),
}

/// Starts a non-blocking connect.
pub(crate) fn connect(target: &Target) -> io::Result<Stream> {
    match target {
        Target::Tcp { host, port, ipv6 } => {
            let addr = crate::endpoint::resolve(host, *port, *ipv6).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    crate::error::last_error_detail().unwrap_or_default(),
                )
            })?;
            let s = mio::net::TcpStream::connect(addr)?;
            let _ = s.set_nodelay(true);
            Ok(Stream::Tcp(s))
        }
        Target::Ipc(addr) => ipc::connect(addr).map(Stream::Ipc),
    }
}
