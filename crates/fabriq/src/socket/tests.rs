//! The socket's own waits, with a fake connection behind a pipe.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;

use fabriq_zmtp::{Part, SocketType as ZmtpType};

use super::Socket;
use crate::pipe::{next_pipe_id, Flush, Item, PeerIo, PeerMeta, PipeEnd, PullWait, Queue, Waker};
use crate::Context;

/// A connection whose input only a pull on the socket's thread can read,
/// and only once the socket's sleep saw its descriptor ring (as a fabric
/// node's completion queue is read after its doorbell rang). Nothing
/// ever raises the socket's signal for it.
#[derive(Debug)]
struct Bell {
    socket: UnixDatagram,
    /// A ring was taken and its input not pulled yet.
    rung: AtomicBool,
    /// Rings taken, and settles that followed (each after a look).
    taken: AtomicUsize,
    settled: AtomicUsize,
    /// What `settle` found not pulled (handed to the I/O thread).
    handed_back: AtomicUsize,
    /// Input is queued that does not make the descriptor readable (as
    /// completions already in a queue whose `fi_trywait` fails).
    queued: AtomicBool,
    /// `may_sleep`s that said true, less `woke`s: the thread as counted
    /// asleep (a fabric node's count of sleepers).
    asleep: AtomicIsize,
    /// `woke`s.
    woken: AtomicUsize,
}

impl Bell {
    fn new(socket: UnixDatagram) -> Bell {
        socket.set_nonblocking(true).unwrap();
        Bell {
            socket,
            rung: AtomicBool::new(false),
            taken: AtomicUsize::new(0),
            settled: AtomicUsize::new(0),
            handed_back: AtomicUsize::new(0),
            queued: AtomicBool::new(false),
            asleep: AtomicIsize::new(0),
            woken: AtomicUsize::new(0),
        }
    }
}

impl PullWait for Bell {
    fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    fn take(&self) -> bool {
        let mut buf = [0u8; 8];
        let mut any = false;
        while self.socket.recv(&mut buf).is_ok() {
            any = true;
        }
        any |= self.queued.swap(false, Ordering::AcqRel);
        if any {
            self.rung.store(true, Ordering::Release);
            self.taken.fetch_add(1, Ordering::AcqRel);
        }
        any
    }

    fn may_sleep(&self) -> bool {
        let may = !self.queued.load(Ordering::Acquire);
        if may {
            self.asleep.fetch_add(1, Ordering::AcqRel);
        }
        may
    }

    fn woke(&self) -> bool {
        self.asleep.fetch_sub(1, Ordering::AcqRel);
        self.woken.fetch_add(1, Ordering::AcqRel);
        false
    }

