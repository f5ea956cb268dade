//! Messages and sockets in general: PAIR, multipart, sizes, MAXMSGSIZE,
//! many peers, poll, options (libzmq's test_pair_*, test_msg_flags,
//! test_many_sockets, test_sockopt_*, test_setsockopt).

use std::time::Instant;

use super::{link, recv_text, show, Fabric, Outcome, Pair, Scenario, Sides, ALL, WIRE};
use crate::adapter::{poll_readable, proxy, Ctx, Errno, Kind, Sock, Transport, DONTWAIT, SNDMORE};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "pair_exchange",
            about: "PAIR to PAIR: 100 messages each way, interleaved",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pair_exchange,
        },
        Scenario {
            name: "pair_second_peer_ignored",
            about: "PAIR talks to its first peer only; a second connection gets nothing",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pair_second_peer_ignored,
        },
        Scenario {
            name: "multipart_rcvmore",
            about: "frames (empty, small, 100 KiB) arrive one by one with RCVMORE right",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: multipart_rcvmore,
        },
        Scenario {
            name: "message_sizes",
            about: "0 B to 16 MiB frames, around the 255/256 and 64 KiB length encodings",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: message_sizes,
        },
        Scenario {
            name: "message_64mib",
            about: "one 64 MiB message arrives intact",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: message_64mib,
        },
        Scenario {
            name: "maxmsgsize",
            about: "MAXMSGSIZE: an oversized message drops the connection and is never delivered",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: maxmsgsize,
        },
        Scenario {
            name: "many_peers",
            about: "100 DEALERs on one ROUTER: every one is heard and answered",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: many_peers,
        },
        Scenario {
            name: "proxy_router_dealer",
            about: "REQs and REPs through a ROUTER-DEALER proxy of side A's library",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: proxy_router_dealer,
        },
        Scenario {
            name: "proxy_xsub_xpub",
            about: "PUB and SUB through an XSUB-XPUB proxy; subscriptions travel upstream",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: proxy_xsub_xpub,
        },
        Scenario {
            name: "poll_in_out",
            about: "POLLIN/POLLOUT and ZMQ_EVENTS follow the queue",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: poll_in_out,
        },
        Scenario {
            name: "poll_many_sockets",
            about: "zmq_poll over three sockets reports the one with a message",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: poll_many_sockets,
        },
        Scenario {
            name: "recv_timeouts",
            about: "DONTWAIT on an empty socket is EAGAIN; RCVTIMEO 100 ms times out in time",
            transports: TCP_ONLY,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: recv_timeouts,
        },
        Scenario {
            name: "option_defaults",
            about: "a new socket's option values are libzmq's defaults",
            transports: TCP_ONLY,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: option_defaults,
        },
        Scenario {
            name: "option_round_trip",
            about: "options read back as set",
            transports: TCP_ONLY,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: option_round_trip,
        },
        Scenario {
            name: "option_wrong_socket_type",
            about: "type-specific options on the wrong socket type are EINVAL",
            transports: TCP_ONLY,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: option_wrong_socket_type,
        },
        Scenario {
            name: "identity_rules",
            about: "routing ids of 1 to 255 bytes are accepted; empty and 256 bytes are EINVAL",
            transports: TCP_ONLY,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: identity_rules,
        },
        Scenario {
            name: "identity_leading_zero",
            about: "a routing id starting with a zero byte is accepted and routable",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: identity_leading_zero,
        },
    ]
}

const TCP_ONLY: &[Transport] = &[Transport::Tcp];

fn pair_exchange(p: &Pair, t: Transport) -> Outcome {
    let a = p.a(Kind::Pair)?;
    let b = p.b(Kind::Pair)?;
    link(t, &a, &b)?;
    for i in 0..100 {
        a.send(format!("a{i}").as_bytes(), 0)?;
        b.send(format!("b{i}").as_bytes(), 0)?;
        if i % 10 == 9 {
            for j in i - 9..=i {
                ensure_eq!(recv_text(&b)?, format!("a{j}"), "at B");
                ensure_eq!(recv_text(&a)?, format!("b{j}"), "at A");
            }
        }
    }
    Ok(())
}

