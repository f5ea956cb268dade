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
mod routing;
mod stream;
mod subscribe;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use fabriq_zmtp::{Multipart, Part, SocketType};

use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId, PullWait};
use crate::signal::Signal;
pub(crate) use crate::topics::Topics;
pub(crate) use draft::{apply_prefix, routing_id_frame, take_prefix};

/// The routing rule of one socket type.
pub(crate) trait Pattern: Send {
    /// A new peer.
    fn attach(&mut self, pipe: PipeEnd, opts: &Options);

    /// Forgets pipes whose peer is gone and whose messages were all read.
    fn prune(&mut self, opts: &Options);

    /// Called with the first frame of an outgoing message: checks the
    /// state (EFSM), picks the destination, and says EAGAIN if nobody can
    /// take the message now. Once this succeeds, `send` cannot block.
    fn start_send(&mut self, first: &Part, opts: &Options) -> Result<()>;

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

    /// The routing id given to the newest pipe (SERVER, PEER), for
    /// PEER's `connect_peer`.
    fn last_routing_id(&self) -> Option<u32> {
        None
    }

    /// The routing id generated for the newest peer (STREAM), which
    /// libzmq's STREAM also stores as the socket's own `ZMQ_ROUTING_ID`.
    fn last_generated_id(&self) -> Option<bytes::Bytes> {
        None
    }

    /// Closes every pipe (the socket is closing).
    fn close_all(&mut self);

    /// What a blocked receive may sleep on beside the socket's signal
    /// ([`Pipes::pull_waits`]); patterns that never receive, or whose
    /// receives never pull, keep this default.
    fn pull_waits(&self, _out: &mut PullWaits) {}
}

/// The distinct [`PullWait`]s of a socket's pipes (at most
/// [`MAX_PUMPED_PIPES`]: connections of one fabric node share theirs).
#[derive(Debug, Default)]
pub(crate) struct PullWaits {
    list: Vec<Arc<dyn PullWait>>,
}

impl PullWaits {
    fn add(&mut self, wait: Arc<dyn PullWait>) {
        let fd = wait.fd().as_raw_fd();
        if self.list.len() < MAX_PUMPED_PIPES && !self.list.iter().any(|w| w.fd().as_raw_fd() == fd)
        {
            self.list.push(wait);
        }
    }

    /// The sources gathered.
    pub(crate) fn list(&self) -> &[Arc<dyn PullWait>] {
        &self.list
    }

    /// Forgets them all (keeps the room).
    pub(crate) fn clear(&mut self) {
        self.list.clear();
    }
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
        SocketType::Stream => Box::new(stream::Stream::new()),
        SocketType::Client => Box::new(draft::SinglePart(dealer::Dealer::default())),
        // PEER is not made (Context::socket has no way to ask for one);
        // SERVER's routing is the nearest.
        SocketType::Server | SocketType::Peer => Box::new(draft::Server::new()),
        SocketType::Scatter => Box::new(draft::SinglePart(push::Push::default())),
        SocketType::Gather => Box::new(draft::SinglePart(pull::Pull::default())),
        SocketType::Channel => Box::new(draft::SinglePart(pair::Pair::default())),
        SocketType::Radio => Box::new(draft::Radio::default()),
        SocketType::Dish => Box::new(draft::Dish::default()),
        // DGRAM: one pipe (its udp socket), two-frame messages; libzmq's
        // dgram_t keeps the first pipe and refuses others, as PAIR does.
        SocketType::Dgram => Box::new(pair::Pair::default()),
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

/// Hashes pipe ids (unique counters) with one multiplication: a PUB looks
/// its map up once per peer per message sent, where SipHash cost more than
/// the rest of the routing; `Pipes` once per message received.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: spreads sequential ids over the high bits too.
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type ByPipe<V> = HashMap<PipeId, V, BuildHasherDefault<IdHasher>>;

/// The pipes of a socket with the two classic schedules: fair queueing
/// for input and round-robin load balancing for output.
///
/// With more than a few pipes, input is fair-queued over a ring of the
/// pipes that may hold something, so a receive costs the same with ten
/// thousand idle peers as with none. A pipe leaves the ring when a look
/// finds it empty (which asks its writer for a wake-up) and comes back
/// when that wake-up names it: a pipe's writer that wakes the socket for
/// an item leaves the pipe's id in the socket's signal
/// ([`Signal::take_woken`]), once until the socket has taken it. libzmq's
/// `fq_t` does the same with its active pipes at the front of its list.
#[derive(Debug)]
pub(crate) struct Pipes {
    pub list: Vec<PipeEnd>,
    next_in: usize,
    next_out: usize,
    /// Where each pipe is in `list`, and whether it is in `ring`.
    slots: ByPipe<Slot>,
    /// The pipes that may hold something, in turn order (when in use).
    ring: VecDeque<PipeId>,
    /// `ring` is in use and complete: every pipe not in it was found empty
    /// and has its wake-up armed.
    ring_valid: bool,
    /// The ring is used above this many pipes; below, every look scans all
    /// pipes (and may read their connections on this thread).
    ring_above: usize,
    /// The signal the pipes' writers wake the socket with (its
    /// `take_woken` list); learnt from the first pipe.
    signal: Option<Arc<Signal>>,
    woken: Vec<PipeId>,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    in_ring: bool,
}

impl Default for Pipes {
    fn default() -> Self {
        Pipes {
            list: Vec::new(),
            next_in: 0,
            next_out: 0,
            slots: ByPipe::default(),
            ring: VecDeque::new(),
            ring_valid: false,
            ring_above: MAX_PUMPED_PIPES,
            signal: None,
            woken: Vec::new(),
        }
    }
}

impl Pipes {
    pub fn push(&mut self, pipe: PipeEnd) {
        pipe.rx.announce_as(pipe.id);
        if self.signal.is_none() {
            self.signal = pipe.rx.reader_signal();
        }
        let in_ring = self.ring_valid;
        if in_ring {
            self.ring.push_back(pipe.id);
        }
        let at = self.list.len();
        self.slots.insert(pipe.id, Slot { at, in_ring });
        self.list.push(pipe);
    }

