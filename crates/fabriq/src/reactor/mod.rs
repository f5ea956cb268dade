//! The I/O thread: one mio event loop per context that runs every
//! connection of a transport (sessions), the listeners, and the timers
//! (reconnects, handshakes, heartbeats).
//!
//! Application threads talk to it through a command queue and a
//! `mio::Waker`; pipes wake a session through [`ReactorWaker`], which
//! queues the session's token and wakes the loop only if it may be
//! asleep. Sessions talk to sockets through pipes and the socket mailbox.
//! Nothing here knows a transport: endpoints come as
//! [`Address`](crate::endpoint::Address)es whose transport binds and
//! connects.
//!
//! The loop reads time from a [`Clock`]: the system's, or in the
//! deterministic tests (`tests.rs`) a simulated one that the test moves,
//! with the loop stepped by hand rather than run on a thread.
//!
//! The parts: `handle.rs` is the [`Reactor`] that application threads
//! call (each call posts a command, defined here with the wake-ups),
//! `event_loop.rs` the loop that runs on the thread, `session.rs` one
//! connection's life, `engine/` what moves its messages, `clock.rs` the
//! loop's time.

mod clock;
mod engine;
mod event_loop;
mod handle;
mod session;
#[cfg(test)]
mod tests;

#[cfg(feature = "fuzzing")]
pub(crate) use engine::fabric::wire;
#[cfg(feature = "fuzzing")]
pub(crate) use engine::fabric::{addr, conn};

use engine::Link;

pub(crate) use clock::Clock;
pub(crate) use handle::Reactor;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mio::Token;

use crate::mailbox::Mailbox;
use crate::options::Options;
use crate::pipe::{PeerMeta, PipeEnd, Queue, Waker};
use crate::transport::{DataPath, Listener};

use session::Session;

const WAKER: Token = Token(0);

static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

fn next_token() -> usize {
    NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
}

/// Work handed to the I/O thread.
enum Cmd {
    Listen {
        token: usize,
        listener: Box<dyn Listener>,
        socket: Arc<Mailbox>,
        opts: Box<Options>,
        text: String,
        data_path: DataPath,
    },
    /// A session to run: a connect's, or a `udp://` socket's.
    Session(Box<Session>),
    Unbind(usize),
    /// A session to end, and who to tell once it has.
    Disconnect(usize, std::sync::mpsc::Sender<()>),
    CloseSocket {
        socket: u64,
        linger: i32,
        /// Told once the socket's listeners are closed (and their CLOSED
        /// events sent), for a monitored socket's close to wait on.
        done: Option<std::sync::mpsc::Sender<()>>,
    },
    Shutdown,
}

#[derive(Default)]
struct Inbox {
    cmds: Vec<Cmd>,
    ready: Vec<usize>,
}

struct Shared {
    waker: mio::Waker,
    inbox: Mutex<Inbox>,
    clock: Clock,
    /// How loaded the loop is, for choosing among several I/O threads:
    /// the listeners and sessions it had after its last turn (`live`)
    /// plus those handed to it and not taken yet (`posted - taken`).
    live: AtomicUsize,
    posted: AtomicUsize,
    taken: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn post(&self, f: impl FnOnce(&mut Inbox)) {
        let was_empty = {
            let mut inbox = self.lock();
            let empty = inbox.cmds.is_empty() && inbox.ready.is_empty();
            f(&mut inbox);
            empty
        };
        if was_empty {
            if let Err(e) = self.waker.wake() {
                tracing::error!("cannot wake the I/O thread: {e}");
            }
        }
    }
}

/// Wakes one session of the I/O thread (used by pipes).
#[derive(Clone)]
pub(crate) struct ReactorWaker {
    shared: Arc<Shared>,
    token: usize,
}

impl std::fmt::Debug for ReactorWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReactorWaker({})", self.token)
    }
}

impl ReactorWaker {
    pub(crate) fn wake(&self) {
        let token = self.token;
        self.shared.post(|inbox| inbox.ready.push(token));
    }
}

/// Builds the two ends of a session pipe. The session end's `rx` is the
/// socket's outgoing queue (bounded by SNDHWM), its `tx` the socket's
/// incoming queue (bounded by RCVHWM). The connection's engine is the
/// session side's waker, and the socket's end carries it too, so the
/// socket can ask it to read.
pub(super) fn make_pipe(
    link: &Arc<Link>,
    socket: &Arc<Mailbox>,
    opts: &Options,
    peer: Option<PeerMeta>,
) -> (PipeEnd, PipeEnd) {
    let session_waker = Waker::Peer(link.clone());
    let socket_waker = Waker::Socket(socket.signal.clone());
    let outgoing = Queue::new(
        Options::hwm(opts.sndhwm),
        session_waker.clone(),
        socket_waker.clone(),
    );
    let incoming = Queue::new(Options::hwm(opts.rcvhwm), socket_waker, session_waker);
    outgoing.set_conflate(opts.conflate);
    incoming.set_conflate(opts.conflate);
    if opts.probe_router {
        outgoing.push_probe();
    }
    let mut peer = peer.unwrap_or(PeerMeta {
        identity: Default::default(),
        metadata: None,
        all_groups: false,
        late: None,
    });
    if peer.metadata.is_none() {
        // Made before the handshake: the session fills this in.
        peer.late = Some(Arc::new(crate::message::LateMeta::default()));
    }
    let socket_end = PipeEnd {
        id: crate::pipe::next_pipe_id(),
        rx: incoming.clone(),
        tx: outgoing.clone(),
        peer: peer.clone(),
        peer_io: Some(link.clone()),
        reader: Default::default(),
    };
    let session_end = PipeEnd {
        id: socket_end.id,
        rx: outgoing,
        tx: incoming,
        peer,
        peer_io: None,
        reader: Default::default(),
    };
    (socket_end, session_end)
}
