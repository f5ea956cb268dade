//! DEALER and ROUTER (libzmq's test_spec_dealer, test_spec_router,
//! test_router_mandatory, test_router_handover).

use super::{deadline, link, recv_text, show, Fabric, Outcome, Pair, Scenario, Sides, ALL, WIRE};
use crate::adapter::{Errno, Kind, Transport, DONTWAIT};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "dealer_round_robin",
            about: "DEALER connected to three REPs sends to them in turn",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: dealer_round_robin,
        },
        Scenario {
            name: "dealer_fair_queue",
            about: "DEALER fair-queues two saturating DEALER peers",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: dealer_fair_queue,
        },
        Scenario {
            name: "dealer_no_peer_eagain",
            about: "DEALER without peers: DONTWAIT send is EAGAIN",
            transports: ALL,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: dealer_no_peer_eagain,
        },
        Scenario {
            name: "router_identities",
            about: "ROUTER sees DEALERs' identities and routes replies to the right one",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_identities,
        },
        Scenario {
            name: "router_generated_id",
            about: "a peer without identity gets a 5-byte routing id starting with 0",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_generated_id,
        },
        Scenario {
            name: "router_unroutable_dropped",
            about: "ROUTER silently drops a message to an unknown identity",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_unroutable_dropped,
        },
        Scenario {
            name: "router_mandatory",
            about: "ROUTER_MANDATORY: EHOSTUNREACH for an unknown identity",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_mandatory,
        },
        Scenario {
            name: "router_mandatory_hwm",
            about: "ROUTER_MANDATORY: a full peer pipe gives EAGAIN, not a drop",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_mandatory_hwm,
        },
        Scenario {
            name: "router_duplicate_identity",
            about: "a second peer with a taken identity does not take it over",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_duplicate_identity,
        },
        Scenario {
            name: "router_handover",
            about: "ROUTER_HANDOVER: a second peer with the same identity takes it over",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_handover,
        },
        Scenario {
            name: "router_router",
            about: "ROUTER connects to ROUTER by the binder's identity",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: router_router,
        },
    ]
}

fn dealer_round_robin(p: &Pair, t: Transport) -> Outcome {
    let reps = [p.a(Kind::Rep)?, p.a(Kind::Rep)?, p.a(Kind::Rep)?];
    let dealer = p.b(Kind::Dealer)?;
    for rep in &reps {
        link(t, rep, &dealer)?;
    }
    for i in 0..9 {
        dealer.send_parts(&[&b""[..], format!("{i}").as_bytes()], 0)?;
    }
    let mut firsts = Vec::new();
    for (k, rep) in reps.iter().enumerate() {
        let mut got = Vec::new();
        for _ in 0..3 {
            let m = recv_text(rep)?;
            rep.send(m.as_bytes(), 0)?;
            got.push(m.parse::<u32>().map_err(|_| format!("bad message {m:?}"))?);
        }
        ensure!(
            got[1] == got[0] + 3 && got[2] == got[1] + 3,
            "REP {k} got {got:?}: not every third request"
        );
        firsts.push(got[0]);
    }
    firsts.sort();
    ensure_eq!(firsts, vec![0, 1, 2], "first request at each REP");
    let mut replies = Vec::new();
    for _ in 0..9 {
        let m = dealer.recv_parts(0)?;
        ensure!(
            m.len() == 2 && m[0].is_empty(),
            "reply at DEALER: {}",
            show(&m)
        );
        replies.push(String::from_utf8_lossy(&m[1]).into_owned());
    }
    replies.sort();
    ensure_eq!(replies.len(), 9, "replies");
    Ok(())
}

fn dealer_fair_queue(p: &Pair, t: Transport) -> Outcome {
    super::pushpull::fair_queue(
        p.a(Kind::Dealer)?,
        vec![p.b(Kind::Dealer)?, p.b(Kind::Dealer)?],
        t,
    )
}