fn pair_second_peer_ignored(p: &Pair, t: Transport) -> Outcome {
    let a = p.a(Kind::Pair)?;
    let b1 = p.b(Kind::Pair)?;
    let endpoint = link(t, &a, &b1)?;
    b1.send(b"first", 0)?;
    ensure_eq!(recv_text(&a)?, "first", "from the first peer");
    let b2 = p.b(Kind::Pair)?;
    b2.connect(&endpoint)?;
    b2.send(b"intruder", DONTWAIT).ok();
    for i in 0..5 {
        a.send(format!("to first {i}").as_bytes(), 0)?;
    }
    for i in 0..5 {
        ensure_eq!(
            recv_text(&b1)?,
            format!("to first {i}"),
            "at the first peer"
        );
    }
    super::expect_silence(&b2, 100, "second peer")?;
    b1.send(b"still", 0)?;
    ensure_eq!(recv_text(&a)?, "still", "from the first peer again");
    Ok(())
}

fn multipart_rcvmore(p: &Pair, t: Transport) -> Outcome {
    let a = p.a(Kind::Pair)?;
    let b = p.b(Kind::Pair)?;
    link(t, &a, &b)?;
    let big = vec![0xabu8; 100 * 1024];
    let frames: Vec<&[u8]> = vec![b"", b"a", &big, b"", b"z"];
    for (i, f) in frames.iter().enumerate() {
        let flags = if i + 1 < frames.len() { SNDMORE } else { 0 };
        b.send(f, flags)?;
    }
    b.send(b"next", 0)?;
    for (i, f) in frames.iter().enumerate() {
        let got = a.recv(0)?;
        ensure!(
            got == *f,
            "frame {i}: {} bytes, expected {}",
            got.len(),
            f.len()
        );
        ensure_eq!(
            a.get_rcvmore()?,
            i + 1 < frames.len(),
            "RCVMORE after frame {i}"
        );
    }
    ensure_eq!(a.recv_parts(0)?, vec![b"next".to_vec()], "next message");
    Ok(())
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8 ^ seed)
        .collect()
}

fn message_sizes(p: &Pair, t: Transport) -> Outcome {
    let a = p.a(Kind::Pair)?;
    let b = p.b(Kind::Pair)?;
    link(t, &a, &b)?;
    for (k, len) in [0, 1, 254, 255, 256, 65535, 65536, 1 << 20, 16 << 20]
        .into_iter()
        .enumerate()
    {
        let msg = pattern(len, k as u8);
        b.send(&msg, 0)?;
        let got = a.recv(0)?;
        ensure!(
            got == msg,
            "{len}-byte message: got {} bytes, or wrong content",
            got.len()
        );
        a.send(&got, 0)?;
        let back = b.recv(0)?;
        ensure!(back == msg, "{len}-byte message on the way back");
    }
    Ok(())
}

fn message_64mib(p: &Pair, t: Transport) -> Outcome {
    let a = p.a(Kind::Pair)?;
    let b = p.b(Kind::Pair)?;
    a.set_rcvtimeo(20_000)?;
    link(t, &a, &b)?;
    let msg = pattern(64 << 20, 7);
    b.send(&msg, 0)?;
    let got = a.recv(0)?;
    ensure!(
        got.len() == msg.len(),
        "got {} bytes of {}",
        got.len(),
        msg.len()
    );
    ensure!(got == msg, "64 MiB message: content differs");
    Ok(())
}

fn maxmsgsize(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.set_maxmsgsize(1000)?;
    let push = p.b(Kind::Push)?;
    push.set_reconnect_ivl(20)?;
    link(t, &pull, &push)?;
    push.send(&[1u8; 1000], 0)?;
    ensure_eq!(pull.recv(0)?.len(), 1000, "a message of exactly MAXMSGSIZE");
    push.send(&[2u8; 1001], 0)?;
    // The connection is dropped; PUSH reconnects. Small messages get
    // through again, the big one never does.
    let end = super::deadline(5000);
    loop {
        push.send(b"small", DONTWAIT).ok();
        if let Some(m) = pull.recv_within(20)? {
            ensure!(
                m == [b"small".to_vec()],
                "after the oversized message: {}",
                show(&m)
            );
            return Ok(());
        }
        ensure!(
            Instant::now() < end,
            "nothing arrived after the oversized message"
        );
    }
}

