//! libzmq's draft socket types on fabriq, fabriq on both sides: CLIENT /
//! SERVER, SCATTER / GATHER, RADIO / DISH and CHANNEL over tcp, ipc,
//! inproc and the fabric (`ofi+tcp://`, `ofi+shm://`: libfabric's tcp and
//! shm providers); the errors libzmq gives; refused socket-type pairs; and the
//! bytes RADIO and DISH put on the wire, checked against a hand-written
//! ZMTP peer that frames as libzmq's `radio.cpp` / `dish.cpp` do.
//! (The interop tests against a draft-built libzmq are in
//! crates/fabriq-draft-peer.)
//!
//! Every wait is bounded: receive/send timeouts of 5 s, and retry loops
//! with a deadline where a join has to reach a RADIO first.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fabriq::{Context, Error, Message, Socket, SocketType};

const TIMEOUT_MS: i32 = 5000;

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Tcp,
    Ipc,
    Inproc,
    /// libfabric's tcp provider (`ofi+tcp://`).
    OfiTcp,
    /// libfabric's shm provider (`ofi+shm://`).
    OfiShm,
}

const ALL: [Transport; 5] = [
    Transport::Tcp,
    Transport::Ipc,
    Transport::Inproc,
    Transport::OfiTcp,
    Transport::OfiShm,
];

fn sock(ctx: &Context, ty: SocketType) -> Socket {
    let s = ctx.socket(ty).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(0).unwrap();
    s
}

/// Binds `s` on a fresh endpoint of `t`; returns what to connect to.
fn bind(s: &Socket, t: Transport) -> String {
    let ep = match t {
        Transport::Tcp => "tcp://127.0.0.1:*".to_string(),
        Transport::Ipc => format!(
            "ipc:///tmp/fabriq-drafts-{}-{}.sock",
            std::process::id(),
            unique()
        ),
        Transport::Inproc => format!("inproc://drafts-{}", unique()),
        Transport::OfiTcp => "ofi+tcp://127.0.0.1:*".to_string(),
        Transport::OfiShm => "ofi+shm://127.0.0.1:*".to_string(),
    };
    s.bind(&ep).unwrap();
    s.get_last_endpoint().unwrap().unwrap()
}

fn client_server(t: Transport) {
    let ctx = Context::new();
    let server = sock(&ctx, fabriq::SERVER);
    let ep = bind(&server, t);
    let a = sock(&ctx, fabriq::CLIENT);
    let b = sock(&ctx, fabriq::CLIENT);
    a.connect(&ep).unwrap();
    b.connect(&ep).unwrap();
    for round in 0..3 {
        a.send(format!("a{round}").as_str(), 0).unwrap();
        b.send(format!("b{round}").as_str(), 0).unwrap();
        let mut ids = Vec::new();
        for _ in 0..2 {
            let m = server.recv_msg(0).unwrap();
            assert!(!m.get_more(), "{t:?}: SERVER gives single-part messages");
            let id = m.routing_id().expect("a SERVER message has a routing id");
            let body = m.as_str().unwrap().to_string();
            ids.push((body.clone(), id));
            let mut reply = Message::from(format!("re:{body}"));
            reply.set_routing_id(id).unwrap();
            server.send(reply, 0).unwrap();
        }
        ids.sort();
        assert_ne!(ids[0].1, ids[1].1, "{t:?}: two clients, two routing ids");
        assert_eq!(
            a.recv_string(0).unwrap().unwrap(),
            format!("re:a{round}"),
            "{t:?}"
        );
        assert_eq!(
            b.recv_string(0).unwrap().unwrap(),
            format!("re:b{round}"),
            "{t:?}"
        );
    }
}

#[test]
fn client_server_tcp() {
    client_server(Transport::Tcp);
}

#[test]
fn client_server_ipc() {
    client_server(Transport::Ipc);
}

#[test]
fn client_server_inproc() {
    client_server(Transport::Inproc);
}

#[test]
fn client_server_ofi_tcp() {
    client_server(Transport::OfiTcp);
}

