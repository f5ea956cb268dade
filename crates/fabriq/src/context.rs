//! `Context`: what sockets share. The I/O thread (started on the first
//! tcp/ipc use), the inproc endpoint registry, and termination.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::error::{err, Error, Result};
use crate::inproc::Registry;
use crate::reactor::Reactor;

/// Handle for a fabriq context; cheap to clone, shared by its sockets.
///
/// ```
/// let ctx = fabriq::Context::new();
/// let push = ctx.socket(fabriq::PUSH).unwrap();
/// let pull = ctx.socket(fabriq::PULL).unwrap();
/// pull.bind("inproc://doc-context").unwrap();
/// push.connect("inproc://doc-context").unwrap();
/// push.send("hi", 0).unwrap();
/// assert_eq!(pull.recv_bytes(0).unwrap(), b"hi");
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    reactor: OnceLock<Reactor>,
    pub(crate) inproc: Registry,
    terminated: AtomicBool,
    open_sockets: Mutex<usize>,
    sockets_closed: Condvar,
    io_threads: AtomicUsize,
    /// Every live socket's wake-up signal, so `destroy` can interrupt
    /// blocked calls with ETERM.
    pub(crate) signals: Mutex<HashMap<u64, Arc<crate::signal::Signal>>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("terminated", &self.is_terminated())
            .finish()
    }
}

impl Default for Context {
    fn default() -> Self {
        Context::new()
    }
}

impl Context {
    /// A new context. No thread starts until a socket binds or connects
    /// over tcp or ipc.
    pub fn new() -> Context {
        Context {
            inner: Arc::new(ContextInner {
                reactor: OnceLock::new(),
                inproc: Registry::default(),
                terminated: AtomicBool::new(false),
                open_sockets: Mutex::new(0),
                sockets_closed: Condvar::new(),
                io_threads: AtomicUsize::new(1),
                signals: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Number of I/O threads (always 1 in this release).
    pub fn get_io_threads(&self) -> Result<i32> {
        Ok(self.inner.io_threads.load(Ordering::Relaxed) as i32)
    }

    /// Sets the number of I/O threads. Values above 1 are accepted and
    /// recorded, but one thread serves all sockets in this release.
    pub fn set_io_threads(&self, value: i32) -> Result<()> {
        if value < 0 {
            return err(Error::EINVAL, "io_threads must not be negative");
        }
        self.inner
            .io_threads
            .store(value as usize, Ordering::Relaxed);
        Ok(())
    }

    /// Terminates the context: blocking calls on its sockets return ETERM,
    /// and this call waits until every socket has been dropped (and the
    /// linger period of their pending messages has passed).
    pub fn destroy(&mut self) -> Result<()> {
        self.inner.terminated.store(true, Ordering::Release);
        for signal in self.inner.lock_signals().values() {
            signal.raise();
        }
        let mut open = self
            .inner
            .open_sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        while *open > 0 {
            open = self
                .inner
                .sockets_closed
                .wait(open)
                .unwrap_or_else(|p| p.into_inner());
        }
        drop(open);
        if let Some(r) = self.inner.reactor.get() {
            r.shutdown_and_wait();
        }
        Ok(())
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.inner.terminated.load(Ordering::Acquire)
    }

    /// The I/O thread, started on first use.
    pub(crate) fn reactor(&self) -> Result<&Reactor> {
        if let Some(r) = self.inner.reactor.get() {
            return Ok(r);
        }
        let r = Reactor::start().map_err(|e| {
            crate::error::fail(Error::EMTHREAD, format!("cannot start the I/O thread: {e}"))
        })?;
        Ok(self.inner.reactor.get_or_init(|| r))
    }

    /// A context whose I/O loop is `reactor`, not started on a thread (the
    /// deterministic tests step it by hand).
    #[cfg(test)]
    pub(crate) fn with_reactor(reactor: Reactor) -> Context {
        let ctx = Context::new();
        let _ = ctx.inner.reactor.set(reactor);
        ctx
    }

    /// The I/O thread if it was ever started.
    pub(crate) fn reactor_started(&self) -> Option<&Reactor> {
        self.inner.reactor.get()
    }

    pub(crate) fn socket_opened(&self, id: u64, signal: Arc<crate::signal::Signal>) {
        *self
            .inner
            .open_sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner()) += 1;
        self.inner.lock_signals().insert(id, signal);
    }

    pub(crate) fn socket_closed(&self, id: u64) {
        self.inner.lock_signals().remove(&id);
        let mut open = self
            .inner
            .open_sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *open -= 1;
        if *open == 0 {
            self.inner.sockets_closed.notify_all();
        }
    }
}

impl ContextInner {
    fn lock_signals(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<crate::signal::Signal>>> {
        self.signals.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        // The last handle is gone, so every socket is closed: let the I/O
        // thread finish lingering sessions and exit.
        if let Some(r) = self.reactor.get() {
            r.shutdown_and_wait();
        }
    }
}