fn many_peers(p: &Pair, t: Transport) -> Outcome {
    const N: usize = 100;
    let router = p.a(Kind::Router)?;
    let endpoint = router.bind_any(t)?;
    let mut dealers = Vec::new();
    for i in 0..N {
        let d = p.b(Kind::Dealer)?;
        d.set_identity(format!("peer-{i}").as_bytes())?;
        d.connect(&endpoint)?;
        d.send(format!("hello {i}").as_bytes(), 0)?;
        dealers.push(d);
    }
    let mut seen = [false; N];
    for _ in 0..N {
        let m = router.recv_parts(0)?;
        ensure!(m.len() == 2, "at ROUTER: {}", show(&m));
        let id = String::from_utf8_lossy(&m[0]).into_owned();
        let i: usize = id
            .strip_prefix("peer-")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("unknown identity {id:?}"))?;
        ensure_eq!(m[1], format!("hello {i}").into_bytes(), "body from {id}");
        ensure!(!seen[i], "{id} heard twice");
        seen[i] = true;
        router.send_parts(&[&m[0][..], format!("bye {i}").as_bytes()], 0)?;
    }
    for (i, d) in dealers.iter().enumerate() {
        ensure_eq!(recv_text(d)?, format!("bye {i}"), "reply at peer {i}");
    }
    Ok(())
}

fn poll_in_out(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let push = p.b(Kind::Push)?;
    link(t, &pull, &push)?;
    ensure!(!pull.poll_in(0)?, "POLLIN on an empty PULL");
    ensure!(push.poll_out(3000)?, "no POLLOUT on a connected PUSH");
    push.send_parts(&[&b"one"[..], b"two"], 0)?;
    ensure!(pull.poll_in(3000)?, "no POLLIN after a send");
    ensure_eq!(pull.events()?.0, true, "ZMQ_EVENTS POLLIN");
    pull.recv_parts(0)?;
    ensure!(!pull.poll_in(0)?, "POLLIN after reading the only message");
    ensure_eq!(pull.events()?.0, false, "ZMQ_EVENTS POLLIN after reading");
    Ok(())
}

fn poll_many_sockets(p: &Pair, t: Transport) -> Outcome {
    let pulls = [p.a(Kind::Pull)?, p.a(Kind::Pull)?, p.a(Kind::Pull)?];
    let mut pushes = Vec::new();
    for pull in &pulls {
        let push = p.b(Kind::Push)?;
        link(t, pull, &push)?;
        pushes.push(push);
    }
    let refs: Vec<_> = pulls.iter().collect();
    ensure_eq!(
        poll_readable(&refs, 0)?,
        vec![false; 3],
        "before any message"
    );
    pushes[1].send(b"to the middle", 0)?;
    ensure_eq!(
        poll_readable(&refs, 3000)?,
        vec![false, true, false],
        "after one message"
    );
    pulls[1].recv(0)?;
    pushes[2].send(b"to the last", 0)?;
    ensure_eq!(
        poll_readable(&refs, 3000)?,
        vec![false, false, true],
        "after another"
    );
    Ok(())
}

fn recv_timeouts(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind_any(t)?;
    match pull.recv(DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => return Err(format!("DONTWAIT recv: {other:?}, expected EAGAIN")),
    }
    pull.set_rcvtimeo(100)?;
    let start = Instant::now();
    match pull.recv(0) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => {
            return Err(format!(
                "recv with RCVTIMEO 100: {other:?}, expected EAGAIN"
            ))
        }
    }
    let took = start.elapsed().as_millis();
    ensure!((90..2000).contains(&took), "RCVTIMEO 100 took {took} ms");
    Ok(())
}

fn option_defaults(p: &Pair, _t: Transport) -> Outcome {
    let s = p.ctx_a().raw_socket(Kind::Dealer)?;
    ensure_eq!(s.get_sndhwm()?, 1000, "SNDHWM");
    ensure_eq!(s.get_rcvhwm()?, 1000, "RCVHWM");
    ensure_eq!(s.get_linger()?, -1, "LINGER");
    ensure_eq!(s.get_rcvtimeo()?, -1, "RCVTIMEO");
    ensure_eq!(s.get_sndtimeo()?, -1, "SNDTIMEO");
    ensure_eq!(s.get_reconnect_ivl()?, 100, "RECONNECT_IVL");
    ensure_eq!(s.get_reconnect_ivl_max()?, 0, "RECONNECT_IVL_MAX");
    ensure_eq!(s.get_heartbeat_ivl()?, 0, "HEARTBEAT_IVL");
    ensure_eq!(s.get_heartbeat_ttl()?, 0, "HEARTBEAT_TTL");
    ensure_eq!(s.get_heartbeat_timeout()?, -1, "HEARTBEAT_TIMEOUT");
    ensure_eq!(s.get_handshake_ivl()?, 30_000, "HANDSHAKE_IVL");
    ensure_eq!(s.get_maxmsgsize()?, -1, "MAXMSGSIZE");
    ensure_eq!(s.get_backlog()?, 100, "BACKLOG");
    ensure_eq!(s.is_immediate()?, false, "IMMEDIATE");
    ensure_eq!(s.is_conflate()?, false, "CONFLATE");
    ensure_eq!(s.get_identity()?, Vec::<u8>::new(), "ROUTING_ID");
    Ok(())
}