#[test]
fn client_server_ofi_shm() {
    client_server(Transport::OfiShm);
}

#[test]
fn client_server_errors_as_libzmq() {
    let ctx = Context::new();
    let server = sock(&ctx, fabriq::SERVER);
    let ep = bind(&server, Transport::Inproc);
    let client = sock(&ctx, fabriq::CLIENT);
    client.connect(&ep).unwrap();

    // Multipart: EINVAL on CLIENT and SERVER, in every form.
    assert_eq!(client.send("a", fabriq::SNDMORE), Err(Error::EINVAL));
    assert_eq!(client.send_multipart(["a", "b"], 0), Err(Error::EINVAL));
    let mut m = Message::from("x");
    m.set_routing_id(7).unwrap();
    assert_eq!(server.send(m, fabriq::SNDMORE), Err(Error::EINVAL));

    // SERVER: no routing id, or one no peer has: EHOSTUNREACH.
    assert_eq!(server.send("no id", 0), Err(Error::EHOSTUNREACH));
    let mut m = Message::from("nobody");
    m.set_routing_id(0xdead_beef).unwrap();
    assert_eq!(server.send(m, 0), Err(Error::EHOSTUNREACH));
    assert_eq!(Message::new().set_routing_id(0), Err(Error::EINVAL));

    // The client's message still goes through after the refusals.
    client.send("ok", 0).unwrap();
    let got = server.recv_msg(0).unwrap();
    assert_eq!(got.as_str(), Some("ok"));
    let mut reply = Message::from("fine");
    reply.set_routing_id(got.routing_id().unwrap()).unwrap();
    server.send(reply, 0).unwrap();
    assert_eq!(client.recv_string(0).unwrap().unwrap(), "fine");

    // A CLIENT message has no routing id; a received SERVER one does.
    assert_eq!(got.group(), None);
}

#[test]
fn server_routing_id_goes_stale_when_the_client_leaves() {
    let ctx = Context::new();
    let server = sock(&ctx, fabriq::SERVER);
    let ep = bind(&server, Transport::Tcp);
    let client = sock(&ctx, fabriq::CLIENT);
    client.connect(&ep).unwrap();
    client.send("hi", 0).unwrap();
    let id = server.recv_msg(0).unwrap().routing_id().unwrap();
    drop(client);
    // The disconnect reaches the SERVER asynchronously: wait for it.
    let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    loop {
        let mut m = Message::from("late");
        m.set_routing_id(id).unwrap();
        match server.send(m, fabriq::DONTWAIT) {
            Err(Error::EHOSTUNREACH) => break,
            Ok(()) | Err(Error::EAGAIN) => {
                assert!(Instant::now() < until, "routing id still routable");
                // Nothing to await but the I/O thread: poll with a bound.
                let _ = server.poll(fabriq::POLLIN, 10);
            }
            Err(e) => panic!("{e:?}"),
        }
    }
}

fn scatter_gather(t: Transport) {
    let ctx = Context::new();
    let gather = sock(&ctx, fabriq::GATHER);
    let ep = bind(&gather, t);
    let scatter = sock(&ctx, fabriq::SCATTER);
    scatter.connect(&ep).unwrap();
    for i in 0..100 {
        scatter.send(format!("m{i}").as_str(), 0).unwrap();
    }
    for i in 0..100 {
        let m = gather.recv_msg(0).unwrap();
        assert!(!m.get_more());
        assert_eq!(m.as_str().unwrap(), format!("m{i}"), "{t:?}");
    }
    assert_eq!(scatter.send("a", fabriq::SNDMORE), Err(Error::EINVAL));
    assert_eq!(gather.send("a", 0), Err(Error::ENOTSUP));
    assert_eq!(scatter.recv_bytes(fabriq::DONTWAIT), Err(Error::ENOTSUP));
}

#[test]
fn scatter_gather_tcp() {
    scatter_gather(Transport::Tcp);
}

#[test]
fn scatter_gather_ipc() {
    scatter_gather(Transport::Ipc);
}

