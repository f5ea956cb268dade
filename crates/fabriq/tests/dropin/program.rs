// The drop-in scenarios, written against the `zmq` crate's API only.
//
// This file is `include!`d by `tests/dropin.rs` twice: in a module where
// `zmq` is the real zmq crate and in one where `zmq` is fabriq. It must
// not name anything that exists only in fabriq.
//
// Every scenario has its own Context and its own endpoints (ephemeral tcp
// ports, `ipc://*`, inproc names unique to the scenario). Every blocking
// call is bounded: sockets get receive/send timeouts and waits are polls
// with deadlines.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Upper bound for any single wait for a message that should come.
const TIMEOUT_MS: i32 = 5000;

/// A socket with bounded blocking calls and no linger (so that dropping
/// the context never waits for undelivered messages).
fn socket(ctx: &zmq::Context, socket_type: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(socket_type).unwrap();
    s.set_linger(0).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s
}

/// Binds to an ephemeral endpoint and returns the resolved one.
fn bind_ephemeral(s: &zmq::Socket, endpoint: &str) -> String {
    s.bind(endpoint).unwrap();
    s.get_last_endpoint().unwrap().unwrap()
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_millis(TIMEOUT_MS as u64)
}

/// Everything that can be received from `s` right now.
fn drain(s: &zmq::Socket) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        match s.recv_bytes(zmq::DONTWAIT) {
            Ok(m) => out.push(m),
            Err(zmq::Error::EAGAIN) => return out,
            Err(e) => panic!("recv failed: {e:?}"),
        }
    }
}

/// Publishes `probes` again and again until `subscriber` receives a
/// message starting with `wanted`. Returns every message received up to
/// and including that one.
fn publish_until(
    publisher: &zmq::Socket,
    subscriber: &zmq::Socket,
    probes: &[&str],
    wanted: &[u8],
) -> Vec<Vec<u8>> {
    let end = deadline();
    let mut got = Vec::new();
    loop {
        assert!(
            Instant::now() < end,
            "no message starting with {:?} arrived; got {got:?}",
            String::from_utf8_lossy(wanted)
        );
        for p in probes {
            publisher.send(*p, 0).unwrap();
        }
        if subscriber.poll(zmq::POLLIN, 20).unwrap() > 0 {
            for m in drain(subscriber) {
                let done = m.starts_with(wanted);
                got.push(m);
                if done {
                    return got;
                }
            }
        }
    }
}

fn text(v: &[Vec<u8>]) -> Vec<String> {
    v.iter()
        .map(|m| String::from_utf8_lossy(m).into_owned())
        .collect()
}

// ---- 1. REQ/REP over tcp ------------------------------------------------

#[test]
fn req_rep_tcp_round_trips_and_efsm() {
    let ctx = zmq::Context::new();
    let rep = socket(&ctx, zmq::REP);
    let endpoint = bind_ephemeral(&rep, "tcp://127.0.0.1:*");
    let req = socket(&ctx, zmq::REQ);

    // REQ must send first; REP must receive first.
    assert_eq!(req.recv_bytes(0), Err(zmq::Error::EFSM));
    assert_eq!(rep.send("too early", 0), Err(zmq::Error::EFSM));

    req.connect(&endpoint).unwrap();
    for i in 0..5 {
        req.send(format!("request {i}").as_str(), 0).unwrap();
        if i == 0 {
            // A second request before the reply.
            assert_eq!(req.send("again", 0), Err(zmq::Error::EFSM));
        }
        assert_eq!(rep.recv_string(0).unwrap().unwrap(), format!("request {i}"));
        assert!(!rep.get_rcvmore().unwrap());
        rep.send(format!("reply {i}").as_str(), 0).unwrap();
        // One reply per request.
        assert_eq!(rep.send("second reply", 0), Err(zmq::Error::EFSM));
        assert_eq!(req.recv_string(0).unwrap().unwrap(), format!("reply {i}"));
        // No second receive for one request.
        assert_eq!(req.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::EFSM));
    }

    // Multipart requests and replies keep their frames; the envelope is
    // invisible on both sides.
    req.send_multipart(["part 1", "part 2"], 0).unwrap();
    assert_eq!(
        rep.recv_multipart(0).unwrap(),
        vec![b"part 1".to_vec(), b"part 2".to_vec()]
    );
    rep.send("r1", zmq::SNDMORE).unwrap();
    rep.send("r2", 0).unwrap();
    assert_eq!(
        req.recv_multipart(0).unwrap(),
        vec![b"r1".to_vec(), b"r2".to_vec()]
    );
}

// ---- 2. PUB/SUB with topics over tcp -----------------------------------

#[test]
fn pub_sub_topics_tcp() {
    let ctx = zmq::Context::new();
    let publisher = socket(&ctx, zmq::PUB);
    let endpoint = bind_ephemeral(&publisher, "tcp://127.0.0.1:*");
    let subscriber = socket(&ctx, zmq::SUB);
    subscriber.connect(&endpoint).unwrap();
    subscriber.set_subscribe(b"alpha").unwrap();

    // Until the subscription reaches the publisher nothing arrives; after
    // that only "alpha" messages do.
    let got = publish_until(
        &publisher,
        &subscriber,
        &["beta probe", "alpha probe"],
        b"alpha",
    );
    assert!(
        got.iter().all(|m| m.starts_with(b"alpha")),
        "{:?}",
        text(&got)
    );

    // The filter is in place now: an interleaved burst.
    for i in 0..20 {
        publisher.send(format!("beta {i}").as_str(), 0).unwrap();
        publisher.send(format!("alpha {i}").as_str(), 0).unwrap();
    }
    publisher.send("alpha end", 0).unwrap();
    let mut burst = Vec::new();
    loop {
        let m = subscriber.recv_bytes(0).unwrap();
        if m == b"alpha end" {
            break;
        }
        burst.push(m);
    }
    let burst: Vec<String> = text(&burst)
        .into_iter()
        .filter(|m| m != "alpha probe")
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("alpha {i}")).collect();
    assert_eq!(burst, expected);

    // Switch topics.
    subscriber.set_unsubscribe(b"alpha").unwrap();
    subscriber.set_subscribe(b"beta").unwrap();
    let got = publish_until(
        &publisher,
        &subscriber,
        &["alpha probe 2", "beta probe 2"],
        b"beta",
    );
    // Only alpha messages already on their way may come before the first
    // beta.
    for m in &got[..got.len() - 1] {
        assert!(m.starts_with(b"alpha probe"), "{:?}", text(&got));
    }

    // Both changes took effect (the unsubscribe was sent first).
    for i in 0..20 {
        publisher.send(format!("alpha {i}").as_str(), 0).unwrap();
        publisher.send(format!("beta {i}").as_str(), 0).unwrap();
    }
    publisher.send("beta end", 0).unwrap();
    let mut burst = Vec::new();
    loop {
        let m = subscriber.recv_bytes(0).unwrap();
        if m == b"beta end" {
            break;
        }
        burst.push(m);
    }
    let burst: Vec<String> = text(&burst)
        .into_iter()
        .filter(|m| m != "beta probe 2")
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("beta {i}")).collect();
    assert_eq!(burst, expected);
}

// ---- 3. PUSH/PULL fan-out over tcp -------------------------------------

