//! The patterns over libfabric (`ofi+tcp://`, `ofi+shm://`): fabriq on
//! both sides, a TCP control connection on loopback, messages through the
//! provider's RDM endpoint in registered pages. Real providers of the
//! libfabric this machine has (scripts/test installs it); no hardware.

use std::time::{Duration, Instant};

use fabriq as zmq;

const TIMEOUT_MS: i32 = 10_000;

fn socket(ctx: &zmq::Context, kind: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(kind).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(1000).unwrap();
    s
}

/// Binds `a` on the provider's loopback control address, connects `b`.
fn join(provider: &str, a: &zmq::Socket, b: &zmq::Socket) -> String {
    a.bind(&format!("ofi+{provider}://127.0.0.1:*")).unwrap();
    let endpoint = a.get_last_endpoint().unwrap().unwrap();
    assert!(
        endpoint.starts_with(&format!("ofi+{provider}://127.0.0.1:")),
        "{endpoint}"
    );
    b.connect(&endpoint).unwrap();
    endpoint
}

/// Sizes from empty to several pages, so frames straddle pages.
fn sizes() -> impl Iterator<Item = usize> {
    [
        0,
        1,
        7,
        64,
        1000,
        4096,
        65_535,
        65_536,
        70_000,
        200_000,
        1 << 20,
    ]
    .into_iter()
    .cycle()
}

fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

/// Two contexts: two I/O threads with a fabric endpoint each, as two
/// processes would have (`same_context`: both sockets share one).
fn push_pull(provider: &str, count: usize, same_context: bool) {
    let ctx = zmq::Context::new();
    let other = if same_context {
        ctx.clone()
    } else {
        zmq::Context::new()
    };
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    join(provider, &pull, &push);
    let msgs = sizes().take(count).enumerate().map(|(i, n)| body(i, n));
    stream(push, &pull, msgs.collect(), provider);
}

#[test]
fn push_pull_over_ofi_tcp_keeps_every_message_whole_and_in_order() {
    push_pull("tcp", 500, false);
}

#[test]
fn push_pull_over_ofi_shm_keeps_every_message_whole_and_in_order() {
    push_pull("shm", 500, false);
}

#[test]
fn push_pull_within_one_context_shares_its_fabric_endpoint() {
    push_pull("tcp", 200, true);
}

/// A sender that closes (lingering) right after its last message: every
/// message arrives, though the control connection ends before the last
/// pages are taken.
fn close_after_sending(provider: &str) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    // Linger until everything is out: `socket`'s 1 s is a bound on how
    // long the pages may take, and on a loaded machine 300 messages of up
    // to 20 kB over ofi+tcp took longer (the rest was dropped, as LINGER
    // says, and the receive below timed out). `other` is dropped at the
    // end, after every message arrived.
    push.set_linger(-1).unwrap();
    join(provider, &pull, &push);
    for i in 0..300usize {
        push.send(&body(i, (i * 97) % 20_000)[..], 0).unwrap();
    }
    drop(push);
    for i in 0..300usize {
        let got = pull
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("{provider}: message {i}: {e}"));
        assert_eq!(got, body(i, (i * 97) % 20_000), "{provider}: message {i}");
    }
}

#[test]
fn a_sender_closing_right_after_sending_loses_nothing_over_ofi_tcp() {
    close_after_sending("tcp");
}

#[test]
fn a_sender_closing_right_after_sending_loses_nothing_over_ofi_shm() {
    close_after_sending("shm");
}

#[test]
fn multipart_messages_stay_whole_over_the_fabric() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    join("tcp", &pull, &push);
    for i in 0..50usize {
        let parts = vec![body(i, i), body(i + 1, 70_000), Vec::new(), b"end".to_vec()];
        push.send_multipart(&parts, 0).unwrap();
        assert_eq!(pull.recv_multipart(0).unwrap(), parts, "message {i}");
    }
}

fn req_rep(provider: &str) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let rep = socket(&ctx, zmq::REP);
    let req = socket(&other, zmq::REQ);
    join(provider, &rep, &req);
    // The server closes right after its last reply: its FIN tells the
    // client how many pages to take before the control connection's end
    // counts.
    let server = std::thread::spawn(move || {
        for _ in 0..200 {
            let m = rep.recv_bytes(0).unwrap();
            rep.send(&m[..], 0).unwrap();
        }
    });
    for i in 0..200usize {
        let m = body(i, i * 13);
        req.send(&m[..], 0).unwrap();
        let got = req
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("{provider} round trip {i}: {e}"));
        assert_eq!(got, m, "{provider} round trip {i}");
    }
    server.join().unwrap();
}