#[test]
fn scatter_gather_inproc() {
    scatter_gather(Transport::Inproc);
}

#[test]
fn scatter_gather_ofi_tcp() {
    scatter_gather(Transport::OfiTcp);
}

#[test]
fn scatter_gather_ofi_shm() {
    scatter_gather(Transport::OfiShm);
}

#[test]
fn scatter_round_robins_over_gathers() {
    let ctx = Context::new();
    let scatter = sock(&ctx, fabriq::SCATTER);
    let ep = bind(&scatter, Transport::Inproc);
    let g1 = sock(&ctx, fabriq::GATHER);
    let g2 = sock(&ctx, fabriq::GATHER);
    g1.connect(&ep).unwrap();
    g2.connect(&ep).unwrap();
    for i in 0..10 {
        scatter.send(format!("{i}").as_str(), 0).unwrap();
    }
    for _ in 0..5 {
        g1.recv_bytes(0).unwrap();
        g2.recv_bytes(0).unwrap();
    }
}

#[test]
fn channel_pairs_single_part() {
    for t in ALL {
        let ctx = Context::new();
        let a = sock(&ctx, fabriq::CHANNEL);
        let ep = bind(&a, t);
        let b = sock(&ctx, fabriq::CHANNEL);
        b.connect(&ep).unwrap();
        b.send("ping", 0).unwrap();
        assert_eq!(a.recv_string(0).unwrap().unwrap(), "ping", "{t:?}");
        a.send("pong", 0).unwrap();
        assert_eq!(b.recv_string(0).unwrap().unwrap(), "pong", "{t:?}");
        assert_eq!(a.send("x", fabriq::SNDMORE), Err(Error::EINVAL));
    }
}

#[test]
fn peer_connect_peer_routes_both_ways_on_every_transport() {
    // PEER over tcp is also in udp_peer_dgram.rs, and against libzmq in
    // crates/fabriq-draft-peer; here every transport, the fabric's too.
    for t in ALL {
        let ctx = Context::new();
        let a = sock(&ctx, fabriq::PEER);
        let a_ep = bind(&a, t);
        let c = sock(&ctx, fabriq::PEER);
        let c_ep = bind(&c, t);
        let b = sock(&ctx, fabriq::PEER);
        let to_a = b.connect_peer(&a_ep).unwrap();
        let to_c = b.connect_peer(&c_ep).unwrap();
        assert!(to_a != to_c && to_a != 0, "{t:?}");
        for (id, who) in [(to_a, &a), (to_c, &c)] {
            let mut m = Message::from("hello");
            m.set_routing_id(id).unwrap();
            b.send(m, 0).unwrap();
            let got = who.recv_msg(0).unwrap();
            assert_eq!(&got[..], b"hello", "{t:?}");
            let mut reply = Message::from("back");
            reply.set_routing_id(got.routing_id().unwrap()).unwrap();
            who.send(reply, 0).unwrap();
            let back = b.recv_msg(0).unwrap();
            assert_eq!(
                (&back[..], back.routing_id()),
                (&b"back"[..], Some(id)),
                "{t:?}"
            );
        }
    }
}

/// Sends `group`/`body` from `radio` until `dish` gets one (the join has
/// to reach the RADIO first), then returns. Bounded by the timeout.
fn await_join(radio: &Socket, dish: &Socket, group: &str) {
    let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    loop {
        let mut m = Message::from("probe");
        m.set_group(group).unwrap();
        radio.send(m, 0).unwrap();
        if dish.poll(fabriq::POLLIN, 20).unwrap() > 0 {
            let got = dish.recv_msg(0).unwrap();
            assert_eq!(got.group(), Some(group));
            // A "sync" marks where the probes in flight end.
            let mut m = Message::from("sync");
            m.set_group(group).unwrap();
            radio.send(m, 0).unwrap();
            loop {
                let m = dish.recv_msg(0).unwrap();
                assert_eq!(m.group(), Some(group));
                if m.as_str() == Some("sync") {
                    return;
                }
                assert_eq!(m.as_str(), Some("probe"));
            }
        }
        assert!(
            Instant::now() < until,
            "the join of {group} never took effect"
        );
    }
}

