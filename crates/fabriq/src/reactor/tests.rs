//! Deterministic tests of sessions, engines and the event loop, in the
//! manner of quinn-proto's `tests/util.rs`: real sockets of the public API
//! over the in-memory transport (`mem://`), the event loop stepped by hand
//! on the test's thread, and a simulated clock that moves only when a test
//! advances it. No ports, no sleeps, no second thread: every interleaving
//! of the socket's thread and the I/O thread is one the test chose.
//!
//! Raw peers ([`RawPeer`]) speak ZMTP through `fabriq_zmtp::Connection`
//! over a dialled `mem://` connection, so a test can stop answering, cut a
//! message in half or freeze, and check what the socket does about it.

use std::time::{Duration, Instant};

use fabriq_zmtp::{Config, Connection, Event as ZEvent, SocketType as ZType};

use super::event_loop::EventLoop;
use super::{Clock, Reactor};
use crate::transport::mem::{self, MemStream, Wire};
use crate::{Context, Socket, SocketEvent, DONTWAIT};

/// A context whose I/O thread is this test's thread.
struct Pair {
    clock: Clock,
    event_loop: EventLoop,
    ctx: Context,
}

impl Pair {
    fn new() -> Pair {
        let clock = Clock::simulated();
        let (reactor, event_loop) = Reactor::unstarted(clock.clone()).expect("a reactor");
        Pair {
            clock,
            event_loop,
            ctx: Context::with_reactor(reactor),
        }
    }

    fn socket(&self, kind: crate::SocketType) -> Socket {
        self.ctx.socket(kind).expect("a socket")
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Runs the loop until it has nothing to do at the current time.
    fn settle(&mut self) {
        for _ in 0..100_000 {
            self.event_loop.turn(Some(Duration::ZERO));
            let inbox_empty = {
                let inbox = self.event_loop.shared.lock();
                inbox.cmds.is_empty() && inbox.ready.is_empty()
            };
            let timer_due = self
                .event_loop
                .next_timer()
                .is_some_and(|t| t <= self.now());
            if self.event_loop.events.is_empty() && inbox_empty && !timer_due {
                return;
            }
        }
        panic!("the event loop did not settle");
    }

    /// Moves the clock forward by `by`, running every timer on the way at
    /// its own time.
    fn advance(&mut self, by: Duration) {
        let target = self.now() + by;
        loop {
            self.settle();
            match self.event_loop.next_timer() {
                Some(t) if t <= target => self.clock.advance_to(t),
                _ => break,
            }
        }
        self.clock.advance_to(target);
        self.settle();
    }

    /// Sessions alive in the loop.
    fn sessions(&self) -> usize {
        self.event_loop.sessions.len()
    }
}

/// Watches a socket's monitor events through a PAIR over inproc.
struct Monitor {
    pair: Socket,
}

impl Monitor {
    fn new(p: &Pair, socket: &Socket, name: &str) -> Monitor {
        let endpoint = format!("inproc://{name}");
        socket
            .monitor(&endpoint, SocketEvent::ALL as i32)
            .expect("monitor");
        let pair = p.socket(crate::PAIR);
        pair.connect(&endpoint).expect("connect the monitor");
        Monitor { pair }
    }

    /// The events delivered so far, as (event, value).
    fn take(&self) -> Vec<(SocketEvent, u32)> {
        let mut out = Vec::new();
        while let Ok(parts) = self.pair.recv_multipart(DONTWAIT) {
            let head = &parts[0];
            let event = SocketEvent::from_raw(u16::from_le_bytes([head[0], head[1]]));
            let value = u32::from_le_bytes([head[2], head[3], head[4], head[5]]);
            out.push((event, value));
        }
        out
    }
}

fn of(events: &[(SocketEvent, u32)], kind: SocketEvent) -> Vec<u32> {
    events
        .iter()
        .filter(|(e, _)| *e == kind)
        .map(|(_, v)| *v)
        .collect()
}

/// A ZMTP peer driven by the test over a dialled `mem://` connection.
struct RawPeer {
    stream: MemStream,
    conn: Connection,
    /// Events decoded so far and not yet taken.
    seen: Vec<ZEvent>,
    eof: bool,
}

impl RawPeer {
    fn dial(name: &str, kind: ZType, now: Instant) -> RawPeer {
        RawPeer {
            stream: mem::dial(name).expect("dial"),
            conn: Connection::new(Config::new(kind), now).expect("a connection"),
            seen: Vec::new(),
            eof: false,
        }
    }