/// A REP asleep in a receive counts itself on its node, and peers ring
/// the node's application bell, which only it watches, for every page of
/// the node while it sleeps: the pages of a PULL of the same node (same
/// context, same I/O thread) reach the PULL through the REP's thread
/// handing them to the I/O thread. Both are served: 300 round trips
/// beside a stream of 20 000 messages (some lent by rendezvous), each
/// receive bounded by the 10 s timeout.
#[test]
fn a_sleeping_rep_and_a_stream_share_a_node_over_ofi_shm() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let rep = socket(&ctx, zmq::REP);
    let pull = socket(&ctx, zmq::PULL);
    let req = socket(&other, zmq::REQ);
    let push = socket(&other, zmq::PUSH);
    join("shm", &rep, &req);
    join("shm", &pull, &push);
    const ROUNDS: usize = 300;
    const MESSAGES: usize = 20_000;
    let len = |i: usize| if i % 1000 == 999 { 100_000 } else { 64 };
    let server = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            let m = rep.recv_bytes(0).unwrap();
            rep.send(&m[..], 0).unwrap();
        }
    });
    let sink = std::thread::spawn(move || {
        for i in 0..MESSAGES {
            let got = pull
                .recv_bytes(0)
                .unwrap_or_else(|e| panic!("stream message {i}: {e}"));
            assert_eq!(got, body(i, len(i)), "stream message {i}");
        }
    });
    let source = std::thread::spawn(move || {
        for i in 0..MESSAGES {
            push.send(&body(i, len(i))[..], 0).unwrap();
        }
        push
    });
    for i in 0..ROUNDS {
        let m = body(i, 64);
        req.send(&m[..], 0).unwrap();
        let got = req
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("round trip {i}: {e}"));
        assert_eq!(got, m, "round trip {i}");
    }
    server.join().unwrap();
    sink.join().unwrap();
    drop(source.join().unwrap());
}

#[test]
fn req_rep_round_trips_over_ofi_tcp() {
    req_rep("tcp");
}

#[test]
fn req_rep_round_trips_over_ofi_shm() {
    req_rep("shm");
}

#[test]
fn pub_sub_filters_at_the_publisher_over_the_fabric() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let publisher = socket(&ctx, zmq::PUB);
    let sub = socket(&other, zmq::SUB);
    sub.set_subscribe(b"a").unwrap();
    join("tcp", &publisher, &sub);
    // The subscription travels over the fabric; publish until it is in.
    let deadline = Instant::now() + Duration::from_secs(10);
    sub.set_rcvtimeo(50).unwrap();
    loop {
        publisher.send("a-probe", 0).unwrap();
        if sub.recv_bytes(0).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the subscription never arrived");
    }
    while sub.recv_bytes(0).is_ok() {}
    sub.set_rcvtimeo(TIMEOUT_MS).unwrap();
    for i in 0..100 {
        publisher.send(format!("b{i}").as_str(), 0).unwrap();
        publisher.send(format!("a{i}").as_str(), 0).unwrap();
    }
    for i in 0..100 {
        assert_eq!(sub.recv_bytes(0).unwrap(), format!("a{i}").into_bytes());
    }
}

#[test]
fn dealer_router_identities_over_the_fabric() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let router = socket(&ctx, zmq::ROUTER);
    let dealers: Vec<zmq::Socket> = (0..3)
        .map(|i| {
            let d = socket(&other, zmq::DEALER);
            d.set_identity(format!("peer-{i}").as_bytes()).unwrap();
            d
        })
        .collect();
    router.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let endpoint = router.get_last_endpoint().unwrap().unwrap();
    for d in &dealers {
        d.connect(&endpoint).unwrap();
        d.send("hello", 0).unwrap();
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        let parts = router.recv_multipart(0).unwrap();
        assert_eq!(parts[1], b"hello");
        router
            .send_multipart([parts[0].clone(), b"back".to_vec()], 0)
            .unwrap();
        seen.push(parts[0].clone());
    }
    seen.sort();
    assert_eq!(
        seen,
        [b"peer-0".to_vec(), b"peer-1".to_vec(), b"peer-2".to_vec()]
    );
    for d in &dealers {
        assert_eq!(d.recv_bytes(0).unwrap(), b"back");
    }
}