#[test]
fn push_pull_fan_out_round_robin() {
    const N: usize = 300;
    let ctx = zmq::Context::new();
    let push = socket(&ctx, zmq::PUSH);
    let endpoint = bind_ephemeral(&push, "tcp://127.0.0.1:*");
    let pulls: Vec<zmq::Socket> = (0..3)
        .map(|_| {
            let pull = socket(&ctx, zmq::PULL);
            pull.connect(&endpoint).unwrap();
            pull
        })
        .collect();

    // Wait until every PULL is connected: probe until each has got one.
    let end = deadline();
    let mut probed = [false; 3];
    while !probed.iter().all(|p| *p) {
        assert!(Instant::now() < end, "not all PULLs connected: {probed:?}");
        match push.send("probe", zmq::DONTWAIT) {
            Ok(()) | Err(zmq::Error::EAGAIN) => {}
            Err(e) => panic!("probe: {e:?}"),
        }
        let mut items: Vec<zmq::PollItem> =
            pulls.iter().map(|p| p.as_poll_item(zmq::POLLIN)).collect();
        zmq::poll(&mut items, 10).unwrap();
        let readable: Vec<bool> = items.iter().map(|i| i.is_readable()).collect();
        drop(items);
        for (k, pull) in pulls.iter().enumerate() {
            if readable[k] {
                for m in drain(pull) {
                    assert_eq!(m, b"probe");
                    probed[k] = true;
                }
            }
        }
    }

    for i in 0..N {
        push.send(format!("m{i}").as_str(), 0).unwrap();
    }
    let mut per_pull = [Vec::new(), Vec::new(), Vec::new()];
    let end = deadline();
    while per_pull.iter().map(Vec::len).sum::<usize>() < N {
        assert!(
            Instant::now() < end,
            "only {:?} messages arrived",
            per_pull.iter().map(Vec::len).collect::<Vec<_>>()
        );
        let mut items: Vec<zmq::PollItem> =
            pulls.iter().map(|p| p.as_poll_item(zmq::POLLIN)).collect();
        zmq::poll(&mut items, 100).unwrap();
        drop(items);
        for (k, pull) in pulls.iter().enumerate() {
            for m in drain(pull) {
                if m != b"probe" {
                    per_pull[k].push(String::from_utf8(m).unwrap());
                }
            }
        }
    }
    // Strict round robin over three ready peers: an equal share each.
    let counts: Vec<usize> = per_pull.iter().map(Vec::len).collect();
    assert_eq!(counts, [N / 3; 3], "not round robin");
    // Every message exactly once, and in order on each PULL.
    let mut all: Vec<usize> = Vec::new();
    for msgs in &per_pull {
        let nums: Vec<usize> = msgs.iter().map(|m| m[1..].parse().unwrap()).collect();
        assert!(nums.windows(2).all(|w| w[0] < w[1]), "{nums:?}");
        all.extend(nums);
    }
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>());
    // Nothing more is pending.
    for pull in &pulls {
        assert!(drain(pull).iter().all(|m| m == b"probe"));
    }
}

// ---- 4. DEALER/ROUTER with identities ----------------------------------

#[test]
fn dealer_router_identities_and_mandatory() {
    let ctx = zmq::Context::new();
    let router = socket(&ctx, zmq::ROUTER);
    router.set_router_mandatory(true).unwrap();
    let endpoint = bind_ephemeral(&router, "tcp://127.0.0.1:*");

    let mut dealers = Vec::new();
    for name in ["alice", "bob"] {
        let dealer = socket(&ctx, zmq::DEALER);
        dealer.set_identity(name.as_bytes()).unwrap();
        assert_eq!(dealer.get_identity().unwrap(), name.as_bytes());
        dealer.connect(&endpoint).unwrap();
        dealer
            .send_multipart([&b"hello"[..], format!("from {name}").as_bytes()], 0)
            .unwrap();
        dealers.push((name, dealer));
    }

    let mut received: HashMap<Vec<u8>, Vec<Vec<u8>>> = HashMap::new();
    for _ in 0..2 {
        let mut parts = router.recv_multipart(0).unwrap();
        assert!(!router.get_rcvmore().unwrap());
        let identity = parts.remove(0);
        received.insert(identity, parts);
    }
    for (name, _) in &dealers {
        assert_eq!(
            received.get(name.as_bytes()),
            Some(&vec![
                b"hello".to_vec(),
                format!("from {name}").into_bytes()
            ]),
            "{name}"
        );
    }

    // A peer without an identity gets one made up by the ROUTER, and
    // replies reach it through that.
    let anonymous = socket(&ctx, zmq::DEALER);
    anonymous.connect(&endpoint).unwrap();
    anonymous.send("who am I?", 0).unwrap();
    let parts = router.recv_multipart(0).unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[1], b"who am I?");
    let made_up = parts[0].clone();
    assert!(!made_up.is_empty() && made_up != b"alice" && made_up != b"bob");
    router
        .send_multipart([&made_up[..], &b"nobody"[..]], 0)
        .unwrap();
    assert_eq!(anonymous.recv_bytes(0).unwrap(), b"nobody");

    // Unknown identity with ROUTER_MANDATORY.
    assert_eq!(
        router.send_multipart([&b"carol"[..], &b"anyone?"[..]], 0),
        Err(zmq::Error::EHOSTUNREACH)
    );
    assert_eq!(
        router.send("carol", zmq::SNDMORE | zmq::DONTWAIT),
        Err(zmq::Error::EHOSTUNREACH)
    );

    // Replies by identity (the failed sends left nothing half-sent).
    for (name, _) in &dealers {
        router
            .send_multipart(
                vec![
                    name.as_bytes().to_vec(),
                    b"hi".to_vec(),
                    name.as_bytes().to_vec(),
                ],
                0,
            )
            .unwrap();
    }
    for (name, dealer) in &dealers {
        assert_eq!(
            dealer.recv_multipart(0).unwrap(),
            vec![b"hi".to_vec(), name.as_bytes().to_vec()]
        );
        assert!(!dealer.get_rcvmore().unwrap());
        assert_eq!(dealer.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
    }
}

// ---- 5. poll -----------------------------------------------------------

#[test]
fn poll_two_sockets() {
    let ctx = zmq::Context::new();
    let quiet = socket(&ctx, zmq::PULL);
    quiet.bind("inproc://dropin-poll-quiet").unwrap();
    let busy = socket(&ctx, zmq::PULL);
    let endpoint = bind_ephemeral(&busy, "tcp://127.0.0.1:*");
    let push = socket(&ctx, zmq::PUSH);

    // A PUSH with no peer cannot send.
    assert_eq!(push.poll(zmq::POLLOUT, 0).unwrap(), 0);
    push.connect(&endpoint).unwrap();

    let mut items = [
        quiet.as_poll_item(zmq::POLLIN),
        busy.as_poll_item(zmq::POLLIN),
    ];
    assert_eq!(zmq::poll(&mut items, 0).unwrap(), 0);
    assert!(!items[0].is_readable() && !items[1].is_readable());

    let start = Instant::now();
    assert_eq!(zmq::poll(&mut items, 50).unwrap(), 0);
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(40) && waited < Duration::from_secs(2),
        "{waited:?}"
    );

    push.send("ping", 0).unwrap();
    assert_eq!(zmq::poll(&mut items, TIMEOUT_MS as i64).unwrap(), 1);
    assert!(!items[0].is_readable());
    assert!(items[1].is_readable());
    assert_eq!(items[1].get_revents(), zmq::POLLIN);
    assert!(items[1].has_socket(&busy) && !items[1].has_socket(&quiet));
    assert!(busy.get_events().unwrap().contains(zmq::POLLIN));

    assert_eq!(busy.recv_bytes(0).unwrap(), b"ping");
    // Level triggered: nothing left, nothing ready.
    assert_eq!(zmq::poll(&mut items, 0).unwrap(), 0);
    assert!(!busy.get_events().unwrap().contains(zmq::POLLIN));

    // Once connected, the PUSH is writable.
    assert_eq!(push.poll(zmq::POLLOUT, 0).unwrap(), 1);
}

// ---- 6. inproc connect before bind -------------------------------------