    /// Reads what has arrived, lets the protocol handle it (a PING gets
    /// its PONG), and writes what the protocol has queued.
    fn pump(&mut self, now: Instant) {
        loop {
            match self.stream.read_some(1 << 16) {
                Ok(b) if b.is_empty() => {
                    self.eof = true;
                    break;
                }
                Ok(b) => self.conn.feed(&b, now),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.eof = true;
                    break;
                }
            }
        }
        while let Ok(Some(e)) = self.conn.poll_event() {
            self.seen.push(e);
        }
        let mut out = Vec::new();
        while self.conn.poll_transmit(&mut out, 1 << 20) > 0 {}
        if !out.is_empty() && !self.eof {
            self.stream.write_all(&out).expect("write");
        }
    }

    /// Pumps until the handshake completes.
    fn handshake(&mut self, p: &mut Pair) {
        for _ in 0..100 {
            self.pump(p.now());
            p.settle();
            self.pump(p.now());
            if self
                .seen
                .drain(..)
                .any(|e| matches!(e, ZEvent::HandshakeComplete))
            {
                return;
            }
        }
        panic!("the handshake did not complete");
    }
}

fn recv_all(s: &Socket) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Ok(m) = s.recv_bytes(DONTWAIT) {
        out.push(m);
    }
    out
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn reconnects_with_backoff_on_the_simulated_clock() {
    let mut p = Pair::new();
    let push = p.socket(crate::PUSH);
    push.set_reconnect_ivl(100).unwrap();
    push.set_reconnect_ivl_max(400).unwrap();
    let watch = Monitor::new(&p, &push, "backoff-mon");
    push.connect("mem://backoff").unwrap();
    push.send("queued before anyone listens", DONTWAIT).unwrap();
    p.settle();

    // Each refused attempt schedules the next one: the current interval
    // plus up to one base interval of jitter, the interval doubling up to
    // the maximum (libzmq's rule).
    let mut waits = Vec::new();
    for _ in 0..4 {
        let retried = of(&watch.take(), SocketEvent::CONNECT_RETRIED);
        assert_eq!(retried.len(), 1, "one retry per refused attempt");
        let wait = Duration::from_millis(retried[0] as u64);
        waits.push(retried[0]);
        // Nothing happens before the retry is due...
        p.advance(wait - MS);
        assert!(watch.take().is_empty(), "no attempt before it is due");
        // ...and the attempt runs at its time.
        p.advance(MS);
    }
    let floors = [100, 200, 400, 400];
    for (wait, floor) in waits.iter().zip(floors) {
        assert!(
            (floor..floor + 100).contains(wait),
            "waits {waits:?} against floors {floors:?}"
        );
    }

    // The peer appears: the next attempt connects and the queued message
    // is delivered.
    let pull = p.socket(crate::PULL);
    pull.bind("mem://backoff").unwrap();
    p.advance(Duration::from_millis(500));
    assert_eq!(
        recv_all(&pull),
        vec![b"queued before anyone listens".to_vec()]
    );
    let events = watch.take();
    assert_eq!(of(&events, SocketEvent::CONNECTED).len(), 1);
    assert_eq!(of(&events, SocketEvent::HANDSHAKE_SUCCEEDED).len(), 1);
}