fn radio_dish(t: Transport) {
    let ctx = Context::new();
    let radio = sock(&ctx, fabriq::RADIO);
    let ep = bind(&radio, t);
    let dish = sock(&ctx, fabriq::DISH);
    dish.join("movies").unwrap();
    dish.join("tv").unwrap();
    dish.connect(&ep).unwrap();
    await_join(&radio, &dish, "movies");
    await_join(&radio, &dish, "tv");

    for (group, body) in [
        ("movies", "m1"),
        ("weather", "w1"),
        ("tv", "t1"),
        ("movie", "x"),
    ] {
        let mut m = Message::from(body);
        m.set_group(group).unwrap();
        radio.send(m, 0).unwrap();
    }
    let mut m = Message::from("end");
    m.set_group("tv").unwrap();
    radio.send(m, 0).unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let m = dish.recv_msg(0).unwrap();
        assert!(!m.get_more());
        got.push((
            m.group().unwrap().to_string(),
            m.as_str().unwrap().to_string(),
        ));
    }
    assert_eq!(
        got,
        [
            ("movies".to_string(), "m1".to_string()),
            ("tv".to_string(), "t1".to_string()),
            ("tv".to_string(), "end".to_string()),
        ],
        "{t:?}: exact groups only"
    );

    dish.leave("movies").unwrap();
    let mut m = Message::from("after-leave");
    m.set_group("movies").unwrap();
    radio.send(m, 0).unwrap();
    let mut m = Message::from("marker");
    m.set_group("tv").unwrap();
    radio.send(m, 0).unwrap();
    // (The DISH filters too, so this holds however fast the LEAVE goes;
    // the LEAVE on the wire is checked byte for byte below.)
    assert_eq!(dish.recv_msg(0).unwrap().as_str(), Some("marker"), "{t:?}");

    assert_eq!(dish.send("x", 0), Err(Error::ENOTSUP));
    assert_eq!(radio.recv_bytes(fabriq::DONTWAIT), Err(Error::ENOTSUP));
    let mut m = Message::from("x");
    m.set_group("tv").unwrap();
    assert_eq!(radio.send(m, fabriq::SNDMORE), Err(Error::EINVAL));
}

#[test]
fn radio_dish_tcp() {
    radio_dish(Transport::Tcp);
}

#[test]
fn radio_dish_ipc() {
    radio_dish(Transport::Ipc);
}

#[test]
fn radio_dish_inproc() {
    radio_dish(Transport::Inproc);
}

#[test]
fn radio_dish_ofi_tcp() {
    radio_dish(Transport::OfiTcp);
}

#[test]
fn radio_dish_ofi_shm() {
    radio_dish(Transport::OfiShm);
}

#[test]
fn dish_join_leave_errors_as_libzmq() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.join("a").unwrap();
    assert_eq!(dish.join("a"), Err(Error::EINVAL));
    assert_eq!(dish.leave("b"), Err(Error::EINVAL));
    dish.leave("a").unwrap();
    let long = "g".repeat(256);
    assert_eq!(dish.join(&long), Err(Error::EINVAL));
    dish.join(&long[..255]).unwrap();
    assert_eq!(Message::new().set_group(&long), Err(Error::EINVAL));
    let client = sock(&ctx, fabriq::CLIENT);
    assert_eq!(client.join("a"), Err(Error::ENOTSUP));
}

#[test]
fn dish_rejoins_after_the_radio_restarts() {
    let ctx = Context::new();
    let radio = sock(&ctx, fabriq::RADIO);
    let ep = bind(&radio, Transport::Tcp);
    let dish = sock(&ctx, fabriq::DISH);
    dish.set_reconnect_ivl(10).unwrap();
    dish.join("g").unwrap();
    dish.connect(&ep).unwrap();
    await_join(&radio, &dish, "g");
    drop(radio);
    // A new RADIO on the same port gets the join again on reconnect.
    // The old listener closes on the I/O thread: retry the bind, bounded.
    let radio = sock(&ctx, fabriq::RADIO);
    let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    while let Err(e) = radio.bind(&ep) {
        assert_eq!(e, Error::EADDRINUSE);
        assert!(Instant::now() < until, "the port was never freed");
        let _ = radio.poll(fabriq::POLLIN, 10);
    }
    await_join(&radio, &dish, "g");
}