#[test]
fn inproc_connect_before_bind() {
    let ctx = zmq::Context::new();
    let push = socket(&ctx, zmq::PUSH);
    push.connect("inproc://dropin-late-binder").unwrap();
    push.send("early", zmq::DONTWAIT).unwrap();
    push.send("bird", 0).unwrap();

    let pull = socket(&ctx, zmq::PULL);
    pull.bind("inproc://dropin-late-binder").unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"early");
    assert_eq!(pull.recv_bytes(0).unwrap(), b"bird");
    push.send("after bind", 0).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"after bind");
}

// ---- 7. receive timeout ------------------------------------------------

#[test]
fn rcvtimeo_gives_eagain() {
    let ctx = zmq::Context::new();
    let pull = socket(&ctx, zmq::PULL);
    pull.bind("inproc://dropin-rcvtimeo").unwrap();

    let start = Instant::now();
    assert_eq!(pull.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
    assert!(start.elapsed() < Duration::from_millis(500));

    pull.set_rcvtimeo(50).unwrap();
    assert_eq!(pull.get_rcvtimeo().unwrap(), 50);
    let start = Instant::now();
    assert_eq!(pull.recv_bytes(0), Err(zmq::Error::EAGAIN));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(40) && waited < Duration::from_secs(2),
        "{waited:?}"
    );

    let mut msg = zmq::Message::new();
    assert_eq!(pull.recv(&mut msg, 0), Err(zmq::Error::EAGAIN));
}

// ---- 8. XPUB subscription messages -------------------------------------

#[test]
fn xpub_sees_subscriptions() {
    let ctx = zmq::Context::new();
    let xpub = socket(&ctx, zmq::XPUB);
    let endpoint = bind_ephemeral(&xpub, "tcp://127.0.0.1:*");
    let sub = socket(&ctx, zmq::SUB);
    sub.connect(&endpoint).unwrap();

    sub.set_subscribe(b"x").unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01x");
    assert!(!xpub.get_rcvmore().unwrap());

    // The XPUB has seen the subscription, so its filter is in place.
    xpub.send("y not for you", 0).unwrap();
    xpub.send("x for you", 0).unwrap();
    assert_eq!(sub.recv_bytes(0).unwrap(), b"x for you");

    sub.set_unsubscribe(b"x").unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00x");
    assert_eq!(xpub.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
}

// ---- 9. a 4 MiB message over ipc ---------------------------------------

#[test]
fn ipc_large_message() {
    assert_eq!(zmq::has("ipc"), Some(true));
    let ctx = zmq::Context::new();
    let pull = socket(&ctx, zmq::PULL);
    let endpoint = bind_ephemeral(&pull, "ipc://*");
    assert!(endpoint.starts_with("ipc://"), "{endpoint}");
    let push = socket(&ctx, zmq::PUSH);
    push.connect(&endpoint).unwrap();

    let payload: Vec<u8> = (0..4 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(7) % 251) as u8)
        .collect();
    push.send(payload.clone(), 0).unwrap();
    push.send("after", 0).unwrap();

    let msg = pull.recv_msg(0).unwrap();
    assert_eq!(msg.len(), payload.len());
    assert!(msg[..] == payload[..], "payload corrupted");
    assert!(!msg.get_more());
    assert_eq!(pull.recv_bytes(0).unwrap(), b"after");
}

// ---- 10. bad endpoints -------------------------------------------------

#[test]
fn bad_endpoints() {
    let ctx = zmq::Context::new();
    let s = socket(&ctx, zmq::PUSH);

    assert_eq!(s.bind("tcp://127.0.0.1"), Err(zmq::Error::EINVAL));
    assert_eq!(s.connect("tcp://127.0.0.1"), Err(zmq::Error::EINVAL));
    assert_eq!(s.connect("foo://x"), Err(zmq::Error::EPROTONOSUPPORT));
    assert_eq!(s.bind("foo://x"), Err(zmq::Error::EPROTONOSUPPORT));
    assert_eq!(s.bind("inproc://"), Err(zmq::Error::EINVAL));
    assert_eq!(s.connect("inproc://"), Err(zmq::Error::EINVAL));
    assert_eq!(s.bind("no-scheme"), Err(zmq::Error::EINVAL));

    // A port in use.
    let endpoint = bind_ephemeral(&s, "tcp://127.0.0.1:*");
    let other = socket(&ctx, zmq::PULL);
    assert_eq!(other.bind(&endpoint), Err(zmq::Error::EADDRINUSE));

    // An inproc name in use.
    s.bind("inproc://dropin-taken").unwrap();
    assert_eq!(
        other.bind("inproc://dropin-taken"),
        Err(zmq::Error::EADDRINUSE)
    );

    // Unbinding or disconnecting what was never bound or connected.
    assert_eq!(other.unbind("tcp://127.0.0.1:1"), Err(zmq::Error::ENOENT));
    assert_eq!(
        other.disconnect("tcp://127.0.0.1:1"),
        Err(zmq::Error::ENOENT)
    );

    // The failures left the sockets usable.
    other.connect(&endpoint).unwrap();
    s.send("still fine", 0).unwrap();
    assert_eq!(other.recv_bytes(0).unwrap(), b"still fine");
}

// ---- 11. the Message API -----------------------------------------------

#[test]
fn message_api() {
    let ctx = zmq::Context::new();
    let a = socket(&ctx, zmq::PAIR);
    a.bind("inproc://dropin-message").unwrap();
    let b = socket(&ctx, zmq::PAIR);
    b.connect("inproc://dropin-message").unwrap();

    // Constructing messages.
    let m = zmq::Message::from("hello");
    assert_eq!(&m[..], b"hello");
    assert_eq!(m.as_str(), Some("hello"));
    assert!(!m.get_more());
    assert_eq!(m, zmq::Message::from(&b"hello"[..]));
    assert_eq!(m, zmq::Message::from(b"hello".to_vec()));
    assert_eq!(zmq::Message::new().len(), 0);
    let mut sized = zmq::Message::with_size(3);
    assert_eq!(sized.len(), 3);
    sized.copy_from_slice(b"abc");
    assert_eq!(sized.as_str(), Some("abc"));
    let mut edited = zmq::Message::from("jello");
    edited[0] = b'h';
    assert_eq!(edited, m);
    assert_eq!(zmq::Message::from(&[0xffu8, 0xfe][..]).as_str(), None);

    // Everything that can be sent.
    // (The borrowed String and Vec stay in use below, so the sends go
    // through `From<&T>` and leave them with the caller.)
    let owned = String::from("a String");
    let owned_bytes = b"a &Vec".to_vec();
    a.send("a str", 0).unwrap();
    a.send(&b"a byte slice"[..], 0).unwrap();
    a.send(b"a Vec".to_vec(), 0).unwrap();
    a.send(zmq::Message::from("a Message"), 0).unwrap();
    a.send(&owned, 0).unwrap();
    a.send(&owned_bytes, 0).unwrap();
    a.send("", 0).unwrap();
    for expected in [
        "a str",
        "a byte slice",
        "a Vec",
        "a Message",
        "a String",
        "a &Vec",
        "",
    ] {
        let msg = b.recv_msg(0).unwrap();
        assert_eq!(msg.as_str(), Some(expected));
        assert!(!msg.get_more());
    }
    assert_eq!(owned.len() + owned_bytes.len(), 14);

    // Multipart: get_more on each frame, get_rcvmore on the socket.
    a.send("one", zmq::SNDMORE).unwrap();
    a.send("two", zmq::SNDMORE).unwrap();
    a.send("three", 0).unwrap();
    let mut msg = zmq::Message::new();
    for (expected, more) in [("one", true), ("two", true), ("three", false)] {
        b.recv(&mut msg, 0).unwrap();
        assert_eq!(msg.as_str(), Some(expected));
        assert_eq!(msg.get_more(), more, "{expected}");
        assert_eq!(b.get_rcvmore().unwrap(), more, "{expected}");
    }
    b.send_multipart(vec![b"x".to_vec(), Vec::new(), b"z".to_vec()], 0)
        .unwrap();
    assert_eq!(
        a.recv_multipart(0).unwrap(),
        vec![b"x".to_vec(), Vec::new(), b"z".to_vec()]
    );

    // recv_into: the full size comes back even when truncated.
    a.send("hello world", 0).unwrap();
    let mut small = [0u8; 5];
    assert_eq!(b.recv_into(&mut small, 0).unwrap(), 11);
    assert_eq!(&small, b"hello");
    a.send("hi", 0).unwrap();
    let mut big = [0u8; 16];
    assert_eq!(b.recv_into(&mut big, 0).unwrap(), 2);
    assert_eq!(&big[..2], b"hi");
    assert!(big[2..].iter().all(|&x| x == 0));
    // Truncation works frame by frame.
    a.send("first frame", zmq::SNDMORE).unwrap();
    a.send("second", 0).unwrap();
    assert_eq!(b.recv_into(&mut small, 0).unwrap(), 11);
    assert!(b.get_rcvmore().unwrap());
    assert_eq!(b.recv_into(&mut small, 0).unwrap(), 6);
    assert_eq!(&small, b"secon");
    assert!(!b.get_rcvmore().unwrap());

    // recv_string: invalid UTF-8 comes back as bytes.
    a.send("text", 0).unwrap();
    a.send(&[0xffu8, 0x00][..], 0).unwrap();
    assert_eq!(b.recv_string(0).unwrap(), Ok("text".to_string()));
    assert_eq!(b.recv_string(0).unwrap(), Err(vec![0xff, 0x00]));
}