#[test]
fn a_silent_peer_is_dropped_at_the_handshake_deadline() {
    let mut p = Pair::new();
    let pull = p.socket(crate::PULL);
    pull.set_handshake_ivl(500).unwrap();
    let watch = Monitor::new(&p, &pull, "silent-mon");
    pull.bind("mem://silent").unwrap();
    let mut raw = mem::dial("silent").unwrap();
    p.settle();
    assert_eq!(p.sessions(), 1);

    p.advance(Duration::from_millis(499));
    let greeting = raw.read_some(1024).expect("the socket's greeting");
    assert!(!greeting.is_empty());
    assert_eq!(p.sessions(), 1, "still inside the handshake interval");

    p.advance(MS);
    assert_eq!(p.sessions(), 0, "dropped at the deadline");
    assert!(matches!(raw.read_some(1024), Ok(b) if b.is_empty()));
    let events = watch.take();
    assert_eq!(
        of(&events, SocketEvent::HANDSHAKE_FAILED_NO_DETAIL).len(),
        1
    );
    assert_eq!(of(&events, SocketEvent::DISCONNECTED).len(), 1);
}

#[test]
fn heartbeats_drop_a_peer_that_stopped_answering() {
    let mut p = Pair::new();
    let pull = p.socket(crate::PULL);
    pull.set_heartbeat_ivl(100).unwrap();
    pull.set_heartbeat_timeout(300).unwrap();
    pull.bind("mem://frozen").unwrap();
    let mut peer = RawPeer::dial("frozen", ZType::Push, p.now());
    peer.handshake(&mut p);
    let start = p.now();

    // While the peer answers, the connection lives on.
    for _ in 0..10 {
        p.advance(Duration::from_millis(50));
        peer.pump(p.now());
        p.settle();
    }
    assert_eq!(p.sessions(), 1);
    assert!(!peer.eof);

    // The peer freezes (reads nothing, sends nothing): it is dropped once
    // the PING it did not answer has waited heartbeat_timeout.
    let frozen_at = p.now();
    p.advance(Duration::from_millis(299));
    assert_eq!(p.sessions(), 1, "not before the timeout");
    p.advance(Duration::from_millis(200));
    assert_eq!(p.sessions(), 0, "dropped within ivl + timeout of freezing");
    assert!(p.now() - frozen_at <= Duration::from_millis(500));
    assert!(p.now() - start >= Duration::from_millis(800));
}

#[test]
fn partial_writes_keep_every_message_whole_and_in_order() {
    let mut p = Pair::new();
    mem::set_wire(
        "trickle",
        Wire {
            max_write: 7,
            capacity: 64,
        },
    );
    let pull = p.socket(crate::PULL);
    pull.bind("mem://trickle").unwrap();
    let push = p.socket(crate::PUSH);
    push.connect("mem://trickle").unwrap();
    let sent: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            let len = (i as usize * 37) % 3000;
            (0..len).map(|j| (i as usize + j) as u8).collect()
        })
        .collect();
    let mut got = Vec::new();
    let mut next = 0;
    for _ in 0..100_000 {
        while next < sent.len() && push.send(&sent[next][..], DONTWAIT).is_ok() {
            next += 1;
        }
        p.settle();
        got.extend(recv_all(&pull));
        if got.len() == sent.len() {
            break;
        }
    }
    assert_eq!(got.len(), sent.len());
    assert!(got == sent, "every message whole and in order");
}

#[test]
fn a_slow_reader_holds_the_high_water_marks_and_loses_nothing() {
    let mut p = Pair::new();
    mem::set_wire(
        "slow",
        Wire {
            max_write: usize::MAX,
            capacity: 4096,
        },
    );
    let pull = p.socket(crate::PULL);
    pull.set_rcvhwm(10).unwrap();
    pull.bind("mem://slow").unwrap();
    let push = p.socket(crate::PUSH);
    push.set_sndhwm(10).unwrap();
    push.connect("mem://slow").unwrap();
    p.settle();

    let body = [7u8; 100];
    let mut sent = 0usize;
    // Send until a whole turn of the loop makes no room.
    for _ in 0..10_000 {
        let before = sent;
        while push.send(&body[..], DONTWAIT).is_ok() {
            sent += 1;
        }
        p.settle();
        if sent == before {
            break;
        }
    }
    // Both queues full, the wire full, one encoded batch in the engine,
    // and no more: the sender is held.
    let frame = body.len() + 2;
    let bound = 10 + 10 + 4096 / frame + super::engine::MAX_BATCH / frame + 2;
    assert!(sent >= 20, "sent {sent}");
    assert!(
        sent <= bound,
        "sent {sent} > {bound}: the HWMs did not hold"
    );
    assert_eq!(push.send(&body[..], DONTWAIT), Err(crate::Error::EAGAIN));

    let mut got = 0;
    for _ in 0..100_000 {
        got += recv_all(&pull).len();
        while sent < 5000 && push.send(&body[..], DONTWAIT).is_ok() {
            sent += 1;
        }
        p.settle();
        if sent >= 5000 && got == sent {
            break;
        }
    }
    assert_eq!(got, sent, "nothing lost once the reader caught up");
}