// ---- refused pairs ---------------------------------------------------

/// Monitor event numbers (libzmq's).
const EV_HANDSHAKE_SUCCEEDED: u16 = 0x1000;
const EV_HANDSHAKE_FAILED_PROTOCOL: u16 = 0x2000;

/// Waits for the first handshake outcome on `mon`.
fn handshake_outcome(mon: &Socket) -> u16 {
    loop {
        let head = mon.recv_bytes(0).expect("a handshake event within 5 s");
        let _endpoint = mon.recv_bytes(0).unwrap();
        let ev = u16::from_le_bytes([head[0], head[1]]);
        if ev == EV_HANDSHAKE_SUCCEEDED || ev == EV_HANDSHAKE_FAILED_PROTOCOL {
            return ev;
        }
    }
}

#[test]
fn incompatible_types_are_refused_in_the_handshake() {
    use fabriq::{CLIENT, DEALER, DISH, GATHER, PULL, PUSH, RADIO, ROUTER, SCATTER, SERVER, SUB};
    let cases = [
        (SERVER, CLIENT, true),
        (RADIO, DISH, true),
        (GATHER, SCATTER, true),
        (SERVER, DEALER, false),
        (ROUTER, CLIENT, false),
        (SERVER, SERVER, false),
        (RADIO, SUB, false),
        (PULL, SCATTER, false),
        (GATHER, PUSH, false),
        (CLIENT, CLIENT, false),
    ];
    for (bound, connecting, ok) in cases {
        let ctx = Context::new();
        let b = sock(&ctx, bound);
        let ep = bind(&b, Transport::Tcp);
        let c = sock(&ctx, connecting);
        let mon_ep = format!("inproc://drafts-mon-{}", unique());
        c.monitor(&mon_ep, 0xffff).unwrap();
        let mon = sock(&ctx, fabriq::PAIR);
        mon.connect(&mon_ep).unwrap();
        c.connect(&ep).unwrap();
        let expected = if ok {
            EV_HANDSHAKE_SUCCEEDED
        } else {
            EV_HANDSHAKE_FAILED_PROTOCOL
        };
        assert_eq!(
            handshake_outcome(&mon),
            expected,
            "{connecting:?} connecting to {bound:?}"
        );
    }
}

// ---- the bytes on the wire ---------------------------------------------

/// A ZMTP 3.1 NULL greeting (RFC 23/37), as libzmq sends it.
fn greeting(as_server: bool) -> Vec<u8> {
    let mut g = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 3, 1];
    let mut mech = b"NULL".to_vec();
    mech.resize(20, 0);
    g.extend(mech);
    g.push(u8::from(as_server));
    g.extend([0u8; 31]);
    g
}

/// A READY command with only Socket-Type.
fn ready(socket_type: &str) -> Vec<u8> {
    let mut body = vec![5];
    body.extend(b"READY");
    body.push(11);
    body.extend(b"Socket-Type");
    body.extend((socket_type.len() as u32).to_be_bytes());
    body.extend(socket_type.as_bytes());
    let mut f = vec![0x04, body.len() as u8];
    f.extend(body);
    f
}

/// Reads one short frame: (flags, body).
fn read_frame(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).unwrap();
    assert_eq!(head[0] & 0x02, 0, "a short frame was expected");
    let mut body = vec![0u8; usize::from(head[1])];
    s.read_exact(&mut body).unwrap();
    (head[0], body)
}

