//! `ipc://`: Unix domain sockets, by path or (Linux) abstract name, and
//! `ipc://*` with a fresh path.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::endpoint::IpcAddr;
use crate::error::{fail, Error, Result};

/// A bound ipc listener; removes its socket file when dropped.
#[derive(Debug)]
pub(crate) struct IpcListener {
    pub listener: mio::net::UnixListener,
    file: Option<SocketFile>,
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