#[test]
fn a_slow_receiver_holds_the_sender_with_credits_and_loses_nothing() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    pull.set_rcvhwm(10).unwrap();
    let push = socket(&other, zmq::PUSH);
    push.set_sndhwm(10).unwrap();
    join("tcp", &pull, &push);
    // The fabric path is up once one message made it.
    push.send("first", 0).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"first");
    // Nothing more is read: the sender fills the receiver's queue, its
    // window of pages, and its own queue, and is then held (no room for a
    // second).
    let mut sent = 0usize;
    while push.poll(zmq::POLLOUT, 1000).unwrap() > 0 {
        push.send(&body(sent, 60_000)[..], zmq::DONTWAIT).unwrap();
        sent += 1;
        assert!(sent < 1000, "nothing holds the sender");
    }
    // 10 + 10 queued, a window of 64 pages (one 60 kB message each: half
    // the receiver's posted receives), what the engines hold staged: no more.
    assert!(sent >= 20, "sent only {sent}");
    assert!(
        sent <= 10 + 10 + 64 + 4,
        "sent {sent}: the credits did not hold"
    );
    for i in 0..sent {
        assert_eq!(pull.recv_bytes(0).unwrap(), body(i, 60_000), "message {i}");
    }
}

#[test]
fn an_unknown_provider_is_refused_with_its_name() {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::PULL).unwrap();
    assert_eq!(
        s.bind("ofi+verbs://127.0.0.1:*"),
        Err(zmq::Error::EPROTONOSUPPORT)
    );
    let detail = zmq::last_error_detail().unwrap_or_default();
    assert!(detail.contains("verbs"), "{detail}");
    assert_eq!(
        s.connect("ofi+nosuchprovider://127.0.0.1:5555"),
        Err(zmq::Error::EPROTONOSUPPORT)
    );
    assert_eq!(s.bind("ofi+://127.0.0.1:*"), Err(zmq::Error::EINVAL));
}

/// The control connection runs the socket's security mechanism, so CURVE
/// authenticates the peers before either learns the other's fabric address
/// (it travels in READY metadata, inside CURVE's boxes); a client with the
/// wrong server key never gets a fabric path.
#[test]
fn curve_on_the_control_connection_guards_the_fabric() {
    let server_keys = zmq::CurveKeyPair::new().unwrap();
    let client_keys = zmq::CurveKeyPair::new().unwrap();
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    pull.set_curve_server(true).unwrap();
    pull.set_curve_secretkey(&server_keys.secret_key).unwrap();
    pull.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();

    let push = socket(&other, zmq::PUSH);
    push.set_curve_serverkey(&server_keys.public_key).unwrap();
    push.set_curve_publickey(&client_keys.public_key).unwrap();
    push.set_curve_secretkey(&client_keys.secret_key).unwrap();
    push.connect(&endpoint).unwrap();
    for i in 0..20usize {
        push.send(&body(i, i * 5000)[..], 0).unwrap();
    }
    for i in 0..20usize {
        assert_eq!(pull.recv_bytes(0).unwrap(), body(i, i * 5000));
    }

    let wrong = zmq::CurveKeyPair::new().unwrap();
    let intruder = socket(&other, zmq::PUSH);
    intruder.set_curve_serverkey(&wrong.public_key).unwrap();
    intruder
        .set_curve_publickey(&client_keys.public_key)
        .unwrap();
    intruder
        .set_curve_secretkey(&client_keys.secret_key)
        .unwrap();
    intruder.connect(&endpoint).unwrap();
    // Queued in the connecting pipe if the send comes first; refused
    // (EAGAIN) if the failed handshake has already ended the session for
    // good, as libzmq ends one on a protocol error and its pipe with it
    // (a loaded CI machine got there first once).
    match intruder.send("must not arrive", zmq::DONTWAIT) {
        Ok(()) | Err(zmq::Error::EAGAIN) => {}
        Err(e) => panic!("intruder's send: {e}"),
    }
    pull.set_rcvtimeo(500).unwrap();
    assert_eq!(pull.recv_bytes(0), Err(zmq::Error::EAGAIN));
}

/// `ofi://` takes the first provider libfabric offers and binds it where
/// the control connection is (loopback here).
#[test]
fn ofi_without_a_provider_takes_the_first_offered() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    pull.bind("ofi://127.0.0.1:*").unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();
    assert!(endpoint.starts_with("ofi://127.0.0.1:"), "{endpoint}");
    push.connect(&endpoint).unwrap();
    for i in 0..50usize {
        push.send(&body(i, i * 100)[..], 0).unwrap();
    }
    for i in 0..50usize {
        assert_eq!(pull.recv_bytes(0).unwrap(), body(i, i * 100));
    }
}

/// Sends `msgs` from `push` and checks they arrive whole and in order at
/// `pull`, the sender on its own thread.
fn stream(push: zmq::Socket, pull: &zmq::Socket, msgs: Vec<Vec<u8>>, what: &str) {
    let sender = {
        let msgs = msgs.clone();
        std::thread::spawn(move || {
            for m in &msgs {
                push.send(&m[..], 0).unwrap();
            }
            push
        })
    };
    for (i, want) in msgs.iter().enumerate() {
        let got = pull
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("{what}: message {i}: {e}"));
        assert!(
            got == *want,
            "{what}: message {i}: {} bytes, want {}",
            got.len(),
            want.len()
        );
    }
    drop(sender.join().unwrap());
}