fn dealer_no_peer_eagain(p: &Pair, _t: Transport) -> Outcome {
    let dealer = p.a(Kind::Dealer)?;
    match dealer.send(b"x", DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => Ok(()),
        other => Err(format!(
            "DONTWAIT send without peers: {other:?}, expected EAGAIN"
        )),
    }
}

fn router_identities(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let endpoint = router.bind_any(t)?;
    let names = ["alice", "bob", "carol"];
    let mut dealers = Vec::new();
    for name in names {
        let d = p.b(Kind::Dealer)?;
        d.set_identity(name.as_bytes())?;
        d.connect(&endpoint)?;
        d.send_parts(&[format!("hi from {name}").as_bytes(), b"x"], 0)?;
        dealers.push(d);
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        let m = router.recv_parts(0)?;
        ensure!(m.len() == 3, "at ROUTER: {}", show(&m));
        let id = String::from_utf8_lossy(&m[0]).into_owned();
        ensure_eq!(m[1], format!("hi from {id}").into_bytes(), "body from {id}");
        seen.push(id);
    }
    seen.sort();
    ensure_eq!(seen, names.to_vec(), "identities seen");
    for name in names.iter().rev() {
        router.send_parts(&[name.as_bytes(), format!("to {name}").as_bytes()], 0)?;
    }
    for (d, name) in dealers.iter().zip(names) {
        ensure_eq!(recv_text(d)?, format!("to {name}"), "reply at {name}");
    }
    Ok(())
}

fn router_generated_id(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let dealer = p.b(Kind::Dealer)?;
    link(t, &router, &dealer)?;
    dealer.send(b"anon", 0)?;
    let m = router.recv_parts(0)?;
    ensure!(m.len() == 2 && m[1] == b"anon", "at ROUTER: {}", show(&m));
    ensure!(
        m[0].len() == 5 && m[0][0] == 0,
        "generated routing id {:?}: expected 5 bytes starting with 0",
        m[0]
    );
    router.send_parts(&[&m[0][..], b"back"], 0)?;
    ensure_eq!(recv_text(&dealer)?, "back", "reply by generated id");
    Ok(())
}

fn router_unroutable_dropped(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let dealer = p.b(Kind::Dealer)?;
    dealer.set_identity(b"known")?;
    link(t, &router, &dealer)?;
    dealer.send(b"hello", 0)?;
    router.recv_parts(0)?;
    router.send_parts(&[&b"nobody"[..], b"lost"], 0)?;
    router.send_parts(&[&b"known"[..], b"kept"], 0)?;
    ensure_eq!(recv_text(&dealer)?, "kept", "message to the known peer");
    super::expect_silence(&dealer, 50, "after the routed message")
}

fn router_mandatory(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    router.set_router_mandatory(true)?;
    let dealer = p.b(Kind::Dealer)?;
    dealer.set_identity(b"known")?;
    link(t, &router, &dealer)?;
    match router.send(b"nobody", crate::adapter::SNDMORE) {
        Err(f) if f.is(Errno::EHOSTUNREACH) => {}
        other => {
            return Err(format!(
                "send to unknown id: {other:?}, expected EHOSTUNREACH"
            ))
        }
    }
    dealer.send(b"hello", 0)?;
    router.recv_parts(0)?;
    router.send_parts(&[&b"known"[..], b"routed"], 0)?;
    ensure_eq!(recv_text(&dealer)?, "routed", "message to the known peer");
    Ok(())
}

