//! Connections coming and going (libzmq's test_reconnect_ivl,
//! test_immediate, test_conflate, test_linger, test_term_endpoint,
//! test_ctx_destroy) and peer restarts.

use std::thread;
use std::time::{Duration, Instant};

use super::{
    deadline, link, recv_text, sync_subscriber, Fabric, Outcome, Pair, Scenario, Sides, ALL, WIRE,
};
use crate::adapter::{ipc_endpoint, Ctx, Errno, Fail, Kind, Sock, Transport, DONTWAIT};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "restart_pull",
            about: "PULL is closed and a new one binds the same endpoint; PUSH's traffic resumes",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: restart_pull,
        },
        Scenario {
            name: "restart_pub",
            about: "PUB is closed and a new one binds the same endpoint; SUB resubscribes",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: restart_pub,
        },
        Scenario {
            name: "restart_router",
            about: "ROUTER restarts; the DEALER reconnects and is routable by identity again",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: restart_router,
        },
        Scenario {
            name: "reconnect_ivl_disabled",
            about: "RECONNECT_IVL -1: after the peer restarts, no reconnect happens",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: reconnect_ivl_disabled,
        },
        Scenario {
            name: "immediate",
            about: "IMMEDIATE: no queueing to unfinished connections; messages go to the live peer",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: immediate,
        },
        Scenario {
            name: "conflate",
            about: "CONFLATE on PULL: only the newest message is kept",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: conflate,
        },
        Scenario {
            name: "linger_zero_close_is_prompt",
            about: "LINGER 0 with undeliverable messages: close and term return at once",
            transports: WIRE,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: linger_zero_close_is_prompt,
        },
        Scenario {
            name: "linger_flushes",
            about: "LINGER > 0: messages sent just before close and term are all delivered",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: linger_flushes,
        },
        Scenario {
            name: "linger_timeout_bounds_term",
            about: "LINGER 300 with an absent peer: term waits about 300 ms, not forever",
            transports: WIRE,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: linger_timeout_bounds_term,
        },
        Scenario {
            name: "unbind_stops_traffic",
            about: "PUSH unbinds: its accepted connections go too, sends would block",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: unbind_stops_traffic,
        },
        Scenario {
            name: "inproc_unbind_keeps_connections",
            about: "inproc unbind: the name goes, connections made through it stay",
            transports: super::INPROC,
            sides: Sides::Two,
            fabric: Fabric::Excluded(super::FABRIC_NOT_INPROC),
            run: inproc_unbind_keeps_connections,
        },
        Scenario {
            name: "disconnect_stops_traffic",
            about: "PUSH disconnects: the pipe goes, DONTWAIT sends are EAGAIN",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: disconnect_stops_traffic,
        },
        Scenario {
            name: "ctx_term_unblocks_recv",
            about: "terminating the context makes a blocked recv in another thread fail with ETERM",
            transports: ALL,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: ctx_term_unblocks_recv,
        },
    ]
}

/// An endpoint on `t` nobody listens on (for tcp and the fabric: a port
/// free a moment ago).
pub(crate) fn absent_endpoint(t: Transport) -> Result<String, String> {
    match t {
        Transport::Ipc => Ok(ipc_endpoint()),
        Transport::Inproc => Ok(format!(
            "inproc://compat-absent-{}",
            crate::adapter::unique()
        )),
        Transport::Tcp | Transport::OfiTcp | Transport::OfiShm => {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = probe.local_addr().map_err(|e| e.to_string())?.port();
            Ok(t.local(&port.to_string()))
        }
    }
}

/// Binds `s` to `endpoint`, retrying while the old socket's port is still
/// in use.
pub(crate) fn rebind(s: &Sock, endpoint: &str) -> Outcome {
    let end = deadline(5000);
    loop {
        match s.bind(endpoint) {
            Ok(()) => return Ok(()),
            Err(f) if f.is(Errno::EADDRINUSE) && Instant::now() < end => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(f) => return Err(f.into()),
        }
    }
}

/// For an ipc endpoint whose socket file is missing: says so (a reason
/// for a connecting peer not to get through).
pub(crate) fn ipc_file_note(endpoint: &str) -> String {
    match endpoint.strip_prefix("ipc://") {
        Some(path) if !std::path::Path::new(path).exists() => {
            format!(" (the ipc socket file {path} no longer exists)")
        }
        _ => String::new(),
    }
}

