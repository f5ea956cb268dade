//! A connection's engine behind a lock, shared by its session and the
//! socket's end of its pipe (see the engine module's documentation for
//! the speculative paths it offers the socket's thread).

use std::ops::{Deref, DerefMut};

use crate::pipe::{Flush, PeerIo, PullWait, Queue};
use crate::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

use super::super::{Clock, ReactorWaker};
use super::Engine;

/// A connection's engine behind a lock, shared by its session and the
/// socket's end of its pipe; empty while the session has no connection.
/// See the module documentation.
///
/// Only the session (the I/O thread that owns the connection) ever waits
/// for the lock. The socket's thread only `try_lock`s it: when the session
/// holds it, the session is in the middle of a turn that does the work the
/// socket wanted done (and a push the socket makes meanwhile wakes it for
/// another).
pub(crate) struct Link {
    engine: Mutex<Option<Box<dyn Engine>>>,
    /// Whether the engine in the slot writes a full pipe on the socket's
    /// thread ([`Engine::can_flush`]): set whenever the session lets go
    /// of the slot, read by [`PeerIo::flush`] without the lock, so a
    /// socket whose engine never does never touches it.
    flushable: AtomicBool,
    session: ReactorWaker,
    clock: Clock,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({:?})", self.session)
    }
}

/// The session's hold on the engine slot ([`Link::lock`]). Letting go
/// records whether the engine left in the slot can flush.
pub(crate) struct SlotGuard<'a> {
    guard: MutexGuard<'a, Option<Box<dyn Engine>>>,
    flushable: &'a AtomicBool,
}

impl Deref for SlotGuard<'_> {
    type Target = Option<Box<dyn Engine>>;
    fn deref(&self) -> &Self::Target {
        &self.guard
    }
}

impl DerefMut for SlotGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.guard
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let can = self.guard.as_ref().is_some_and(|e| e.can_flush());
        self.flushable.store(can, Ordering::Release);
    }
}

impl Link {
    pub(crate) fn new(session: ReactorWaker, clock: Clock) -> std::sync::Arc<Link> {
        std::sync::Arc::new(Link {
            engine: Mutex::new(None),
            flushable: AtomicBool::new(false),
            session,
            clock,
        })
    }

    /// The engine slot, for the session: the one caller that waits for it
    /// (at most for a speculative read or write the socket's thread is
    /// doing, which never waits for anything).
    pub(crate) fn lock(&self) -> SlotGuard<'_> {
        SlotGuard {
            guard: self.engine.lock().unwrap_or_else(|p| p.into_inner()),
            flushable: &self.flushable,
        }
    }
}

impl PeerIo for Link {
    fn wake(&self) {
        self.session.wake();
    }

    fn output_ready(&self, outbound: &Queue) {
        let written = match self.engine.try_lock() {
            Ok(mut slot) => slot
                .as_mut()
                .is_some_and(|e| e.output_ready(outbound, self.clock.now())),
            // The session holds the engine: it will write what is queued.
            Err(_) => false,
        };
        if !written {
            self.session.wake();
        }
    }

    fn flush(&self, outbound: &Queue) -> Flush {
        if !self.flushable.load(Ordering::Acquire) {
            return Flush::Nothing;
        }
        let Ok(mut slot) = self.engine.try_lock() else {
            // The session holds the engine, mid-turn: it writes what the
            // pipe holds before it lets go, and the push the caller is
            // about to make wakes it again if it already looked.
            return Flush::Busy;
        };
        let Some(engine) = slot.as_mut() else {
            return Flush::Nothing;
        };
        let deadline = engine.poll_timeout();
        let wrote = engine.flush(outbound, self.clock.now());
        // An engine that ended, or that now waits for a time the session
        // does not know of (a page held for the flush interval, a send to
        // retry), is the session's to finish.
        let wake = !engine.is_active()
            || engine
                .poll_timeout()
                .is_some_and(|t| deadline.map_or(true, |d| t < d));
        drop(slot);
        if wake {
            self.session.wake();
        }
        if wrote {
            Flush::Wrote
        } else {
            Flush::Nothing
        }
    }

    fn pull(&self, inbound: &Queue) -> bool {
        let Ok(mut slot) = self.engine.try_lock() else {
            // The session holds the engine: it is doing this very work
            // and will wake the socket.
            return false;
        };
        let Some(engine) = slot.as_mut() else {
            return false;
        };
        let pulled = engine.pull(inbound, self.clock.now());
        drop(slot);
        if pulled.hand_over {
            self.session.wake();
        }
        pulled.delivered > 0
    }

    fn pull_wait(&self, inbound: &Queue) -> Option<std::sync::Arc<dyn PullWait>> {
        // The session holds the engine: it is reading, and wakes the
        // socket with what it finds.
        let slot = self.engine.try_lock().ok()?;
        slot.as_ref()?.pull_wait(inbound)
    }
}

