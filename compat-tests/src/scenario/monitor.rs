//! Socket monitor events (libzmq's test_monitor).

use super::{recv_text, Fabric, Outcome, Pair, Scenario, Sides, WIRE};
use crate::adapter::{event, Kind, Transport};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "monitor_connecter_events",
            about: "connecting side: CONNECTED then HANDSHAKE_SUCCEEDED, with the endpoint",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: monitor_connecter_events,
        },
        Scenario {
            name: "monitor_binder_events",
            about: "binding side: LISTENING, ACCEPTED, HANDSHAKE_SUCCEEDED, with the endpoint",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: monitor_binder_events,
        },
        Scenario {
            name: "monitor_disconnected_and_closed",
            about: "peer closes: DISCONNECTED; unbind: CLOSED with the endpoint",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: monitor_disconnected_and_closed,
        },
        Scenario {
            name: "monitor_peer_gone_connecter",
            about: "binder closes: the connecter sees DISCONNECTED then CONNECT_RETRIED",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: monitor_peer_gone_connecter,
        },
    ]
}

fn monitor_connecter_events(p: &Pair, t: Transport) -> Outcome {
    let rep = p.a(Kind::Rep)?;
    let endpoint = rep.bind_any(t)?;
    let req = p.b(Kind::Req)?;
    let mon = req.monitor(event::ALL)?;
    req.connect(&endpoint)?;
    let (connected, _) = mon.expect(event::CONNECTED, 3000)?;
    ensure_eq!(connected.address, endpoint, "CONNECTED address");
    let (hs, skipped) = mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    ensure_eq!(hs.address, endpoint, "HANDSHAKE_SUCCEEDED address");
    ensure!(
        skipped.iter().all(|e| e.event == event::CONNECT_DELAYED),
        "between CONNECTED and HANDSHAKE_SUCCEEDED: {skipped:?}"
    );
    req.send(b"x", 0)?;
    ensure_eq!(recv_text(&rep)?, "x", "request");
    Ok(())
}

fn monitor_binder_events(p: &Pair, t: Transport) -> Outcome {
    let rep = p.a(Kind::Rep)?;
    let mon = rep.monitor(event::ALL)?;
    let endpoint = rep.bind_any(t)?;
    let (listening, _) = mon.expect(event::LISTENING, 3000)?;
    ensure_eq!(listening.address, endpoint, "LISTENING address");
    let req = p.b(Kind::Req)?;
    req.connect(&endpoint)?;
    let (accepted, _) = mon.expect(event::ACCEPTED, 3000)?;
    ensure_eq!(accepted.address, endpoint, "ACCEPTED address");
    let (hs, skipped) = mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    ensure_eq!(hs.address, endpoint, "HANDSHAKE_SUCCEEDED address");
    ensure!(
        skipped.is_empty(),
        "between ACCEPTED and HANDSHAKE_SUCCEEDED: {skipped:?}"
    );
    Ok(())
}

fn monitor_disconnected_and_closed(p: &Pair, t: Transport) -> Outcome {
    let rep = p.a(Kind::Rep)?;
    let mon = rep.monitor(event::ALL)?;
    let endpoint = rep.bind_any(t)?;
    let req = p.b(Kind::Req)?;
    req.connect(&endpoint)?;
    mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    drop(req);
    let (gone, _) = mon.expect(event::DISCONNECTED, 3000)?;
    ensure_eq!(gone.address, endpoint, "DISCONNECTED address");
    rep.unbind(&endpoint)?;
    let (closed, skipped) = mon.expect(event::CLOSED, 3000)?;
    ensure_eq!(closed.address, endpoint, "CLOSED address");
    ensure!(skipped.is_empty(), "before CLOSED: {skipped:?}");
    Ok(())
}

fn monitor_peer_gone_connecter(p: &Pair, t: Transport) -> Outcome {
    let rep = p.a(Kind::Rep)?;
    let endpoint = rep.bind_any(t)?;
    let req = p.b(Kind::Req)?;
    req.set_reconnect_ivl(50)?;
    let mon = req.monitor(event::ALL)?;
    req.connect(&endpoint)?;
    mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    drop(rep);
    let (gone, _) = mon.expect(event::DISCONNECTED, 3000)?;
    ensure_eq!(gone.address, endpoint, "DISCONNECTED address");
    let (retry, _) = mon.expect(event::CONNECT_RETRIED, 3000)?;
    ensure_eq!(retry.address, endpoint, "CONNECT_RETRIED address");
    // The interval plus a random jitter below the interval.
    ensure!(
        (50..100).contains(&retry.value),
        "CONNECT_RETRIED value {}: expected the interval 50 ms plus jitter below 50",
        retry.value
    );
    Ok(())
}