/// Sends numbered messages until one arrives at `receiver` (bound at
/// `endpoint`).
fn send_until_received(sender: &Sock, receiver: &Sock, endpoint: &str, what: &str) -> Outcome {
    let end = deadline(5000);
    let mut i = 0;
    loop {
        match sender.send(format!("probe {i}").as_bytes(), DONTWAIT) {
            Ok(())
            | Err(Fail {
                errno: Errno::EAGAIN,
                ..
            }) => {}
            Err(f) => return Err(f.into()),
        }
        i += 1;
        if let Some(m) = receiver.recv_within(20)? {
            ensure!(
                m[0].starts_with(b"probe"),
                "{what}: unexpected {}",
                super::show(&m)
            );
            return Ok(());
        }
        ensure!(
            Instant::now() < end,
            "{what}: nothing arrived within 5 s{}",
            ipc_file_note(endpoint)
        );
    }
}

fn restart_pull(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let push = p.b(Kind::Push)?;
    push.set_reconnect_ivl(20)?;
    let endpoint = link(t, &pull, &push)?;
    push.send(b"before", 0)?;
    ensure_eq!(recv_text(&pull)?, "before", "before the restart");
    drop(pull);
    let pull = p.a(Kind::Pull)?;
    rebind(&pull, &endpoint)?;
    send_until_received(&push, &pull, &endpoint, "after the restart")?;
    push.send(b"last", 0)?;
    let end = deadline(3000);
    loop {
        let m = recv_text(&pull)?;
        if m == "last" {
            return Ok(());
        }
        ensure!(
            m.starts_with("probe") && Instant::now() < end,
            "after the restart: {m:?}"
        );
    }
}

fn restart_pub(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let sub = p.b(Kind::Sub)?;
    sub.set_reconnect_ivl(20)?;
    sub.set_subscribe(b"t")?;
    let endpoint = link(t, &publisher, &sub)?;
    sync_subscriber(&publisher, &sub)?;
    drop(publisher);
    let publisher = p.a(Kind::Pub)?;
    rebind(&publisher, &endpoint)?;
    let end = deadline(5000);
    loop {
        publisher.send(b"t-after", 0)?;
        publisher.send(b"x-after", 0)?;
        if let Some(m) = sub.recv_within(20)? {
            let text = String::from_utf8_lossy(&m[0]).into_owned();
            ensure!(
                text == "t-after" || text.starts_with("SYNC"),
                "after restart: {text:?}"
            );
            if text == "t-after" {
                return Ok(());
            }
        }
        ensure!(
            Instant::now() < end,
            "no message after the restart within 5 s{}",
            ipc_file_note(&endpoint)
        );
    }
}

fn restart_router(p: &Pair, t: Transport) -> Outcome {
    let router = p.a(Kind::Router)?;
    let dealer = p.b(Kind::Dealer)?;
    dealer.set_identity(b"worker")?;
    dealer.set_reconnect_ivl(20)?;
    let endpoint = link(t, &router, &dealer)?;
    dealer.send(b"up", 0)?;
    ensure_eq!(
        router.recv_parts(0)?,
        vec![b"worker".to_vec(), b"up".to_vec()],
        "before"
    );
    drop(router);
    let router = p.a(Kind::Router)?;
    router.set_router_mandatory(true)?;
    rebind(&router, &endpoint)?;
    // The identity is known again once the DEALER has reconnected.
    let end = deadline(5000);
    loop {
        match router.send_parts(&[&b"worker"[..], b"again"], 0) {
            Ok(()) => break,
            Err(f) if f.is(Errno::EHOSTUNREACH) && Instant::now() < end => {
                router.poll_in(20)?;
            }
            Err(f) => return Err(format!("{f}{}", ipc_file_note(&endpoint))),
        }
    }
    ensure_eq!(recv_text(&dealer)?, "again", "after the restart");
    Ok(())
}