// ---- more zmq-crate-style checks ---------------------------------------

#[test]
fn socket_options_and_introspection() {
    let ctx = zmq::Context::new();
    for t in [
        zmq::PAIR,
        zmq::PUB,
        zmq::SUB,
        zmq::REQ,
        zmq::REP,
        zmq::DEALER,
        zmq::ROUTER,
        zmq::PULL,
        zmq::PUSH,
        zmq::XPUB,
        zmq::XSUB,
        zmq::STREAM,
    ] {
        let s = ctx.socket(t).unwrap();
        assert_eq!(s.get_socket_type().unwrap(), t);
        assert!(!s.get_rcvmore().unwrap());
        assert_eq!(s.get_last_endpoint().unwrap().unwrap(), "");
    }

    let s = ctx.socket(zmq::DEALER).unwrap();
    // Defaults as libzmq has them.
    assert_eq!(s.get_sndhwm().unwrap(), 1000);
    assert_eq!(s.get_rcvhwm().unwrap(), 1000);
    assert_eq!(s.get_rcvtimeo().unwrap(), -1);
    assert_eq!(s.get_sndtimeo().unwrap(), -1);
    assert_eq!(s.get_linger().unwrap(), -1);
    assert_eq!(s.get_identity().unwrap(), Vec::<u8>::new());
    assert_eq!(s.get_mechanism().unwrap(), zmq::Mechanism::ZMQ_NULL);

    s.set_sndhwm(10).unwrap();
    assert_eq!(s.get_sndhwm().unwrap(), 10);
    s.set_rcvhwm(20).unwrap();
    assert_eq!(s.get_rcvhwm().unwrap(), 20);
    s.set_linger(0).unwrap();
    assert_eq!(s.get_linger().unwrap(), 0);
    s.set_sndtimeo(123).unwrap();
    assert_eq!(s.get_sndtimeo().unwrap(), 123);
    s.set_identity(b"me").unwrap();
    assert_eq!(s.get_identity().unwrap(), b"me");

    // Ephemeral ports resolve.
    s.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = s.get_last_endpoint().unwrap().unwrap();
    let port: u16 = endpoint
        .strip_prefix("tcp://127.0.0.1:")
        .unwrap_or_else(|| panic!("{endpoint}"))
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    s.bind("tcp://127.0.0.1:0").unwrap();
    let endpoint2 = s.get_last_endpoint().unwrap().unwrap();
    assert!(endpoint2.starts_with("tcp://127.0.0.1:"), "{endpoint2}");
    assert!(!endpoint2.ends_with(":0") && endpoint2 != endpoint);
    s.unbind(&endpoint).unwrap();
    s.unbind(&endpoint2).unwrap();
    assert_eq!(s.unbind(&endpoint), Err(zmq::Error::ENOENT));

    // A DEALER with no peer cannot send right now.
    assert_eq!(s.send("nobody", zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
    assert!(s.get_events().unwrap().is_empty());

    // The error values.
    assert_eq!(zmq::Error::EFSM.to_raw(), 156_384_763);
    assert_eq!(zmq::Error::from_raw(156_384_765), zmq::Error::ETERM);
    assert_eq!(
        zmq::Error::EAGAIN.message(),
        "Resource temporarily unavailable"
    );
    assert_eq!(
        zmq::Error::EFSM.to_string(),
        "Operation cannot be accomplished in current state"
    );
    assert_eq!(zmq::version().0, 4);
}

// ---- REQ and REP with ROUTER and DEALER: the empty delimiter -----------

#[test]
fn req_rep_envelopes_with_router_and_dealer() {
    let ctx = zmq::Context::new();

    // REQ -> ROUTER: [identity, "", request].
    let router = socket(&ctx, zmq::ROUTER);
    let endpoint = bind_ephemeral(&router, "tcp://127.0.0.1:*");
    let req = socket(&ctx, zmq::REQ);
    req.set_identity(b"client").unwrap();
    req.connect(&endpoint).unwrap();
    req.send("question", 0).unwrap();
    assert_eq!(
        router.recv_multipart(0).unwrap(),
        vec![b"client".to_vec(), Vec::new(), b"question".to_vec()]
    );
    router
        .send_multipart([&b"client"[..], &b""[..], &b"answer"[..]], 0)
        .unwrap();
    assert_eq!(req.recv_multipart(0).unwrap(), vec![b"answer".to_vec()]);

    // DEALER -> REP: the DEALER adds the delimiter, REP strips it.
    let rep = socket(&ctx, zmq::REP);
    rep.bind("inproc://dropin-envelope-rep").unwrap();
    let dealer = socket(&ctx, zmq::DEALER);
    dealer.connect("inproc://dropin-envelope-rep").unwrap();
    dealer.send_multipart([&b""[..], &b"q1"[..]], 0).unwrap();
    assert_eq!(rep.recv_multipart(0).unwrap(), vec![b"q1".to_vec()]);
    rep.send("a1", 0).unwrap();
    assert_eq!(
        dealer.recv_multipart(0).unwrap(),
        vec![Vec::new(), b"a1".to_vec()]
    );
}

// ---- XSUB subscribes by sending ----------------------------------------

#[test]
fn xsub_subscribes_with_messages() {
    let ctx = zmq::Context::new();
    let publisher = socket(&ctx, zmq::PUB);
    let endpoint = bind_ephemeral(&publisher, "tcp://127.0.0.1:*");
    let xsub = socket(&ctx, zmq::XSUB);
    xsub.connect(&endpoint).unwrap();
    xsub.send(&b"\x01news"[..], 0).unwrap();
    let got = publish_until(&publisher, &xsub, &["weather probe", "news probe"], b"news");
    assert!(
        got.iter().all(|m| m.starts_with(b"news")),
        "{:?}",
        text(&got)
    );

    // XPUB -> XSUB: the subscription message passes through unchanged.
    let xpub = socket(&ctx, zmq::XPUB);
    xpub.bind("inproc://dropin-xsub").unwrap();
    let xsub2 = socket(&ctx, zmq::XSUB);
    xsub2.connect("inproc://dropin-xsub").unwrap();
    xsub2.send(&b"\x01abc"[..], 0).unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01abc");
    xpub.send("abc 1", 0).unwrap();
    assert_eq!(xsub2.recv_bytes(0).unwrap(), b"abc 1");
}

// ---- operations a socket type does not have ----------------------------

#[test]
fn wrong_operations_for_the_socket_type() {
    let ctx = zmq::Context::new();
    let sub = socket(&ctx, zmq::SUB);
    let publisher = socket(&ctx, zmq::PUB);
    let push = socket(&ctx, zmq::PUSH);
    let pull = socket(&ctx, zmq::PULL);
    let req = socket(&ctx, zmq::REQ);

    assert_eq!(sub.send("x", zmq::DONTWAIT), Err(zmq::Error::ENOTSUP));
    assert_eq!(
        publisher.recv_bytes(zmq::DONTWAIT),
        Err(zmq::Error::ENOTSUP)
    );
    assert_eq!(push.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::ENOTSUP));
    assert_eq!(pull.send("x", zmq::DONTWAIT), Err(zmq::Error::ENOTSUP));

    assert_eq!(push.set_subscribe(b"x"), Err(zmq::Error::EINVAL));
    assert_eq!(push.set_identity(b""), Err(zmq::Error::EINVAL));
    assert_eq!(push.set_identity(&[b'i'; 256][..]), Err(zmq::Error::EINVAL));

    // A PUB never blocks (it drops), so it is always writable; a REQ with
    // no peer is not.
    assert_eq!(publisher.get_events().unwrap(), zmq::POLLOUT);
    publisher.send("into the void", zmq::DONTWAIT).unwrap();
    assert_eq!(req.send("anyone?", zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
    assert!(req.get_events().unwrap().is_empty());
}

// ---- contexts and sockets across threads -------------------------------

#[test]
fn threads_share_a_context() {
    fn send_and_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_and_sync::<zmq::Context>();
    send::<zmq::Socket>();
    send_and_sync::<zmq::Error>();

    let ctx = zmq::Context::new();
    let rep = socket(&ctx, zmq::REP);
    rep.bind("inproc://dropin-threads").unwrap();
    // The socket moves to the server thread; the context is shared.
    let server = std::thread::spawn(move || {
        for _ in 0..3 {
            let n: u32 = rep.recv_string(0).unwrap().unwrap().parse().unwrap();
            rep.send((n * 2).to_string().as_str(), 0).unwrap();
        }
    });
    let client_ctx = ctx.clone();
    let client = std::thread::spawn(move || {
        let req = socket(&client_ctx, zmq::REQ);
        req.connect("inproc://dropin-threads").unwrap();
        (1..=3)
            .map(|n: u32| {
                req.send(n.to_string().as_str(), 0).unwrap();
                req.recv_string(0).unwrap().unwrap()
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(client.join().unwrap(), ["2", "4", "6"]);
    server.join().unwrap();
}

// ---- message metadata --------------------------------------------------

#[test]
fn message_metadata_over_tcp() {
    let ctx = zmq::Context::new();
    let pull = socket(&ctx, zmq::PULL);
    let endpoint = bind_ephemeral(&pull, "tcp://127.0.0.1:*");
    let push = socket(&ctx, zmq::PUSH);
    push.connect(&endpoint).unwrap();
    push.send("with metadata", 0).unwrap();

    let mut msg = pull.recv_msg(0).unwrap();
    assert_eq!(msg.as_str(), Some("with metadata"));
    assert_eq!(msg.gets("Socket-Type"), Some("PUSH"));
    assert_eq!(msg.gets("Peer-Address"), Some("127.0.0.1"));
    assert_eq!(msg.gets("No-Such-Property"), None);
    // A message made locally has none.
    assert_eq!(zmq::Message::from("local").gets("Socket-Type"), None);
}

// ---- socket monitor ----------------------------------------------------

/// Reads one monitor event: (event, value, endpoint).
fn monitor_event(monitor: &zmq::Socket) -> (zmq::SocketEvent, u32, String) {
    let parts = monitor.recv_multipart(0).unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0].len(), 6, "{parts:?}");
    let event = u16::from_le_bytes([parts[0][0], parts[0][1]]);
    let value = u32::from_le_bytes([parts[0][2], parts[0][3], parts[0][4], parts[0][5]]);
    (
        zmq::SocketEvent::from_raw(event),
        value,
        String::from_utf8(parts[1].clone()).unwrap(),
    )
}

#[test]
fn monitor_events() {
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::PULL);
    server
        .monitor("inproc://dropin-monitor", zmq::SocketEvent::ALL as i32)
        .unwrap();
    let monitor = socket(&ctx, zmq::PAIR);
    monitor.connect("inproc://dropin-monitor").unwrap();

    let endpoint = bind_ephemeral(&server, "tcp://127.0.0.1:*");
    let (event, _, at) = monitor_event(&monitor);
    assert_eq!(event, zmq::SocketEvent::LISTENING);
    assert_eq!(at, endpoint);

    let client = socket(&ctx, zmq::PUSH);
    client.connect(&endpoint).unwrap();
    let mut seen = Vec::new();
    loop {
        let (event, _, _) = monitor_event(&monitor);
        seen.push(event);
        if event == zmq::SocketEvent::HANDSHAKE_SUCCEEDED {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            zmq::SocketEvent::ACCEPTED,
            zmq::SocketEvent::HANDSHAKE_SUCCEEDED
        ]
    );

    drop(client);
    let (event, _, _) = monitor_event(&monitor);
    assert_eq!(event, zmq::SocketEvent::DISCONNECTED);
}

// ---- connect is asynchronous -------------------------------------------

#[test]
fn tcp_connect_before_bind_reconnects() {
    // A port nobody listens on. (std's listener closes at once; a zmq
    // socket's listener closes in the background and could still accept
    // the connection below, and the message with it.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("tcp://127.0.0.1:{port}");

    let ctx = zmq::Context::new();
    let push = socket(&ctx, zmq::PUSH);
    push.connect(&endpoint).unwrap();
    // The message waits in the queue of the pending connection...
    push.send("queued before bind", zmq::DONTWAIT).unwrap();

    // ...until a reconnect attempt finds the listener.
    let pull = socket(&ctx, zmq::PULL);
    pull.bind(&endpoint).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"queued before bind");
}

#[test]
fn tcp_connect_does_not_resolve_host_names_up_front() {
    let ctx = zmq::Context::new();
    let push = socket(&ctx, zmq::PUSH);
    // `.invalid` never resolves (RFC 2606); libzmq resolves names when it
    // (re)connects, in the background, so the connect itself succeeds and
    // messages queue for when the name becomes resolvable.
    assert_eq!(push.connect("tcp://no-such-host.invalid:5555"), Ok(()));
    push.send("waiting for DNS", zmq::DONTWAIT).unwrap();
}

/// Security options and Z85 with the zmq crate's signatures (PLAIN needs
/// no crypto library, so libzmq builds without CURVE run this too).
#[test]
fn security_options_and_z85() {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::DEALER).unwrap();
    s.set_plain_username(Some("user")).unwrap();
    s.set_plain_password(Some("pass")).unwrap();
    assert_eq!(s.get_mechanism().unwrap(), zmq::Mechanism::ZMQ_PLAIN);
    assert_eq!(s.get_plain_username().unwrap().unwrap(), "user");
    assert_eq!(s.get_plain_password().unwrap().unwrap(), "pass");
    assert!(!s.is_plain_server().unwrap());
    s.set_plain_server(true).unwrap();
    assert!(s.is_plain_server().unwrap());
    s.set_zap_domain("global").unwrap();
    assert_eq!(s.get_zap_domain().unwrap().unwrap(), "global");
    s.set_plain_server(false).unwrap();
    assert_eq!(s.get_mechanism().unwrap(), zmq::Mechanism::ZMQ_NULL);

    let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
    let text: String = zmq::z85_encode(&bytes).unwrap();
    assert_eq!(text, "HelloWorld");
    let back: Vec<u8> = zmq::z85_decode(&text).unwrap();
    assert_eq!(back, bytes);
    assert!(matches!(
        zmq::z85_encode(b"abc"),
        Err(zmq::EncodeError::BadLength)
    ));
    assert!(matches!(
        zmq::z85_decode("abcd"),
        Err(zmq::DecodeError::BadLength)
    ));
    let _keys: fn() -> zmq::Result<zmq::CurveKeyPair> = zmq::CurveKeyPair::new;
}

// ---- every public item of the zmq crate 0.10 ---------------------------

/// Every function, method, constant and enum variant of the zmq crate
/// 0.10, named with its exact type where a function pointer can carry
/// it, and called. A missing item or a different signature is a compile
/// error; a different behaviour fails an assertion.
#[test]
#[allow(deprecated)] // with_capacity, from_slice, send_msg, send_str
fn every_item_of_the_zmq_crate() {
    use std::os::unix::io::{AsRawFd, RawFd};
    type R<T> = zmq::Result<T>;
    type S = zmq::Socket;
    type Text = Result<String, Vec<u8>>;

    // Free functions.
    let _: fn() -> (i32, i32, i32) = zmq::version;
    let _: fn(&str) -> Option<bool> = zmq::has;
    let _: fn(&[u8]) -> Result<String, zmq::EncodeError> = zmq::z85_encode;
    let _: fn(&str) -> Result<Vec<u8>, zmq::DecodeError> = zmq::z85_decode;
    let _: fn(&mut [zmq::PollItem], i64) -> R<i32> = zmq::poll;
    let _: fn(&S, &S) -> R<()> = zmq::proxy;
    assert_eq!(zmq::has("ipc"), Some(true));
    assert_eq!(zmq::has("gssapi"), Some(false));
    assert_eq!(zmq::has("no such thing"), Some(false));

    // Constants.
    let flags: [i32; 2] = [zmq::DONTWAIT, zmq::SNDMORE];
    assert_eq!(flags, [1, 2]);
    let events: [zmq::PollEvents; 3] = [zmq::POLLIN, zmq::POLLOUT, zmq::POLLERR];
    assert_eq!(
        events,
        [
            zmq::PollEvents::POLLIN,
            zmq::PollEvents::POLLOUT,
            zmq::PollEvents::POLLERR
        ]
    );
    assert_eq!(
        [events[0].bits(), events[1].bits(), events[2].bits()],
        [1, 2, 4]
    );

    // Enums, every variant.
    let types = [
        zmq::PAIR,
        zmq::PUB,
        zmq::SUB,
        zmq::REQ,
        zmq::REP,
        zmq::DEALER,
        zmq::ROUTER,
        zmq::PULL,
        zmq::PUSH,
        zmq::XPUB,
        zmq::XSUB,
        zmq::STREAM,
        zmq::SocketType::PAIR,
    ];
    assert_eq!(types[0], types[12]);
    let mechanisms = [
        zmq::Mechanism::ZMQ_NULL,
        zmq::Mechanism::ZMQ_PLAIN,
        zmq::Mechanism::ZMQ_CURVE,
        zmq::Mechanism::ZMQ_GSSAPI,
    ];
    assert_eq!(format!("{:?}", mechanisms[3]), "ZMQ_GSSAPI");
    use zmq::SocketEvent as E;
    let all_events = [
        (E::CONNECTED, 0x0001),
        (E::CONNECT_DELAYED, 0x0002),
        (E::CONNECT_RETRIED, 0x0004),
        (E::LISTENING, 0x0008),
        (E::BIND_FAILED, 0x0010),
        (E::ACCEPTED, 0x0020),
        (E::ACCEPT_FAILED, 0x0040),
        (E::CLOSED, 0x0080),
        (E::CLOSE_FAILED, 0x0100),
        (E::DISCONNECTED, 0x0200),
        (E::MONITOR_STOPPED, 0x0400),
        (E::HANDSHAKE_FAILED_NO_DETAIL, 0x0800),
        (E::HANDSHAKE_SUCCEEDED, 0x1000),
        (E::HANDSHAKE_FAILED_PROTOCOL, 0x2000),
        (E::HANDSHAKE_FAILED_AUTH, 0x4000),
        (E::ALL, 0xFFFF),
    ];
    let _: fn(E) -> u16 = E::to_raw;
    let _: fn(u16) -> E = E::from_raw;
    for (event, raw) in all_events {
        assert_eq!(event.to_raw(), raw);
        assert_eq!(E::from_raw(raw), event);
    }
    let errors = [
        zmq::Error::EACCES,
        zmq::Error::EADDRINUSE,
        zmq::Error::EAGAIN,
        zmq::Error::EBUSY,
        zmq::Error::ECONNREFUSED,
        zmq::Error::EFAULT,
        zmq::Error::EINTR,
        zmq::Error::EHOSTUNREACH,
        zmq::Error::EINPROGRESS,
        zmq::Error::EINVAL,
        zmq::Error::EMFILE,
        zmq::Error::EMSGSIZE,
        zmq::Error::ENAMETOOLONG,
        zmq::Error::ENODEV,
        zmq::Error::ENOENT,
        zmq::Error::ENOMEM,
        zmq::Error::ENOTCONN,
        zmq::Error::ENOTSOCK,
        zmq::Error::EPROTO,
        zmq::Error::EPROTONOSUPPORT,
        zmq::Error::ENOTSUP,
        zmq::Error::ENOBUFS,
        zmq::Error::ENETDOWN,
        zmq::Error::EADDRNOTAVAIL,
        zmq::Error::EFSM,
        zmq::Error::ENOCOMPATPROTO,
        zmq::Error::ETERM,
        zmq::Error::EMTHREAD,
    ];
    let _: fn(zmq::Error) -> i32 = zmq::Error::to_raw;
    let _: fn(i32) -> zmq::Error = zmq::Error::from_raw;
    let _: fn(zmq::Error) -> &'static str = zmq::Error::message;
    for e in errors {
        assert_eq!(zmq::Error::from_raw(e.to_raw()), e);
        assert!(!e.message().is_empty());
        assert_eq!(e.to_string(), e.message());
        // The zmq crate's Debug is the message; fabriq's names the
        // variant too (docs/api.md).
        assert!(format!("{e:?}").contains(e.message()));
        let io: std::io::Error = e.into();
        assert_eq!(io.to_string(), e.message());
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert_eq!(boxed.to_string(), e.message());
    }

    // Context.
    let _: fn() -> zmq::Context = zmq::Context::new;
    let _: fn(&zmq::Context) -> R<i32> = zmq::Context::get_io_threads;
    let _: fn(&zmq::Context, i32) -> R<()> = zmq::Context::set_io_threads;
    let _: fn(&zmq::Context, zmq::SocketType) -> R<S> = zmq::Context::socket;
    let _: fn(&mut zmq::Context) -> R<()> = zmq::Context::destroy;
    let ctx: zmq::Context = Default::default();
    let ctx2 = ctx.clone();
    assert_eq!(ctx2.get_io_threads().unwrap(), 1);

    // Message.
    let _: fn() -> zmq::Message = zmq::Message::new;
    let _: fn(usize) -> zmq::Message = zmq::Message::with_size;
    let _: fn(usize) -> zmq::Message = zmq::Message::with_capacity;
    let _: fn(&[u8]) -> zmq::Message = zmq::Message::from_slice;
    let _: fn(&zmq::Message) -> Option<&str> = zmq::Message::as_str;
    let _: fn(&zmq::Message) -> bool = zmq::Message::get_more;
    let _: for<'a> fn(&'a mut zmq::Message, &str) -> Option<&'a str> = zmq::Message::gets;
    assert_eq!(&zmq::Message::from_slice(b"abc")[..], b"abc");
    assert_eq!(zmq::Message::with_capacity(10).len(), 10);
    assert_eq!(zmq::Message::from(vec![1u8, 2].into_boxed_slice()).len(), 2);
    assert_eq!(&zmq::Message::from(&String::from("s"))[..], b"s");
    assert_eq!(&zmq::Message::from(&vec![7u8])[..], [7]);
    assert!(!format!("{:?}", zmq::Message::from("d")).is_empty());
    let mut m = zmq::Message::from("xy");
    let slice: &mut [u8] = &mut m;
    slice[1] = b'z';
    assert_eq!(m.as_str(), Some("xz"));
    assert_eq!(m.gets("Socket-Type"), None);

    // CurveKeyPair and the Z85 errors.
    // (The libzmq the zmq crate builds has no CURVE: ENOTSUP there.)
    match zmq::CurveKeyPair::new() {
        Ok(pair) => {
            let (public, secret): ([u8; 32], [u8; 32]) = (pair.public_key, pair.secret_key);
            assert_ne!(public, secret);
            assert!(!format!("{pair:?}").is_empty());
        }
        Err(e) => assert_eq!(e, zmq::Error::ENOTSUP),
    }
    let utf8 = String::from_utf8(vec![0xff]).unwrap_err();
    let e: zmq::EncodeError = utf8.into();
    assert!(matches!(e, zmq::EncodeError::FromUtf8Error(_)));
    assert!(!e.to_string().is_empty());
    let nul = std::ffi::CString::new(vec![0u8]).unwrap_err();
    let d: zmq::DecodeError = nul.into();
    assert!(matches!(d, zmq::DecodeError::NulError(_)));
    let _: &dyn std::error::Error = &d;
    assert!(matches!(
        zmq::z85_decode("ab\0de"),
        Err(zmq::DecodeError::NulError(_))
    ));

    // Socket: the operations.
    let _: fn(&S, &str) -> R<()> = S::bind;
    let _: fn(&S, &str) -> R<()> = S::unbind;
    let _: fn(&S, &str) -> R<()> = S::connect;
    let _: fn(&S, &str) -> R<()> = S::disconnect;
    let _: fn(&S, &str, i32) -> R<()> = S::monitor;
    let _: fn(&S, &'static str, i32) -> R<()> = S::send::<&'static str>;
    let _: fn(&S, zmq::Message, i32) -> R<()> = S::send_msg;
    let _: fn(&S, &str, i32) -> R<()> = S::send_str;
    let _: fn(&S, Vec<Vec<u8>>, i32) -> R<()> = S::send_multipart::<Vec<Vec<u8>>, Vec<u8>>;
    let _: fn(&S, &mut zmq::Message, i32) -> R<()> = S::recv;
    let _: fn(&S, &mut [u8], i32) -> R<usize> = S::recv_into;
    let _: fn(&S, i32) -> R<zmq::Message> = S::recv_msg;
    let _: fn(&S, i32) -> R<Vec<u8>> = S::recv_bytes;
    let _: fn(&S, i32) -> R<Text> = S::recv_string;
    let _: fn(&S, i32) -> R<Vec<Vec<u8>>> = S::recv_multipart;
    let _: fn(&S) -> R<bool> = S::get_rcvmore;
    let _: fn(&S) -> R<zmq::SocketType> = S::get_socket_type;
    let _: for<'a> fn(&'a S, zmq::PollEvents) -> zmq::PollItem<'a> = S::as_poll_item;
    let _: fn(&S, zmq::PollEvents, i64) -> R<i32> = S::poll;
    let _: fn(S) -> *mut std::os::raw::c_void = S::into_raw;
    let _: unsafe fn(*mut std::os::raw::c_void) -> S = S::from_raw;
    let _: fn(&mut S) -> *mut std::os::raw::c_void = S::as_mut_ptr;
    fn sendable<T: zmq::Sendable>(_: T) {}
    sendable(zmq::Message::new());
    sendable("str");

    // Socket: the options, getter and setter types.
    let _: fn(&S) -> R<bool> = S::is_ipv6;
    let _: fn(&S, bool) -> R<()> = S::set_ipv6;
    let _: fn(&S) -> R<bool> = S::is_immediate;
    let _: fn(&S, bool) -> R<()> = S::set_immediate;
    let _: fn(&S) -> R<bool> = S::is_plain_server;
    let _: fn(&S, bool) -> R<()> = S::set_plain_server;
    let _: fn(&S) -> R<bool> = S::is_conflate;
    let _: fn(&S, bool) -> R<()> = S::set_conflate;
    let _: fn(&S) -> R<bool> = S::is_probe_router;
    let _: fn(&S, bool) -> R<()> = S::set_probe_router;
    let _: fn(&S) -> R<bool> = S::is_router_mandatory;
    let _: fn(&S, bool) -> R<()> = S::set_router_mandatory;
    let _: fn(&S) -> R<bool> = S::is_router_handover;
    let _: fn(&S, bool) -> R<()> = S::set_router_handover;
    let _: fn(&S) -> R<bool> = S::is_curve_server;
    let _: fn(&S, bool) -> R<()> = S::set_curve_server;
    let _: fn(&S) -> R<bool> = S::is_gssapi_server;
    let _: fn(&S, bool) -> R<()> = S::set_gssapi_server;
    let _: fn(&S) -> R<bool> = S::is_gssapi_plaintext;
    let _: fn(&S, bool) -> R<()> = S::set_gssapi_plaintext;
    let _: fn(&S, bool) -> R<()> = S::set_req_relaxed;
    let _: fn(&S, bool) -> R<()> = S::set_req_correlate;
    let _: fn(&S) -> R<i64> = S::get_maxmsgsize;
    let _: fn(&S, i64) -> R<()> = S::set_maxmsgsize;
    let _: fn(&S) -> R<u64> = S::get_affinity;
    let _: fn(&S, u64) -> R<()> = S::set_affinity;
    type Get = fn(&S) -> R<i32>;
    type Set = fn(&S, i32) -> R<()>;
    let int_options: [(Get, Set); 24] = [
        (S::get_sndhwm, S::set_sndhwm),
        (S::get_rcvhwm, S::set_rcvhwm),
        (S::get_rate, S::set_rate),
        (S::get_recovery_ivl, S::set_recovery_ivl),
        (S::get_sndbuf, S::set_sndbuf),
        (S::get_rcvbuf, S::set_rcvbuf),
        (S::get_tos, S::set_tos),
        (S::get_linger, S::set_linger),
        (S::get_reconnect_ivl, S::set_reconnect_ivl),
        (S::get_reconnect_ivl_max, S::set_reconnect_ivl_max),
        (S::get_backlog, S::set_backlog),
        (S::get_multicast_hops, S::set_multicast_hops),
        (S::get_rcvtimeo, S::set_rcvtimeo),
        (S::get_sndtimeo, S::set_sndtimeo),
        (S::get_tcp_keepalive, S::set_tcp_keepalive),
        (S::get_tcp_keepalive_cnt, S::set_tcp_keepalive_cnt),
        (S::get_tcp_keepalive_idle, S::set_tcp_keepalive_idle),
        (S::get_tcp_keepalive_intvl, S::set_tcp_keepalive_intvl),
        (S::get_handshake_ivl, S::set_handshake_ivl),
        (S::get_heartbeat_ivl, S::set_heartbeat_ivl),
        (S::get_heartbeat_ttl, S::set_heartbeat_ttl),
        (S::get_heartbeat_timeout, S::set_heartbeat_timeout),
        (S::get_connect_timeout, S::set_connect_timeout),
        (S::get_sndhwm, S::set_sndhwm),
    ];
    let _: fn(&S) -> R<RawFd> = S::get_fd;
    let _: fn(&S) -> R<zmq::PollEvents> = S::get_events;
    let _: fn(&S) -> R<Vec<u8>> = S::get_identity;
    let _: fn(&S, &[u8]) -> R<()> = S::set_identity;
    let _: fn(&S, &[u8]) -> R<()> = S::set_subscribe;
    let _: fn(&S, &[u8]) -> R<()> = S::set_unsubscribe;
    let _: fn(&S) -> R<Text> = S::get_socks_proxy;
    let _: fn(&S, Option<&str>) -> R<()> = S::set_socks_proxy;
    let _: fn(&S) -> R<zmq::Mechanism> = S::get_mechanism;
    let _: fn(&S) -> R<Text> = S::get_plain_username;
    let _: fn(&S, Option<&str>) -> R<()> = S::set_plain_username;
    let _: fn(&S) -> R<Text> = S::get_plain_password;
    let _: fn(&S, Option<&str>) -> R<()> = S::set_plain_password;
    let _: fn(&S) -> R<Text> = S::get_zap_domain;
    let _: fn(&S, &str) -> R<()> = S::set_zap_domain;
    let _: fn(&S) -> R<Text> = S::get_last_endpoint;
    let _: fn(&S, Option<&str>) -> R<()> = S::set_xpub_welcome_msg;
    let _: fn(&S, bool) -> R<()> = S::set_xpub_verbose;
    let _: fn(&S) -> R<Vec<u8>> = S::get_curve_publickey;
    let _: fn(&S, &[u8]) -> R<()> = S::set_curve_publickey;
    let _: fn(&S) -> R<Vec<u8>> = S::get_curve_secretkey;
    let _: fn(&S, &[u8]) -> R<()> = S::set_curve_secretkey;
    let _: fn(&S) -> R<Vec<u8>> = S::get_curve_serverkey;
    let _: fn(&S, &[u8]) -> R<()> = S::set_curve_serverkey;
    let _: fn(&S) -> R<Text> = S::get_gssapi_principal;
    let _: fn(&S, &str) -> R<()> = S::set_gssapi_principal;
    let _: fn(&S) -> R<Text> = S::get_gssapi_service_principal;
    let _: fn(&S, &str) -> R<()> = S::set_gssapi_service_principal;

    // The integer options: each set value reads back.
    let s = ctx.socket(zmq::DEALER).unwrap();
    for (i, (get, set)) in int_options.iter().enumerate() {
        get(&s).unwrap();
        let value = if i == 14 { 1 } else { 700 };
        set(&s, value).unwrap();
        assert_eq!(get(&s).unwrap(), value, "option {i}");
    }
    // The default heartbeat timeout (-1: the heartbeat interval) cannot be
    // set back.
    assert_eq!(s.set_heartbeat_timeout(-1), Err(zmq::Error::EINVAL));
    assert_eq!(s.as_raw_fd(), s.get_fd().unwrap());

    // The options with no integer type.
    s.set_maxmsgsize(1 << 20).unwrap();
    assert_eq!(s.get_maxmsgsize().unwrap(), 1 << 20);
    s.set_affinity(3).unwrap();
    assert_eq!(s.get_affinity().unwrap(), 3);
    assert!(!s.is_ipv6().unwrap());
    s.set_ipv6(true).unwrap();
    assert!(s.is_ipv6().unwrap());
    s.set_immediate(true).unwrap();
    assert!(s.is_immediate().unwrap());
    s.set_conflate(true).unwrap();
    assert!(s.is_conflate().unwrap());
    s.set_conflate(false).unwrap();
    if zmq::has("curve") == Some(true) {
        s.set_curve_server(false).unwrap();
        assert!(!s.is_curve_server().unwrap());
    } else {
        assert_eq!(s.set_curve_server(false), Err(zmq::Error::EINVAL));
    }
    assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "");
    s.set_socks_proxy(Some("127.0.0.1:1080")).unwrap();
    assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "127.0.0.1:1080");
    s.set_socks_proxy(None).unwrap();
    assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "");
    // GSSAPI is not built in (has("gssapi") is false): its options are
    // unknown options.
    assert_eq!(s.set_gssapi_server(true), Err(zmq::Error::EINVAL));
    assert_eq!(s.is_gssapi_server(), Err(zmq::Error::EINVAL));
    assert_eq!(s.set_gssapi_plaintext(true), Err(zmq::Error::EINVAL));
    assert_eq!(s.is_gssapi_plaintext(), Err(zmq::Error::EINVAL));
    assert_eq!(s.set_gssapi_principal("p"), Err(zmq::Error::EINVAL));
    assert_eq!(s.get_gssapi_principal(), Err(zmq::Error::EINVAL));
    assert_eq!(s.set_gssapi_service_principal("p"), Err(zmq::Error::EINVAL));
    assert_eq!(s.get_gssapi_service_principal(), Err(zmq::Error::EINVAL));
    // Socket-type options: the setters answer on their socket type only;
    // libzmq 4.3 has no getters for them (EINVAL).
    s.set_probe_router(true).unwrap();
    assert_eq!(s.set_router_mandatory(true), Err(zmq::Error::EINVAL));
    let router = ctx.socket(zmq::ROUTER).unwrap();
    router.set_probe_router(true).unwrap();
    router.set_router_mandatory(true).unwrap();
    router.set_router_handover(true).unwrap();
    for get in [
        S::is_probe_router,
        S::is_router_mandatory,
        S::is_router_handover,
    ] {
        assert_eq!(get(&router), Err(zmq::Error::EINVAL));
    }
    let req = ctx.socket(zmq::REQ).unwrap();
    req.set_probe_router(true).unwrap();
    req.set_req_relaxed(true).unwrap();
    req.set_req_correlate(true).unwrap();
    assert_eq!(
        ctx.socket(zmq::PUSH).unwrap().set_probe_router(true),
        Err(zmq::Error::EINVAL)
    );
    drop(req);

    // Raw pointers: a socket given away and taken back is the same socket.
    router.bind("inproc://dropin-every-item").unwrap();
    let mut back = unsafe { S::from_raw(router.into_raw()) };
    assert!(!back.as_mut_ptr().is_null());
    assert_eq!(
        back.get_last_endpoint().unwrap().unwrap(),
        "inproc://dropin-every-item"
    );
    drop(back);

    // PollItem.
    let _: fn(RawFd, zmq::PollEvents) -> zmq::PollItem<'static> = zmq::PollItem::from_fd;
    let _: fn(&mut zmq::PollItem<'static>, zmq::PollEvents) = zmq::PollItem::set_events;
    let _: fn(&zmq::PollItem<'static>) -> zmq::PollEvents = zmq::PollItem::get_revents;
    let _: fn(&zmq::PollItem<'static>) -> bool = zmq::PollItem::is_readable;
    let _: fn(&zmq::PollItem<'static>) -> bool = zmq::PollItem::is_writable;
    let _: fn(&zmq::PollItem<'static>) -> bool = zmq::PollItem::is_error;
    let _: fn(&zmq::PollItem<'static>, &S) -> bool = zmq::PollItem::has_socket;
    let _: fn(&zmq::PollItem<'static>, RawFd) -> bool = zmq::PollItem::has_fd;
    let mut item = s.as_poll_item(zmq::POLLIN);
    item.set_events(zmq::POLLOUT);
    assert!(item.has_socket(&s));
    assert!(!item.has_fd(0));
    assert_eq!(zmq::poll(&mut [item], 0).unwrap(), 0);
    let fd_item = zmq::PollItem::from_fd(0, zmq::POLLIN);
    assert!(fd_item.has_fd(0));
    assert!(!fd_item.is_readable() && !fd_item.is_writable() && !fd_item.is_error());
    assert!(fd_item.get_revents().is_empty());
    drop(s);

    let mut ctx = ctx;
    drop(ctx2);
    ctx.destroy().unwrap();
}