/// Sends `n` messages of 100 bytes from `router` to the peer `to`, the
/// I/O thread not running in between; returns how many the socket took.
fn route(router: &Socket, to: &[u8], n: usize) -> usize {
    let mut taken = 0;
    for i in 0..n {
        router.send(to, crate::SNDMORE | DONTWAIT).unwrap();
        if router.send(&numbered(i as u64)[..], DONTWAIT).is_ok() {
            taken += 1;
        }
    }
    taken
}

/// A 100-byte message that starts with its sequence number.
fn numbered(i: u64) -> [u8; 100] {
    let mut msg = [7u8; 100];
    msg[..8].copy_from_slice(&i.to_be_bytes());
    msg
}

/// Turns the loop `turns` times, collecting the sequence numbers of what
/// `s` receives meanwhile.
fn sequence(p: &mut Pair, s: &Socket, turns: usize) -> Vec<u64> {
    let mut got = Vec::new();
    for _ in 0..turns {
        p.settle();
        got.extend(
            recv_all(s)
                .iter()
                .map(|m| u64::from_be_bytes(m[..8].try_into().unwrap())),
        );
    }
    got
}

/// A ROUTER drops a message its peer's pipe has no room for, but a pipe
/// that is full only because the I/O thread has not run yet is written
/// out on the socket's thread first. Here the loop does not turn while
/// 30 messages go to a peer whose pipe holds 10: before, 20 were lost
/// (the zguide's `tripping` lost replies so, its I/O thread descheduled
/// on a loaded machine); now all arrive. A peer that reads nothing still
/// loses what exceeds its pipes, the wire and one encoded batch.
#[test]
fn a_router_drops_only_what_its_peer_does_not_take() {
    let mut p = Pair::new();
    mem::set_wire(
        "router-lag",
        Wire {
            max_write: usize::MAX,
            capacity: 4096,
        },
    );
    let router = p.socket(crate::ROUTER);
    router.set_sndhwm(10).unwrap();
    router.bind("mem://router-lag").unwrap();
    let dealer = p.socket(crate::DEALER);
    dealer.set_identity(b"C").unwrap();
    dealer.set_rcvhwm(10).unwrap();
    dealer.connect("mem://router-lag").unwrap();
    p.settle();
    // The ROUTER learns the peer's routing id from its first message.
    dealer.send("hello", DONTWAIT).unwrap();
    p.settle();
    assert_eq!(recv_all(&router), vec![b"C".to_vec(), b"hello".to_vec()]);

    // 30 messages, fewer than the wire holds, with no turn of the loop.
    assert_eq!(route(&router, b"C", 30), 30);
    let got = sequence(&mut p, &dealer, 100);
    assert_eq!(got, (0..30).collect::<Vec<_>>(), "every message, in order");

    // A peer that reads nothing: the HWM still holds, and drops the newest.
    let sent = 10_000;
    route(&router, b"C", sent);
    let got = sequence(&mut p, &dealer, 1000);
    let frame = 100 + 2;
    let bound = 10 + 10 + 4096 / frame + super::engine::MAX_BATCH / frame + 2;
    assert!(
        got.len() <= bound,
        "{} of {sent} arrived, bound {bound}: the HWMs did not hold",
        got.len()
    );
    assert!(got.len() > 10, "only {} arrived", got.len());
    assert_eq!(
        got,
        (0..got.len() as u64).collect::<Vec<_>>(),
        "what arrived is the oldest, in order"
    );
}

