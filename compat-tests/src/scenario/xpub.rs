//! XPUB and XSUB (libzmq's test_xpub_nodrop, test_xpub_welcome_msg,
//! test_xpub_verbose, test_xsub_*).

use super::{link, recv_text, sync_subscriber, Fabric, Outcome, Pair, Scenario, Sides, ALL};
use crate::adapter::{Kind, Sock, Transport};
use crate::ensure_eq;

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "xpub_sees_subscriptions",
            about: "XPUB receives [1,topic] on subscribe and [0,topic] on unsubscribe",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_sees_subscriptions,
        },
        Scenario {
            name: "xpub_filters_duplicates",
            about: "two SUBs on one topic: XPUB sees it once; unsubscribe when the last leaves",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_filters_duplicates,
        },
        Scenario {
            name: "xpub_verbose",
            about: "XPUB_VERBOSE: every subscription is passed on, duplicates too",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_verbose,
        },
        Scenario {
            name: "xsub_subscribe_frames",
            about: "XSUB sends [1,topic]/[0,topic] frames; PUB filters by them",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xsub_subscribe_frames,
        },
        Scenario {
            name: "xpub_xsub",
            about: "XSUB to XPUB: subscription frames up, messages down",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_xsub,
        },
        Scenario {
            name: "xpub_welcome_msg",
            about: "XPUB_WELCOME_MSG: each new subscriber gets the welcome message",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_welcome_msg,
        },
        Scenario {
            name: "xpub_unsubscribe_on_disconnect",
            about: "when a SUB goes away, XPUB receives [0,topic] for its subscriptions",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: xpub_unsubscribe_on_disconnect,
        },
    ]
}

fn sub_msg(on: bool, topic: &[u8]) -> Vec<u8> {
    let mut m = vec![u8::from(on)];
    m.extend_from_slice(topic);
    m
}

fn expect_sub(xpub: &Sock, on: bool, topic: &[u8], what: &str) -> Outcome {
    let m = xpub.recv_parts(0).map_err(|f| format!("{what}: {f}"))?;
    ensure_eq!(m, vec![sub_msg(on, topic)], "{what}");
    Ok(())
}

fn xpub_sees_subscriptions(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    let sub = p.b(Kind::Sub)?;
    link(t, &xpub, &sub)?;
    sub.set_subscribe(b"abc")?;
    expect_sub(&xpub, true, b"abc", "subscription at XPUB")?;
    sub.set_subscribe(b"")?;
    expect_sub(&xpub, true, b"", "empty subscription at XPUB")?;
    sub.set_unsubscribe(b"abc")?;
    expect_sub(&xpub, false, b"abc", "unsubscription at XPUB")?;
    Ok(())
}

fn xpub_filters_duplicates(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    let endpoint = xpub.bind_any(t)?;
    let s1 = p.b(Kind::Sub)?;
    let s2 = p.b(Kind::Sub)?;
    s1.connect(&endpoint)?;
    s2.connect(&endpoint)?;
    s1.set_subscribe(b"t")?;
    expect_sub(&xpub, true, b"t", "first subscription")?;
    s2.set_subscribe(b"t")?;
    s2.set_subscribe(b"u")?;
    expect_sub(&xpub, true, b"u", "after the duplicate")?;
    s1.set_unsubscribe(b"t")?;
    s2.set_unsubscribe(b"u")?;
    expect_sub(&xpub, false, b"u", "unsubscription while t is still wanted")?;
    s2.set_unsubscribe(b"t")?;
    expect_sub(&xpub, false, b"t", "last unsubscription")?;
    Ok(())
}

fn xpub_verbose(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    xpub.set_xpub_verbose(true)?;
    let endpoint = xpub.bind_any(t)?;
    let s1 = p.b(Kind::Sub)?;
    let s2 = p.b(Kind::Sub)?;
    s1.connect(&endpoint)?;
    s2.connect(&endpoint)?;
    s1.set_subscribe(b"t")?;
    expect_sub(&xpub, true, b"t", "first subscription")?;
    s2.set_subscribe(b"t")?;
    expect_sub(&xpub, true, b"t", "duplicate subscription")?;
    s1.set_subscribe(b"t")?;
    expect_sub(&xpub, true, b"t", "same peer again")?;
    Ok(())
}

fn xsub_subscribe_frames(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let xsub = p.b(Kind::XSub)?;
    link(t, &publisher, &xsub)?;
    xsub.send(&sub_msg(true, b"top"), 0)?;
    sync_subscriber(&publisher, &xsub)?;
    for m in ["top1", "other", "top2"] {
        publisher.send(m.as_bytes(), 0)?;
    }
    ensure_eq!(recv_text(&xsub)?, "top1", "first");
    ensure_eq!(recv_text(&xsub)?, "top2", "second");
    xsub.send(&sub_msg(false, b"top"), 0)?;
    xsub.send(&sub_msg(false, b"SYNC"), 0)?;
    xsub.send(&sub_msg(true, b"RESYNC"), 0)?;
    let end = super::deadline(5000);
    loop {
        publisher.send(b"RESYNC", 0)?;
        if xsub.poll_in(20)? {
            break;
        }
        crate::ensure!(std::time::Instant::now() < end, "RESYNC never arrived");
    }
    publisher.send(b"top3", 0)?;
    publisher.send(b"RESYNC-END", 0)?;
    loop {
        let m = recv_text(&xsub)?;
        if m == "RESYNC-END" {
            return Ok(());
        }
        ensure_eq!(m, "RESYNC", "after unsubscribing from top");
    }
}

fn xpub_xsub(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    let xsub = p.b(Kind::XSub)?;
    link(t, &xpub, &xsub)?;
    xsub.send(&sub_msg(true, b"news"), 0)?;
    expect_sub(&xpub, true, b"news", "subscription at XPUB")?;
    xpub.send(b"weather", 0)?;
    xpub.send_parts(&[&b"news"[..], b"today"], 0)?;
    ensure_eq!(
        xsub.recv_parts(0)?,
        vec![b"news".to_vec(), b"today".to_vec()],
        "message at XSUB"
    );
    xsub.send(&sub_msg(false, b"news"), 0)?;
    expect_sub(&xpub, false, b"news", "unsubscription at XPUB")?;
    Ok(())
}

fn xpub_welcome_msg(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    xpub.set_xpub_welcome_msg(Some("W-hello"))?;
    let sub = p.b(Kind::Sub)?;
    sub.set_subscribe(b"W")?;
    link(t, &xpub, &sub)?;
    expect_sub(&xpub, true, b"W", "subscription at XPUB")?;
    ensure_eq!(recv_text(&sub)?, "W-hello", "welcome message at SUB");
    Ok(())
}

fn xpub_unsubscribe_on_disconnect(p: &Pair, t: Transport) -> Outcome {
    let xpub = p.a(Kind::XPub)?;
    let sub = p.b(Kind::Sub)?;
    link(t, &xpub, &sub)?;
    sub.set_subscribe(b"gone")?;
    expect_sub(&xpub, true, b"gone", "subscription at XPUB")?;
    drop(sub);
    // The XPUB notices the closed connection when it next looks.
    let m = xpub
        .recv_parts(0)
        .map_err(|f| format!("unsubscription after close: {f}"))?;
    ensure_eq!(m, vec![sub_msg(false, b"gone")], "after the SUB closed");
    Ok(())
}