fn option_round_trip(p: &Pair, _t: Transport) -> Outcome {
    let s = p.a(Kind::Router)?;
    s.set_sndhwm(7)?;
    ensure_eq!(s.get_sndhwm()?, 7, "SNDHWM");
    s.set_rcvhwm(0)?;
    ensure_eq!(s.get_rcvhwm()?, 0, "RCVHWM");
    s.set_linger(1234)?;
    ensure_eq!(s.get_linger()?, 1234, "LINGER");
    s.set_reconnect_ivl(-1)?;
    ensure_eq!(s.get_reconnect_ivl()?, -1, "RECONNECT_IVL");
    s.set_heartbeat_ivl(250)?;
    ensure_eq!(s.get_heartbeat_ivl()?, 250, "HEARTBEAT_IVL");
    s.set_heartbeat_ttl(2000)?;
    ensure_eq!(s.get_heartbeat_ttl()?, 2000, "HEARTBEAT_TTL");
    s.set_maxmsgsize(4096)?;
    ensure_eq!(s.get_maxmsgsize()?, 4096, "MAXMSGSIZE");
    s.set_immediate(true)?;
    ensure_eq!(s.is_immediate()?, true, "IMMEDIATE");
    s.set_identity(b"me")?;
    ensure_eq!(s.get_identity()?, b"me".to_vec(), "ROUTING_ID");
    Ok(())
}

fn option_wrong_socket_type(p: &Pair, _t: Transport) -> Outcome {
    let dealer = p.a(Kind::Dealer)?;
    match dealer.set_req_relaxed(true) {
        Err(f) if f.is(Errno::EINVAL) => {}
        other => return Err(format!("REQ_RELAXED on DEALER: {other:?}, expected EINVAL")),
    }
    match dealer.set_router_mandatory(true) {
        Err(f) if f.is(Errno::EINVAL) => {}
        other => {
            return Err(format!(
                "ROUTER_MANDATORY on DEALER: {other:?}, expected EINVAL"
            ))
        }
    }
    let push = p.a(Kind::Push)?;
    match push.set_subscribe(b"x") {
        Err(f) if f.is(Errno::EINVAL) => {}
        other => return Err(format!("SUBSCRIBE on PUSH: {other:?}, expected EINVAL")),
    }
    match push.set_sndhwm(-1) {
        Err(f) if f.is(Errno::EINVAL) => Ok(()),
        other => Err(format!("SNDHWM -1: {other:?}, expected EINVAL")),
    }
}

fn identity_rules(p: &Pair, _t: Transport) -> Outcome {
    let s = p.a(Kind::Dealer)?;
    s.set_identity(&[b'x'; 255])?;
    s.set_identity(b"y")?;
    match s.set_identity(&[b'x'; 256]) {
        Err(f) if f.is(Errno::EINVAL) => {}
        other => return Err(format!("256-byte identity: {other:?}, expected EINVAL")),
    }
    match s.set_identity(b"") {
        Err(f) if f.is(Errno::EINVAL) => Ok(()),
        other => Err(format!("empty identity: {other:?}, expected EINVAL")),
    }
}

fn identity_leading_zero(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let dealer = p.b(Kind::Dealer)?;
    dealer.set_identity(b"\0zero")?;
    link(t, &router, &dealer)?;
    dealer.send(b"hi", 0)?;
    let m = router.recv_parts(0)?;
    ensure_eq!(m, vec![b"\0zero".to_vec(), b"hi".to_vec()], "at ROUTER");
    router.send_parts(&[&b"\0zero"[..], b"back"], 0)?;
    ensure_eq!(recv_text(&dealer)?, "back", "reply");
    Ok(())
}