/// Unbuffered mode (each message sent at once), a flush interval, small
/// pages on one side only (the sender fills no more than the receiver's
/// page), on both providers.
#[test]
fn send_modes_and_page_sizes_deliver_the_same_messages() {
    type Setup = fn(&zmq::Socket, &zmq::Socket);
    let setups: [(&str, Setup); 5] = [
        ("unbuffered", |push, _| {
            push.set_fabric_buffered(false).unwrap()
        }),
        ("flush 200 us", |push, _| {
            push.set_fabric_flush_us(200).unwrap()
        }),
        ("4 KiB receiver pages", |_, pull| {
            pull.set_fabric_page_size(4096).unwrap()
        }),
        ("4 KiB sender pages, 16 of them", |push, _| {
            push.set_fabric_page_size(4096).unwrap();
            push.set_fabric_page_count(16).unwrap();
        }),
        ("unbuffered, 8 KiB pages both sides", |push, pull| {
            push.set_fabric_buffered(false).unwrap();
            push.set_fabric_page_size(8192).unwrap();
            pull.set_fabric_page_size(8192).unwrap();
        }),
    ];
    for provider in ["tcp", "shm"] {
        for (name, setup) in setups {
            let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
            let pull = socket(&ctx, zmq::PULL);
            let push = socket(&other, zmq::PUSH);
            setup(&push, &pull);
            join(provider, &pull, &push);
            let msgs = sizes().take(120).enumerate().map(|(i, n)| body(i, n));
            stream(push, &pull, msgs.collect(), &format!("{provider}, {name}"));
        }
    }
}

/// Messages far larger than a page stream through many pages.
#[test]
fn a_64_mib_message_crosses_over_tcp_and_shm() {
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let pull = socket(&ctx, zmq::PULL);
        let push = socket(&other, zmq::PUSH);
        join(provider, &pull, &push);
        let big = body(7, 64 << 20);
        let msgs = vec![b"before".to_vec(), big, b"after".to_vec()];
        stream(push, &pull, msgs, &format!("{provider}, 64 MiB"));
    }
}

#[test]
fn bad_fabric_options_are_refused_with_the_reason() {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::PUSH).unwrap();
    assert_eq!(s.set_fabric_page_size(100), Err(zmq::Error::EINVAL));
    let detail = zmq::last_error_detail().unwrap_or_default();
    assert!(detail.contains("fabric_page_size"), "{detail}");
    assert_eq!(s.set_fabric_page_count(2), Err(zmq::Error::EINVAL));
    assert_eq!(s.set_fabric_flush_us(-5), Err(zmq::Error::EINVAL));
    assert_eq!(s.set_spin_us(-1), Err(zmq::Error::EINVAL));
    assert_eq!(s.get_fabric_page_size(), Ok(65536));
    assert_eq!(s.get_fabric_page_count(), Ok(512));
    assert_eq!(s.is_fabric_buffered(), Ok(true));
}

/// A spinning socket reads the completion queue on its own thread and
/// sends from it; round trips still match, on both providers.
#[test]
fn spinning_req_rep_round_trips() {
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let rep = socket(&ctx, zmq::REP);
        let req = socket(&other, zmq::REQ);
        rep.set_spin_us(2000).unwrap();
        req.set_spin_us(2000).unwrap();
        req.set_fabric_buffered(false).unwrap();
        join(provider, &rep, &req);
        echo_round_trips(provider, rep, &req, 300, |i| (i * 37) % 3000, None);
    }
}

/// `count` round trips from `req` to an echoing `rep` (on a thread of
/// its own), message `i` of `size(i)` bytes, each checked; with `pause`,
/// the client waits that long before each request.
fn echo_round_trips(
    provider: &str,
    rep: zmq::Socket,
    req: &zmq::Socket,
    count: usize,
    size: impl Fn(usize) -> usize,
    pause: Option<std::time::Duration>,
) {
    let server = std::thread::spawn(move || {
        for _ in 0..count {
            let m = rep.recv_bytes(0).unwrap();
            rep.send(&m[..], 0).unwrap();
        }
        rep
    });
    for i in 0..count {
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
        let m = body(i, size(i));
        req.send(&m[..], 0).unwrap();
        let got = req
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("{provider} round trip {i}: {e}"));
        assert_eq!(got, m, "{provider} round trip {i}");
    }
    drop(server.join().unwrap());
}

