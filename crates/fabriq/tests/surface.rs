//! Socket behaviours of the zmq crate's surface that fabriq must have as
//! libzmq 4.3 has them (issue 14 item 1): PROBE_ROUTER, ROUTER_MANDATORY,
//! ROUTER_HANDOVER, CONNECT_TIMEOUT, proxy_steerable.
//!
//! Each scenario is a macro over two library paths, `fabriq` or `zmq`
//! (libzmq): the first is the library of the socket under test, the second
//! that of its peers. `cross!` runs it four ways (fabriq and libzmq each
//! with fabriq and libzmq peers), so libzmq with libzmq peers is the
//! reference the other three are held to.
//!
//! Ephemeral tcp ports only; every wait has a time limit.

// The zmq crate's proxy functions take `&mut Socket`, fabriq's `&Socket`;
// the scenarios are written for the zmq crate's.
#![allow(clippy::unnecessary_mut_passed)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Upper bound of any single wait for something that should happen.
const TIMEOUT_MS: i32 = 5000;

/// How long to watch for something that must not happen.
const QUIET_MS: i64 = 200;

fn deadline() -> Instant {
    Instant::now() + Duration::from_millis(TIMEOUT_MS as u64)
}

/// Runs scenario `$m` four ways: `$m!(library under test, peers' library)`.
macro_rules! cross {
    ($m:ident) => {
        mod $m {
            #[test]
            fn fabriq_with_fabriq_peers() {
                $m!(fabriq, fabriq);
            }
            #[test]
            fn fabriq_with_libzmq_peers() {
                $m!(fabriq, zmq);
            }
            #[test]
            fn libzmq_with_fabriq_peers() {
                $m!(zmq, fabriq);
            }
            #[test]
            fn libzmq_with_libzmq_peers() {
                $m!(zmq, zmq);
            }
        }
    };
}

/// A socket with bounded blocking calls and no linger.
macro_rules! sock {
    ($lib:ident, $ctx:expr, $t:ident) => {{
        let s = $ctx.socket($lib::$t).unwrap();
        s.set_linger(0).unwrap();
        s.set_rcvtimeo(crate::TIMEOUT_MS).unwrap();
        s.set_sndtimeo(crate::TIMEOUT_MS).unwrap();
        s
    }};
}

/// Binds to an ephemeral tcp port on loopback; the resolved endpoint.
macro_rules! bind_tcp {
    ($s:expr) => {{
        $s.bind("tcp://127.0.0.1:*").unwrap();
        $s.get_last_endpoint().unwrap().unwrap()
    }};
}

// ---- PROBE_ROUTER ----------------------------------------------------------

/// A DEALER, a REQ and a ROUTER with PROBE_ROUTER each send an empty
/// message when they connect: the ROUTER they reach learns their routing
/// id at once. A ROUTER that binds with the option probes each peer that
/// connects to it.
macro_rules! probe_router {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let router = sock!($b, cb, ROUTER);
        let endpoint = bind_tcp!(router);
        let mut probers = Vec::new();
        for (t, id) in [
            ($a::DEALER, &b"dealer"[..]),
            ($a::REQ, &b"req"[..]),
            ($a::ROUTER, &b"router"[..]),
        ] {
            let s = ca.socket(t).unwrap();
            s.set_linger(0).unwrap();
            s.set_identity(id).unwrap();
            s.set_probe_router(true).unwrap();
            s.connect(&endpoint).unwrap();
            assert_eq!(
                router
                    .recv_multipart(0)
                    .unwrap_or_else(|e| panic!("no probe from a {t:?}: {e}")),
                vec![id.to_vec(), Vec::new()],
                "the probe of a {t:?}"
            );
            probers.push(s);
        }
        // No probe without the option.
        let quiet = sock!($a, ca, DEALER);
        quiet.connect(&endpoint).unwrap();
        quiet.send("first", 0).unwrap();
        let got = router.recv_multipart(0).expect("the first message");
        assert_eq!(got[1..], [b"first".to_vec()]);

        // The binding side probes too, before anything it sends. (libzmq
        // attaches an accepted connection when the application next calls
        // into the socket, so the ROUTER receives first.)
        let bound = sock!($a, ca, ROUTER);
        bound.set_probe_router(true).unwrap();
        let endpoint = bind_tcp!(bound);
        let dealer = sock!($b, cb, DEALER);
        dealer.connect(&endpoint).unwrap();
        dealer.send("hello", 0).unwrap();
        let mut got = bound.recv_multipart(0).unwrap();
        assert_eq!(got[1..], [b"hello".to_vec()]);
        got[1] = b"reply".to_vec();
        bound.send_multipart(got, 0).unwrap();
        assert_eq!(dealer.recv_multipart(0).unwrap(), vec![Vec::<u8>::new()]);
        assert_eq!(dealer.recv_multipart(0).unwrap(), vec![b"reply".to_vec()]);
    }};
}
cross!(probe_router);

