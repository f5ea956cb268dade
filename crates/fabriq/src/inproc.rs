//! `inproc://`: sockets of one context joined by pipes directly, with no
//! I/O thread and no copies (message frames are `Bytes` handed over).
//!
//! Bind and connect may come in either order. A connect to a name nobody
//! has bound yet makes the pipe at once, so the connecting socket can
//! queue messages; the binder gets the other end when it binds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use bytes::Bytes;

use crate::error::{err, Error, Result};
use crate::mailbox::Mailbox;
use crate::pipe::{next_pipe_id, PeerMeta, PipeEnd, PipeId, Queue, Waker};
use crate::signal::Signal;

/// What inproc pipes take of a socket's options (`options.rs`): the
/// high-water marks, conflation, ROUTER's probe, and the routing id the
/// peer sees.
#[derive(Clone, Debug, Default)]
pub(crate) struct PipeOptions {
    /// The send high-water mark in messages, 0 for none.
    pub sndhwm: usize,
    /// The receive high-water mark in messages, 0 for none.
    pub rcvhwm: usize,
    pub conflate: bool,
    pub probe_router: bool,
    pub identity: Bytes,
}

/// Who sits at the bound end of a name.
#[derive(Clone)]
pub(crate) enum Binder {
    Socket {
        socket: Arc<Mailbox>,
        opts: Box<PipeOptions>,
    },
    /// A socket monitor's event sink.
    Monitor(Arc<crate::monitor::Sink>),
}

/// A connect that is waiting for its name to be bound.
struct Pending {
    /// The binder's end, ready to hand over.
    end: PipeEnd,
    /// Where the binder's wake-up signal goes once it exists.
    binder_signal: Arc<OnceLock<Arc<Signal>>>,
    connector_opts: PipeOptions,
}

/// The inproc names of one context: a cheap handle, shared by the context,
/// its sockets and their monitors.
#[derive(Default, Clone)]
pub(crate) struct Registry(Arc<Mutex<Names>>);

/// The names bound in one context and the connects waiting for them.
#[derive(Default)]
struct Names {
    bound: HashMap<String, Binder>,
    pending: HashMap<String, Vec<Pending>>,
    /// Every live inproc pipe, by id, so `disconnect` can close it.
    pipes: HashMap<PipeId, (Weak<Queue>, Weak<Queue>)>,
}

/// A [`Registry`] that does not keep the names alive (for options, which
/// the registry itself holds for bound sockets).
#[derive(Default, Clone)]
pub(crate) struct WeakRegistry(Weak<Mutex<Names>>);

impl Registry {
    pub(crate) fn downgrade(&self) -> WeakRegistry {
        WeakRegistry(Arc::downgrade(&self.0))
    }
}

impl WeakRegistry {
    pub(crate) fn upgrade(&self) -> Option<Registry> {
        self.0.upgrade().map(Registry)
    }
}

fn registry(reg: &Registry) -> MutexGuard<'_, Names> {
    reg.0.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn bind(
    reg: &Registry,
    socket: &Arc<Mailbox>,
    opts: &PipeOptions,
    name: &str,
) -> Result<()> {
    bind_binder(
        reg,
        name,
        Binder::Socket {
            socket: socket.clone(),
            opts: Box::new(opts.clone()),
        },
    )
}

pub(crate) fn bind_binder(reg: &Registry, name: &str, binder: Binder) -> Result<()> {
    let mut reg = registry(reg);
    if reg.bound.contains_key(name) {
        return err(
            Error::EADDRINUSE,
            format!("inproc://{name} is already bound in this context"),
        );
    }
    for p in reg.pending.remove(name).unwrap_or_default() {
        complete(p, &binder);
    }
    reg.bound.insert(name.to_string(), binder);
    Ok(())
}

/// Hands a waiting connect's far end to the binder.
fn complete(p: Pending, binder: &Binder) {
    match binder {
        Binder::Socket { socket, opts } => {
            // No socket-type check: libzmq's inproc has no handshake and
            // pairs any two types (its test_inproc_connect connects PAIRs
            // to a PULL); only the tcp/ipc handshake refuses a mismatch.
            let _ = p.binder_signal.set(socket.signal.clone());
            if opts.conflate {
                p.end.tx.set_conflate(true);
                p.end.rx.set_conflate(true);
            }
            p.end
                .tx
                .set_hwm_parts(Some(opts.sndhwm), Some(p.connector_opts.rcvhwm));
            p.end
                .rx
                .set_hwm_parts(Some(p.connector_opts.sndhwm), Some(opts.rcvhwm));
            if opts.probe_router {
                p.end.tx.push_probe();
            }
            socket.attach(p.end);
        }
        Binder::Monitor(sink) => {
            let _ = p.binder_signal.set(sink.signal.clone());
            sink.attach(p.end);
        }
    }
}

pub(crate) fn unbind(reg: &Registry, name: &str) {
    registry(reg).bound.remove(name);
}

