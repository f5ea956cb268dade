//! Every pattern, fabriq on both sides, over every transport, with either
//! side binding.

use std::time::{Duration, Instant};

use fabriq as zmq;

const TIMEOUT_MS: i32 = 5000;

/// An endpoint to bind for `transport`, unique per call for inproc.
fn bind_endpoint(transport: &str, tag: &str) -> String {
    match transport {
        "tcp" => "tcp://127.0.0.1:*".into(),
        "ipc" => "ipc://*".into(),
        _ => format!("inproc://patterns-{tag}-{}", unique()),
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Makes two sockets joined over `transport`; `a` binds unless
/// `b_binds`.
fn pair(
    ctx: &zmq::Context,
    transport: &str,
    a_type: zmq::SocketType,
    b_type: zmq::SocketType,
    b_binds: bool,
) -> (zmq::Socket, zmq::Socket) {
    let a = ctx.socket(a_type).unwrap();
    let b = ctx.socket(b_type).unwrap();
    for s in [&a, &b] {
        s.set_rcvtimeo(TIMEOUT_MS).unwrap();
        s.set_sndtimeo(TIMEOUT_MS).unwrap();
        s.set_linger(0).unwrap();
    }
    let (binder, connecter) = if b_binds { (&b, &a) } else { (&a, &b) };
    binder
        .bind(&bind_endpoint(transport, &format!("{a_type:?}{b_type:?}")))
        .unwrap();
    let ep = binder.get_last_endpoint().unwrap().unwrap();
    connecter.connect(&ep).unwrap();
    (a, b)
}

fn each_case(mut f: impl FnMut(&zmq::Context, &str, bool)) {
    for transport in ["tcp", "ipc", "inproc"] {
        for b_binds in [false, true] {
            let ctx = zmq::Context::new();
            f(&ctx, transport, b_binds);
        }
    }
}

#[test]
fn pair_both_ways() {
    each_case(|ctx, t, b_binds| {
        let (a, b) = pair(ctx, t, zmq::PAIR, zmq::PAIR, b_binds);
        a.send("ping", 0).unwrap();
        assert_eq!(b.recv_string(0).unwrap().unwrap(), "ping", "{t}");
        b.send_multipart(["x", "y"], 0).unwrap();
        assert_eq!(
            a.recv_multipart(0).unwrap(),
            vec![b"x".to_vec(), b"y".to_vec()]
        );
    });
}

#[test]
fn push_pull_in_order() {
    each_case(|ctx, t, b_binds| {
        let (push, pull) = pair(ctx, t, zmq::PUSH, zmq::PULL, b_binds);
        for i in 0..500u32 {
            push.send(&i.to_be_bytes()[..], 0).unwrap();
        }
        for i in 0..500u32 {
            assert_eq!(pull.recv_bytes(0).unwrap(), i.to_be_bytes(), "{t}");
        }
        assert_eq!(pull.send("x", 0), Err(zmq::Error::ENOTSUP));
        assert_eq!(push.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::ENOTSUP));
    });
}

#[test]
fn req_rep_and_envelopes() {
    each_case(|ctx, t, b_binds| {
        let (req, rep) = pair(ctx, t, zmq::REQ, zmq::REP, b_binds);
        for i in 0..20 {
            req.send_multipart([format!("q{i}"), "second".into()], 0)
                .unwrap();
            assert_eq!(
                rep.recv_multipart(0).unwrap(),
                vec![format!("q{i}").into_bytes(), b"second".to_vec()]
            );
            rep.send(format!("a{i}").as_str(), 0).unwrap();
            assert_eq!(req.recv_string(0).unwrap().unwrap(), format!("a{i}"));
        }
        assert_eq!(rep.send("no request", 0), Err(zmq::Error::EFSM));
        req.send("q", 0).unwrap();
        assert_eq!(req.send("again", 0), Err(zmq::Error::EFSM));
    });
}

#[test]
fn req_to_router_and_dealer_to_rep() {
    each_case(|ctx, t, b_binds| {
        let (req, router) = pair(ctx, t, zmq::REQ, zmq::ROUTER, b_binds);
        req.send("hello", 0).unwrap();
        let parts = router.recv_multipart(0).unwrap();
        assert_eq!(parts.len(), 3, "{t}");
        assert!(parts[1].is_empty());
        assert_eq!(parts[2], b"hello");
        router
            .send_multipart([parts[0].clone(), vec![], b"world".to_vec()], 0)
            .unwrap();
        assert_eq!(req.recv_string(0).unwrap().unwrap(), "world");

        let (dealer, rep) = pair(ctx, t, zmq::DEALER, zmq::REP, b_binds);
        dealer.send_multipart(["", "job"], 0).unwrap();
        assert_eq!(rep.recv_string(0).unwrap().unwrap(), "job");
        rep.send("done", 0).unwrap();
        assert_eq!(
            dealer.recv_multipart(0).unwrap(),
            vec![b"".to_vec(), b"done".to_vec()]
        );
    });
}

#[test]
fn dealer_router_identities() {
    each_case(|ctx, t, b_binds| {
        let dealer = ctx.socket(zmq::DEALER).unwrap();
        dealer.set_identity(b"alice").unwrap();
        dealer.set_rcvtimeo(TIMEOUT_MS).unwrap();
        dealer.set_linger(0).unwrap();
        let router = ctx.socket(zmq::ROUTER).unwrap();
        router.set_rcvtimeo(TIMEOUT_MS).unwrap();
        router.set_linger(0).unwrap();
        let (binder, connecter) = if b_binds {
            (&router, &dealer)
        } else {
            (&dealer, &router)
        };
        binder.bind(&bind_endpoint(t, "dr")).unwrap();
        connecter
            .connect(&binder.get_last_endpoint().unwrap().unwrap())
            .unwrap();
        let big = vec![7u8; 200 * 1024];
        dealer
            .send_multipart([b"a".to_vec(), vec![], big.clone()], 0)
            .unwrap();
        let parts = router.recv_multipart(0).unwrap();
        assert_eq!(parts[0], b"alice", "{t} b_binds={b_binds}");
        assert_eq!(&parts[1..], &[b"a".to_vec(), vec![], big]);
        router.send_multipart(["alice", "back"], 0).unwrap();
        assert_eq!(dealer.recv_string(0).unwrap().unwrap(), "back");
    });
}

#[test]
fn dealer_to_dealer() {
    each_case(|ctx, t, b_binds| {
        let (a, b) = pair(ctx, t, zmq::DEALER, zmq::DEALER, b_binds);
        a.send("x", 0).unwrap();
        assert_eq!(b.recv_string(0).unwrap().unwrap(), "x");
        b.send("y", 0).unwrap();
        assert_eq!(a.recv_string(0).unwrap().unwrap(), "y");
    });
}

/// Publishes `msg` until `sub` receives something (subscriptions travel
/// asynchronously), and returns what it received.
fn publish_until_received(publisher: &zmq::Socket, sub: &zmq::Socket, msg: &str) -> String {
    let deadline = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    loop {
        publisher.send(msg, 0).unwrap();
        if sub.poll(zmq::POLLIN, 10).unwrap() > 0 {
            return sub.recv_string(0).unwrap().unwrap();
        }
        assert!(Instant::now() < deadline, "subscription never took effect");
    }
}

#[test]
fn pub_sub_filters_at_the_publisher() {
    each_case(|ctx, t, b_binds| {
        let (publisher, sub) = pair(ctx, t, zmq::PUB, zmq::SUB, b_binds);
        sub.set_subscribe(b"news").unwrap();
        assert_eq!(publish_until_received(&publisher, &sub, "news 1"), "news 1");
        publisher.send("sport 1", 0).unwrap();
        publisher.send("news 2", 0).unwrap();
        // Drain duplicates of "news 1" from the retry loop.
        let mut got = sub.recv_string(0).unwrap().unwrap();
        while got == "news 1" {
            got = sub.recv_string(0).unwrap().unwrap();
        }
        assert_eq!(got, "news 2", "{t}");
        assert_eq!(sub.send("x", 0), Err(zmq::Error::ENOTSUP));
        assert_eq!(
            publisher.recv_bytes(zmq::DONTWAIT),
            Err(zmq::Error::ENOTSUP)
        );
    });
}

/// Receives on `reader` while keeping `other` processing its commands: as
/// in libzmq, a socket takes in a new peer (and a subscriber sends it its
/// subscriptions) when the application calls into that socket.
fn recv_pumping(reader: &zmq::Socket, other: &zmq::Socket) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
    while reader.poll(zmq::POLLIN, 10).unwrap() == 0 {
        other.get_events().unwrap();
        assert!(Instant::now() < deadline, "nothing arrived");
    }
    reader.recv_bytes(0).unwrap()
}