/// loom models of engine ownership between the socket's thread and the
/// I/O thread: the real [`Link`] (its `try_lock` protocol and hand-over
/// wake-ups), the real pipe queue and socket signal, and an engine whose
/// stream is a counter of messages waiting in the kernel. Run by
/// `scripts/test` with `RUSTFLAGS="--cfg loom"`.
#[cfg(all(test, loom))]
mod loom_models {
    use std::io;
    use std::sync::Arc;
    use std::time::Instant;

    use fabriq_zmtp::{Multipart, PeerInfo, ProtocolError};

    use super::super::{Input, Pulled, Reads};
    use super::*;
    use crate::pipe::Item;
    use crate::pipe::{PeerMeta, PipeEnd, Waker};
    use crate::signal::Signal;
    use crate::sync::AtomicUsize;
    use crate::sync::Ordering::SeqCst;
    use crate::topics::Topics;
    use crate::transport::Poller;

    /// An engine whose stream holds `wire` messages; a read takes at most
    /// `per_read` of them. Its wire takes `room` more messages.
    struct ModelEngine {
        wire: Arc<AtomicUsize>,
        per_read: usize,
        room: Arc<AtomicUsize>,
    }

    impl Engine for ModelEngine {
        fn ready(&mut self, _: bool, _: bool) {}
        fn read(&mut self, inbound: Option<&Queue>, reads: Reads, _: Instant) -> (Input, usize) {
            let mut delivered = 0;
            for _ in 0..reads.max {
                let took = self
                    .wire
                    .fetch_update(SeqCst, SeqCst, |n| Some(n - n.min(self.per_read)))
                    .unwrap();
                let took = took.min(self.per_read);
                if took == 0 {
                    return (Input::Idle, delivered);
                }
                // One push for what the read decoded, as StreamEngine does.
                let mut batch: Vec<Item> = (0..took).map(|_| Item::Msg(Multipart::new())).collect();
                inbound.unwrap().push_all(&mut batch);
                delivered += took;
            }
            let more = self.wire.load(SeqCst) > 0;
            (if more { Input::More } else { Input::Idle }, delivered)
        }
        fn write(
            &mut self,
            outbound: Option<&Queue>,
            _: Option<&mut Topics>,
            _: Instant,
        ) -> io::Result<()> {
            // As StreamEngine: take from the pipe what the wire takes (an
            // empty pop asks the pipe to wake us at the next push).
            while let Some(q) = outbound.filter(|_| self.room.load(SeqCst) > 0) {
                if q.pop().is_none() {
                    break;
                }
                self.room.fetch_sub(1, SeqCst);
            }
            Ok(())
        }
        fn can_flush(&self) -> bool {
            true
        }
        fn flush(&mut self, outbound: &Queue, now: Instant) -> bool {
            let room = self.room.load(SeqCst);
            self.write(Some(outbound), None, now).unwrap();
            self.room.load(SeqCst) < room
        }
        fn unsent(&self) -> usize {
            0
        }
        fn is_active(&self) -> bool {
            true
        }
        fn handshaken(&self) -> bool {
            true
        }
        fn peer(&self) -> Option<&PeerInfo> {
            None
        }
        fn peer_address(&self) -> String {
            String::new()
        }
        fn subscribe(&mut self, _: &[u8]) {}
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _: Instant) -> Result<(), ProtocolError> {
            Ok(())
        }
        fn end_of_input(&mut self) -> Option<ProtocolError> {
            None
        }
        fn monitor_value(&self) -> u32 {
            0
        }
        fn deregister(&mut self, _: &mut Poller<'_>) {}
        fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled {
            let reads = Reads {
                max: 1,
                speculative: true,
            };
            let (input, delivered) = self.read(Some(inbound), reads, now);
            Pulled {
                delivered,
                hand_over: matches!(input, Input::More),
            }
        }
        fn output_ready(&mut self, _: &Queue, _: Instant) -> bool {
            false
        }
    }

    struct Setup {
        reactor: crate::reactor::Reactor,
        link: Arc<Link>,
        wire: Arc<AtomicUsize>,
        room: Arc<AtomicUsize>,
        /// The socket's signal and the queue it reads from this peer.
        signal: Arc<Signal>,
        inbound: Arc<Queue>,
    }

    fn setup(wire_holds: usize, per_read: usize) -> Setup {
        let (reactor, _loop) =
            crate::reactor::Reactor::unstarted(Clock::default()).expect("a reactor");
        let link = Link::new(reactor.reactor_waker(1), Clock::default());
        let wire = Arc::new(AtomicUsize::new(wire_holds));
        let room = Arc::new(AtomicUsize::new(0));
        *link.lock() = Some(Box::new(ModelEngine {
            wire: wire.clone(),
            per_read,
            room: room.clone(),
        }));
        let signal = Arc::new(Signal::new().unwrap());
        let inbound = Queue::new(0, Waker::Socket(signal.clone()), Waker::Peer(link.clone()));
        Setup {
            reactor,
            link,
            wire,
            room,
            signal,
            inbound,
        }
    }