// ---- ROUTER_MANDATORY ------------------------------------------------------

/// EHOSTUNREACH for an unknown routing id (with or without DONTWAIT);
/// EAGAIN when the peer's pipe is full, at once with DONTWAIT and after
/// the send timeout without; the blocked send goes through once the peer
/// reads.
macro_rules! router_mandatory {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let router = sock!($a, ca, ROUTER);
        router.set_router_mandatory(true).unwrap();
        router.set_sndhwm(1).unwrap();
        let endpoint = bind_tcp!(router);
        for flags in [$a::DONTWAIT, 0] {
            assert_eq!(
                router.send_multipart([&b"nobody"[..], &b"x"[..]], flags),
                Err($a::Error::EHOSTUNREACH)
            );
        }
        let dealer = sock!($b, cb, DEALER);
        dealer.set_identity(b"d").unwrap();
        dealer.set_rcvhwm(1).unwrap();
        dealer.connect(&endpoint).unwrap();
        dealer.send("hello", 0).unwrap();
        assert_eq!(
            router.recv_multipart(0).unwrap(),
            vec![b"d".to_vec(), b"hello".to_vec()]
        );

        // The dealer reads nothing: the pipe, then the connection fill.
        let big = vec![7u8; 256 * 1024];
        let end = crate::deadline();
        let mut sent = 0;
        loop {
            match router.send_multipart([&b"d"[..], &big[..]], $a::DONTWAIT) {
                Ok(()) => sent += 1,
                Err(e) => {
                    assert_eq!(e, $a::Error::EAGAIN);
                    break;
                }
            }
            assert!(
                std::time::Instant::now() < end && sent < 10_000,
                "the peer never filled up ({sent} sent)"
            );
        }
        // A blocking send waits for room, up to the send timeout.
        router.set_sndtimeo(50).unwrap();
        loop {
            match router.send_multipart([&b"d"[..], &big[..]], 0) {
                Ok(()) => sent += 1,
                Err(e) => {
                    assert_eq!(e, $a::Error::EAGAIN);
                    break;
                }
            }
            assert!(std::time::Instant::now() < end && sent < 10_000);
        }

        // The dealer reads everything; a blocking send waits for room.
        for _ in 0..sent {
            assert_eq!(dealer.recv_bytes(0).unwrap().len(), big.len());
        }
        router.set_sndtimeo(crate::TIMEOUT_MS).unwrap();
        router.send_multipart([&b"d"[..], &b"last"[..]], 0).unwrap();
        assert_eq!(dealer.recv_bytes(0).unwrap(), b"last");
    }};
}
cross!(router_mandatory);

// ---- ROUTER_HANDOVER -------------------------------------------------------

/// With ROUTER_HANDOVER a new connection announcing a routing id already
/// in use takes it over: its messages come in under that id and replies
/// go to it. Without, the newcomer is refused.
macro_rules! router_handover {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        for handover in [true, false] {
            let router = sock!($a, ca, ROUTER);
            router.set_router_handover(handover).unwrap();
            let endpoint = bind_tcp!(router);
            let first = sock!($b, cb, DEALER);
            first.set_identity(b"x").unwrap();
            first.connect(&endpoint).unwrap();
            first.send("one", 0).unwrap();
            assert_eq!(
                router.recv_multipart(0).unwrap(),
                vec![b"x".to_vec(), b"one".to_vec()]
            );
            let second = sock!($b, cb, DEALER);
            second.set_identity(b"x").unwrap();
            second.connect(&endpoint).unwrap();
            second.send("two", 0).unwrap();
            if handover {
                assert_eq!(
                    router.recv_multipart(0).unwrap(),
                    vec![b"x".to_vec(), b"two".to_vec()]
                );
                router.send_multipart([&b"x"[..], &b"back"[..]], 0).unwrap();
                assert_eq!(second.recv_bytes(0).unwrap(), b"back");
                assert_eq!(first.poll($b::POLLIN, crate::QUIET_MS).unwrap(), 0);
            } else {
                // The first keeps the id; the second's message is dropped.
                first.send("three", 0).unwrap();
                assert_eq!(
                    router.recv_multipart(0).unwrap(),
                    vec![b"x".to_vec(), b"three".to_vec()]
                );
                router.send_multipart([&b"x"[..], &b"back"[..]], 0).unwrap();
                assert_eq!(first.recv_bytes(0).unwrap(), b"back");
                assert_eq!(router.poll($a::POLLIN, crate::QUIET_MS).unwrap(), 0);
                assert_eq!(second.poll($b::POLLIN, crate::QUIET_MS).unwrap(), 0);
            }
        }
    }};
}
cross!(router_handover);