/// Accepts one connection and does the peer's half of the handshake as
/// `socket_type`; returns the stream, past the peer's READY.
fn raw_peer(listener: &TcpListener, socket_type: &str) -> TcpStream {
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(TIMEOUT_MS as u64)))
        .unwrap();
    s.write_all(&greeting(true)).unwrap();
    s.write_all(&ready(socket_type)).unwrap();
    let mut theirs = [0u8; 64];
    s.read_exact(&mut theirs).unwrap();
    assert_eq!(&theirs[..12], &greeting(false)[..12]);
    let (flags, body) = read_frame(&mut s);
    assert_eq!(flags, 0x04);
    assert!(body.starts_with(b"\x05READY"));
    s
}

#[test]
fn dish_sends_join_and_leave_as_libzmq_does() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.join("early").unwrap();
    dish.connect(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let mut s = raw_peer(&listener, "RADIO");
    // libzmq's dish_session_t: a command frame "\4JOIN" + group.
    assert_eq!(read_frame(&mut s), (0x04, b"\x04JOINearly".to_vec()));
    dish.join("late").unwrap();
    assert_eq!(read_frame(&mut s), (0x04, b"\x04JOINlate".to_vec()));
    dish.leave("early").unwrap();
    assert_eq!(read_frame(&mut s), (0x04, b"\x05LEAVEearly".to_vec()));

    // What a RADIO sends, as libzmq's radio_session_t frames it: the
    // group frame with MORE, then the body.
    s.write_all(b"\x01\x04late\x00\x05hello").unwrap();
    let m = dish.recv_msg(0).unwrap();
    assert_eq!((m.group(), m.as_str()), (Some("late"), Some("hello")));
}

#[test]
fn radio_frames_group_then_body_as_libzmq_does() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ctx = Context::new();
    let radio = sock(&ctx, fabriq::RADIO);
    radio.connect(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let mut s = raw_peer(&listener, "DISH");
    s.write_all(b"\x04\x09\x04JOINnews").unwrap();
    // The JOIN reaches the RADIO asynchronously: send until a message
    // arrives (messages before it are dropped, never queued).
    let reader = std::thread::spawn(move || {
        let group = read_frame(&mut s);
        let body = read_frame(&mut s);
        (group, body)
    });
    let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    while !reader.is_finished() {
        assert!(Instant::now() < until, "the raw JOIN never took effect");
        let mut m = Message::from("flash");
        m.set_group("news").unwrap();
        radio.send(m, 0).unwrap();
        let _ = radio.poll(fabriq::POLLIN, 5);
    }
    let (group, body) = reader.join().unwrap();
    assert_eq!(group, (0x01, b"news".to_vec()));
    assert_eq!(body, (0x00, b"flash".to_vec()));
}

#[test]
fn multipart_from_a_peer_is_dropped_as_libzmq_does() {
    // A hand-written CLIENT / SCATTER sends a two-frame message, then a
    // single one: SERVER and GATHER deliver only the single one.
    for (ours, theirs) in [(fabriq::SERVER, "CLIENT"), (fabriq::GATHER, "SCATTER")] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let ctx = Context::new();
        let s = sock(&ctx, ours);
        s.connect(&format!("tcp://127.0.0.1:{port}")).unwrap();
        let mut raw = raw_peer(&listener, theirs);
        raw.write_all(b"\x01\x04part\x00\x04more\x00\x06single")
            .unwrap();
        let m = s.recv_msg(0).unwrap();
        assert_eq!(m.as_str(), Some("single"), "{ours:?}");
        assert!(!m.get_more());
        assert_eq!(m.routing_id().is_some(), ours == fabriq::SERVER);
    }
}

// ---- thread-safe sockets ------------------------------------------------