    /// The socket's end of a pipe to the model engine whose queue to the
    /// peer holds `hwm` messages.
    fn socket_end(s: &Setup, hwm: usize) -> PipeEnd {
        let outbound = Queue::new(
            hwm,
            Waker::Peer(s.link.clone()),
            Waker::Socket(s.signal.clone()),
        );
        PipeEnd {
            id: crate::pipe::next_pipe_id(),
            rx: s.inbound.clone(),
            tx: outbound,
            peer: PeerMeta {
                identity: Default::default(),
                metadata: None,
                all_groups: false,
                late: None,
            },
            peer_io: Some(s.link.clone()),
            reader: Default::default(),
        }
    }

    /// A socket that drops what does not fit (PUB, ROUTER) sends while
    /// the session runs a turn that writes: whichever thread holds the
    /// engine, the socket never waits for it, nothing is dropped while
    /// the wire has room, the pipe stays within twice its high-water
    /// mark, and what is left in it has the session woken.
    #[test]
    fn a_full_pipe_is_written_or_kept_and_nobody_waits() {
        loom::model(|| {
            let s = setup(0, 1);
            s.room.store(2, SeqCst);
            let end = socket_end(&s, 1);
            let session = {
                let (link, outbound) = (s.link.clone(), end.tx.clone());
                loom::thread::spawn(move || {
                    let mut slot = link.lock();
                    let engine = slot.as_mut().unwrap();
                    engine.write(Some(&outbound), None, Instant::now()).unwrap();
                })
            };
            let mut dropped = 0;
            for _ in 0..2 {
                if end.has_room_to_send() {
                    end.tx.push(Item::Msg(Multipart::new()));
                    assert!(end.tx.len() <= 2, "the pipe went past twice its HWM");
                } else {
                    dropped += 1;
                }
            }
            session.join().unwrap();
            assert_eq!(dropped, 0, "a message dropped while the wire had room");
            if end.tx.len() > 0 {
                let woken = s.reactor.shared.lock().ready.contains(&1);
                assert!(woken, "messages left in the pipe and nobody told");
            }
            drop(s.reactor);
        });
    }

    /// The session (I/O thread) reads what arrived while the socket's
    /// thread tries to read it first: whoever gets the engine, the
    /// message reaches the socket, or the socket's signal is up.
    #[test]
    fn a_message_is_read_by_one_thread_and_never_stranded() {
        loom::model(|| {
            let s = setup(0, 1);
            let session = {
                let (link, wire, inbound) = (s.link.clone(), s.wire.clone(), s.inbound.clone());
                loom::thread::spawn(move || {
                    // The peer's bytes arrive; the poller reports them and
                    // the session runs a turn.
                    wire.fetch_add(1, SeqCst);
                    let mut slot = link.lock();
                    let engine = slot.as_mut().unwrap();
                    let reads = Reads {
                        max: 4,
                        speculative: false,
                    };
                    engine.read(Some(&inbound), reads, Instant::now());
                })
            };
            // The socket: look, read on this thread if it may (with the
            // queue's wake-up withdrawn, as `PipeEnd::pull` does), look
            // again (which re-arms it), then sleep.
            s.signal.clear();
            let got = s.inbound.pop().is_some() || {
                s.inbound.stop_waiting();
                let _ = PeerIo::pull(&*s.link, &s.inbound);
                s.inbound.pop().is_some()
            };
            session.join().unwrap();
            if !got {
                assert!(
                    s.signal.would_wake(),
                    "the socket sleeps while its message waits"
                );
            }
            drop(s.reactor);
        });
    }

    /// A speculative read that leaves messages behind (its read budget
    /// ran out) hands the rest to the session: the session is woken.
    #[test]
    fn a_read_left_unfinished_on_the_socket_thread_wakes_the_session() {
        loom::model(|| {
            let s = setup(2, 1);
            let session = {
                let (link, inbound) = (s.link.clone(), s.inbound.clone());
                loom::thread::spawn(move || {
                    // A session turn that may run before or after the pull.
                    if let Ok(mut slot) = link.engine.try_lock() {
                        let reads = Reads {
                            max: 4,
                            speculative: false,
                        };
                        slot.as_mut()
                            .unwrap()
                            .read(Some(&inbound), reads, Instant::now());
                    }
                })
            };
            let _ = PeerIo::pull(&*s.link, &s.inbound);
            session.join().unwrap();
            if s.wire.load(SeqCst) > 0 {
                let woken = s.reactor.shared.lock().ready.contains(&1);
                assert!(woken, "messages left on the wire and nobody told");
            }
            drop(s.reactor);
        });
    }
}