// ---- CONNECT_TIMEOUT -------------------------------------------------------

/// A tcp listener that answers no connect: its accept queue is full (it
/// never accepts), so the kernel drops further SYNs and connects hang.
/// Returns the listener, the connections that filled it, and its address.
fn unanswering_listener() -> (TcpListener, Vec<TcpStream>, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut filled = Vec::new();
    let end = deadline();
    loop {
        assert!(Instant::now() < end, "the accept queue never filled");
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => filled.push(s),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
            Err(e) => panic!("connect: {e}"),
        }
        assert!(filled.len() < 5000, "the accept queue never filled");
    }
    (listener, filled, addr)
}

/// The events a monitor reported until `until` (or the deadline).
macro_rules! events_until {
    ($mon:expr, $until:expr) => {{
        let mut events = Vec::new();
        let end = std::time::Instant::now() + $until;
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero()
                || $mon
                    .poll(zmq_poll_in!($mon), left.as_millis() as i64)
                    .unwrap()
                    == 0
            {
                break;
            }
            let frames = $mon.recv_multipart(0).unwrap();
            events.push(u16::from_le_bytes([frames[0][0], frames[0][1]]));
        }
        events
    }};
}

/// A connect that does not complete within CONNECT_TIMEOUT is abandoned
/// (CLOSED) and tried again after the reconnect interval
/// (CONNECT_RETRIED), over and over; without the option the attempt just
/// waits on the kernel.
macro_rules! connect_timeout {
    ($a:ident, $b:ident) => {{
        let _ = stringify!($b);
        const CLOSED: u16 = 0x0080;
        const CONNECT_RETRIED: u16 = 0x0004;
        let (_listener, _filled, addr) = crate::unanswering_listener();
        let ctx = $a::Context::new();
        let mut watched = Vec::new();
        for (n, timeout) in [(0, 100), (1, 0)] {
            let s = sock!($a, ctx, DEALER);
            s.set_connect_timeout(timeout).unwrap();
            s.set_reconnect_ivl(100).unwrap();
            let name = format!("inproc://connect-timeout-{}-{n}", stringify!($a));
            s.monitor(&name, (CLOSED | CONNECT_RETRIED) as i32).unwrap();
            let mon = sock!($a, ctx, PAIR);
            mon.connect(&name).unwrap();
            s.connect(&format!("tcp://{addr}")).unwrap();
            watched.push((s, mon));
        }
        // With the timeout: CLOSED, CONNECT_RETRIED, twice over, well
        // within the time a kernel connect takes to fail.
        let mut seen = Vec::new();
        let end = crate::deadline();
        while seen.len() < 4 {
            assert!(std::time::Instant::now() < end, "events: {seen:?}");
            seen.extend(events_until!(
                watched[0].1,
                std::time::Duration::from_millis(100)
            ));
        }
        assert_eq!(
            seen[..4],
            [CLOSED, CONNECT_RETRIED, CLOSED, CONNECT_RETRIED]
        );
        // Without: nothing (the kernel retries its SYN after 1 s).
        assert_eq!(
            events_until!(
                watched[1].1,
                std::time::Duration::from_millis(crate::QUIET_MS as u64)
            ),
            Vec::<u16>::new()
        );
    }};
}

/// `POLLIN` of the library a socket comes from, by the socket's type.
macro_rules! zmq_poll_in {
    ($s:expr) => {
        crate::PollIn::poll_in(&$s)
    };
}

/// Picks `POLLIN` of the right library for a socket.
trait PollIn {
    type Events;
    fn poll_in(&self) -> Self::Events;
}

impl PollIn for fabriq::Socket {
    type Events = fabriq::PollEvents;
    fn poll_in(&self) -> fabriq::PollEvents {
        fabriq::POLLIN
    }
}

impl PollIn for zmq::Socket {
    type Events = zmq::PollEvents;
    fn poll_in(&self) -> zmq::PollEvents {
        zmq::POLLIN
    }
}

mod connect_timeout {
    #[test]
    fn fabriq() {
        connect_timeout!(fabriq, fabriq);
    }

    #[test]
    fn libzmq() {
        connect_timeout!(zmq, zmq);
    }
}

// ---- proxy_steerable -------------------------------------------------------

/// The 8 STATISTICS frames as numbers.
fn statistics(frames: Vec<Vec<u8>>) -> Vec<u64> {
    assert_eq!(frames.len(), 8, "{frames:?}");
    frames
        .iter()
        .map(|f| u64::from_ne_bytes(f[..].try_into().unwrap()))
        .collect()
}