/// While a spinning socket's spell lasts its peers skip the doorbell (shm);
/// a request that comes after the spell ended must still wake it. The
/// client waits past the server's short spin before each request, so the
/// server's spells begin and end around every one.
#[test]
fn a_spinner_whose_spell_ended_is_rung_again() {
    for provider in ["shm", "tcp"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let rep = socket(&ctx, zmq::REP);
        let req = socket(&other, zmq::REQ);
        rep.set_spin_us(20).unwrap();
        req.set_spin_us(20).unwrap();
        req.set_rcvtimeo(5000).unwrap();
        join(provider, &rep, &req);
        // Longer than the spin: the server is asleep when each comes.
        let pause = std::time::Duration::from_micros(300);
        echo_round_trips(provider, rep, &req, 40, |_| 64, Some(pause));
    }
}

/// Several peers per socket, from one context: their connections share
/// both fabric endpoints (one peer address for all), so completions must
/// be told apart by connection.
#[test]
fn several_pushers_from_one_process_are_fair_queued_and_complete() {
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let pull = socket(&ctx, zmq::PULL);
        pull.bind(&format!("ofi+{provider}://127.0.0.1:*")).unwrap();
        let endpoint = pull.get_last_endpoint().unwrap().unwrap();
        let senders: Vec<_> = (0..3u8)
            .map(|k| {
                let push = socket(&other, zmq::PUSH);
                push.connect(&endpoint).unwrap();
                std::thread::spawn(move || {
                    for i in 0..200usize {
                        let mut m = body(i, 10 + (i * 311) % 70_000);
                        m[..2].copy_from_slice(&[k, (i % 251) as u8]);
                        push.send(&m[..], 0).unwrap();
                    }
                    push
                })
            })
            .collect();
        let mut next = [0usize; 3];
        for _ in 0..600 {
            let m = pull.recv_bytes(0).unwrap();
            let (k, i) = (m[0] as usize, next[m[0] as usize]);
            let mut want = body(i, 10 + (i * 311) % 70_000);
            want[..2].copy_from_slice(&[k as u8, (i % 251) as u8]);
            assert!(m == want, "{provider}: peer {k} message {i}");
            next[k] += 1;
        }
        assert_eq!(next, [200; 3], "{provider}");
        for s in senders {
            drop(s.join().unwrap());
        }
    }
}

/// One PUB, three SUBs with different subscriptions, over the fabric.
#[test]
fn one_publisher_serves_several_subscribers() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let publisher = socket(&ctx, zmq::PUB);
    publisher.bind("ofi+shm://127.0.0.1:*").unwrap();
    let endpoint = publisher.get_last_endpoint().unwrap().unwrap();
    let topics = ["a", "b", ""];
    let subs: Vec<zmq::Socket> = topics
        .iter()
        .map(|t| {
            let s = socket(&other, zmq::SUB);
            s.set_subscribe(t.as_bytes()).unwrap();
            s.connect(&endpoint).unwrap();
            s
        })
        .collect();
    // Every subscription is in once each subscriber has a probe.
    for (s, t) in subs.iter().zip(topics) {
        s.set_rcvtimeo(50).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            publisher.send(format!("{t}probe").as_str(), 0).unwrap();
            if s.recv_bytes(0).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "subscription {t:?} never arrived"
            );
        }
    }
    for s in &subs {
        while s.recv_bytes(0).is_ok() {}
        s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    }
    for i in 0..100 {
        publisher.send(format!("a{i}").as_str(), 0).unwrap();
        publisher.send(format!("b{i}").as_str(), 0).unwrap();
    }
    publisher.send("end", 0).unwrap();
    for (s, t) in subs.iter().zip(topics) {
        // The topic subscribers take their 100; the catch-all reads to
        // the end marker.
        let mut got = Vec::new();
        while t.is_empty() || got.len() < 100 {
            let m = String::from_utf8(s.recv_bytes(0).unwrap()).unwrap();
            if m == "end" {
                break;
            }
            got.push(m);
        }
        let want: Vec<String> = match t {
            "" => (0..100)
                .flat_map(|i| [format!("a{i}"), format!("b{i}")])
                .collect(),
            t => (0..100).map(|i| format!("{t}{i}")).collect(),
        };
        assert_eq!(got, want, "subscriber {t:?}");
    }
}

