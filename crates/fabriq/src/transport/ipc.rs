//! `ipc://`: Unix domain sockets, by path or (Linux) abstract name, and
//! `ipc://*` with a fresh path.

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::BytesMut;
use mio::event::Source;
use mio::{Interest, Registry, Token};

use super::{Address, Listener, Poller, Role, Stream, Transport};
use crate::accept_filter::AcceptFilters;
use crate::error::{err, fail, Error, Result};
use crate::options::Options;

/// Longest filesystem path for an `ipc://` endpoint (`sun_path` is 108
/// bytes including the terminating NUL).
pub(crate) const MAX_IPC_PATH: usize = 107;

/// The `ipc://` transport.
pub(crate) struct Ipc;

/// What an `ipc://` endpoint names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IpcAddr {
    Path(PathBuf),
    Abstract(Vec<u8>),
    /// `ipc://*`: a fresh path chosen at bind time.
    Wildcard,
}

impl Transport for Ipc {
    fn parse(&self, text: &str, address: &Address, role: Role) -> Result<()> {
        parse(text, &address.address, role).map(drop)
    }

    fn bind(&self, address: &Address, opts: &Options) -> Result<(Box<dyn Listener>, String)> {
        let address = &address.address;
        let (mut listener, text) = if opts.use_fd >= 0 {
            adopt(opts.use_fd)?
        } else {
            bind(&parse(address, address, Role::Bind)?)?
        };
        listener.filters = opts.accept_filters.clone();
        Ok((Box::new(listener), text))
    }

    fn connect(&self, address: &Address, _opts: &Options) -> io::Result<Box<dyn Stream>> {
        let address = &address.address;
        let addr = parse(address, address, Role::Connect)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(Box::new(connect(&addr)?))
    }
}

fn parse(text: &str, rest: &str, role: Role) -> Result<IpcAddr> {
    if rest.is_empty() {
        return err(Error::EINVAL, format!("ipc endpoint {text:?} has no path"));
    }
    if rest == "*" {
        if role == Role::Connect {
            return err(
                Error::EINVAL,
                format!("cannot connect to the wildcard ipc endpoint {text:?}"),
            );
        }
        return Ok(IpcAddr::Wildcard);
    }
    if let Some(name) = rest.strip_prefix('@') {
        if name.len() + 1 > MAX_IPC_PATH {
            return err(
                Error::ENAMETOOLONG,
                format!(
                    "abstract ipc name in {text:?} is longer than {} bytes",
                    MAX_IPC_PATH - 1
                ),
            );
        }
        return Ok(IpcAddr::Abstract(name.as_bytes().to_vec()));
    }
    if rest.len() > MAX_IPC_PATH {
        return err(
            Error::ENAMETOOLONG,
            format!("ipc path in {text:?} is longer than {MAX_IPC_PATH} bytes"),
        );
    }
    Ok(IpcAddr::Path(PathBuf::from(rest)))
}

/// A bound ipc listener; removes its socket file when dropped.
#[derive(Debug)]
pub(crate) struct IpcListener {
    listener: mio::net::UnixListener,
    file: Option<SocketFile>,
    /// `ZMQ_IPC_FILTER_*`: peers whose credentials match none are closed
    /// as they are accepted.
    filters: AcceptFilters,
}

/// The socket file a listener created, and which file it is: the listener
/// is dropped later on the I/O thread, by which time a new socket may have
/// been bound at the same path (a restarted peer, a rebind), and that one
/// must not be unlinked.
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    /// `(st_dev, st_ino)` of the file right after bind.
    id: Option<(u64, u64)>,
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Held while a socket file is replaced and bound, and while a listener
/// checks and removes its file, so that within one process a listener
/// dropped on the I/O thread never removes the file of a socket bound
/// between its check and its unlink. (Another process rebinding the path
/// at that very moment can still lose its file, as with libzmq, which
/// removes the file without looking.)
static SOCKET_FILES: Mutex<()> = Mutex::new(());

fn lock_socket_files() -> MutexGuard<'static, ()> {
    SOCKET_FILES.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for IpcListener {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _guard = lock_socket_files();
            if file.id.is_some() && file_id(&file.path) == file.id {
                let _ = std::fs::remove_file(&file.path);
            }
        }
    }
}