    fn settle(&self) {
        self.settled.fetch_add(1, Ordering::AcqRel);
        if self.rung.load(Ordering::Acquire) {
            self.handed_back.fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[derive(Debug)]
struct Behind {
    bell: Arc<Bell>,
    /// The engine is busy (held by its session): a pull reads nothing.
    busy: AtomicBool,
}

impl PeerIo for Behind {
    fn wake(&self) {}

    fn output_ready(&self, _outbound: &Queue) {}

    fn flush(&self, _outbound: &Queue) -> Flush {
        Flush::Nothing
    }

    fn pull(&self, inbound: &Queue) -> bool {
        if self.busy.load(Ordering::Acquire) || !self.bell.rung.swap(false, Ordering::AcqRel) {
            return false;
        }
        inbound.push(Item::Msg(
            [Part::copy_from_slice(b"pulled")].into_iter().collect(),
        ));
        true
    }

    fn pull_wait(&self, _inbound: &Queue) -> Option<Arc<dyn PullWait>> {
        Some(self.bell.clone())
    }
}

/// Attaches a pipe whose far end is `io` to `socket`.
fn attach(socket: &Socket, io: Arc<dyn PeerIo>) {
    attach_with(socket, io, 0);
}

/// Attaches a pipe whose far end is `io` to `socket`, its outgoing queue
/// bounded at `hwm` messages; returns that queue and the incoming one.
fn attach_with(socket: &Socket, io: Arc<dyn PeerIo>, hwm: usize) -> (Arc<Queue>, Arc<Queue>) {
    let signal = socket.shared.signal.clone();
    let rx = Queue::new(0, Waker::Socket(signal.clone()), Waker::Peer(io.clone()));
    let tx = Queue::new(hwm, Waker::Peer(io.clone()), Waker::Socket(signal));
    let queues = (tx.clone(), rx.clone());
    socket.shared.attach(PipeEnd {
        id: next_pipe_id(),
        rx,
        tx,
        peer: PeerMeta {
            identity: bytes::Bytes::new(),
            metadata: None,
            all_groups: false,
            late: None,
        },
        peer_io: Some(io),
        reader: Default::default(),
    });
    queues
}

/// A PULL (receive timeout `rcvtimeo_ms`) whose one connection is
/// [`Behind`] a [`Bell`], its engine `busy` or not; the socket, the end
/// that rings the bell, and the bell.
fn belled_pull(busy: bool, rcvtimeo_ms: i32) -> (Socket, UnixDatagram, Arc<Bell>) {
    let socket = Socket::new(Context::new(), ZmtpType::Pull).unwrap();
    socket.set_rcvtimeo(rcvtimeo_ms).unwrap();
    let (ringer, bell) = UnixDatagram::pair().unwrap();
    let bell = Arc::new(Bell::new(bell));
    let behind = Behind {
        bell: bell.clone(),
        busy: AtomicBool::new(busy),
    };
    attach(&socket, Arc::new(behind));
    (socket, ringer, bell)
}

/// A blocked receive sleeps on its connections' pull waits as well as on
/// its signal, and pulls when one rings: the message arrives though the
/// I/O thread never hands it over. (Before, the receive slept on the
/// signal alone and timed out.)
#[test]
fn a_blocked_receive_wakes_on_its_connections_pull_wait_and_pulls() {
    let (socket, ringer, bell) = belled_pull(false, 5_000);
    // Nothing to pull before the ring: the receive would block.
    assert_eq!(
        socket.recv_bytes(crate::DONTWAIT).unwrap_err(),
        crate::Error::EAGAIN
    );
    ringer.send(b"!").unwrap();
    assert_eq!(socket.recv_bytes(0).unwrap(), b"pulled");
    // The ring was taken, then settled after the look that pulled it:
    // nothing was handed back to the I/O thread.
    assert_eq!(bell.taken.load(Ordering::Acquire), 1);
    assert_eq!(bell.settled.load(Ordering::Acquire), 1);
    assert_eq!(bell.handed_back.load(Ordering::Acquire), 0);
    // The ring was consumed: the next receive waits again (and times out).
    socket.set_rcvtimeo(50).unwrap();
    assert_eq!(socket.recv_bytes(0).unwrap_err(), crate::Error::EAGAIN);
    assert_eq!(bell.taken.load(Ordering::Acquire), 1);
}

/// Input already queued that would not make the pull wait's descriptor
/// readable (`may_sleep` false) is taken at once and pulled, without a
/// sleep. (Before `may_sleep`, the receive slept on the silent
/// descriptor until its timeout.)
#[test]
fn a_pull_wait_that_may_not_sleep_is_taken_at_once() {
    let (socket, _ringer, bell) = belled_pull(false, 5_000);
    bell.queued.store(true, Ordering::Release);
    // Nothing rings: a receive that slept on the descriptor would time out.
    assert_eq!(socket.recv_bytes(0).unwrap(), b"pulled");
    assert_eq!(bell.taken.load(Ordering::Acquire), 1);
    assert_eq!(bell.settled.load(Ordering::Acquire), 1);
    assert_eq!(bell.handed_back.load(Ordering::Acquire), 0);
}

/// Every pull wait that said it may sleep is told it woke, once, on every
/// way out of the sleep: a ring, a timeout, and the decision not to sleep
/// because another connection's input was queued (a fabric node counts
/// its sleepers, and peers ring the sleepers' bell while the count is up:
/// a wait left counted would have its pages rung to a bell nobody
/// watches).
#[test]
fn every_wait_that_may_sleep_is_told_it_woke() {
    let socket = Socket::new(Context::new(), ZmtpType::Pull).unwrap();
    let mut bells = Vec::new();
    let mut ringers = Vec::new();
    for _ in 0..2 {
        let (ringer, bell) = UnixDatagram::pair().unwrap();
        let bell = Arc::new(Bell::new(bell));
        let behind = Behind {
            bell: bell.clone(),
            busy: AtomicBool::new(false),
        };
        attach(&socket, Arc::new(behind));
        bells.push(bell);
        ringers.push(ringer);
    }
    let asleep = |b: &Bell| b.asleep.load(Ordering::Acquire);
    let woken = |b: &Bell| b.woken.load(Ordering::Acquire);
    // The second's input is queued: taken at once, the first told it woke.
    socket.set_rcvtimeo(5_000).unwrap();
    bells[1].queued.store(true, Ordering::Release);
    assert_eq!(socket.recv_bytes(0).unwrap(), b"pulled");
    assert_eq!((asleep(&bells[0]), woken(&bells[0])), (0, 1));
    assert_eq!((asleep(&bells[1]), woken(&bells[1])), (0, 0));
    // Both sleep until the timeout: both told.
    socket.set_rcvtimeo(50).unwrap();
    assert_eq!(socket.recv_bytes(0).unwrap_err(), crate::Error::EAGAIN);
    assert!(woken(&bells[0]) >= 2 && woken(&bells[1]) >= 1);
    assert_eq!((asleep(&bells[0]), asleep(&bells[1])), (0, 0));
    // The first rings: both told, the first pulled.
    socket.set_rcvtimeo(5_000).unwrap();
    let before = woken(&bells[1]);
    ringers[0].send(b"!").unwrap();
    assert_eq!(socket.recv_bytes(0).unwrap(), b"pulled");
    assert!(woken(&bells[1]) > before);
    assert_eq!((asleep(&bells[0]), asleep(&bells[1])), (0, 0));
}

/// A ring the receive took but could not pull (the engine was busy) is
/// settled after that look, so it is handed back to the I/O thread rather
/// than lost; the receive then goes on waiting. (A settle skipped on the
/// EAGAIN path would leave `handed_back` at 0.)
#[test]
fn a_ring_the_receive_could_not_pull_is_handed_back() {
    let (socket, ringer, bell) = belled_pull(true, 200);
    ringer.send(b"!").unwrap();
    assert_eq!(socket.recv_bytes(0).unwrap_err(), crate::Error::EAGAIN);
    assert_eq!(bell.taken.load(Ordering::Acquire), 1);
    assert_eq!(bell.settled.load(Ordering::Acquire), 1);
    assert_eq!(bell.handed_back.load(Ordering::Acquire), 1);
}

/// A connection whose engine the I/O thread holds at every other flush
/// (`Flush::Busy`, the overdraft), and whose wire is full otherwise
/// (`Flush::Nothing`).
#[derive(Debug, Default)]
struct Alternating {
    flushes: AtomicUsize,
}

impl PeerIo for Alternating {
    fn wake(&self) {}

    fn output_ready(&self, _outbound: &Queue) {}

    fn flush(&self, _outbound: &Queue) -> Flush {
        if self.flushes.fetch_add(1, Ordering::AcqRel) % 2 == 0 {
            Flush::Busy
        } else {
            Flush::Nothing
        }
    }

    fn pull(&self, _inbound: &Queue) -> bool {
        false
    }
}

/// XPUB_NODROP never reports a message sent that it dropped: the room
/// its check found (here the overdraft of a busy engine) is what the send
/// uses. Before, the send asked the connection again, found the wire full
/// and dropped the message it then reported as sent (surface.rs
/// `xpub_nodrop` lost its last accepted message about one run in eight).
#[test]
fn xpub_nodrop_sends_what_it_accepted() {
    let ctx = Context::new();
    let socket = Socket::new(ctx, ZmtpType::XPub).unwrap();
    socket.set_xpub_nodrop(true).unwrap();
    let io = Arc::new(Alternating::default());
    let (to_peer, from_peer) = attach_with(&socket, io, 1);
    from_peer.push(Item::Subscribe(bytes::Bytes::new()));
    assert_eq!(socket.recv_bytes(0).unwrap(), b"\x01");
    socket.send("one", crate::DONTWAIT).unwrap();
    // The pipe is at its HWM: the check flushes (Busy: the overdraft
    // lets it take one more), the send must not ask again.
    let mut accepted = 1;
    for n in 0..4 {
        match socket.send(format!("more {n}").as_str(), crate::DONTWAIT) {
            Ok(()) => accepted += 1,
            Err(e) => assert_eq!(e, crate::Error::EAGAIN),
        }
    }
    assert_eq!(
        to_peer.len(),
        accepted,
        "every message reported sent is queued"
    );
    assert!(accepted >= 2, "the overdraft took one");
}