/// PAUSE holds messages in the proxy's sockets, RESUME lets them go,
/// STATISTICS answers the counts (also while paused), TERMINATE ends the
/// proxy with success. `$a` runs the proxy, `$b` its clients.
macro_rules! proxy_steerable {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let (tx, rx) = std::sync::mpsc::channel();
        let proxy_ctx = ca.clone();
        let proxy = std::thread::spawn(move || {
            let mut front = sock!($a, proxy_ctx, PULL);
            let mut back = sock!($a, proxy_ctx, PUSH);
            let mut control = sock!($a, proxy_ctx, PAIR);
            let endpoints = [bind_tcp!(front), bind_tcp!(back), bind_tcp!(control)];
            tx.send(endpoints).unwrap();
            $a::proxy_steerable(&mut front, &mut back, &mut control)
        });
        let [front, back, control_endpoint] = rx
            .recv_timeout(std::time::Duration::from_millis(crate::TIMEOUT_MS as u64))
            .unwrap();
        let push = sock!($b, cb, PUSH);
        push.connect(&front).unwrap();
        let pull = sock!($b, cb, PULL);
        pull.connect(&back).unwrap();
        let control = sock!($b, cb, PAIR);
        control.connect(&control_endpoint).unwrap();

        push.send("a", 0).unwrap();
        assert_eq!(pull.recv_bytes(0).unwrap(), b"a");
        control.send("PAUSE", 0).unwrap();
        control.send("STATISTICS", 0).unwrap();
        let stats = crate::statistics(control.recv_multipart(0).unwrap());
        assert_eq!(stats, [1, 1, 0, 0, 0, 0, 1, 1]);
        push.send("bc", 0).unwrap();
        assert_eq!(pull.poll($b::POLLIN, crate::QUIET_MS).unwrap(), 0);
        control.send("RESUME", 0).unwrap();
        assert_eq!(pull.recv_bytes(0).unwrap(), b"bc");
        control.send("STATISTICS", 0).unwrap();
        let stats = crate::statistics(control.recv_multipart(0).unwrap());
        assert_eq!(stats, [2, 3, 0, 0, 0, 0, 2, 3]);
        control.send("TERMINATE", 0).unwrap();
        assert_eq!(proxy.join().unwrap(), Ok(()));
    }};
}
cross!(proxy_steerable);

// ---- XPUB options ------------------------------------------------------------

/// The XPUB options the zmq crate has no setter for, on both libraries
/// (libzmq's through `zmq_setsockopt`).
trait XpubOptions {
    fn xpub_option(&mut self, name: &str, on: bool);
}

impl XpubOptions for fabriq::Socket {
    fn xpub_option(&mut self, name: &str, on: bool) {
        match name {
            "verboser" => self.set_xpub_verboser(on),
            "manual" => self.set_xpub_manual(on),
            "nodrop" => self.set_xpub_nodrop(on),
            _ => unreachable!("{name}"),
        }
        .unwrap();
    }
}

impl XpubOptions for zmq::Socket {
    fn xpub_option(&mut self, name: &str, on: bool) {
        let option = match name {
            "verboser" => zmq_sys::ZMQ_XPUB_VERBOSER,
            "manual" => zmq_sys::ZMQ_XPUB_MANUAL,
            "nodrop" => zmq_sys::ZMQ_XPUB_NODROP,
            _ => unreachable!("{name}"),
        };
        let value: std::os::raw::c_int = on.into();
        // SAFETY: a live libzmq socket, an int option with its size.
        let rc = unsafe {
            zmq_sys::zmq_setsockopt(
                self.as_mut_ptr(),
                option as std::os::raw::c_int,
                (&value as *const std::os::raw::c_int).cast(),
                std::mem::size_of::<std::os::raw::c_int>(),
            )
        };
        assert_eq!(rc, 0, "zmq_setsockopt({name})");
    }
}

/// XPUB_VERBOSE hands up every subscription but only the last
/// unsubscription of a topic; XPUB_VERBOSER every unsubscription too;
/// setting XPUB_VERBOSE again turns the verbose unsubscriptions off.
/// What is not handed up is shown by a later message from the same peer
/// arriving first.
macro_rules! xpub_verbose {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let mut xpub = sock!($a, ca, XPUB);
        xpub.set_xpub_verbose(true).unwrap();
        let endpoint = bind_tcp!(xpub);
        let subs: Vec<_> = (0..2).map(|_| sock!($b, cb, SUB)).collect();
        for s in &subs {
            s.connect(&endpoint).unwrap();
            s.set_subscribe(b"t").unwrap();
            assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01t");
        }
        // VERBOSE: sub 0's cancellation is not handed up (sub 1 has t).
        subs[0].set_unsubscribe(b"t").unwrap();
        subs[0].set_subscribe(b"m").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01m");
        // VERBOSER: it is.
        crate::XpubOptions::xpub_option(&mut xpub, "verboser", true);
        subs[0].set_subscribe(b"t").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01t");
        subs[0].set_unsubscribe(b"t").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00t");
        // VERBOSE again: not any more.
        xpub.set_xpub_verbose(true).unwrap();
        subs[0].set_subscribe(b"t").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01t");
        subs[0].set_unsubscribe(b"t").unwrap();
        subs[0].set_subscribe(b"n").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01n");
        // The last subscriber of t cancels: handed up either way.
        subs[1].set_unsubscribe(b"t").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00t");
    }};
}
cross!(xpub_verbose);