/// The same for PUB: a subscriber loses messages to its HWM only when it
/// does not keep up, not because the publisher's I/O thread was late.
#[test]
fn a_publisher_drops_only_what_its_subscriber_does_not_take() {
    let mut p = Pair::new();
    let publisher = p.socket(crate::PUB);
    publisher.set_sndhwm(10).unwrap();
    publisher.bind("mem://pub-lag").unwrap();
    let subscriber = p.socket(crate::SUB);
    subscriber.set_subscribe(b"").unwrap();
    subscriber.connect("mem://pub-lag").unwrap();
    p.settle();

    for i in 0..100 {
        publisher.send(&numbered(i)[..], DONTWAIT).unwrap();
    }
    let got = sequence(&mut p, &subscriber, 100);
    assert_eq!(got, (0..100).collect::<Vec<_>>(), "every message, in order");
}

/// The socket's thread never waits for an engine its I/O thread holds
/// (issue 30): a PUB whose pipe is at its HWM while the sessions are
/// mid-turn (the test holds their engines as a turn does) returns from
/// `send` at once and keeps what it sends, up to twice the HWM; the
/// session writes it when the turn ends. Before, `send` waited for the
/// engine's lock (here, on a thread that holds it: forever).
#[test]
fn a_send_at_the_hwm_does_not_wait_for_a_session_mid_turn() {
    let mut p = Pair::new();
    let publisher = p.socket(crate::PUB);
    publisher.set_sndhwm(10).unwrap();
    publisher.bind("mem://pub-busy").unwrap();
    let subscriber = p.socket(crate::SUB);
    subscriber.set_subscribe(b"").unwrap();
    subscriber.connect("mem://pub-busy").unwrap();
    p.settle();

    let links: Vec<_> = p
        .event_loop
        .sessions
        .values()
        .map(|s| s.link().clone())
        .collect();
    assert_eq!(links.len(), 2, "both ends connected");
    let held: Vec<_> = links.iter().map(|l| l.lock()).collect();
    let (done, sent) = std::sync::mpsc::channel();
    let sender = std::thread::spawn(move || {
        for i in 0..25 {
            publisher.send(&numbered(i)[..], DONTWAIT).unwrap();
        }
        done.send(()).unwrap();
        publisher
    });
    sent.recv_timeout(Duration::from_secs(10))
        .expect("send waited for an engine its I/O thread holds");
    let publisher = sender.join().unwrap();
    drop(held);

    let got = sequence(&mut p, &subscriber, 100);
    assert_eq!(
        got,
        (0..20).collect::<Vec<_>>(),
        "the oldest twice-the-HWM, in order"
    );
    drop(publisher);
}

#[test]
fn a_peer_that_dies_mid_message_delivers_nothing_of_it() {
    let mut p = Pair::new();
    let pull = p.socket(crate::PULL);
    pull.bind("mem://midway").unwrap();
    let good = p.socket(crate::PUSH);
    good.connect("mem://midway").unwrap();

    let mut bad = RawPeer::dial("midway", ZType::Push, p.now());
    bad.handshake(&mut p);
    // The first frame of a two-frame message and half of the second.
    let parts = [
        fabriq_zmtp::Part::from_static(b"first"),
        fabriq_zmtp::Part::from(vec![9u8; 1000]),
    ];
    bad.conn.send(&parts).unwrap();
    let mut wire = Vec::new();
    while bad.conn.poll_transmit(&mut wire, 1 << 20) > 0 {}
    bad.stream.write_all(&wire[..wire.len() - 500]).unwrap();
    p.settle();
    drop(bad);
    good.send("from the good peer", DONTWAIT).unwrap();
    p.settle();
    assert_eq!(recv_all(&pull), vec![b"from the good peer".to_vec()]);
    // The dead peer's session is gone, the good one stays.
    assert_eq!(p.sessions(), 2, "the good peer's two sessions");
}

#[test]
fn linger_keeps_a_session_until_its_deadline_then_lets_go() {
    let mut p = Pair::new();
    let push = p.socket(crate::PUSH);
    push.set_linger(200).unwrap();
    push.set_reconnect_ivl(50).unwrap();
    push.connect("mem://nobody").unwrap();
    push.send("never delivered", DONTWAIT).unwrap();
    p.settle();
    drop(push);
    p.settle();
    assert_eq!(p.sessions(), 1, "lingering with a message queued");
    p.advance(Duration::from_millis(199));
    assert_eq!(p.sessions(), 1);
    p.advance(MS);
    assert_eq!(p.sessions(), 0, "gone at the linger deadline");
}