    /// Takes the pipe at `i` out (the caller closes it).
    pub fn remove(&mut self, i: usize) -> PipeEnd {
        let pipe = self.list.remove(i);
        self.slots.remove(&pipe.id);
        self.reindex(i);
        self.fix_cursors();
        pipe
    }

    /// Removes dead pipes, returning them for pattern-specific cleanup.
    pub fn prune(&mut self) -> Vec<PipeEnd> {
        let mut dead = Vec::new();
        let mut i = 0;
        let mut first = None;
        while i < self.list.len() {
            if self.list[i].is_dead() {
                let pipe = self.list.remove(i);
                pipe.close();
                self.slots.remove(&pipe.id);
                first.get_or_insert(i);
                dead.push(pipe);
            } else {
                i += 1;
            }
        }
        if let Some(first) = first {
            self.reindex(first);
        }
        self.fix_cursors();
        if !self.ring_valid {
            // Nobody else takes the woken ids while the ring is not used:
            // take them here, so that they do not pile up (each pipe
            // leaves at most one until taken).
            self.take_woken();
        }
        dead
    }

    fn reindex(&mut self, from: usize) {
        for (at, pipe) in self.list.iter().enumerate().skip(from) {
            if let Some(slot) = self.slots.get_mut(&pipe.id) {
                slot.at = at;
            }
        }
    }

    fn fix_cursors(&mut self) {
        if self.next_in >= self.list.len() {
            self.next_in = 0;
        }
        if self.next_out >= self.list.len() {
            self.next_out = 0;
        }
    }

    pub fn index_of(&self, id: PipeId) -> Option<usize> {
        self.slots.get(&id).map(|s| s.at)
    }

    /// [`Pipes::index_of`], trying `at` first: where the pipe was when the
    /// caller last looked, which it still is unless pipes were added or
    /// removed since (a comparison instead of a hash lookup per message).
    #[inline]
    pub fn index_near(&self, id: PipeId, at: usize) -> Option<usize> {
        match self.list.get(at) {
            Some(pipe) if pipe.id == id => Some(at),
            _ => self.index_of(id),
        }
    }