/// A proxy of side A's library running in a thread, in a context of its
/// own (terminating it stops the proxy).
struct RunningProxy {
    ctx: Option<Ctx>,
    front: String,
    back: String,
    thread: Option<std::thread::JoinHandle<Outcome>>,
}

impl RunningProxy {
    /// Binds a `front` and a `back` socket on `t` and starts the proxy.
    fn start(p: &Pair, t: Transport, front: Kind, back: Kind) -> Result<RunningProxy, String> {
        let ctx = Ctx::new(p.a);
        let frontend = ctx.socket(front)?;
        let backend = ctx.socket(back)?;
        let front = frontend.bind_any(t)?;
        let back = backend.bind_any(t)?;
        let thread = std::thread::spawn(move || -> Outcome {
            match proxy(&frontend, &backend) {
                Err(f) if f.is(Errno::ETERM) => Ok(()),
                other => Err(format!(
                    "proxy ended with {other:?}, expected ETERM at term"
                )),
            }
        });
        Ok(RunningProxy {
            ctx: Some(ctx),
            front,
            back,
            thread: Some(thread),
        })
    }

    /// Terminates the context; the proxy must end with ETERM.
    fn stop(mut self) -> Outcome {
        if let Some(ctx) = self.ctx.take() {
            ctx.destroy()?;
        }
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        thread
            .join()
            .map_err(|_| "proxy thread panicked".to_string())?
    }
}

impl Drop for RunningProxy {
    /// A scenario that fails early still stops its proxy (else the
    /// context's termination would wait for it forever).
    fn drop(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            let _ = ctx.destroy();
        }
    }
}

fn proxy_router_dealer(p: &Pair, t: Transport) -> Outcome {
    let px = RunningProxy::start(p, t, Kind::Router, Kind::Dealer)?;
    let (front, back) = (px.front.clone(), px.back.clone());
    let reps: Vec<Sock> = (0..2).map(|_| p.b(Kind::Rep)).collect::<Result<_, _>>()?;
    for rep in &reps {
        rep.connect(&back)?;
    }
    let reqs: Vec<Sock> = (0..3).map(|_| p.b(Kind::Req)).collect::<Result<_, _>>()?;
    for req in &reqs {
        req.connect(&front)?;
    }
    for round in 0..4 {
        for (k, req) in reqs.iter().enumerate() {
            req.send_parts(&[format!("q{k}.{round}").as_bytes(), b"tail"], 0)?;
        }
        // The workers answer whatever reaches them, by polling both.
        let mut answered = 0;
        let end = super::deadline(5000);
        while answered < reqs.len() {
            for rep in &reps {
                if rep.poll_in(10)? {
                    let q = rep.recv_parts(0)?;
                    ensure!(
                        q.len() == 2 && q[1] == b"tail",
                        "request at REP: {}",
                        show(&q)
                    );
                    let mut a = b"a".to_vec();
                    a.extend_from_slice(&q[0][1..]);
                    rep.send(&a, 0)?;
                    answered += 1;
                }
            }
            ensure!(
                Instant::now() < end,
                "round {round}: {answered} requests answered"
            );
        }
        for (k, req) in reqs.iter().enumerate() {
            ensure_eq!(recv_text(req)?, format!("a{k}.{round}"), "reply at REQ {k}");
        }
    }
    drop((reps, reqs));
    px.stop()
}

fn proxy_xsub_xpub(p: &Pair, t: Transport) -> Outcome {
    let px = RunningProxy::start(p, t, Kind::XSub, Kind::XPub)?;
    let (front, back) = (px.front.clone(), px.back.clone());
    let publisher = p.b(Kind::Pub)?;
    publisher.connect(&front)?;
    let sub = p.b(Kind::Sub)?;
    sub.set_subscribe(b"w")?;
    sub.connect(&back)?;
    super::sync_subscriber(&publisher, &sub)?;
    for m in ["w1", "x1", "w2"] {
        publisher.send(m.as_bytes(), 0)?;
    }
    ensure_eq!(recv_text(&sub)?, "w1", "first through the proxy");
    ensure_eq!(recv_text(&sub)?, "w2", "second through the proxy");
    drop((publisher, sub));
    px.stop()
}