#[test]
fn xpub_sees_subscriptions_and_xsub_sends_them() {
    each_case(|ctx, t, b_binds| {
        let (xpub, xsub) = pair(ctx, t, zmq::XPUB, zmq::XSUB, b_binds);
        xsub.send(&b"\x01weather"[..], 0).unwrap();
        assert_eq!(recv_pumping(&xpub, &xsub), b"\x01weather", "{t}");
        xpub.send("weather: sunny", 0).unwrap();
        xpub.send("traffic: jam", 0).unwrap();
        assert_eq!(xsub.recv_string(0).unwrap().unwrap(), "weather: sunny");
        xsub.send(&b"\x00weather"[..], 0).unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00weather");
    });
}

#[test]
fn xpub_with_sub_counts_topics() {
    each_case(|ctx, t, b_binds| {
        let (xpub, sub) = pair(ctx, t, zmq::XPUB, zmq::SUB, b_binds);
        sub.set_subscribe(b"a").unwrap();
        sub.set_subscribe(b"a").unwrap();
        assert_eq!(recv_pumping(&xpub, &sub), b"\x01a");
        // The second subscribe reaches XPUB but is not new: not reported.
        sub.set_unsubscribe(b"a").unwrap();
        sub.set_unsubscribe(b"a").unwrap();
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00a", "{t}");
        assert_eq!(xpub.recv_bytes(zmq::DONTWAIT), Err(zmq::Error::EAGAIN));
    });
}