/// Four threads receive on one SERVER while two CLIENTs send: every
/// message reaches exactly one of them, and each answers its client by
/// routing id while the others are blocked in `recv_msg`.
#[test]
fn a_thread_safe_server_serves_from_four_threads() {
    use fabriq::ThreadSafeSocket;
    use std::sync::Arc;
    const EACH: u32 = 500;
    for t in [Transport::Tcp, Transport::Inproc, Transport::OfiTcp] {
        let ctx = Context::new();
        let server = Arc::new(ThreadSafeSocket::new(sock(&ctx, fabriq::SERVER)).unwrap());
        // No receive timeout: a worker that slept through a request must
        // not be rescued by its timeout's look (the clients' 5 s reply
        // timeout then fails the test). Seen before the fix in `Turns::took`:
        // one run in a few took 5 s instead of under one.
        server.with(|s| s.set_rcvtimeo(-1)).unwrap();
        let ep = server.with(|s| bind(s, t));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let server = server.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let m = server.recv_msg(0).expect("a request within the timeout");
                        if &m[..] == b"stop" {
                            return got;
                        }
                        got.push(u32::from_be_bytes(m[..4].try_into().unwrap()));
                        let mut reply = Message::from(&m[..]);
                        reply.set_routing_id(m.routing_id().unwrap()).unwrap();
                        server.send(reply, 0).unwrap();
                    }
                })
            })
            .collect();
        let clients: Vec<_> = (0..2u32)
            .map(|c| {
                let ctx = ctx.clone();
                let ep = ep.clone();
                std::thread::spawn(move || {
                    let client = sock(&ctx, fabriq::CLIENT);
                    client.connect(&ep).unwrap();
                    for i in 0..EACH {
                        let n = c * EACH + i;
                        client.send(&n.to_be_bytes()[..], 0).unwrap();
                        let back = client.recv_msg(0).expect("a reply within the timeout");
                        assert_eq!(&back[..], n.to_be_bytes(), "{t:?}");
                    }
                    client
                })
            })
            .collect();
        let clients: Vec<Socket> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        for _ in 0..4 {
            clients[0].send("stop", 0).unwrap();
        }
        // Joined through a channel with a limit: a worker that sleeps
        // through its "stop" must fail the test, not hang it.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let all: Vec<u32> = workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect();
            let _ = done.send(all);
        });
        let mut all = finished
            .recv_timeout(Duration::from_secs(30))
            .expect("a worker slept through its stop message");
        all.sort_unstable();
        assert_eq!(
            all,
            (0..2 * EACH).collect::<Vec<_>>(),
            "{t:?}: each exactly once"
        );
    }
}

/// A thread blocked in `recv_msg` does not hold the socket: another
/// thread sends on it meanwhile (with a `Mutex<Socket>` the send would
/// wait for the receive, which waits for the reply to the send).
#[test]
fn a_blocked_receive_does_not_hold_a_thread_safe_socket() {
    use fabriq::ThreadSafeSocket;
    use std::sync::Arc;
    let ctx = Context::new();
    let server = sock(&ctx, fabriq::SERVER);
    let ep = bind(&server, Transport::Tcp);
    let client = Arc::new(ThreadSafeSocket::new(sock(&ctx, fabriq::CLIENT)).unwrap());
    client.with(|c| c.connect(&ep)).unwrap();
    let receiver = {
        let client = client.clone();
        std::thread::spawn(move || client.recv_msg(0).map(|m| m.to_vec()))
    };
    client.send("ping", 0).unwrap();
    let m = server.recv_msg(0).unwrap();
    let mut reply = Message::from("pong");
    reply.set_routing_id(m.routing_id().unwrap()).unwrap();
    server.send(reply, 0).unwrap();
    assert_eq!(receiver.join().unwrap().unwrap(), b"pong");
}

/// Two threads blocked on an idle thread-safe socket both time out after
/// the receive timeout, and neither before it.
#[test]
fn thread_safe_receives_time_out_on_an_idle_socket() {
    use fabriq::ThreadSafeSocket;
    use std::sync::Arc;
    let ctx = Context::new();
    let dish = Arc::new(ThreadSafeSocket::new(sock(&ctx, fabriq::DISH)).unwrap());
    dish.with(|d| d.set_rcvtimeo(200)).unwrap();
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let dish = dish.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let r = dish.recv_msg(0).map(|m| m.to_vec());
                (r, t0.elapsed())
            })
        })
        .collect();
    for w in waiters {
        let (r, took) = w.join().unwrap();
        assert_eq!(r, Err(Error::EAGAIN));
        assert!(
            took >= Duration::from_millis(195) && took < Duration::from_secs(3),
            "{took:?}"
        );
    }
    assert_eq!(
        dish.recv_msg(fabriq::DONTWAIT).map(|m| m.to_vec()),
        Err(Error::EAGAIN)
    );
    // A receive inside `with` does not block (it would hold the socket).
    let t0 = Instant::now();
    assert_eq!(
        dish.with(|d| d.recv_msg(0).map(|m| m.to_vec())),
        Err(Error::EAGAIN)
    );
    assert!(t0.elapsed() < Duration::from_millis(150));
}