    /// The next message, fairly across pipes (each pipe gets a turn per
    /// message, so one busy peer cannot starve the others).
    ///
    /// When every pipe is empty, the socket reads its connections itself
    /// (see `reactor/engine/mod.rs`) before giving up, so a receiver that keeps
    /// up with its peers never waits for the I/O thread. With many peers
    /// that costs a read per peer per empty look, so only sockets with a
    /// few connections do it; the others rely on the I/O thread alone.
    pub fn fair_recv(&mut self) -> Option<(usize, Item)> {
        if self.list.len() > self.ring_above {
            return self.ring_recv();
        }
        self.ring_valid = false;
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

    /// What a receiver may sleep on beside the socket's signal (see
    /// [`crate::pipe::PullWait`]): one per distinct source, from the pipes
    /// a receive pulls (none when there are more than
    /// [`MAX_PUMPED_PIPES`], which the I/O thread alone reads).
    pub fn pull_waits(&self, out: &mut PullWaits) {
        if self.list.len() > MAX_PUMPED_PIPES {
            return;
        }
        for pipe in &self.list {
            if let Some(wait) = pipe.pull_wait() {
                out.add(wait);
            }
        }
    }

    fn pop_next(&mut self) -> Option<(usize, Item)> {
        let n = self.list.len();
        for k in 0..n {
            let i = (self.next_in + k) % n;
            if let Some(item) = self.list[i].pop() {
                self.next_in = (i + 1) % n;
                return Some((i, item));
            }
        }
        None
    }

    /// [`Pipes::fair_recv`] over the ring of pipes that may hold
    /// something.
    fn ring_recv(&mut self) -> Option<(usize, Item)> {
        if !self.ring_valid {
            // From scanning to the ring: every pipe starts in it (a pipe
            // leaves only when a look from the ring found it empty).
            self.ring.clear();
            for pipe in &self.list {
                self.ring.push_back(pipe.id);
            }
            for slot in self.slots.values_mut() {
                slot.in_ring = true;
            }
            self.ring_valid = true;
        }
        self.take_woken();
        while let Some(id) = self.ring.pop_front() {
            let Some(slot) = self.slots.get_mut(&id) else {
                continue; // removed since
            };
            match self.list[slot.at].pop() {
                Some(item) => {
                    self.ring.push_back(id);
                    return Some((slot.at, item));
                }
                // That look armed the pipe's wake-up: the next item makes
                // its writer name it in the signal.
                None => slot.in_ring = false,
            }
        }
        None
    }

    /// Takes the ids of the pipes whose writers woke the socket, and puts
    /// them back in the ring (if it is in use). Each pipe's mark is
    /// cleared before it is looked at, so an item pushed after the look
    /// names the pipe again.
    fn take_woken(&mut self) {
        let Some(signal) = &self.signal else { return };
        signal.take_woken(&mut self.woken);
        for id in self.woken.drain(..) {
            let Some(slot) = self.slots.get_mut(&id) else {
                continue;
            };
            self.list[slot.at].rx.clear_announced();
            if self.ring_valid && !slot.in_ring {
                slot.in_ring = true;
                self.ring.push_back(id);
            }
        }
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

    /// Whether some pipe has room for a message; unlike
    /// [`Pipes::pick_out`] it takes no turn, so asking (`ZMQ_EVENTS`,
    /// poll) does not change which peer the next message goes to.
    pub fn has_room_out(&self) -> bool {
        self.list.iter().any(|p| p.tx.has_room())
    }

    pub fn close_all(&mut self) {
        for p in self.list.drain(..) {
            p.close();
        }
        self.slots.clear();
        self.ring.clear();
        self.ring_valid = false;
    }
}

/// The next data message, fair-queued; control items are skipped.
// Always inlined: left to LLVM it was sometimes called out of line (13
// instructions more per message, callgrind, inproc 64 B).
#[inline(always)]
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

/// Pipes for the tests: `n` pipes whose queues the socket `reader` reads.
#[cfg(test)]
fn test_pipes(n: usize, reader: &Arc<Signal>) -> (Pipes, Vec<Arc<crate::pipe::Queue>>) {
    use crate::pipe::{next_pipe_id, PeerMeta, Queue, Waker};
    let writer = Arc::new(Signal::new().unwrap());
    let mut pipes = Pipes {
        ring_above: 0,
        ..Pipes::default()
    };
    let mut queues = Vec::new();
    for _ in 0..n {
        let rx = Queue::new(
            0,
            Waker::Socket(reader.clone()),
            Waker::Socket(writer.clone()),
        );
        let tx = Queue::new(
            0,
            Waker::Socket(writer.clone()),
            Waker::Socket(reader.clone()),
        );
        queues.push(rx.clone());
        pipes.push(PipeEnd {
            id: next_pipe_id(),
            rx,
            tx,
            peer: PeerMeta {
                identity: bytes::Bytes::new(),
                metadata: None,
                all_groups: false,
                late: None,
            },
            peer_io: None,
            reader: Default::default(),
        });
    }
    (pipes, queues)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn msg(b: u8) -> Item {
        Item::Msg([Part::copy_from_slice(&[b])].into_iter().collect())
    }

    fn byte(item: Item) -> u8 {
        match item {
            Item::Msg(m) => m[0][0],
            _ => panic!("not a message"),
        }
    }

    /// Over the ring: busy pipes take turns, an idle pipe comes back when
    /// it receives, and removing pipes keeps the indexes right.
    #[test]
    fn the_ring_takes_turns_and_brings_idle_pipes_back() {
        let signal = Arc::new(Signal::new().unwrap());
        let (mut pipes, queues) = test_pipes(3, &signal);
        assert!(pipes.fair_recv().is_none()); // every pipe now idle
        for b in [1, 2, 3] {
            queues[0].push(msg(b));
        }
        queues[2].push(msg(30));
        queues[2].push(msg(31));
        // Pipe 1 gets nothing: it stays out of the ring.
        let mut got = Vec::new();
        while let Some((i, item)) = pipes.fair_recv() {
            got.push((i, byte(item)));
        }
        assert_eq!(got, [(0, 1), (2, 30), (0, 2), (2, 31), (0, 3)]);
        // An idle pipe that receives is back at once.
        queues[1].push(msg(20));
        assert_eq!(pipes.fair_recv().map(|(i, m)| (i, byte(m))), Some((1, 20)));
        assert!(pipes.fair_recv().is_none());
        // Remove the first pipe: the others keep their messages and ids.
        let first = pipes.list[0].id;
        let removed = pipes.remove(0);
        assert_eq!(removed.id, first);
        assert_eq!(pipes.index_of(first), None);
        queues[2].push(msg(32));
        let (i, m) = pipes.fair_recv().unwrap();
        assert_eq!((pipes.list[i].id, byte(m)), (pipes.list[1].id, 32));
        assert_eq!(pipes.index_of(pipes.list[1].id), Some(1));
    }

    /// Below the ring (a few pipes, scanned): pipes with messages take
    /// turns from the one after the last served, so a peer that sends
    /// again at once (a REQ answered) waits for the others' turns, as the
    /// compat matrix's rep_fair_queue expects of a REP but cannot time.
    #[test]
    fn scanned_pipes_take_turns_after_the_last_served() {
        let signal = Arc::new(Signal::new().unwrap());
        let (mut pipes, queues) = test_pipes(3, &signal);
        pipes.ring_above = MAX_PUMPED_PIPES;
        for b in [1, 2, 3] {
            queues[0].push(msg(b));
        }
        queues[1].push(msg(20));
        queues[2].push(msg(30));
        queues[2].push(msg(31));
        let mut got = Vec::new();
        while let Some((i, item)) = pipes.fair_recv() {
            got.push((i, byte(item)));
        }
        assert_eq!(got, [(0, 1), (1, 20), (2, 30), (0, 2), (2, 31), (0, 3)]);
        // Lock-step peers: each served one sends again at once, while the
        // others wait with theirs; nobody is served twice before the rest.
        for (k, q) in queues.iter().enumerate() {
            q.push(msg(k as u8));
        }
        let mut order = Vec::new();
        for _ in 0..9 {
            let (i, _) = pipes.fair_recv().expect("a request waits");
            order.push(i);
            queues[i].push(msg(i as u8));
        }
        assert_eq!(order, [1, 2, 0, 1, 2, 0, 1, 2, 0]);
    }

    /// A pipe's name waits in the signal at most once until taken, so a
    /// socket that never takes names (or takes them late) does not pile
    /// them up.
    #[test]
    fn a_pipe_is_named_once_until_its_name_is_taken() {
        let signal = Arc::new(Signal::new().unwrap());
        let (mut pipes, queues) = test_pipes(1, &signal);
        assert!(pipes.fair_recv().is_none());
        queues[0].push(msg(1));
        assert!(pipes.list[0].pop().is_some()); // read outside the ring
        assert!(pipes.list[0].pop().is_none()); // armed again
        queues[0].push(msg(2));
        let mut woken = Vec::new();
        signal.take_woken(&mut woken);
        assert_eq!(woken, [pipes.list[0].id], "named once for two wake-ups");
    }
}

/// loom model of the ring's hand-off (`RUSTFLAGS="--cfg loom"`): a pipe
/// that left the ring empty and then receives is named in the signal, so
/// a socket that clears its signal, looks, and would sleep is woken, and
/// its next look finds the items.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    #[test]
    fn an_idle_pipe_that_receives_is_looked_at_again() {
        loom::model(|| {
            let signal = Arc::new(Signal::new().unwrap());
            let (mut pipes, queues) = test_pipes(2, &signal);
            assert!(pipes.fair_recv().is_none()); // both idle, wake-ups armed
            let writer = {
                let q = queues[1].clone();
                loom::thread::spawn(move || {
                    q.push(Item::Msg(Multipart::new()));
                    q.push(Item::Msg(Multipart::new()));
                })
            };
            // The socket's loop (`Socket::wait_for`): clear, look; sleep
            // only if not raised.
            let mut got = 0;
            signal.clear();
            while pipes.fair_recv().is_some() {
                got += 1;
            }
            writer.join().unwrap();
            for _ in 0..2 {
                if got == 2 {
                    break;
                }
                assert!(signal.would_wake(), "sleeps with {} items queued", 2 - got);
                signal.clear();
                while pipes.fair_recv().is_some() {
                    got += 1;
                }
            }
            assert_eq!(got, 2);
        });
    }
}