#[test]
fn inproc_connect_before_bind() {
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).unwrap();
    push.connect("inproc://patterns-early").unwrap();
    push.send("queued before bind", 0).unwrap();
    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.set_rcvtimeo(TIMEOUT_MS).unwrap();
    pull.bind("inproc://patterns-early").unwrap();
    assert_eq!(pull.recv_string(0).unwrap().unwrap(), "queued before bind");
}

#[test]
fn fan_out_and_fair_queueing() {
    for t in ["tcp", "ipc", "inproc"] {
        let ctx = zmq::Context::new();
        let push = ctx.socket(zmq::PUSH).unwrap();
        push.set_linger(0).unwrap();
        push.bind(&bind_endpoint(t, "fan")).unwrap();
        let ep = push.get_last_endpoint().unwrap().unwrap();
        let pulls: Vec<zmq::Socket> = (0..3)
            .map(|_| {
                let p = ctx.socket(zmq::PULL).unwrap();
                p.set_rcvtimeo(TIMEOUT_MS).unwrap();
                p.connect(&ep).unwrap();
                p
            })
            .collect();
        // Wait until all three are attached: one probe each, round robin.
        let mut attached = [false; 3];
        let deadline = Instant::now() + Duration::from_secs(5);
        while attached.iter().any(|a| !a) {
            push.send("probe", 0).unwrap();
            for (i, p) in pulls.iter().enumerate() {
                while p.recv_bytes(zmq::DONTWAIT).is_ok() {
                    attached[i] = true;
                }
            }
            assert!(Instant::now() < deadline, "{t}: peers never attached");
            std::thread::yield_now();
        }
        for i in 0..300 {
            push.send(format!("{i}").as_str(), 0).unwrap();
        }
        let mut counts = [0; 3];
        let mut total = 0;
        while total < 300 {
            let mut items: Vec<_> = pulls.iter().map(|p| p.as_poll_item(zmq::POLLIN)).collect();
            assert!(zmq::poll(&mut items, TIMEOUT_MS as i64).unwrap() > 0);
            for (i, p) in pulls.iter().enumerate() {
                while let Ok(m) = p.recv_string(zmq::DONTWAIT) {
                    if m.unwrap() != "probe" {
                        counts[i] += 1;
                        total += 1;
                    }
                }
            }
        }
        assert!(counts.iter().all(|&c| c == 100), "{t}: {counts:?}");
    }
}