static WILDCARD_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Binds `addr`, returning the listener and its endpoint text.
fn bind(addr: &IpcAddr) -> Result<(IpcListener, String)> {
    match addr {
        IpcAddr::Abstract(name) => {
            let sa = SocketAddr::from_abstract_name(name)
                .map_err(|e| fail(Error::EINVAL, format!("bad abstract ipc name: {e}")))?;
            let l = std::os::unix::net::UnixListener::bind_addr(&sa).map_err(|e| {
                fail(
                    Error::from_io(&e),
                    format!("cannot bind ipc://@{}: {e}", String::from_utf8_lossy(name)),
                )
            })?;
            finish(l, None, format!("ipc://@{}", String::from_utf8_lossy(name)))
        }
        IpcAddr::Path(path) => {
            let _guard = lock_socket_files();
            // As libzmq does: a socket file left behind by an earlier run
            // is replaced.
            if std::fs::symlink_metadata(path)
                .map(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
                .unwrap_or(false)
            {
                let _ = std::fs::remove_file(path);
            }
            let l = std::os::unix::net::UnixListener::bind(path).map_err(|e| {
                fail(
                    Error::from_io(&e),
                    format!("cannot bind ipc://{}: {e}", path.display()),
                )
            })?;
            let file = SocketFile {
                path: path.clone(),
                id: file_id(path),
            };
            finish(l, Some(file), format!("ipc://{}", path.display()))
        }
        IpcAddr::Wildcard => {
            let path = std::env::temp_dir().join(format!(
                "fabriq-{}-{}.ipc",
                std::process::id(),
                WILDCARD_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            bind(&IpcAddr::Path(path))
        }
    }
}

/// A listener on the application's socket (`ZMQ_USE_FD`); its file, if
/// any, is the application's to remove.
fn adopt(fd: std::os::fd::RawFd) -> Result<(IpcListener, String)> {
    let l =
        std::os::unix::net::UnixListener::from(super::use_fd::take_listener(fd, &[libc::AF_UNIX])?);
    let local = l
        .local_addr()
        .map_err(|e| fail(Error::from_io(&e), e.to_string()))?;
    let text = match (local.as_pathname(), local.as_abstract_name()) {
        (Some(path), _) => format!("ipc://{}", path.display()),
        (None, Some(name)) => format!("ipc://@{}", String::from_utf8_lossy(name)),
        (None, None) => "ipc://".to_string(),
    };
    finish(l, None, text)
}

fn finish(
    l: std::os::unix::net::UnixListener,
    file: Option<SocketFile>,
    text: String,
) -> Result<(IpcListener, String)> {
    l.set_nonblocking(true)
        .map_err(|e| fail(Error::from_io(&e), e.to_string()))?;
    Ok((
        IpcListener {
            listener: mio::net::UnixListener::from_std(l),
            file,
            filters: AcceptFilters::default(),
        },
        text,
    ))
}

/// Connects (a local connect completes or fails at once).
fn connect(addr: &IpcAddr) -> io::Result<mio::net::UnixStream> {
    let std_stream = match addr {
        IpcAddr::Abstract(name) => {
            std::os::unix::net::UnixStream::connect_addr(&SocketAddr::from_abstract_name(name)?)?
        }
        IpcAddr::Path(path) => std::os::unix::net::UnixStream::connect(path)?,
        IpcAddr::Wildcard => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot connect to ipc://*",
            ))
        }
    };
    std_stream.set_nonblocking(true)?;
    Ok(mio::net::UnixStream::from_std(std_stream))
}

impl Stream for mio::net::UnixStream {
    fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        super::read_fd(self.as_fd(), buf, max)
    }

    fn short_read_drains(&self) -> bool {
        true
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        super::write_fd(self.as_fd(), bufs)
    }

    fn connect_result(&mut self) -> io::Result<bool> {
        match self.take_error()? {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    fn peer_address(&self) -> String {
        String::new()
    }

    fn monitor_value(&self) -> u32 {
        self.as_raw_fd() as u32
    }

    fn register(&mut self, poller: &mut Poller<'_>, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        Source::register(self, poller.registry, token, interest)
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        let _ = Source::deregister(self, poller.registry);
    }
}

impl Listener for IpcListener {
    fn accept(&mut self) -> io::Result<Option<Box<dyn Stream>>> {
        loop {
            match self.listener.accept() {
                Ok((s, _)) if self.filters.ipc_allows(&s) => return Ok(Some(Box::new(s))),
                Ok(_) => tracing::debug!("ipc accept filter: a peer refused"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        self.listener.register(registry, token, Interest::READABLE)
    }

    fn deregister(&mut self, registry: &Registry) {
        let _ = self.listener.deregister(registry);
    }

    fn monitor_value(&self) -> u32 {
        self.listener.as_raw_fd() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_accepted_forms() {
        assert_eq!(
            parse("ipc://@abc", "@abc", Role::Bind).unwrap(),
            IpcAddr::Abstract(b"abc".to_vec())
        );
        assert_eq!(
            parse("ipc://*", "*", Role::Bind).unwrap(),
            IpcAddr::Wildcard
        );
        assert_eq!(
            parse("ipc:///tmp/x", "/tmp/x", Role::Connect).unwrap(),
            IpcAddr::Path("/tmp/x".into())
        );
    }

    #[test]
    fn refuses_bad_forms() {
        assert_eq!(parse("ipc://", "", Role::Bind), Err(Error::EINVAL));
        assert_eq!(parse("ipc://*", "*", Role::Connect), Err(Error::EINVAL));
        let long = format!("/tmp/{}", "x".repeat(120));
        assert_eq!(parse(&long, &long, Role::Bind), Err(Error::ENAMETOOLONG));
    }
}