fn router_mandatory_hwm(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    router.set_router_mandatory(true)?;
    router.set_sndhwm(10)?;
    let dealer = p.b(Kind::Dealer)?;
    dealer.set_rcvhwm(10)?;
    dealer.set_identity(b"slow")?;
    link(t, &router, &dealer)?;
    dealer.send(b"hello", 0)?;
    router.recv_parts(0)?;
    let body = vec![7u8; 1024];
    let mut sent = 0usize;
    let end = deadline(5000);
    loop {
        match router.send_parts(&[&b"slow"[..], &body], DONTWAIT) {
            Ok(()) => sent += 1,
            Err(f) if f.is(Errno::EAGAIN) => break,
            Err(f) => return Err(format!("after {sent} messages: {f}")),
        }
        ensure!(
            std::time::Instant::now() < end,
            "no EAGAIN after {sent} messages"
        );
    }
    ensure!(sent >= 10, "EAGAIN after only {sent} messages (SNDHWM 10)");
    for i in 0..sent {
        let m = dealer
            .recv_parts(0)
            .map_err(|f| format!("message {i} of {sent}: {f}"))?;
        ensure_eq!(m, vec![body.clone()], "message {i}");
    }
    Ok(())
}

fn router_duplicate_identity(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let endpoint = router.bind_any(t)?;
    let first = p.b(Kind::Dealer)?;
    first.set_identity(b"same")?;
    first.connect(&endpoint)?;
    first.send(b"one", 0)?;
    ensure_eq!(
        router.recv_parts(0)?,
        vec![b"same".to_vec(), b"one".to_vec()],
        "from the first"
    );
    let second = p.b(Kind::Dealer)?;
    second.set_identity(b"same")?;
    second.connect(&endpoint)?;
    // The second connection is refused or ignored; the identity stays
    // with the first peer.
    second.send(b"two", 0)?;
    first.send(b"three", 0)?;
    let m = router.recv_parts(0)?;
    ensure_eq!(
        m,
        vec![b"same".to_vec(), b"three".to_vec()],
        "next at ROUTER"
    );
    router.send_parts(&[&b"same"[..], b"reply"], 0)?;
    ensure_eq!(recv_text(&first)?, "reply", "reply at the first peer");
    super::expect_silence(&second, 50, "second peer")
}

fn router_handover(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    router.set_router_handover(true)?;
    let endpoint = router.bind_any(t)?;
    let first = p.b(Kind::Dealer)?;
    first.set_identity(b"same")?;
    first.connect(&endpoint)?;
    first.send(b"one", 0)?;
    ensure_eq!(
        router.recv_parts(0)?,
        vec![b"same".to_vec(), b"one".to_vec()],
        "from the first"
    );
    let second = p.b(Kind::Dealer)?;
    second.set_identity(b"same")?;
    second.connect(&endpoint)?;
    second.send(b"two", 0)?;
    ensure_eq!(
        router.recv_parts(0)?,
        vec![b"same".to_vec(), b"two".to_vec()],
        "from the second"
    );
    router.send_parts(&[&b"same"[..], b"reply"], 0)?;
    ensure_eq!(recv_text(&second)?, "reply", "reply at the second peer");
    super::expect_silence(&first, 50, "first peer")
}

fn router_router(p: &Pair, t: Transport) -> Outcome {
    let server = p.a(Kind::Router)?;
    server.set_identity(b"server")?;
    let client = p.b(Kind::Router)?;
    client.set_identity(b"client")?;
    client.set_router_mandatory(true)?;
    link(t, &server, &client)?;
    // The client knows the server by its identity once the handshake is
    // done; until then the send is EHOSTUNREACH.
    let end = deadline(5000);
    loop {
        match client.send_parts(&[&b"server"[..], b"ping"], 0) {
            Ok(()) => break,
            Err(f) if f.is(Errno::EHOSTUNREACH) && std::time::Instant::now() < end => {
                client.poll_in(10)?;
            }
            Err(f) => return Err(f.into()),
        }
    }
    ensure_eq!(
        server.recv_parts(0)?,
        vec![b"client".to_vec(), b"ping".to_vec()],
        "at server"
    );
    server.send_parts(&[&b"client"[..], b"pong"], 0)?;
    ensure_eq!(
        client.recv_parts(0)?,
        vec![b"server".to_vec(), b"pong".to_vec()],
        "at client"
    );
    Ok(())
}