#[test]
fn a_cut_connection_reconnects_and_resubscribes() {
    let mut p = Pair::new();
    let publisher = p.socket(crate::PUB);
    publisher.bind("mem://news").unwrap();
    let sub = p.socket(crate::SUB);
    sub.set_reconnect_ivl(100).unwrap();
    sub.set_subscribe(b"a").unwrap();
    sub.connect("mem://news").unwrap();
    p.settle();
    publisher.send("a1", DONTWAIT).unwrap();
    publisher.send("b1", DONTWAIT).unwrap();
    p.settle();
    assert_eq!(recv_all(&sub), vec![b"a1".to_vec()]);

    assert_eq!(mem::cut("news"), 1);
    p.settle();
    // Sent while the link is down: lost, as PUB promises.
    publisher.send("a2", DONTWAIT).unwrap();
    p.advance(Duration::from_millis(250));
    publisher.send("a3", DONTWAIT).unwrap();
    publisher.send("b3", DONTWAIT).unwrap();
    p.settle();
    assert_eq!(
        recv_all(&sub),
        vec![b"a3".to_vec()],
        "resubscribed to a only"
    );
}

#[test]
fn push_redelivers_what_it_still_held_after_the_peer_restarts() {
    let mut p = Pair::new();
    let push = p.socket(crate::PUSH);
    push.set_reconnect_ivl(100).unwrap();
    push.connect("mem://restart").unwrap();
    let pull = p.socket(crate::PULL);
    pull.bind("mem://restart").unwrap();
    p.settle();
    push.send("before", DONTWAIT).unwrap();
    p.settle();
    assert_eq!(recv_all(&pull), vec![b"before".to_vec()]);

    // The peer goes away; what is sent meanwhile waits in the pipe.
    drop(pull);
    p.settle();
    for i in 0..5 {
        push.send(format!("held {i}").as_str(), DONTWAIT).unwrap();
    }
    p.settle();
    let pull = p.socket(crate::PULL);
    pull.bind("mem://restart").unwrap();
    p.advance(Duration::from_millis(250));
    let got = recv_all(&pull);
    let want: Vec<Vec<u8>> = (0..5).map(|i| format!("held {i}").into_bytes()).collect();
    assert_eq!(got, want);
}

/// The socket's thread and the I/O thread race for a REQ/REP exchange:
/// the REQ writes inline (speculative write), the REP reads on its own
/// thread when it finds its pipe empty (speculative read), and the loop
/// runs in between at every possible point. Every schedule must complete
/// every round trip, in order, with nothing lost or doubled.
#[test]
fn both_speculative_paths_race_the_io_thread_in_every_schedule() {
    const ROUNDS: usize = 2;
    const STEPS: usize = 4 * ROUNDS;
    for schedule in 0u32..(1 << STEPS) {
        let mut p = Pair::new();
        let name = format!("race-{schedule}");
        let rep = p.socket(crate::REP);
        rep.bind(&format!("mem://{name}")).unwrap();
        let req = p.socket(crate::REQ);
        req.connect(&format!("mem://{name}")).unwrap();
        p.settle();

        // Steps in order; each may have to wait (EAGAIN) for the other
        // side. Bit `i` of the schedule: run the loop once before step i.
        let mut step = 0;
        let mut replies = Vec::new();
        for _ in 0..1000 {
            if step == STEPS {
                break;
            }
            if schedule & (1 << step) != 0 {
                p.event_loop.turn(Some(Duration::ZERO));
            }
            let round = step / 4;
            let done = match step % 4 {
                0 => req.send(format!("q{round}").as_str(), DONTWAIT).is_ok(),
                1 => match rep.recv_bytes(DONTWAIT) {
                    Ok(m) => {
                        assert_eq!(m, format!("q{round}").into_bytes());
                        true
                    }
                    Err(_) => false,
                },
                2 => rep.send(format!("r{round}").as_str(), DONTWAIT).is_ok(),
                _ => match req.recv_bytes(DONTWAIT) {
                    Ok(m) => {
                        replies.push(m);
                        true
                    }
                    Err(_) => false,
                },
            };
            if done {
                step += 1;
            } else {
                // The other side has not got there: let the loop run.
                p.event_loop.turn(Some(Duration::ZERO));
            }
        }
        assert_eq!(step, STEPS, "schedule {schedule:#b} stalled at step {step}");
        let want: Vec<Vec<u8>> = (0..ROUNDS).map(|r| format!("r{r}").into_bytes()).collect();
        assert_eq!(replies, want, "schedule {schedule:#b}");
    }
}