/// Makes a pipe to `name` and returns the connecting socket's end.
pub(crate) fn connect(
    reg: &Registry,
    socket: &Arc<Mailbox>,
    opts: &PipeOptions,
    name: &str,
) -> PipeEnd {
    let mut reg = registry(reg);
    let binder_signal: Arc<OnceLock<Arc<Signal>>> = Arc::new(OnceLock::new());
    let (binder_identity, binder_opts) = match reg.bound.get(name) {
        Some(Binder::Socket { socket, opts }) => {
            let _ = binder_signal.set(socket.signal.clone());
            (opts.identity.clone(), Some((**opts).clone()))
        }
        Some(Binder::Monitor(sink)) => {
            let _ = binder_signal.set(sink.signal.clone());
            (Default::default(), None)
        }
        None => (Default::default(), None),
    };
    let us = Waker::Socket(socket.signal.clone());
    let them = Waker::Deferred(binder_signal.clone());
    let to_binder = Queue::new(0, them.clone(), us.clone());
    let to_us = Queue::new(0, us, them);
    // With the binder there, each direction holds both sides' HWMs; before
    // it binds, the connector's own (libzmq adds the binder's when it
    // binds, `complete` here).
    let (b_snd, b_rcv) = binder_opts.as_ref().map(|o| (o.sndhwm, o.rcvhwm)).unzip();
    to_binder.set_hwm_parts(Some(opts.sndhwm), b_rcv);
    to_us.set_hwm_parts(b_snd, Some(opts.rcvhwm));
    // Conflation is a property of the connecting socket's queues here;
    // a conflating binder sets it on its side when it takes the pipe.
    to_us.set_conflate(opts.conflate);
    to_binder.set_conflate(opts.conflate);
    if opts.probe_router {
        to_binder.push_probe();
    }
    let id = next_pipe_id();
    let ours = PipeEnd {
        id,
        rx: to_us.clone(),
        tx: to_binder.clone(),
        peer_io: None,
        reader: Default::default(),
        peer: PeerMeta {
            identity: binder_identity,
            metadata: None,
            all_groups: false,
            late: None,
        },
    };
    let theirs = PipeEnd {
        id: next_pipe_id(),
        rx: to_binder.clone(),
        tx: to_us.clone(),
        peer_io: None,
        reader: Default::default(),
        peer: PeerMeta {
            identity: opts.identity.clone(),
            metadata: None,
            all_groups: false,
            late: None,
        },
    };
    // Forget pipes both sockets have dropped, then remember this one.
    reg.pipes
        .retain(|_, (a, b)| a.strong_count() > 0 || b.strong_count() > 0);
    reg.pipes
        .insert(id, (Arc::downgrade(&to_us), Arc::downgrade(&to_binder)));
    let pending = Pending {
        end: theirs,
        binder_signal,
        connector_opts: opts.clone(),
    };
    match reg.bound.get(name).cloned() {
        Some(binder) => complete(pending, &binder),
        None => reg
            .pending
            .entry(name.to_string())
            .or_default()
            .push(pending),
    }
    ours
}

/// A pipe to the REP or ROUTER socket bound at `name`, for a session's
/// ZAP client: no high-water marks (libzmq disables them on its ZAP
/// pipe), and `wake` raised when the handler's reply arrives. `None` when
/// no such socket is bound there.
pub(crate) fn connect_handler(reg: &Registry, name: &str, wake: Waker) -> Option<PipeEnd> {
    let reg = registry(reg);
    let Some(Binder::Socket { socket, .. }) = reg.bound.get(name) else {
        return None;
    };
    if !matches!(
        socket.socket_type,
        fabriq_zmtp::SocketType::Rep | fabriq_zmtp::SocketType::Router
    ) {
        tracing::debug!(
            "inproc://{name} is bound by a {} socket, not a ZAP handler (REP or ROUTER)",
            socket.socket_type
        );
        return None;
    }
    let handler = Waker::Socket(socket.signal.clone());
    let to_handler = Queue::new(0, handler.clone(), wake.clone());
    let to_us = Queue::new(0, wake, handler);
    let anonymous = PeerMeta {
        identity: Default::default(),
        metadata: None,
        all_groups: false,
        late: None,
    };
    socket.attach(PipeEnd {
        id: next_pipe_id(),
        rx: to_handler.clone(),
        tx: to_us.clone(),
        peer_io: None,
        reader: Default::default(),
        peer: anonymous.clone(),
    });
    Some(PipeEnd {
        id: next_pipe_id(),
        rx: to_us,
        tx: to_handler,
        peer_io: None,
        reader: Default::default(),
        peer: anonymous,
    })
}

/// Closes an inproc pipe made by `connect`.
pub(crate) fn disconnect(reg: &Registry, pipe: PipeId) {
    if let Some((to_us, to_binder)) = registry(reg).pipes.remove(&pipe) {
        if let Some(q) = to_binder.upgrade() {
            q.close_writer();
        }
        if let Some(q) = to_us.upgrade() {
            // Drop what the binder sent us and mark its side gone too: our
            // end of the pipe is then finished, and the pattern forgets it
            // at its next look (close_writer raises our signal), as it
            // does for a tcp connection that ends.
            q.close_reader();
            q.close_writer();
        }
    }
}
