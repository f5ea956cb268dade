//! Routing rules, one file per socket type. A pattern sees only pipes and
//! whole messages; it never knows which transport a pipe runs over.

mod dealer;
mod draft;
mod pair;
mod publish;
mod pull;
mod push;
mod rep;
mod req;
mod router;
mod subscribe;

use bytes::Bytes;
use fabriq_zmtp::{Multipart, SocketType};

use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};
pub(crate) use crate::topics::Topics;
pub(crate) use draft::{parse_routing_id, routing_id_frame};

/// The routing rule of one socket type.
pub(crate) trait Pattern: Send {
    /// A new peer.
    fn attach(&mut self, pipe: PipeEnd, opts: &Options);

    /// Forgets pipes whose peer is gone and whose messages were all read.
    fn prune(&mut self, opts: &Options);

    /// Called with the first frame of an outgoing message: checks the
    /// state (EFSM), picks the destination, and says EAGAIN if nobody can
    /// take the message now. Once this succeeds, `send` cannot block.
    fn start_send(&mut self, first: &Bytes, opts: &Options) -> Result<()>;

    /// Sends a whole message to the destination chosen by `start_send`.
    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()>;

    /// The next whole message for the application, or EAGAIN.
    fn recv(&mut self, opts: &Options) -> Result<Received>;

    /// Whether `start_send` would succeed now (POLLOUT).
    fn can_send(&mut self, opts: &Options) -> bool;

    /// SUB's subscribe/unsubscribe options.
    fn subscribe(&mut self, _topic: &[u8], _add: bool) -> Result<()> {
        err(
            Error::EINVAL,
            "subscribe/unsubscribe are options of SUB sockets only",
        )
    }

    /// DISH's join/leave (draft sockets).
    fn join(&mut self, _group: &[u8], _join: bool) -> Result<()> {
        err(Error::ENOTSUP, "join/leave are for DISH sockets only")
    }

    /// Closes every pipe (the socket is closing).
    fn close_all(&mut self);
}

/// A received message and the pipe it came from.
pub(crate) struct Received {
    pub msg: Multipart,
    /// The connection's metadata, for `Message::gets`.
    pub meta: Option<std::sync::Arc<crate::message::Metadata>>,
}

/// Makes the pattern for a socket type.
pub(crate) fn for_type(socket_type: SocketType) -> Box<dyn Pattern> {
    match socket_type {
        SocketType::Pair => Box::new(pair::Pair::default()),
        SocketType::Push => Box::new(push::Push::default()),
        SocketType::Pull => Box::new(pull::Pull::default()),
        SocketType::Dealer => Box::new(dealer::Dealer::default()),
        SocketType::Router => Box::new(router::Router::new()),
        SocketType::Req => Box::new(req::Req::default()),
        SocketType::Rep => Box::new(rep::Rep::default()),
        SocketType::Pub => Box::new(publish::Publish::new(false)),
        SocketType::XPub => Box::new(publish::Publish::new(true)),
        SocketType::Sub => Box::new(subscribe::Subscribe::new(false)),
        SocketType::XSub => Box::new(subscribe::Subscribe::new(true)),
        SocketType::Client => Box::new(draft::SinglePart(dealer::Dealer::default())),
        // PEER is not made (Context::socket has no way to ask for one);
        // SERVER's routing is the nearest.
        SocketType::Server | SocketType::Peer => Box::new(draft::Server::new()),
        SocketType::Scatter => Box::new(draft::SinglePart(push::Push::default())),
        SocketType::Gather => Box::new(draft::SinglePart(pull::Pull::default())),
        SocketType::Channel => Box::new(draft::SinglePart(pair::Pair::default())),
        SocketType::Radio => Box::new(draft::Radio::default()),
        SocketType::Dish => Box::new(draft::Dish::default()),
    }
}

pub(crate) fn not_supported<T>(socket_type: SocketType, what: &str) -> Result<T> {
    err(
        Error::ENOTSUP,
        format!("{socket_type} sockets cannot {what}"),
    )
}

/// Sockets with more connections than this never read them on the
/// application thread (see [`Pipes::fair_recv`]).
const MAX_PUMPED_PIPES: usize = 4;

/// The pipes of a socket with the two classic schedules: fair queueing
/// for input and round-robin load balancing for output.
#[derive(Debug, Default)]
pub(crate) struct Pipes {
    pub list: Vec<PipeEnd>,
    next_in: usize,
    next_out: usize,
}

impl Pipes {
    pub fn push(&mut self, pipe: PipeEnd) {
        self.list.push(pipe);
    }

    /// Removes dead pipes, returning them for pattern-specific cleanup.
    pub fn prune(&mut self) -> Vec<PipeEnd> {
        let mut dead = Vec::new();
        let mut i = 0;
        while i < self.list.len() {
            if self.list[i].is_dead() {
                let pipe = self.list.remove(i);
                pipe.close();
                dead.push(pipe);
            } else {
                i += 1;
            }
        }
        if self.next_in >= self.list.len() {
            self.next_in = 0;
        }
        if self.next_out >= self.list.len() {
            self.next_out = 0;
        }
        dead
    }

    pub fn index_of(&self, id: PipeId) -> Option<usize> {
        self.list.iter().position(|p| p.id == id)
    }

    /// The next message, fairly across pipes (each pipe gets a turn per
    /// message, so one busy peer cannot starve the others).
    ///
    /// When every pipe is empty, the socket reads its connections itself
    /// (see `reactor/engine.rs`) before giving up, so a receiver that keeps
    /// up with its peers never waits for the I/O thread. With many peers
    /// that costs a read per peer per empty look, so only sockets with a
    /// few connections do it; the others rely on the I/O thread alone.
    pub fn fair_recv(&mut self) -> Option<(usize, Item)> {
        if let Some(found) = self.pop_next() {
            return Some(found);
        }
        // Pump in the fair-queue order too, from the pipe whose turn it
        // is: starting at the first pipe every time let one busy peer's
        // connection be read over and over while another's waited for the
        // I/O thread (seen as a run of 185 messages from one DEALER).
        //
        // A pull stops the queue's wake-up first (what it delivers is
        // pushed by this very thread, which needs no eventfd write to
        // learn of it), so the look after it must re-arm the wake-ups of
        // every queue it finds empty: it always runs.
        let n = self.list.len();
        if n > MAX_PUMPED_PIPES {
            return None;
        }
        let _ = (0..n).any(|k| self.list[(self.next_in + k) % n].pull());
        self.pop_next()
    }

    fn pop_next(&mut self) -> Option<(usize, Item)> {
        let n = self.list.len();
        for k in 0..n {
            let i = (self.next_in + k) % n;
            if let Some(item) = self.list[i].rx.pop() {
                self.next_in = (i + 1) % n;
                return Some((i, item));
            }
        }
        None
    }

    /// The next pipe, round robin, that has room for a message.
    pub fn pick_out(&mut self) -> Option<usize> {
        let n = self.list.len();
        for k in 0..n {
            let i = (self.next_out + k) % n;
            if self.list[i].tx.has_room() {
                self.next_out = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    pub fn close_all(&mut self) {
        for p in self.list.drain(..) {
            p.close();
        }
    }
}

/// The next data message, fair-queued; control items are skipped.
pub(crate) fn fair_recv_msg(pipes: &mut Pipes) -> Result<Received> {
    while let Some((i, item)) = pipes.fair_recv() {
        if let Item::Msg(msg) = item {
            return Ok(Received {
                msg,
                meta: pipes.list[i].peer.metadata.clone(),
            });
        }
    }
    Err(Error::EAGAIN)
}
