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
    /// The I/O threads, `io_threads` of them, started on first use.
    reactors: OnceLock<Vec<Reactor>>,
    /// Held while the I/O threads start, so racing first uses start them
    /// once.
    starting: Mutex<()>,
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
                reactors: OnceLock::new(),
                starting: Mutex::new(()),
                inproc: Registry::default(),
                terminated: AtomicBool::new(false),
                open_sockets: Mutex::new(0),
                sockets_closed: Condvar::new(),
                io_threads: AtomicUsize::new(1),
                signals: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Number of I/O threads (1 unless set).
    pub fn get_io_threads(&self) -> Result<i32> {
        Ok(self.inner.io_threads.load(Ordering::Relaxed) as i32)
    }

    /// Sets the number of I/O threads the context starts when its first
    /// socket binds or connects over tcp, ipc or a fabric (later changes
    /// have no effect, as in libzmq). Each bind and connect goes to the
    /// least loaded thread (fewest listeners and connections); the
    /// connections a listener accepts stay on its thread. 0 is allowed for
    /// a context that only uses inproc: a tcp or ipc bind or connect then
    /// fails with EMTHREAD, as in libzmq.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// ctx.set_io_threads(2).unwrap();
    /// assert_eq!(ctx.get_io_threads().unwrap(), 2);
    /// assert!(ctx.set_io_threads(-1).is_err());
    /// ```
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
        for r in self.reactors_started() {
            r.shutdown_and_wait();
        }
        Ok(())
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.inner.terminated.load(Ordering::Acquire)
    }

    /// The I/O threads, started on first use.
    fn reactors(&self) -> Result<&[Reactor]> {
        if let Some(r) = self.inner.reactors.get() {
            return Ok(r);
        }
        let _starting = self
            .inner
            .starting
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(r) = self.inner.reactors.get() {
            return Ok(r);
        }
        let n = self.inner.io_threads.load(Ordering::Relaxed);
        let started = (0..n)
            .map(|i| Reactor::start(if n == 1 { 0 } else { i + 1 }))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| {
                crate::error::fail(Error::EMTHREAD, format!("cannot start an I/O thread: {e}"))
            })?;
        Ok(self.inner.reactors.get_or_init(|| started))
    }

    /// The least loaded I/O thread and its index, for a new bind or
    /// connect.
    pub(crate) fn reactor(&self) -> Result<(usize, &Reactor)> {
        self.reactors()?
            .iter()
            .enumerate()
            .min_by_key(|(_, r)| r.load())
            .ok_or_else(|| {
                crate::error::fail(
                    Error::EMTHREAD,
                    "io_threads is 0: this context has no I/O thread for tcp, ipc or fabric endpoints",
                )
            })
    }

    /// The I/O thread `index` (as [`Context::reactor`] returned it).
    pub(crate) fn reactor_at(&self, index: usize) -> Result<&Reactor> {
        self.reactors()?
            .get(index)
            .ok_or_else(|| crate::error::fail(Error::EMTHREAD, "no such I/O thread"))
    }

    /// A context whose I/O loop is `reactor`, not started on a thread (the
    /// deterministic tests step it by hand).
    #[cfg(test)]
    pub(crate) fn with_reactor(reactor: Reactor) -> Context {
        let ctx = Context::new();
        let _ = ctx.inner.reactors.set(vec![reactor]);
        ctx
    }

    /// The I/O threads if they were ever started.
    pub(crate) fn reactors_started(&self) -> &[Reactor] {
        self.inner.reactors.get().map_or(&[], |r| r.as_slice())
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
        for r in self.reactors.get().into_iter().flatten() {
            r.shutdown_and_wait();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::socket_type::SocketType;

    /// The names of this process's threads.
    fn thread_names() -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .collect()
    }

    /// Binds and connects go to the least loaded I/O thread: with three,
    /// three endpoints land on one each, and messages flow on all.
    #[test]
    fn each_bind_and_connect_goes_to_the_least_loaded_io_thread() {
        let ctx = Context::new();
        ctx.set_io_threads(3).unwrap();
        let pull = ctx.socket(SocketType::PULL).unwrap();
        pull.bind("tcp://127.0.0.1:*").unwrap();
        let ep = pull.get_last_endpoint().unwrap().unwrap();
        let loads = |ctx: &Context| -> Vec<usize> {
            ctx.reactors_started().iter().map(Reactor::load).collect()
        };
        assert_eq!(loads(&ctx).iter().sum::<usize>(), 1, "{:?}", loads(&ctx));
        let pushes: Vec<_> = (0..2)
            .map(|_| {
                let push = ctx.socket(SocketType::PUSH).unwrap();
                push.connect(&ep).unwrap();
                push
            })
            .collect();
        // Each connect went where nothing was yet. (Accepted connections
        // then join the listener's thread, so loads are at least 1 each.)
        assert!(loads(&ctx).iter().all(|l| *l >= 1), "{:?}", loads(&ctx));
        pull.set_rcvtimeo(5000).unwrap();
        for (i, push) in pushes.iter().enumerate() {
            push.send(format!("from {i}").as_str(), 0).unwrap();
        }
        let mut got: Vec<Vec<u8>> = (0..2).map(|_| pull.recv_bytes(0).unwrap()).collect();
        got.sort();
        assert_eq!(got, [b"from 0".to_vec(), b"from 1".to_vec()]);
        // (A thread names itself when it first runs: by now all have, as
        // each served a connection.)
        let names = thread_names();
        for n in ["fabriq-io-1", "fabriq-io-2", "fabriq-io-3"] {
            assert!(names.iter().any(|t| t == n), "{n} in {names:?}");
        }
    }

    #[test]
    fn without_io_threads_only_inproc_works() {
        let ctx = Context::new();
        ctx.set_io_threads(0).unwrap();
        let s = ctx.socket(SocketType::PULL).unwrap();
        assert_eq!(s.bind("tcp://127.0.0.1:*"), Err(Error::EMTHREAD));
        assert_eq!(s.connect("ipc://@fabriq-no-io"), Err(Error::EMTHREAD));
        s.bind("inproc://fabriq-no-io").unwrap();
        let p = ctx.socket(SocketType::PUSH).unwrap();
        p.connect("inproc://fabriq-no-io").unwrap();
        p.send("x", 0).unwrap();
        assert_eq!(s.recv_bytes(0).unwrap(), b"x");
    }
}