/// XPUB_WELCOME_MSG goes to each new subscriber first; an empty one is
/// no welcome at all.
macro_rules! xpub_welcome {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        for welcome in ["welcome", ""] {
            let xpub = sock!($a, ca, XPUB);
            xpub.set_xpub_welcome_msg(Some(welcome)).unwrap();
            // Every subscription handed up, the second one's too.
            xpub.set_xpub_verbose(true).unwrap();
            let endpoint = bind_tcp!(xpub);
            let mut subs = Vec::new();
            for _ in 0..2 {
                let sub = sock!($b, cb, SUB);
                sub.set_subscribe(b"").unwrap();
                sub.connect(&endpoint).unwrap();
                assert_eq!(xpub.recv_bytes(0).expect("subscription"), b"\x01");
                xpub.send("news", 0).unwrap();
                if !welcome.is_empty() {
                    assert_eq!(sub.recv_bytes(0).expect("welcome"), welcome.as_bytes());
                }
                assert_eq!(sub.recv_bytes(0).expect("news"), b"news");
                // (Kept: one that leaves is an unsubscription at the XPUB.)
                subs.push(sub);
            }
        }
    }};
}
cross!(xpub_welcome);

/// XPUB_MANUAL: subscriptions are handed up and not applied; the XPUB's
/// own `set_subscribe` applies one for the peer last heard from (without
/// XPUB_MANUAL that is EINVAL); a peer that leaves has its requested
/// topics cancelled.
macro_rules! xpub_manual {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let mut xpub = sock!($a, ca, XPUB);
        assert_eq!(xpub.set_subscribe(b"x"), Err($a::Error::EINVAL));
        crate::XpubOptions::xpub_option(&mut xpub, "manual", true);
        let endpoint = bind_tcp!(xpub);
        let sub = sock!($b, cb, SUB);
        sub.connect(&endpoint).unwrap();
        sub.set_subscribe(b"weather").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01weather");
        xpub.send("weather 1: not applied yet", 0).unwrap();
        xpub.set_subscribe(b"weather").unwrap();
        xpub.send("weather 2", 0).unwrap();
        assert_eq!(sub.recv_bytes(0).unwrap(), b"weather 2");
        // A second identical subscription is handed up too.
        let other = sock!($b, cb, SUB);
        other.connect(&endpoint).unwrap();
        other.set_subscribe(b"weather").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01weather");
        // The application cancels for the peer last heard from (other):
        // sub still gets weather.
        xpub.set_unsubscribe(b"weather").unwrap();
        xpub.send("weather 3", 0).unwrap();
        assert_eq!(sub.recv_bytes(0).unwrap(), b"weather 3");
        assert_eq!(other.poll($b::POLLIN, crate::QUIET_MS).unwrap(), 0);
        // A subscriber that leaves: its request comes back cancelled.
        drop(other);
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00weather");
    }};
}
cross!(xpub_manual);

/// XPUB_NODROP: once a subscriber is full, sends say EAGAIN (DONTWAIT at
/// once, blocking ones after the send timeout) and nothing is lost: the
/// subscriber gets every message that was accepted, in order. Without
/// it the publisher never refuses.
macro_rules! xpub_nodrop {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let mut xpub = sock!($a, ca, XPUB);
        crate::XpubOptions::xpub_option(&mut xpub, "nodrop", true);
        xpub.set_sndhwm(1).unwrap();
        let endpoint = bind_tcp!(xpub);
        let sub = sock!($b, cb, SUB);
        sub.set_rcvhwm(1).unwrap();
        sub.set_subscribe(b"").unwrap();
        sub.connect(&endpoint).unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01");
        // Unmatched messages are not held back by a full subscriber.
        let mut big = vec![0u8; 256 * 1024];
        let end = crate::deadline();
        let mut sent: u32 = 0;
        for flags in [$a::DONTWAIT, 0] {
            if flags == 0 {
                xpub.set_sndtimeo(50).unwrap();
            }
            loop {
                big[..4].copy_from_slice(&sent.to_be_bytes());
                match xpub.send(&big[..], flags) {
                    Ok(()) => sent += 1,
                    Err(e) => {
                        assert_eq!(e, $a::Error::EAGAIN);
                        break;
                    }
                }
                assert!(
                    std::time::Instant::now() < end && sent < 10_000,
                    "the subscriber never filled up ({sent} sent)"
                );
            }
        }
        for n in 0..sent {
            let got = sub
                .recv_bytes(0)
                .unwrap_or_else(|e| panic!("message {n} of {sent} accepted: {e}"));
            assert_eq!(got[..4], n.to_be_bytes(), "message {n} of {sent}");
        }
        xpub.set_sndtimeo(crate::TIMEOUT_MS).unwrap();
        xpub.send("last", 0).unwrap();
        assert_eq!(sub.recv_bytes(0).unwrap(), b"last");

        // Without NODROP: never EAGAIN, whatever the subscriber reads.
        crate::XpubOptions::xpub_option(&mut xpub, "nodrop", false);
        for _ in 0..(2 * sent + 20) {
            xpub.send(&big[..], $a::DONTWAIT).unwrap();
        }
    }};
}
cross!(xpub_nodrop);