fn reconnect_ivl_disabled(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let push = p.b(Kind::Push)?;
    push.set_reconnect_ivl(-1)?;
    let endpoint = link(t, &pull, &push)?;
    push.send(b"before", 0)?;
    ensure_eq!(recv_text(&pull)?, "before", "before the restart");
    drop(pull);
    let pull = p.a(Kind::Pull)?;
    rebind(&pull, &endpoint)?;
    for i in 0..5 {
        match push.send(format!("after {i}").as_bytes(), DONTWAIT) {
            Ok(())
            | Err(Fail {
                errno: Errno::EAGAIN,
                ..
            }) => {}
            Err(f) => return Err(f.into()),
        }
    }
    super::expect_silence(&pull, 500, "no reconnect with RECONNECT_IVL -1")
}

fn immediate(p: &Pair, t: Transport) -> Outcome {
    let push = p.b(Kind::Push)?;
    push.set_immediate(true)?;
    push.connect(&absent_endpoint(t)?)?;
    match push.send(b"nowhere", DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => {
            return Err(format!(
                "IMMEDIATE, no live peer: {other:?}, expected EAGAIN"
            ))
        }
    }
    let pull = p.a(Kind::Pull)?;
    let endpoint = pull.bind_any(t)?;
    push.connect(&endpoint)?;
    // The blocking send waits for the handshake.
    for i in 0..10 {
        push.send(format!("m{i}").as_bytes(), 0)?;
    }
    for i in 0..10 {
        ensure_eq!(
            recv_text(&pull)?,
            format!("m{i}"),
            "message {i} at the live peer"
        );
    }
    Ok(())
}

fn conflate(p: &Pair, t: Transport) -> Outcome {
    const N: u32 = 500;
    let pull = p.a(Kind::Pull)?;
    pull.set_conflate(true)?;
    let push = p.b(Kind::Push)?;
    // The PULL must not read while messages trickle in (it would get them
    // one by one, rightly). inproc sends land in its queue at once; over
    // tcp and ipc the PUSH queues all of them before the PULL exists, they
    // go out in one burst when it binds, and the PULL's first read takes
    // them in one chunk.
    let endpoint = absent_endpoint(t)?;
    push.set_reconnect_ivl(20)?;
    if t == Transport::Inproc {
        pull.bind(&endpoint)?;
    }
    push.connect(&endpoint)?;
    for i in 1..=N {
        push.send(format!("{i}").as_bytes(), 0)?;
    }
    if t != Transport::Inproc {
        rebind(&pull, &endpoint)?;
    }
    // The PUSH stays open until the last message is read: libzmq drops a
    // conflated message whose sender has gone.
    let mut received = 0;
    let mut last = 0u32;
    while last != N {
        let m = recv_text(&pull)?;
        let i: u32 = m.parse().map_err(|_| format!("bad message {m:?}"))?;
        ensure!(i > last, "{i} after {last}");
        last = i;
        received += 1;
    }
    drop(push);
    ensure!(
        received < N / 2,
        "received {received} of {N} messages: not conflated"
    );
    match pull.recv(DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => Ok(()),
        other => Err(format!(
            "after the newest message: {other:?}, expected EAGAIN"
        )),
    }
}

fn linger_zero_close_is_prompt(p: &Pair, t: Transport) -> Outcome {
    let ctx = Ctx::new(p.a);
    let push = ctx.socket(Kind::Push)?;
    push.connect(&absent_endpoint(t)?)?;
    for _ in 0..5 {
        push.send(b"undeliverable", 0)?;
    }
    let start = Instant::now();
    drop(push);
    ctx.destroy()?;
    let took = start.elapsed().as_millis();
    // Instant in both libraries; 2 s is a generous bound for a loaded
    // machine, and a close that lingered would wait for ever.
    ensure!(took < 2000, "close and term with LINGER 0 took {took} ms");
    Ok(())
}

fn linger_flushes(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let endpoint = pull.bind_any(t)?;
    let ctx = Ctx::new(p.b);
    let push = ctx.socket(Kind::Push)?;
    push.set_linger(5000)?;
    push.connect(&endpoint)?;
    let big = vec![9u8; 64 * 1024];
    for i in 0..200u32 {
        push.send_parts(&[&i.to_le_bytes()[..], &big], 0)?;
    }
    drop(push);
    let term = thread::spawn(move || ctx.destroy());
    for i in 0..200u32 {
        let m = pull
            .recv_parts(0)
            .map_err(|f| format!("message {i} of 200: {f}"))?;
        ensure!(
            m.len() == 2 && m[0] == i.to_le_bytes() && m[1] == big,
            "message {i}: wrong"
        );
    }
    term.join()
        .map_err(|_| "term thread panicked".to_string())??;
    Ok(())
}