/// A thread blocked in `send` on a full thread-safe CLIENT does not hold
/// it: another thread receives on the same CLIENT meanwhile, and the send
/// goes once the SERVER makes room.
#[test]
fn a_blocked_send_does_not_hold_a_thread_safe_socket() {
    use fabriq::ThreadSafeSocket;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let ctx = Context::new();
    let server = sock(&ctx, fabriq::SERVER);
    server.set_rcvhwm(1).unwrap();
    let ep = bind(&server, Transport::Inproc);
    let client = Arc::new(ThreadSafeSocket::new(sock(&ctx, fabriq::CLIENT)).unwrap());
    client
        .with(|c| {
            c.set_sndhwm(1)?;
            c.connect(&ep)
        })
        .unwrap();
    client.send("hello", 0).unwrap();
    let rid = server.recv_msg(0).unwrap().routing_id().unwrap();
    // Fill the pipe (SNDHWM 1 + RCVHWM 1), then one more waits.
    let mut sent = 0;
    while client.send("fill", fabriq::DONTWAIT).is_ok() {
        sent += 1;
        assert!(sent < 100, "the CLIENT never filled");
    }
    let started = Arc::new(AtomicBool::new(false));
    let sender = {
        let (client, started) = (client.clone(), started.clone());
        std::thread::spawn(move || {
            started.store(true, Ordering::SeqCst);
            client.send("waited", 0)
        })
    };
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let mut reply = Message::from("meanwhile");
    reply.set_routing_id(rid).unwrap();
    server.send(reply, 0).unwrap();
    assert_eq!(&client.recv_msg(0).unwrap()[..], b"meanwhile");
    assert!(!sender.is_finished(), "the send went with the pipe full");
    for _ in 0..sent {
        assert_eq!(&server.recv_msg(0).unwrap()[..], b"fill");
    }
    sender.join().unwrap().unwrap();
    assert_eq!(&server.recv_msg(0).unwrap()[..], b"waited");
}

/// `ThreadSafeSocket::poll` waits without holding the socket: it wakes
/// when a message comes (sent from another thread meanwhile), and times
/// out on an idle socket.
#[test]
fn a_thread_safe_socket_polls_without_holding_it() {
    use fabriq::{ThreadSafeSocket, POLLIN, POLLOUT};
    use std::sync::Arc;
    let ctx = Context::new();
    let a = Arc::new(ThreadSafeSocket::new(sock(&ctx, fabriq::CHANNEL)).unwrap());
    let ep = a.with(|s| bind(s, Transport::Inproc));
    let b = sock(&ctx, fabriq::CHANNEL);
    b.connect(&ep).unwrap();
    let t0 = Instant::now();
    assert_eq!(a.poll(POLLIN, 100).unwrap(), fabriq::PollEvents::empty());
    assert!(t0.elapsed() >= Duration::from_millis(95));
    let poller = {
        let a = a.clone();
        std::thread::spawn(move || a.poll(POLLIN, 5000))
    };
    // The CHANNEL sends while the other thread polls it.
    a.send("out", 0).unwrap();
    assert_eq!(b.recv_string(0).unwrap().unwrap(), "out");
    b.send("in", 0).unwrap();
    assert_eq!(poller.join().unwrap().unwrap(), POLLIN);
    assert_eq!(a.poll(POLLIN | POLLOUT, 0).unwrap(), POLLIN | POLLOUT);
    assert_eq!(&a.recv_msg(0).unwrap()[..], b"in");
}