// ---- STREAM ------------------------------------------------------------------

/// Reads from a raw tcp peer until `want` bytes came (bounded).
fn read_exactly(peer: &mut TcpStream, want: usize) -> Vec<u8> {
    use std::io::Read;
    peer.set_read_timeout(Some(Duration::from_millis(TIMEOUT_MS as u64)))
        .unwrap();
    let mut got = vec![0u8; want];
    peer.read_exact(&mut got).unwrap();
    got
}

/// Receives `[id, data]` messages from a STREAM until the data from `id`
/// adds up to `want` bytes (tcp may split them); returns them joined.
macro_rules! stream_recv_data {
    ($s:expr, $id:expr, $want:expr) => {{
        let mut data = Vec::new();
        while data.len() < $want {
            let m = $s.recv_multipart(0).unwrap();
            assert_eq!(m.len(), 2, "{m:?}");
            assert_eq!(m[0], $id);
            assert!(!m[1].is_empty(), "a notice in the middle of data");
            data.extend_from_slice(&m[1]);
        }
        data
    }};
}

/// A STREAM bound to tcp with plain `std::net::TcpStream` peers: a notice
/// `[id, ""]` when each connects and when it goes away, its bytes as
/// `[id, data]`, `[id, data]` written raw, `[id, ""]` closing it, a new
/// id per connection, EHOSTUNREACH for an unknown id; inproc refused.
macro_rules! stream_with_tcp_clients {
    ($a:ident) => {{
        use std::io::{Read, Write};
        let ctx = $a::Context::new();
        let stream = sock!($a, ctx, STREAM);
        let endpoint = bind_tcp!(stream);
        let addr = endpoint.strip_prefix("tcp://").unwrap().to_string();

        let mut first = std::net::TcpStream::connect(&addr).unwrap();
        let notice = stream.recv_multipart(0).unwrap();
        assert_eq!(notice.len(), 2);
        assert!(notice[1].is_empty(), "{notice:?}");
        let id = notice[0].clone();
        assert!(!id.is_empty());
        first.write_all(b"hello stream").unwrap();
        assert_eq!(stream_recv_data!(stream, id, 12), b"hello stream");
        stream
            .send_multipart([&id[..], &b"raw reply"[..]], 0)
            .unwrap();
        assert_eq!(crate::read_exactly(&mut first, 9), b"raw reply");

        let second = std::net::TcpStream::connect(&addr).unwrap();
        let notice = stream.recv_multipart(0).unwrap();
        assert!(notice[1].is_empty(), "{notice:?}");
        let id2 = notice[0].clone();
        assert_ne!(id2, id);
        // The peer goes: a notice.
        drop(second);
        assert_eq!(
            stream.recv_multipart(0).unwrap(),
            vec![id2.clone(), Vec::new()]
        );
        assert_eq!(
            stream.send_multipart([&b"nobody"[..], &b"x"[..]], $a::DONTWAIT),
            Err($a::Error::EHOSTUNREACH)
        );

        // [id, ""] closes the connection: the peer reads the end.
        stream.send_multipart([&id[..], &b"bye"[..]], 0).unwrap();
        stream.send_multipart([&id[..], &b""[..]], 0).unwrap();
        assert_eq!(crate::read_exactly(&mut first, 3), b"bye");
        // (libzmq finishes the close when the application next calls into
        // the socket; fabriq does not wait for that.)
        first
            .set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        let end = crate::deadline();
        loop {
            stream.get_events().unwrap();
            match first.read(&mut [0u8; 16]) {
                Ok(0) => break,
                Ok(n) => panic!("{n} more bytes"),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("read: {e}"),
            }
            assert!(
                std::time::Instant::now() < end,
                "the connection stayed open"
            );
        }
        let name = format!("inproc://stream-{}", stringify!($a));
        assert_eq!(
            ctx.socket($a::STREAM).unwrap().bind(&name).is_err(),
            stringify!($a) == "fabriq"
        );
    }};
}