/// All connections of a `mem://` name share one readiness source: one
/// descriptor in the poller, fanned out by the loop to every session it
/// has work for (the shape of a fabric's completion queue).
#[test]
fn one_shared_source_fans_out_to_many_sessions() {
    let mut p = Pair::new();
    let pull = p.socket(crate::PULL);
    pull.bind("mem://fan").unwrap();
    let pushes: Vec<Socket> = (0..5)
        .map(|_| {
            let s = p.socket(crate::PUSH);
            s.connect("mem://fan").unwrap();
            s
        })
        .collect();
    p.settle();
    // Five connections, both ends registered: ten sessions, one source.
    assert_eq!(p.sessions(), 10);
    assert_eq!(p.event_loop.shared_sources.len(), 1);
    for (i, s) in pushes.iter().enumerate() {
        s.send(format!("from {i}").as_str(), DONTWAIT).unwrap();
    }
    p.settle();
    let mut got = recv_all(&pull);
    got.sort();
    let want: Vec<Vec<u8>> = (0..5).map(|i| format!("from {i}").into_bytes()).collect();
    assert_eq!(got, want);
    drop(pushes);
    drop(pull);
    p.advance(Duration::from_millis(10));
    assert_eq!(p.sessions(), 0);
    assert_eq!(
        p.event_loop.shared_sources.len(),
        0,
        "the source leaves the poller with its last connection"
    );
}

/// The soak's slow growth (docs/reliability.md): every turn of a session
/// asked for a wake-up at its next heartbeat, and each ask was a new entry
/// in the loop's timer heap, mostly for the same time. When the time came,
/// every duplicate drove the session, and each of those turns put a new
/// entry in for the next heartbeat: the duplicates never went away, and
/// the heap grew by one entry (24 bytes) per turn, for as long as the
/// connection lived. Counted here on the simulated clock: a heartbeating
/// PUSH/PULL pair over `mem://` moves 20,000 messages one at a time across
/// 10 s of heartbeats; the heap must stay at a few entries per session.
#[test]
fn the_timer_heap_stays_bounded_under_traffic_with_heartbeats() {
    let mut p = Pair::new();
    let pull = p.socket(crate::PULL);
    pull.set_heartbeat_ivl(100).unwrap();
    pull.set_heartbeat_timeout(300).unwrap();
    pull.bind("mem://timers").unwrap();
    let push = p.socket(crate::PUSH);
    push.set_heartbeat_ivl(100).unwrap();
    push.set_heartbeat_timeout(300).unwrap();
    push.connect("mem://timers").unwrap();
    p.settle();
    let mut most = 0;
    let mut got = 0u32;
    for round in 0..20_000u32 {
        push.send(&round.to_be_bytes()[..], 0).expect("send");
        p.settle();
        for m in recv_all(&pull) {
            assert_eq!(m, got.to_be_bytes(), "in order");
            got += 1;
        }
        if round % 40 == 39 {
            // 20 ms of simulated time every 40 messages: 10 s in all, a
            // hundred heartbeat intervals.
            p.advance(Duration::from_millis(20));
        }
        most = most.max(p.event_loop.timers.len());
    }
    assert_eq!(got, 20_000, "every message arrived");
    assert_eq!(p.sessions(), 2, "both connections lived through it");
    assert!(
        most <= 4 * p.sessions(),
        "the timer heap held {most} entries for {} sessions",
        p.sessions()
    );
}