/// A publisher that goes away and comes back on the same endpoint: the
/// subscriber reconnects and subscribes again by itself.
#[test]
fn a_restarted_publisher_is_rejoined_and_resubscribed() {
    for provider in ["tcp", "shm"] {
        let sub_ctx = zmq::Context::new();
        let sub = socket(&sub_ctx, zmq::SUB);
        sub.set_subscribe(b"x").unwrap();
        sub.set_reconnect_ivl(20).unwrap();
        let first = zmq::Context::new();
        let publisher = socket(&first, zmq::PUB);
        publisher
            .bind(&format!("ofi+{provider}://127.0.0.1:*"))
            .unwrap();
        let endpoint = publisher.get_last_endpoint().unwrap().unwrap();
        sub.connect(&endpoint).unwrap();
        let until_received = |publisher: &zmq::Socket, what: &str| {
            sub.set_rcvtimeo(50).unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                publisher.send(what, 0).unwrap();
                publisher.send("y-filtered", 0).unwrap();
                if let Ok(m) = sub.recv_bytes(0) {
                    assert_eq!(m, what.as_bytes(), "{provider}");
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{provider}: {what} never arrived"
                );
            }
        };
        until_received(&publisher, "x-first");
        // The publisher's process ends: its context goes, sockets and all.
        drop(publisher);
        drop(first);
        let second = zmq::Context::new();
        let publisher = socket(&second, zmq::PUB);
        publisher.bind(&endpoint).unwrap();
        while sub.recv_bytes(0).is_ok() {}
        until_received(&publisher, "x-second");
    }
}

#[test]
fn pair_and_xpub_xsub_over_the_fabric() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let a = socket(&ctx, zmq::PAIR);
    let b = socket(&other, zmq::PAIR);
    join("shm", &a, &b);
    for i in 0..50usize {
        a.send(&body(i, i * 1000)[..], 0).unwrap();
        assert_eq!(b.recv_bytes(0).unwrap(), body(i, i * 1000));
        b.send(&body(i, 3)[..], 0).unwrap();
        assert_eq!(a.recv_bytes(0).unwrap(), body(i, 3));
    }

    let xpub = socket(&ctx, zmq::XPUB);
    let xsub = socket(&other, zmq::XSUB);
    join("tcp", &xpub, &xsub);
    // XSUB subscribes by sending \x01topic; XPUB sees it as a message.
    xsub.send(&b"\x01news"[..], 0).unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01news");
    xpub.send("sports", 0).unwrap();
    xpub.send("news-1", 0).unwrap();
    assert_eq!(xsub.recv_bytes(0).unwrap(), b"news-1");
    xsub.send(&b"\x00news"[..], 0).unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00news");
}

/// One PULL serves a libzmq PUSH over tcp:// and a fabriq PUSH over
/// ofi+shm:// at the same time.
#[test]
fn one_socket_serves_libzmq_over_tcp_and_fabriq_over_shm() {
    let ctx = zmq::Context::new();
    let pull = socket(&ctx, zmq::PULL);
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let tcp = pull.get_last_endpoint().unwrap().unwrap();
    pull.bind("ofi+shm://127.0.0.1:*").unwrap();
    let shm = pull.get_last_endpoint().unwrap().unwrap();

    let lz = ::zmq::Context::new();
    let lz_push = lz.socket(::zmq::PUSH).unwrap();
    lz_push.set_sndtimeo(TIMEOUT_MS).unwrap();
    lz_push.connect(&tcp).unwrap();
    let fq = zmq::Context::new();
    let fq_push = socket(&fq, zmq::PUSH);
    fq_push.connect(&shm).unwrap();

    let libzmq = std::thread::spawn(move || {
        for i in 0..300usize {
            let mut m = body(i, 1 + i * 50);
            m[0] = b'L';
            lz_push.send(&m[..], 0).unwrap();
        }
        lz_push
    });
    for i in 0..300usize {
        let mut m = body(i, 1 + i * 70);
        m[0] = b'F';
        fq_push.send(&m[..], 0).unwrap();
    }
    let (mut l, mut f) = (0usize, 0usize);
    for _ in 0..600 {
        let m = pull.recv_bytes(0).unwrap();
        let (n, len) = match m[0] {
            b'L' => (&mut l, 50),
            b'F' => (&mut f, 70),
            other => panic!("a message from nobody: {other}"),
        };
        let mut want = body(*n, 1 + *n * len);
        want[0] = m[0];
        assert!(m == want, "{} message {n}", m[0] as char);
        *n += 1;
    }
    assert_eq!((l, f), (300, 300));
    drop(libzmq.join().unwrap());
}