/// A STREAM that connects to a plain tcp listener.
macro_rules! stream_connects_to_tcp_server {
    ($a:ident) => {{
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ctx = $a::Context::new();
        let stream = sock!($a, ctx, STREAM);
        stream.connect(&format!("tcp://{addr}")).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let notice = stream.recv_multipart(0).unwrap();
        assert!(notice[1].is_empty(), "{notice:?}");
        let id = notice[0].clone();
        stream.send_multipart([&id[..], &b"GET /"[..]], 0).unwrap();
        assert_eq!(crate::read_exactly(&mut server, 5), b"GET /");
        server.write_all(b"200 OK").unwrap();
        assert_eq!(stream_recv_data!(stream, id, 6), b"200 OK");
        drop(server);
        assert_eq!(stream.recv_multipart(0).unwrap(), vec![id, Vec::new()]);
    }};
}

/// A connecting STREAM that closes its connection with `[id, ""]` does
/// not reconnect (libzmq ends that session); one whose server goes away
/// does.
macro_rules! stream_close_does_not_reconnect {
    ($a:ident) => {{
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ctx = $a::Context::new();
        let stream = sock!($a, ctx, STREAM);
        stream.set_reconnect_ivl(10).unwrap();
        stream.connect(&format!("tcp://{addr}")).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let id = stream.recv_multipart(0).unwrap()[0].clone();
        // The server goes away: a notice, and the STREAM connects again.
        drop(server);
        assert_eq!(stream.recv_multipart(0).unwrap(), vec![id, Vec::new()]);
        (server, _) = listener.accept().unwrap();
        let id = stream.recv_multipart(0).unwrap()[0].clone();
        // The STREAM closes: the server reads the end, and no new
        // connection comes.
        stream.send_multipart([&id[..], &b""[..]], 0).unwrap();
        server
            .set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        let end = crate::deadline();
        loop {
            stream.get_events().unwrap();
            match server.read(&mut [0u8; 16]) {
                Ok(0) => break,
                Ok(n) => panic!("{n} bytes"),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("read: {e}"),
            }
            assert!(
                std::time::Instant::now() < end,
                "the connection stayed open"
            );
        }
        listener.set_nonblocking(true).unwrap();
        let quiet =
            std::time::Instant::now() + std::time::Duration::from_millis(crate::QUIET_MS as u64);
        while std::time::Instant::now() < quiet {
            stream.get_events().unwrap();
            match listener.accept() {
                Ok(_) => panic!("the STREAM reconnected"),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("accept: {e}"),
            }
            assert_eq!(stream.poll($a::POLLIN, 10).unwrap(), 0);
        }
    }};
}

mod stream_tcp {
    #[test]
    fn fabriq_close_does_not_reconnect() {
        stream_close_does_not_reconnect!(fabriq);
    }

    #[test]
    fn libzmq_close_does_not_reconnect() {
        stream_close_does_not_reconnect!(zmq);
    }

    /// fabriq's STREAM over ipc, with a plain Unix socket client.
    #[test]
    fn fabriq_over_ipc() {
        use std::io::Write;
        let ctx = fabriq::Context::new();
        let stream = sock!(fabriq, ctx, STREAM);
        stream.bind("ipc://*").unwrap();
        let endpoint = stream.get_last_endpoint().unwrap().unwrap();
        let path = endpoint.strip_prefix("ipc://").unwrap();
        let mut client = std::os::unix::net::UnixStream::connect(path).unwrap();
        let id = stream.recv_multipart(0).unwrap()[0].clone();
        client.write_all(b"over ipc").unwrap();
        assert_eq!(stream_recv_data!(stream, id, 8), b"over ipc");
        drop(client);
        assert_eq!(stream.recv_multipart(0).unwrap(), vec![id, Vec::new()]);
    }

    #[test]
    fn fabriq_with_tcp_clients() {
        stream_with_tcp_clients!(fabriq);
    }

    #[test]
    fn libzmq_with_tcp_clients() {
        stream_with_tcp_clients!(zmq);
    }

    #[test]
    fn fabriq_connects_to_tcp_server() {
        stream_connects_to_tcp_server!(fabriq);
    }

    #[test]
    fn libzmq_connects_to_tcp_server() {
        stream_connects_to_tcp_server!(zmq);
    }
}