fn linger_timeout_bounds_term(p: &Pair, t: Transport) -> Outcome {
    let ctx = Ctx::new(p.a);
    let push = ctx.socket(Kind::Push)?;
    push.set_linger(300)?;
    push.connect(&absent_endpoint(t)?)?;
    push.send(b"undeliverable", 0)?;
    let start = Instant::now();
    drop(push);
    ctx.destroy()?;
    let took = start.elapsed().as_millis();
    ensure!(
        (200..3000).contains(&took),
        "term with LINGER 300 took {took} ms"
    );
    Ok(())
}

/// Waits until `push` has no peer to send to (POLLOUT clear).
fn await_no_pollout(push: &Sock, what: &str) -> Outcome {
    let end = deadline(3000);
    loop {
        let (_, out) = push.events()?;
        if !out {
            return Ok(());
        }
        ensure!(Instant::now() < end, "{what}: still POLLOUT after 3 s");
        thread::sleep(Duration::from_millis(10));
    }
}

fn unbind_stops_traffic(p: &Pair, t: Transport) -> Outcome {
    let push = p.a(Kind::Push)?;
    let pull = p.b(Kind::Pull)?;
    let endpoint = link(t, &push, &pull)?;
    push.send(b"before", 0)?;
    ensure_eq!(recv_text(&pull)?, "before", "before unbind");
    push.unbind(&endpoint)?;
    await_no_pollout(&push, "after unbind")?;
    match push.send(b"after", DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => return Err(format!("send after unbind: {other:?}, expected EAGAIN")),
    }
    super::expect_silence(&pull, 100, "after unbind")
}

fn inproc_unbind_keeps_connections(p: &Pair, t: Transport) -> Outcome {
    let push = p.a(Kind::Push)?;
    let pull = p.b(Kind::Pull)?;
    let endpoint = link(t, &push, &pull)?;
    push.send(b"before", 0)?;
    ensure_eq!(recv_text(&pull)?, "before", "before unbind");
    push.unbind(&endpoint)?;
    push.send(b"after", 0)?;
    ensure_eq!(recv_text(&pull)?, "after", "after unbind");
    // The name is free: a new connect finds nobody.
    let late = p.b(Kind::Pull)?;
    late.connect(&endpoint)?;
    let again = p.a(Kind::Push)?;
    again.bind(&endpoint)?;
    again.send(b"rebound", 0)?;
    ensure_eq!(recv_text(&late)?, "rebound", "through the name bound again");
    Ok(())
}

fn disconnect_stops_traffic(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let push = p.b(Kind::Push)?;
    let endpoint = link(t, &pull, &push)?;
    push.send(b"before", 0)?;
    ensure_eq!(recv_text(&pull)?, "before", "before disconnect");
    push.disconnect(&endpoint)?;
    await_no_pollout(&push, "after disconnect")?;
    match push.send(b"after", DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => return Err(format!("send after disconnect: {other:?}, expected EAGAIN")),
    }
    super::expect_silence(&pull, 100, "after disconnect")
}

fn ctx_term_unblocks_recv(p: &Pair, t: Transport) -> Outcome {
    let ctx = Ctx::new(p.a);
    let pull = ctx.socket(Kind::Pull)?;
    pull.set_rcvtimeo(-1)?;
    pull.bind_any(t)?;
    let waiter = thread::spawn(move || -> Outcome {
        match pull.recv(0) {
            Err(f) if f.is(Errno::ETERM) => Ok(()),
            other => Err(format!("blocked recv at term: {other:?}, expected ETERM")),
        }
    });
    let start = Instant::now();
    ctx.destroy()?;
    let took = start.elapsed().as_millis();
    waiter.join().map_err(|_| "waiter panicked".to_string())??;
    ensure!(took < 3000, "term took {took} ms");
    Ok(())
}