/// Frames larger than a page are read by the receiver from the sender's
/// memory (rendezvous): a sender that closes right after sending them
/// lingers until they were read, and a receiver that holds many of them
/// at once still gets every one.
#[test]
fn large_messages_survive_a_closing_sender_and_a_hoarding_receiver() {
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let pull = socket(&ctx, zmq::PULL);
        let push = socket(&other, zmq::PUSH);
        join(provider, &pull, &push);
        let size = |i: usize| 100_000 + (i * 7919) % 900_000;
        for i in 0..60usize {
            push.send(&body(i, size(i))[..], 0).unwrap();
        }
        drop(push);
        // Hold every message: none of the read buffers can be reused.
        let held: Vec<Vec<u8>> = (0..60)
            .map(|i| {
                pull.recv_bytes(0)
                    .unwrap_or_else(|e| panic!("{provider}: message {i}: {e}"))
            })
            .collect();
        for (i, m) in held.iter().enumerate() {
            assert!(*m == body(i, size(i)), "{provider}: message {i}");
        }
    }
}

/// A lent frame is read into memory placed like the sender's within a
/// page, so that the copy runs with source and destination aligned alike
/// (shm's reads of 1 MiB ran 1.4-1.5x faster so than 16 bytes apart).
/// Sent by reference (the receiver's bytes are the read buffer itself)
/// from offsets 0, 16, 40 and 4000 of page-aligned memory.
#[test]
fn a_lent_frame_lands_at_its_offset_within_a_page_over_shm() {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    join("shm", &pull, &push);
    let size = 1 << 20;
    let backing = bytes::Bytes::from(body(3, size + 2 * 4096));
    let aligned = (4096 - backing.as_ptr() as usize % 4096) % 4096;
    for offset in [0usize, 16, 40, 4000] {
        let start = aligned + offset;
        let frame = backing.slice(start..start + size);
        assert_eq!(frame.as_ptr() as usize % 4096, offset);
        push.send(zmq::Message::from(frame.clone()), 0).unwrap();
        let got = pull.recv_msg(0).unwrap();
        assert!(got[..] == frame[..], "offset {offset}: content");
        assert_eq!(
            got.as_ptr() as usize % 4096,
            offset,
            "offset {offset}: where the read put it"
        );
    }
}

/// A frame over the receiver's MAXMSGSIZE is refused whether it comes in
/// pages or by rendezvous: the connection ends, nothing is delivered, and
/// the socket goes on serving other peers.
#[test]
fn a_frame_over_maxmsgsize_ends_only_its_connection() {
    for size in [30_000usize, 3_000_000] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let pull = socket(&ctx, zmq::PULL);
        pull.set_maxmsgsize(20_000).unwrap();
        let big = socket(&other, zmq::PUSH);
        let endpoint = join("tcp", &pull, &big);
        big.send(&body(1, size)[..], 0).unwrap();
        let good = socket(&other, zmq::PUSH);
        good.connect(&endpoint).unwrap();
        good.send("small", 0).unwrap();
        assert_eq!(pull.recv_bytes(0).unwrap(), b"small", "after {size} B");
        pull.set_rcvtimeo(300).unwrap();
        assert_eq!(
            pull.recv_bytes(0),
            Err(zmq::Error::EAGAIN),
            "{size} B arrived"
        );
    }
}

/// A spinning socket reads the completion queue its node shares with
/// other sockets' connections: what it reaps for them is handed to the I/O
/// thread, so they get their messages as if nobody spun.
#[test]
fn a_spinning_socket_hands_other_sockets_their_pages() {
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let spinner = socket(&ctx, zmq::PULL);
        spinner.set_spin_us(1_000_000).unwrap();
        spinner.set_rcvtimeo(3000).unwrap();
        let sleeper = socket(&ctx, zmq::PULL);
        let to_spinner = socket(&other, zmq::PUSH);
        let to_sleeper = socket(&other, zmq::PUSH);
        join(provider, &spinner, &to_spinner);
        join(provider, &sleeper, &to_sleeper);
        // The spinner spins (nothing comes for it) while the sleeper's
        // messages arrive in the same completion queue.
        let spinning = std::thread::spawn(move || {
            let got = spinner.recv_bytes(0);
            (spinner, got)
        });
        for i in 0..200usize {
            to_sleeper.send(&body(i, i * 10)[..], 0).unwrap();
        }
        for i in 0..200usize {
            let got = sleeper
                .recv_bytes(0)
                .unwrap_or_else(|e| panic!("{provider}: message {i}: {e}"));
            assert_eq!(got, body(i, i * 10), "{provider}: message {i}");
        }
        to_spinner.send("done", 0).unwrap();
        let (_, got) = spinning.join().unwrap();
        assert_eq!(got.unwrap(), b"done", "{provider}");
    }
}