/// A STREAM talking to a STREAM: `$a` binds, `$b` connects; each side
/// sees the other's bytes raw.
macro_rules! stream_to_stream {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let server = sock!($a, ca, STREAM);
        let endpoint = bind_tcp!(server);
        let client = sock!($b, cb, STREAM);
        client.connect(&endpoint).unwrap();
        let to_server = client.recv_multipart(0).expect("client notice");
        assert!(to_server[1].is_empty(), "{to_server:?}");
        let to_client = server.recv_multipart(0).expect("server notice");
        assert!(to_client[1].is_empty(), "{to_client:?}");
        client
            .send_multipart([&to_server[0][..], &b"ping"[..]], 0)
            .unwrap();
        assert_eq!(stream_recv_data!(server, to_client[0], 4), b"ping");
        server
            .send_multipart([&to_client[0][..], &b"pong!"[..]], 0)
            .unwrap();
        assert_eq!(stream_recv_data!(client, to_server[0], 5), b"pong!");
        // The server closes: the client gets the notice. (libzmq finishes
        // the close when the application next calls into the socket.)
        server
            .send_multipart([&to_client[0][..], &b""[..]], 0)
            .unwrap();
        let end = crate::deadline();
        while client.poll($b::POLLIN, 20).unwrap() == 0 {
            server.get_events().unwrap();
            assert!(std::time::Instant::now() < end, "no close notice");
        }
        assert_eq!(
            client.recv_multipart(0).unwrap(),
            vec![to_server[0].clone(), Vec::new()]
        );
    }};
}
cross!(stream_to_stream);

// ---- SOCKS_PROXY -------------------------------------------------------------

/// What a CONNECT request asked the test proxy for: the address type (1
/// IPv4, 3 name, 4 IPv6), the host as text, the port.
type SocksRequest = (u8, String, u16);

/// A SOCKS5 proxy on loopback that takes "no authentication", reports each
/// CONNECT request, connects and relays both ways.
fn socks_proxy() -> (String, std::sync::mpsc::Receiver<SocksRequest>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = socks_serve(client, tx);
            });
        }
    });
    (addr, rx)
}

fn socks_serve(
    mut client: TcpStream,
    tx: std::sync::mpsc::Sender<SocksRequest>,
) -> std::io::Result<()> {
    use std::io::{Read, Write};
    let mut head = [0u8; 2];
    client.read_exact(&mut head)?;
    assert_eq!(head[0], 5, "SOCKS version");
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods)?;
    assert!(methods.contains(&0), "no 'no authentication' offered");
    client.write_all(&[5, 0])?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request)?;
    assert_eq!(request[..3], [5, 1, 0], "a CONNECT request");
    let host = match request[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a)?;
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len)?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name)?;
            String::from_utf8(name).unwrap()
        }
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port)?;
    let port = u16::from_be_bytes(port);
    let _ = tx.send((request[3], host.clone(), port));
    let target = TcpStream::connect((host.as_str(), port))?;
    client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])?;
    let (mut from_target, mut to_client) = (target.try_clone()?, client.try_clone()?);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_target, &mut to_client);
        let _ = to_client.shutdown(std::net::Shutdown::Both);
    });
    let mut to_target = target;
    let _ = std::io::copy(&mut client, &mut to_target);
    let _ = to_target.shutdown(std::net::Shutdown::Both);
    Ok(())
}

/// A DEALER with SOCKS_PROXY reaches its ROUTER through the proxy: an
/// address literal goes as such, a host name as a name for the proxy to
/// resolve.
macro_rules! socks_proxy {
    ($a:ident, $b:ident) => {{
        let (ca, cb) = ($a::Context::new(), $b::Context::new());
        let (proxy, requests) = crate::socks_proxy();
        let router = sock!($b, cb, ROUTER);
        let endpoint = bind_tcp!(router);
        let port: u16 = endpoint.rsplit_once(':').unwrap().1.parse().unwrap();
        let wait = std::time::Duration::from_millis(crate::TIMEOUT_MS as u64);
        for (target, kind, host) in [
            (endpoint.clone(), 1, "127.0.0.1"),
            (format!("tcp://localhost:{port}"), 3, "localhost"),
        ] {
            let dealer = sock!($a, ca, DEALER);
            dealer.set_socks_proxy(Some(&proxy)).unwrap();
            dealer.connect(&target).unwrap();
            dealer.send("via socks", 0).unwrap();
            assert_eq!(
                requests.recv_timeout(wait).unwrap(),
                (kind, host.to_string(), port)
            );
            let mut got = router.recv_multipart(0).unwrap();
            assert_eq!(got[1], b"via socks");
            got[1] = b"back".to_vec();
            router.send_multipart(got, 0).unwrap();
            assert_eq!(dealer.recv_bytes(0).unwrap(), b"back");
        }
    }};
}
cross!(socks_proxy);
