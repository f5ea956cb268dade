//! Mixed interoperability: every socket pattern with one side on real
//! libzmq (the `zmq` crate, libzmq 4.3.4) and the other side on fabriq,
//! in both directions and with either side binding, over tcp (and ipc for
//! PUSH/PULL, REQ/REP and PAIR).
//!
//! Every test makes its own contexts, binds ephemeral tcp ports or unique
//! ipc paths only, and bounds every wait (receive/send timeouts, polls
//! with deadlines), so the tests run in parallel.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Upper bound of any single wait for something that should happen.
const TIMEOUT_MS: i32 = 5000;

fn deadline() -> Instant {
    Instant::now() + Duration::from_millis(TIMEOUT_MS as u64)
}

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

// Monitor event numbers (the same in libzmq and fabriq).
const EVENT_DISCONNECTED: u16 = 0x0200;
const EVENT_HANDSHAKE_SUCCEEDED: u16 = 0x1000;

// ---- one socket API over both libraries ---------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lib {
    Fabriq,
    Libzmq,
}

use Lib::{Fabriq, Libzmq};

impl Lib {
    fn other(self) -> Lib {
        match self {
            Fabriq => Libzmq,
            Libzmq => Fabriq,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Tcp,
    Ipc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Pair,
    Pub,
    Sub,
    Req,
    Rep,
    Dealer,
    Router,
    Pull,
    Push,
    XPub,
    XSub,
}

impl Kind {
    fn fabriq(self) -> fabriq::SocketType {
        match self {
            Kind::Pair => fabriq::PAIR,
            Kind::Pub => fabriq::PUB,
            Kind::Sub => fabriq::SUB,
            Kind::Req => fabriq::REQ,
            Kind::Rep => fabriq::REP,
            Kind::Dealer => fabriq::DEALER,
            Kind::Router => fabriq::ROUTER,
            Kind::Pull => fabriq::PULL,
            Kind::Push => fabriq::PUSH,
            Kind::XPub => fabriq::XPUB,
            Kind::XSub => fabriq::XSUB,
        }
    }

    fn libzmq(self) -> zmq::SocketType {
        match self {
            Kind::Pair => zmq::PAIR,
            Kind::Pub => zmq::PUB,
            Kind::Sub => zmq::SUB,
            Kind::Req => zmq::REQ,
            Kind::Rep => zmq::REP,
            Kind::Dealer => zmq::DEALER,
            Kind::Router => zmq::ROUTER,
            Kind::Pull => zmq::PULL,
            Kind::Push => zmq::PUSH,
            Kind::XPub => zmq::XPUB,
            Kind::XSub => zmq::XSUB,
        }
    }
}

/// A socket of either library, with the context it was made in.
struct Sock {
    inner: Inner,
    /// Socket files of ipc endpoints bound by libzmq, which (4.3.4) leaves
    /// them behind unless it chose the path itself; removed on drop.
    ipc_files: RefCell<Vec<PathBuf>>,
}

enum Inner {
    // (Boxed: a fabriq::Socket is much larger than a zmq::Socket.)
    F(Box<fabriq::Socket>, fabriq::Context),
    Z(zmq::Socket, zmq::Context),
}

impl Drop for Sock {
    fn drop(&mut self) {
        for path in self.ipc_files.get_mut().iter() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Runs `$body` with `$s` bound to the inner socket; the error becomes a
/// string.
macro_rules! on {
    ($sock:expr, $s:ident => $body:expr) => {
        match &$sock.inner {
            Inner::F($s, _) => $body.map_err(|e| e.to_string()),
            Inner::Z($s, _) => $body.map_err(|e| e.to_string()),
        }
    };
}

impl Sock {
    /// A socket in a context of its own, with bounded blocking calls and
    /// no linger.
    fn new(lib: Lib, kind: Kind) -> Sock {
        match lib {
            Fabriq => Sock::in_fabriq(&fabriq::Context::new(), kind),
            Libzmq => Sock::in_libzmq(&zmq::Context::new(), kind),
        }
    }

    fn in_fabriq(ctx: &fabriq::Context, kind: Kind) -> Sock {
        let s = ctx.socket(kind.fabriq()).unwrap();
        Sock::wrap(Inner::F(Box::new(s), ctx.clone()))
    }

    fn in_libzmq(ctx: &zmq::Context, kind: Kind) -> Sock {
        Sock::wrap(Inner::Z(ctx.socket(kind.libzmq()).unwrap(), ctx.clone()))
    }

    /// Another socket in the same context.
    fn sibling(&self, kind: Kind) -> Sock {
        match &self.inner {
            Inner::F(_, ctx) => Sock::in_fabriq(ctx, kind),
            Inner::Z(_, ctx) => Sock::in_libzmq(ctx, kind),
        }
    }

    fn wrap(inner: Inner) -> Sock {
        let sock = Sock {
            inner,
            ipc_files: RefCell::new(Vec::new()),
        };
        on!(&sock, s => s.set_rcvtimeo(TIMEOUT_MS)).unwrap();
        on!(&sock, s => s.set_sndtimeo(TIMEOUT_MS)).unwrap();
        on!(&sock, s => s.set_linger(0)).unwrap();
        sock
    }

    fn lib(&self) -> Lib {
        match self.inner {
            Inner::F(..) => Fabriq,
            Inner::Z(..) => Libzmq,
        }
    }

    fn try_bind(&self, endpoint: &str) -> Result<(), String> {
        on!(self, s => s.bind(endpoint))
    }

    /// Binds to a fresh endpoint on `t` and returns the one to connect to.
    fn bind_any(&self, t: Transport) -> String {
        let endpoint = match (t, self.lib()) {
            (Transport::Tcp, _) => "tcp://127.0.0.1:*".to_string(),
            (Transport::Ipc, Fabriq) => "ipc://*".to_string(),
            (Transport::Ipc, Libzmq) => {
                let path = std::env::temp_dir().join(format!(
                    "fabriq-mixed-{}-{}.ipc",
                    std::process::id(),
                    unique()
                ));
                let endpoint = format!("ipc://{}", path.display());
                self.ipc_files.borrow_mut().push(path);
                endpoint
            }
        };
        self.try_bind(&endpoint)
            .unwrap_or_else(|e| panic!("{:?}: bind {endpoint}: {e}", self.lib()));
        on!(self, s => s.get_last_endpoint()).unwrap().unwrap()
    }

    fn connect(&self, endpoint: &str) {
        on!(self, s => s.connect(endpoint))
            .unwrap_or_else(|e| panic!("{:?}: connect {endpoint}: {e}", self.lib()));
    }

    fn send(&self, data: &[u8], flags: i32) -> Result<(), String> {
        on!(self, s => s.send(data, flags))
    }

    fn send_parts<P: AsRef<[u8]>>(&self, parts: &[P]) {
        on!(self, s => s.send_multipart(parts.iter().map(|p| p.as_ref()), 0))
            .unwrap_or_else(|e| panic!("{:?}: send: {e}", self.lib()));
    }

    /// Receives one message (bounded by the receive timeout).
    fn recv(&self, what: &str) -> Vec<Vec<u8>> {
        on!(self, s => s.recv_multipart(0))
            .unwrap_or_else(|e| panic!("{:?}: receiving {what}: {e}", self.lib()))
    }

    /// Receives a message if one comes within `ms`.
    fn recv_within(&self, ms: i64) -> Option<Vec<Vec<u8>>> {
        let ready = match &self.inner {
            Inner::F(s, _) => s.poll(fabriq::POLLIN, ms).unwrap() > 0,
            Inner::Z(s, _) => s.poll(zmq::POLLIN, ms).unwrap() > 0,
        };
        ready.then(|| self.recv("a polled message"))
    }

    /// Lets the socket process its commands (take in new peers, send
    /// subscriptions), as any call into it does.
    fn pump(&self) {
        on!(self, s => s.get_events().map(|_| ())).unwrap();
    }

    fn subscribe(&self, topic: &[u8]) {
        on!(self, s => s.set_subscribe(topic)).unwrap();
    }

    fn unsubscribe(&self, topic: &[u8]) {
        on!(self, s => s.set_unsubscribe(topic)).unwrap();
    }

    fn set_identity(&self, id: &[u8]) {
        on!(self, s => s.set_identity(id)).unwrap();
    }

    fn set_heartbeat_ivl(&self, ms: i32) {
        on!(self, s => s.set_heartbeat_ivl(ms)).unwrap();
    }

    /// Starts monitoring `events`; returns the PAIR socket they arrive on.
    fn monitor(&self, events: u16) -> Sock {
        let endpoint = format!("inproc://mixed-monitor-{}", unique());
        on!(self, s => s.monitor(&endpoint, events as i32)).unwrap();
        let mon = self.sibling(Kind::Pair);
        mon.connect(&endpoint);
        mon
    }
}

/// The event number of a monitor message.
fn event_of(msg: &[Vec<u8>]) -> u16 {
    u16::from_le_bytes([msg[0][0], msg[0][1]])
}

/// Waits for `event` on the monitor socket `mon`.
fn await_event(mon: &Sock, event: u16, what: &str) {
    let end = deadline();
    loop {
        let left = end.saturating_duration_since(Instant::now()).as_millis() as i64;
        match mon.recv_within(left.max(1)) {
            Some(msg) if event_of(&msg) == event => return,
            Some(_) => {}
            None => assert!(Instant::now() < end, "{what}: no event {event:#x}"),
        }
    }
}

/// Binds `binder` on `t` and connects `connecter` to it.
fn link(t: Transport, binder: &Sock, connecter: &Sock) -> String {
    let endpoint = binder.bind_any(t);
    connecter.connect(&endpoint);
    endpoint
}

/// One arrangement: `a` on library `a`, its peer on the other one.
#[derive(Clone, Copy, Debug)]
struct Case {
    t: Transport,
    a: Lib,
    a_binds: bool,
}

impl Case {
    fn all(transports: &[Transport]) -> Vec<Case> {
        let mut cases = Vec::new();
        for &t in transports {
            for a in [Fabriq, Libzmq] {
                for a_binds in [true, false] {
                    cases.push(Case { t, a, a_binds });
                }
            }
        }
        cases
    }

    /// Two sockets, `ka` on `self.a` and `kb` on the other library, joined.
    fn join(self, ka: Kind, kb: Kind) -> (Sock, Sock, String) {
        let a = Sock::new(self.a, ka);
        let b = Sock::new(self.a.other(), kb);
        if self.a_binds {
            link(self.t, &a, &b);
        } else {
            link(self.t, &b, &a);
        }
        let binder = if self.a_binds { self.a } else { self.a.other() };
        let label = format!(
            "{ka:?} on {:?} <-> {kb:?} on {:?} over {:?}, {binder:?} binds",
            self.a,
            self.a.other(),
            self.t
        );
        (a, b, label)
    }
}

// ---- PUSH/PULL ------------------------------------------------------------

const STREAM_LEN: u32 = 10_000;

/// Message `k` of the PUSH/PULL stream: small ones, and 1 MiB every 2500.
fn stream_msg(k: u32) -> Vec<u8> {
    if k % 2500 == 1250 {
        (0..1usize << 20)
            .map(|i| (i as u32).wrapping_mul(31).wrapping_add(k) as u8)
            .collect()
    } else {
        format!("msg {k}").into_bytes()
    }
}

#[test]
fn push_pull_stream_in_order_and_intact() {
    for case in Case::all(&[Transport::Tcp, Transport::Ipc]) {
        let (push, pull, label) = case.join(Kind::Push, Kind::Pull);
        let sender = thread::spawn(move || {
            for k in 0..STREAM_LEN {
                push.send(&stream_msg(k), 0)
                    .unwrap_or_else(|e| panic!("send {k}: {e}"));
            }
            push // kept open until everything is received
        });
        for k in 0..STREAM_LEN {
            let msg = pull.recv(&format!("{label}: message {k}"));
            let expected = stream_msg(k);
            assert!(
                msg.len() == 1 && msg[0] == expected,
                "{label}: message {k}: got {} frame(s), first {} bytes, expected {} bytes",
                msg.len(),
                msg[0].len(),
                expected.len()
            );
        }
        drop(sender.join().expect("sender thread"));
    }
}

// ---- REQ/REP ----------------------------------------------------------------

#[test]
fn req_rep_round_trips() {
    for case in Case::all(&[Transport::Tcp, Transport::Ipc]) {
        let (req, rep, label) = case.join(Kind::Req, Kind::Rep);
        for i in 0..100u32 {
            let n = i.to_string();
            let request: Vec<&[u8]> = if i % 2 == 0 {
                vec![n.as_bytes()]
            } else {
                vec![b"multi", n.as_bytes(), b"", b"tail"]
            };
            req.send_parts(&request);
            assert_eq!(rep.recv(&label), request, "{label}: request {i}");
            let reply: Vec<&[u8]> = if i % 3 == 0 {
                vec![b"reply", n.as_bytes(), b""]
            } else {
                vec![n.as_bytes()]
            };
            rep.send_parts(&reply);
            assert_eq!(req.recv(&label), reply, "{label}: reply {i}");
        }
    }
}

// ---- DEALER/ROUTER ------------------------------------------------------------

fn big_frame(seed: u8) -> Vec<u8> {
    (0..200 * 1024usize)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

#[test]
fn dealers_and_router_identities() {
    for case in Case::all(&[Transport::Tcp]) {
        let router = Sock::new(case.a, Kind::Router);
        let dealers: Vec<Sock> = (0..2)
            .map(|i| {
                let d = Sock::new(case.a.other(), Kind::Dealer);
                d.set_identity(format!("dealer-{i}").as_bytes());
                d
            })
            .collect();
        if case.a_binds {
            let endpoint = router.bind_any(case.t);
            for d in &dealers {
                d.connect(&endpoint);
            }
        } else {
            for d in &dealers {
                link(case.t, d, &router);
            }
        }
        let label = format!("ROUTER on {:?}, DEALERs on the other, {case:?}", case.a);
        for round in 0..3u8 {
            for (i, d) in dealers.iter().enumerate() {
                let hello = format!("hello {i} {round}");
                d.send_parts(&[&b""[..], hello.as_bytes(), &big_frame(i as u8 + round)]);
            }
            let mut seen = [false; 2];
            for _ in 0..2 {
                let msg = router.recv(&label);
                assert_eq!(msg.len(), 4, "{label}: frames");
                let id = String::from_utf8(msg[0].clone()).unwrap();
                let i: usize = match id.as_str() {
                    "dealer-0" => 0,
                    "dealer-1" => 1,
                    other => panic!("{label}: unknown identity {other:?}"),
                };
                assert!(!seen[i], "{label}: {id} twice");
                seen[i] = true;
                assert_eq!(msg[1], b"", "{label}: empty delimiter");
                assert_eq!(msg[2], format!("hello {i} {round}").as_bytes(), "{label}");
                assert!(
                    msg[3] == big_frame(i as u8 + round),
                    "{label}: 200 KiB frame"
                );
            }
            // Replies in reverse order: each must reach its own dealer.
            for i in (0..2).rev() {
                let reply = format!("reply {i} {round}");
                router.send_parts(&[
                    format!("dealer-{i}").as_bytes(),
                    b"",
                    reply.as_bytes(),
                    &big_frame(100 + i as u8 + round),
                ]);
            }
            for (i, d) in dealers.iter().enumerate() {
                let msg = d.recv(&label);
                assert_eq!(msg.len(), 3, "{label}: dealer {i} frames");
                assert_eq!(msg[0], b"", "{label}");
                assert_eq!(msg[1], format!("reply {i} {round}").as_bytes(), "{label}");
                assert!(
                    msg[2] == big_frame(100 + i as u8 + round),
                    "{label}: 200 KiB frame"
                );
            }
        }
    }
}

#[test]
fn req_to_router_and_dealer_to_rep() {
    for case in Case::all(&[Transport::Tcp]) {
        // REQ -> ROUTER: the ROUTER sees [identity, "", request...].
        let label = format!("ROUTER on {:?}, REQ on the other, {case:?}", case.a);
        let router = Sock::new(case.a, Kind::Router);
        let req = Sock::new(case.a.other(), Kind::Req);
        req.set_identity(b"the-req");
        if case.a_binds {
            link(case.t, &router, &req);
        } else {
            link(case.t, &req, &router);
        }
        for i in 0..5u32 {
            let n = i.to_string();
            req.send_parts(&[&b"a"[..], n.as_bytes()]);
            let msg = router.recv(&label);
            assert_eq!(
                msg,
                vec![
                    b"the-req".to_vec(),
                    vec![],
                    b"a".to_vec(),
                    n.clone().into_bytes()
                ],
                "{label}"
            );
            router.send_parts(&[&b"the-req"[..], b"", b"ok", n.as_bytes()]);
            assert_eq!(
                req.recv(&label),
                vec![b"ok".to_vec(), n.into_bytes()],
                "{label}"
            );
        }

        // DEALER -> REP: the DEALER adds and gets back the empty delimiter.
        let (rep, dealer, label) = case.join(Kind::Rep, Kind::Dealer);
        for i in 0..5u32 {
            let n = i.to_string();
            dealer.send_parts(&[&b""[..], b"q", n.as_bytes()]);
            assert_eq!(
                rep.recv(&label),
                vec![b"q".to_vec(), n.clone().into_bytes()],
                "{label}"
            );
            rep.send_parts(&[&b"r"[..], n.as_bytes()]);
            assert_eq!(
                dealer.recv(&label),
                vec![vec![], b"r".to_vec(), n.into_bytes()],
                "{label}"
            );
        }
    }
}

// ---- PUB/SUB, XPUB/XSUB ---------------------------------------------------------

/// Sends `msg` from `publisher` until `subscriber` receives something
/// (subscriptions travel asynchronously); returns what it received.
fn publish_until_received(publisher: &Sock, subscriber: &Sock, msg: &[u8], label: &str) -> Vec<u8> {
    let end = deadline();
    loop {
        publisher.send(msg, 0).unwrap();
        if let Some(got) = subscriber.recv_within(10) {
            assert_eq!(got.len(), 1, "{label}");
            return got.into_iter().next().unwrap();
        }
        assert!(
            Instant::now() < end,
            "{label}: the subscription never took effect"
        );
    }
}

/// Receives on `reader` while keeping `others` processing their commands.
fn recv_pumping(reader: &Sock, others: &[&Sock], label: &str) -> Vec<u8> {
    let end = deadline();
    loop {
        if let Some(msg) = reader.recv_within(10) {
            assert_eq!(msg.len(), 1, "{label}");
            return msg.into_iter().next().unwrap();
        }
        for other in others {
            other.pump();
        }
        assert!(Instant::now() < end, "{label}: nothing arrived");
    }
}

/// Checks filtering and unsubscription between `publisher` and
/// `subscriber` (a SUB, or an XSUB with `raw` set, which sends its
/// subscriptions as messages and does not filter itself).
fn check_filtering(publisher: &Sock, subscriber: &Sock, raw: bool, label: &str) {
    let subscribe = |topic: &[u8]| {
        if raw {
            subscriber.send(&[&[1u8][..], topic].concat(), 0).unwrap();
        } else {
            subscriber.subscribe(topic);
        }
    };
    let unsubscribe = |topic: &[u8]| {
        if raw {
            subscriber.send(&[&[0u8][..], topic].concat(), 0).unwrap();
        } else {
            subscriber.unsubscribe(topic);
        }
    };

    subscribe(b"news");
    assert_eq!(
        publish_until_received(publisher, subscriber, b"news 1", label),
        b"news 1"
    );
    publisher.send(b"sport 1", 0).unwrap();
    publisher.send(b"news 2", 0).unwrap();
    // Skip the duplicates of "news 1" from the retry loop; "sport 1" must
    // not come.
    let mut got = subscriber.recv(label);
    while got == [b"news 1"] {
        got = subscriber.recv(label);
    }
    assert_eq!(got, [b"news 2"], "{label}: only matching topics");

    // Unsubscribe from "news", subscribe to "weather": once "weather"
    // arrives the unsubscription has been applied (it was sent first),
    // so no "news" may follow.
    unsubscribe(b"news");
    subscribe(b"weather");
    let end = deadline();
    let mut seen_weather = false;
    'outer: for round in 0.. {
        publisher
            .send(format!("news {round}").as_bytes(), 0)
            .unwrap();
        publisher
            .send(format!("weather {round}").as_bytes(), 0)
            .unwrap();
        while let Some(msg) = subscriber.recv_within(if seen_weather { 0 } else { 10 }) {
            let text = String::from_utf8(msg.concat()).unwrap();
            if text.starts_with("weather") {
                seen_weather = true;
            } else {
                assert!(text.starts_with("news"), "{label}: unexpected {text:?}");
                assert!(!seen_weather, "{label}: {text:?} after unsubscribing");
            }
        }
        if seen_weather {
            break 'outer;
        }
        assert!(Instant::now() < end, "{label}: \"weather\" never came");
    }
    publisher.send(b"news last", 0).unwrap();
    publisher.send(b"weather last", 0).unwrap();
    loop {
        let msg = subscriber.recv(label);
        let text = String::from_utf8(msg.concat()).unwrap();
        assert!(
            text.starts_with("weather"),
            "{label}: {text:?} after unsubscribing"
        );
        if text == "weather last" {
            break;
        }
    }
}

#[test]
fn pub_sub_filtering_and_unsubscribe() {
    for case in Case::all(&[Transport::Tcp]) {
        let (publisher, sub, label) = case.join(Kind::Pub, Kind::Sub);
        check_filtering(&publisher, &sub, false, &label);
    }
}

/// An XSUB does not filter: what it receives is what the publisher chose
/// to send. Fabriq PUB with a libzmq XSUB checks fabriq's publisher-side
/// filtering; libzmq PUB with a fabriq XSUB checks that fabriq's XSUB
/// sends `\x01topic` / `\x00topic` messages as subscriptions.
#[test]
fn pub_filters_for_xsub() {
    for case in Case::all(&[Transport::Tcp]) {
        let (publisher, xsub, label) = case.join(Kind::Pub, Kind::XSub);
        check_filtering(&publisher, &xsub, true, &label);
    }
}

#[test]
fn xpub_sees_subscriptions() {
    for case in Case::all(&[Transport::Tcp]) {
        for kind in [Kind::Sub, Kind::XSub] {
            let (xpub, sub, label) = case.join(Kind::XPub, kind);
            if kind == Kind::Sub {
                sub.subscribe(b"topic");
            } else {
                sub.send(b"\x01topic", 0).unwrap();
            }
            assert_eq!(
                recv_pumping(&xpub, &[&sub], &label),
                b"\x01topic",
                "{label}"
            );
            // The XPUB has the subscription once it has shown it.
            xpub.send(b"other 1", 0).unwrap();
            xpub.send(b"topic 1", 0).unwrap();
            assert_eq!(sub.recv(&label), [b"topic 1"], "{label}");
            if kind == Kind::Sub {
                sub.unsubscribe(b"topic");
            } else {
                sub.send(b"\x00topic", 0).unwrap();
            }
            assert_eq!(
                recv_pumping(&xpub, &[&sub], &label),
                b"\x00topic",
                "{label}"
            );
        }
    }
}

/// Two subscribers to the same topic: the XPUB shows the subscription
/// once, and the unsubscription only when the last one leaves.
#[test]
fn xpub_reports_first_subscribe_and_last_unsubscribe() {
    for case in Case::all(&[Transport::Tcp]) {
        let xpub = Sock::new(case.a, Kind::XPub);
        let subs = [
            Sock::new(case.a.other(), Kind::Sub),
            Sock::new(case.a.other(), Kind::Sub),
        ];
        let label = &format!("XPUB on {:?}, two SUBs on the other, {case:?}", case.a);
        if case.a_binds {
            let endpoint = xpub.bind_any(case.t);
            for sub in &subs {
                sub.connect(&endpoint);
            }
        } else {
            for sub in &subs {
                link(case.t, sub, &xpub);
            }
        }
        // Once the XPUB has shown a first subscription from each, the
        // subscribers are connected and send their next ones in order
        // (before that, they send what they have in any order they like).
        let all: Vec<&Sock> = subs.iter().collect();
        for (i, sub) in subs.iter().enumerate() {
            sub.subscribe(format!("probe{i}").as_bytes());
        }
        let mut shown: Vec<Vec<u8>> = (0..2).map(|_| recv_pumping(&xpub, &all, label)).collect();
        shown.sort();
        assert_eq!(shown, [b"\x01probe0", b"\x01probe1"], "{label}");
        // Each announces its marker after "topic", so once the XPUB has
        // shown both markers it has had both "topic"s.
        for (i, sub) in subs.iter().enumerate() {
            sub.subscribe(b"topic");
            sub.subscribe(format!("marker{i}").as_bytes());
        }
        let mut shown: Vec<Vec<u8>> = (0..3).map(|_| recv_pumping(&xpub, &all, label)).collect();
        shown.sort();
        assert_eq!(
            shown,
            [&b"\x01marker0"[..], b"\x01marker1", b"\x01topic"],
            "{label}: \"topic\" shown once"
        );
        // The first leaves "topic": not shown (the marker comes first).
        subs[0].unsubscribe(b"topic");
        subs[0].subscribe(b"marker2");
        assert_eq!(recv_pumping(&xpub, &all, label), b"\x01marker2", "{label}");
        subs[1].unsubscribe(b"topic");
        assert_eq!(recv_pumping(&xpub, &all, label), b"\x00topic", "{label}");
    }
}

// ---- PAIR ---------------------------------------------------------------------------

#[test]
fn pair_both_ways() {
    for case in Case::all(&[Transport::Tcp, Transport::Ipc]) {
        let (a, b, label) = case.join(Kind::Pair, Kind::Pair);
        for i in 0..20u32 {
            let n = i.to_string();
            a.send_parts(&[n.as_bytes()]);
            assert_eq!(b.recv(&label), [n.as_bytes()], "{label}");
            b.send_parts(&[&b"back"[..], b"", n.as_bytes()]);
            assert_eq!(
                a.recv(&label),
                vec![b"back".to_vec(), vec![], n.into_bytes()],
                "{label}"
            );
        }
    }
}

// ---- heartbeats -----------------------------------------------------------------------

/// A TCP relay to one tcp endpoint that counts the bytes going each way,
/// to see heartbeats flow while the applications are silent.
struct Relay {
    endpoint: String,
    /// Bytes from the connecting side to the binding side, and back.
    up: Arc<AtomicUsize>,
    down: Arc<AtomicUsize>,
}

impl Relay {
    fn to(target: &str) -> Relay {
        let target = target.strip_prefix("tcp://").unwrap().to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
        let up = Arc::new(AtomicUsize::new(0));
        let down = Arc::new(AtomicUsize::new(0));
        let (up2, down2) = (up.clone(), down.clone());
        thread::spawn(move || {
            // Accept one connection, within the usual bound.
            listener.set_nonblocking(true).unwrap();
            let end = deadline();
            let client = loop {
                match listener.accept() {
                    Ok((c, _)) => break c,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < end => {
                        thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => return,
                }
            };
            client.set_nonblocking(false).unwrap();
            let Ok(server) = TcpStream::connect(&target) else {
                return;
            };
            for (from, to, count) in [
                (
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    up2,
                ),
                (server, client, down2),
            ] {
                thread::spawn(move || copy_counting(from, to, &count));
            }
        });
        Relay { endpoint, up, down }
    }

    fn counts(&self) -> (usize, usize) {
        (
            self.up.load(Ordering::Relaxed),
            self.down.load(Ordering::Relaxed),
        )
    }
}

/// Copies until either side closes (or 10 s without traffic).
fn copy_counting(mut from: TcpStream, mut to: TcpStream, count: &AtomicUsize) {
    from.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 64 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        count.fetch_add(n, Ordering::Relaxed);
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// A socket heartbeating every 100 ms (fabriq or libzmq) and a peer of the
/// other library that does not: the peer must answer PINGs, so the
/// connection stays up through 1 s of silence, and messages still flow.
/// The connection goes through a [`Relay`] to check that PINGs and PONGs
/// do flow during the silence.
#[test]
fn heartbeats_keep_the_connection_up() {
    struct Setup {
        label: String,
        a: Sock,
        b: Sock,
        monitors: Vec<(Lib, Sock)>,
        relay: Relay,
    }
    let setups: Vec<Setup> = Case::all(&[Transport::Tcp])
        .into_iter()
        .map(|case| {
            let a = Sock::new(case.a, Kind::Pair);
            let b = Sock::new(case.a.other(), Kind::Pair);
            a.set_heartbeat_ivl(100);
            let events = EVENT_DISCONNECTED;
            let monitors = vec![(a.lib(), a.monitor(events)), (b.lib(), b.monitor(events))];
            let (binder, connecter) = if case.a_binds { (&a, &b) } else { (&b, &a) };
            let relay = Relay::to(&binder.bind_any(case.t));
            connecter.connect(&relay.endpoint);
            let label = format!("{:?} heartbeats, {case:?}", case.a);
            a.send_parts(&[b"hello"]);
            assert_eq!(b.recv(&label), [b"hello"], "{label}");
            b.send_parts(&[b"hello back"]);
            assert_eq!(a.recv(&label), [b"hello back"], "{label}");
            Setup {
                label,
                a,
                b,
                monitors,
                relay,
            }
        })
        .collect();

    // One second of silence, watching for disconnections.
    let before: Vec<(usize, usize)> = setups.iter().map(|s| s.relay.counts()).collect();
    let end = Instant::now() + Duration::from_millis(1000);
    while Instant::now() < end {
        for s in &setups {
            for (lib, mon) in &s.monitors {
                if let Some(msg) = mon.recv_within(5) {
                    panic!(
                        "{}: the {lib:?} side reported event {:#x} on {:?}",
                        s.label,
                        event_of(&msg),
                        String::from_utf8_lossy(&msg[1])
                    );
                }
            }
        }
    }
    for (s, (up, down)) in setups.iter().zip(before) {
        // About ten PINGs one way and as many PONGs the other (7 bytes or
        // more each).
        let (up2, down2) = s.relay.counts();
        assert!(
            up2 - up >= 35 && down2 - down >= 35,
            "{}: heartbeat traffic in 1 s of silence: {} bytes up, {} down",
            s.label,
            up2 - up,
            down2 - down
        );
        s.a.send_parts(&[b"after"]);
        assert_eq!(s.b.recv(&s.label), [b"after"], "{}", s.label);
        s.b.send_parts(&[b"after back"]);
        assert_eq!(s.a.recv(&s.label), [b"after back"], "{}", s.label);
        for (lib, mon) in &s.monitors {
            assert!(
                mon.recv_within(0).is_none(),
                "{}: the {lib:?} side disconnected",
                s.label
            );
        }
    }
}

// ---- reconnection ---------------------------------------------------------------------

/// Binds a new libzmq socket on `endpoint`, retrying while the port is
/// still held (bounded).
fn rebind_libzmq(kind: Kind, endpoint: &str) -> Sock {
    let sock = Sock::new(Libzmq, kind);
    let end = deadline();
    loop {
        match sock.try_bind(endpoint) {
            Ok(()) => return sock,
            Err(e) => assert!(Instant::now() < end, "rebinding {endpoint}: {e}"),
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A libzmq PULL restarts on the same port mid-stream. As in libzmq, the
/// messages the fabriq PUSH had already written to the old connection may
/// be lost with it, but those still queued and those sent after the PUSH
/// noticed the disconnection (up to the high-water mark; beyond it `send`
/// waits) arrive, in order, once it has reconnected.
#[test]
fn push_reconnects_to_restarted_libzmq_pull() {
    let pull = Sock::new(Libzmq, Kind::Pull);
    let endpoint = pull.bind_any(Transport::Tcp);
    let push = Sock::new(Fabriq, Kind::Push);
    let mon = push.monitor(EVENT_DISCONNECTED | EVENT_HANDSHAKE_SUCCEEDED);
    push.connect(&endpoint);
    let label = "fabriq PUSH -> restarted libzmq PULL";

    let msg = |k: u32| k.to_be_bytes();
    let parse = |m: Vec<Vec<u8>>| u32::from_be_bytes(m[0][..].try_into().unwrap());

    // 1000 messages sent, 300 received; the PULL goes away with the rest.
    for k in 0..1000 {
        push.send(&msg(k), 0).unwrap();
    }
    for k in 0..300 {
        assert_eq!(parse(pull.recv(label)), k, "{label}");
    }
    await_event(&mon, EVENT_HANDSHAKE_SUCCEEDED, label);
    drop(pull); // its context too (the only other reference)
    await_event(&mon, EVENT_DISCONNECTED, label);

    // Sent during the outage: queued by the PUSH. From a thread, as the
    // queue may still hold old messages and fill up (then `send` waits for
    // the reconnection).
    let sender = thread::spawn(move || {
        for k in 1000..1500 {
            push.send(&msg(k), 0)
                .unwrap_or_else(|e| panic!("send {k}: {e}"));
        }
        push
    });
    let pull = rebind_libzmq(Kind::Pull, &endpoint);
    let mut received = Vec::new();
    loop {
        let k = parse(pull.recv(label));
        if let Some(&last) = received.last() {
            assert!(k > last, "{label}: {k} after {last}");
        }
        received.push(k);
        if k == 1499 {
            break;
        }
    }
    let lost_in_flight = 700 - received.iter().filter(|&&k| k < 1000).count();
    eprintln!("{label}: {lost_in_flight} of the 700 messages in flight at the restart were lost");
    assert_eq!(
        received.iter().filter(|&&k| k >= 1000).count(),
        500,
        "{label}: every message sent during the outage arrives"
    );

    // And the stream goes on.
    let push = sender.join().expect("sender thread");
    for k in 1500..1600 {
        push.send(&msg(k), 0).unwrap();
    }
    for k in 1500..1600 {
        assert_eq!(parse(pull.recv(label)), k, "{label}");
    }
}

/// As above, but the libzmq PULL goes away while a thread keeps sending.
/// What is lost is one contiguous run (what the old connection carried
/// and its PULL had queued); after it everything arrives, in order, on the
/// new connection. (libzmq PUSH to libzmq PULL behaves the same.)
#[test]
fn push_mid_stream_restart_loses_one_run_only() {
    let pull = Sock::new(Libzmq, Kind::Pull);
    let endpoint = pull.bind_any(Transport::Tcp);
    let push = Sock::new(Fabriq, Kind::Push);
    push.connect(&endpoint);
    let label = "fabriq PUSH -> libzmq PULL restarted mid-stream";
    let parse = |m: Vec<Vec<u8>>| u32::from_be_bytes(m[0][..].try_into().unwrap());

    let stop = Arc::new(AtomicBool::new(false));
    let sender = thread::spawn({
        let stop = stop.clone();
        move || {
            let end = deadline();
            let mut k = 0u32;
            // `send` blocks (bounded) while the queue is full in the outage.
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                push.send(&k.to_be_bytes(), 0)
                    .unwrap_or_else(|e| panic!("send {k}: {e}"));
                k += 1;
            }
            push
        }
    });
    for k in 0..300 {
        assert_eq!(parse(pull.recv(label)), k, "{label}");
    }
    drop(pull); // and its context
    let pull = rebind_libzmq(Kind::Pull, &endpoint);
    let first = parse(pull.recv(label));
    assert!(first >= 300, "{label}: {first} again");
    for k in first + 1..first + 2000 {
        assert_eq!(parse(pull.recv(label)), k, "{label}: after the gap");
    }
    stop.store(true, Ordering::Relaxed);
    eprintln!("{label}: lost 300..{first}");
    drop(sender.join().expect("sender thread"));
}

/// A libzmq PUB restarts on the same port: the fabriq SUB (or XSUB)
/// reconnects, subscribes again by itself and receives, matching topics
/// only. A topic unsubscribed before the restart stays unsubscribed (the
/// XSUB, which does not filter, shows what the new PUB was asked for).
#[test]
fn sub_resubscribes_to_restarted_libzmq_pub() {
    for kind in [Kind::Sub, Kind::XSub] {
        let publisher = Sock::new(Libzmq, Kind::Pub);
        let endpoint = publisher.bind_any(Transport::Tcp);
        let sub = Sock::new(Fabriq, kind);
        let mon = sub.monitor(EVENT_DISCONNECTED);
        sub.connect(&endpoint);
        let label = &format!("fabriq {kind:?} <- restarted libzmq PUB");
        if kind == Kind::Sub {
            sub.subscribe(b"t");
            sub.subscribe(b"u");
            sub.unsubscribe(b"u");
        } else {
            for msg in [b"\x01t", b"\x01u", b"\x00u"] {
                sub.send(msg, 0).unwrap();
            }
        }

        // Publishes "x", "u" and "t" messages until `sub` receives "t {n}";
        // copies of earlier "t" messages may still be queued.
        let publish_until = |publisher: &Sock, n: &str| {
            let end = deadline();
            loop {
                for topic in ["x", "u", "t"] {
                    publisher
                        .send(format!("{topic} {n}").as_bytes(), 0)
                        .unwrap();
                }
                while let Some(msg) = sub.recv_within(10) {
                    let text = String::from_utf8(msg.concat()).unwrap();
                    assert!(text.starts_with("t "), "{label}: {text:?}");
                    if text == format!("t {n}") {
                        return;
                    }
                }
                assert!(Instant::now() < end, "{label}: nothing with {n}");
            }
        };

        publish_until(&publisher, "before");
        drop(publisher); // and its context
        await_event(&mon, EVENT_DISCONNECTED, label);
        let publisher = rebind_libzmq(Kind::Pub, &endpoint);
        publish_until(&publisher, "after");
        for topic in ["x", "u", "t"] {
            publisher
                .send(format!("{topic} last").as_bytes(), 0)
                .unwrap();
        }
        loop {
            let msg = sub.recv(label);
            let text = String::from_utf8(msg.concat()).unwrap();
            assert!(text.starts_with("t "), "{label}: {text:?}");
            if text == "t last" {
                break;
            }
        }
    }
}
