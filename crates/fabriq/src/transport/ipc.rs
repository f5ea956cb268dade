//! `ipc://`: Unix domain sockets, by path or (Linux) abstract name, and
//! `ipc://*` with a fresh path.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::endpoint::IpcAddr;
use crate::error::{fail, Error, Result};

/// A bound ipc listener; removes its socket file when dropped.
#[derive(Debug)]
pub(crate) struct IpcListener {
    pub listener: mio::net::UnixListener,
    file: Option<PathBuf>,
}

impl Drop for IpcListener {
    fn drop(&mut self) {
        if let Some(path) = &self.file {
            let _ = std::fs::remove_file(path);
        }
    }
}

static WILDCARD_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Binds `addr`, returning the listener and its endpoint text.
pub(crate) fn bind(addr: &IpcAddr) -> Result<(IpcListener, String)> {
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
            finish(l, Some(path.clone()), format!("ipc://{}", path.display()))
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

fn finish(
    l: std::os::unix::net::UnixListener,
    file: Option<PathBuf>,
    text: String,
) -> Result<(IpcListener, String)> {
    l.set_nonblocking(true)
        .map_err(|e| fail(Error::from_io(&e), e.to_string()))?;
    Ok((
        IpcListener {
            listener: mio::net::UnixListener::from_std(l),
            file,
        },
        text,
    ))
}

/// Connects (a local connect completes or fails at once).
pub(crate) fn connect(addr: &IpcAddr) -> io::Result<mio::net::UnixStream> {
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