/// A receiver that holds every page of its pool (zero-copy messages it
/// keeps) has no receive posted; once it drops them, receives must be
/// posted again although no completion comes to say so. (Before the fix
/// the stream stalled for good: unbuffered 64 B messages, one per page, in
/// the benchmark.)
#[test]
fn a_receiver_that_held_its_whole_pool_gets_the_stream_back() {
    const TOTAL: usize = 72;
    for provider in ["tcp", "shm"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        let pull = socket(&ctx, zmq::PULL);
        pull.set_fabric_page_count(64).unwrap();
        let push = socket(&other, zmq::PUSH);
        push.set_fabric_buffered(false).unwrap();
        join(provider, &pull, &push);
        let sender = std::thread::spawn(move || {
            for i in 0..TOTAL {
                push.send(&body(i, 64)[..], 0).unwrap();
            }
            push
        });
        // Unbuffered: one message per page, so 64 kept messages are the
        // whole pool; the few after them wait in the provider, and
        // nothing more comes to wake the receiver.
        let held: Vec<bytes::Bytes> = (0..64).map(|_| pull.recv_zc(0).unwrap()).collect();
        for (i, m) in held.iter().enumerate() {
            assert_eq!(m[..], body(i, 64)[..], "{provider}: message {i}");
        }
        drop(held);
        pull.set_rcvtimeo(5000).unwrap();
        for i in 64..TOTAL {
            let m = pull.recv_bytes(0).unwrap_or_else(|e| {
                panic!("{provider}: message {i} after the pool came back: {e}")
            });
            assert_eq!(m, body(i, 64), "{provider}: message {i}");
        }
        drop(sender.join().unwrap());
    }
}

/// With several I/O threads, each has its own fabric node: pushers whose
/// connections went to different threads of one context reach one puller
/// through different fabric endpoints, and every message arrives.
#[test]
fn connections_on_several_io_threads_each_have_a_node() {
    for provider in ["shm", "tcp"] {
        let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
        ctx.set_io_threads(2).unwrap();
        other.set_io_threads(2).unwrap();
        let pull = socket(&ctx, zmq::PULL);
        let first = socket(&other, zmq::PUSH);
        let endpoint = join(provider, &pull, &first);
        let second = socket(&other, zmq::PUSH);
        second.connect(&endpoint).unwrap();
        for i in 0..100usize {
            first.send(&body(i, 100)[..], 0).unwrap();
            second.send(&body(i + 1000, 5000)[..], 0).unwrap();
        }
        let mut got: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                pull.recv_bytes(0)
                    .unwrap_or_else(|e| panic!("{provider}: message {i}: {e}"))
            })
            .collect();
        let mut want: Vec<Vec<u8>> = (0..100)
            .flat_map(|i| [body(i, 100), body(i + 1000, 5000)])
            .collect();
        got.sort();
        want.sort();
        assert!(got == want, "{provider}: the messages differ");
    }
}

/// The fabric over shm without CMA (`FI_SHM_DISABLE_CMA=1`), as where the
/// kernel does not let one process `process_vm_readv` another (Yama's
/// `ptrace_scope`, containers without `CAP_SYS_PTRACE`): every send of
/// more than 4 KiB then goes through the provider's segment buffers,
/// which move only while both sides progress, and rendezvous reads copy
/// through them too. libfabric reads the variable once, when it loads
/// the provider, so [`shm_cases_of_every_size`] runs in a child process
/// of this test binary that has it set (run directly, it runs with CMA).
#[test]
fn without_cma_shm_streams_and_answers_every_size() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("FI_SHM_DISABLE_CMA", "1")
        .args([
            "--exact",
            "shm_cases_of_every_size",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the cases without CMA failed:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the cases did not run in the child:\n{text}"
    );
}

/// Streams messages of 4 KiB to 1 MiB (segment buffers, pages, lent
/// frames read by rendezvous) and answers requests of those sizes.
#[test]
fn shm_cases_of_every_size() {
    let sizes = [4096usize, 4097, 16_384, 65_536, 200_000, 1 << 20];
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    join("shm", &pull, &push);
    let msgs = (0..300).map(|i| body(i, sizes[i % sizes.len()])).collect();
    stream(push, &pull, msgs, "shm, every size");

    let rep = socket(&ctx, zmq::REP);
    let req = socket(&other, zmq::REQ);
    join("shm", &rep, &req);
    let server = std::thread::spawn(move || {
        for _ in 0..60 {
            let m = rep.recv_bytes(0).unwrap();
            rep.send(&m[..], 0).unwrap();
        }
    });
    for i in 0..60usize {
        let m = body(i, sizes[i % sizes.len()]);
        req.send(&m[..], 0).unwrap();
        let got = req
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("round trip {i}: {e}"));
        assert!(got == m, "round trip {i}: {} bytes", got.len());
    }
    server.join().unwrap();
}
