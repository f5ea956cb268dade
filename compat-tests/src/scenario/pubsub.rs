//! PUB and SUB (libzmq's test_pubsub, test_hwm_pubsub, test_sub_forward).

use std::time::Instant;

use super::{link, recv_text, sync_subscriber, Fabric, Outcome, Pair, Scenario, Sides, ALL};
use crate::adapter::{Kind, Transport, DONTWAIT};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "pubsub_prefix_filter",
            about: "SUB gets exactly the messages whose first frame starts with a subscription",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pubsub_prefix_filter,
        },
        Scenario {
            name: "pubsub_multiple_subscribers",
            about: "three SUBs with different subscriptions each get their own share",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pubsub_multiple_subscribers,
        },
        Scenario {
            name: "pubsub_unsubscribe",
            about: "after UNSUBSCRIBE the topic no longer arrives; others still do",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pubsub_unsubscribe,
        },
        Scenario {
            name: "pubsub_multipart",
            about: "filtering looks at the first frame; multipart messages arrive whole",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pubsub_multipart,
        },
        Scenario {
            name: "sub_binds_pub_connects",
            about: "the roles reversed: SUB binds, PUB connects",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: sub_binds_pub_connects,
        },
        Scenario {
            name: "pub_no_subscribers_never_blocks",
            about: "PUB without peers: sends succeed at once, DONTWAIT too",
            transports: ALL,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: pub_no_subscribers,
        },
        Scenario {
            name: "pub_hwm_drops",
            about: "PUB with a stalled SUB drops beyond the HWM and never blocks",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pub_hwm_drops,
        },
    ]
}

fn pubsub_prefix_filter(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let sub = p.b(Kind::Sub)?;
    link(t, &publisher, &sub)?;
    sub.set_subscribe(b"ab")?;
    sub.set_subscribe(b"x")?;
    sync_subscriber(&publisher, &sub)?;
    let sent = ["a", "ab", "abc", "b", "xa", "x", "Ab", "", "zab", "abab"];
    for m in sent {
        publisher.send(m.as_bytes(), 0)?;
    }
    publisher.send(b"x-end", 0)?;
    let mut got = Vec::new();
    loop {
        let m = recv_text(&sub)?;
        if m == "x-end" {
            break;
        }
        got.push(m);
    }
    ensure_eq!(got, vec!["ab", "abc", "xa", "x", "abab"], "messages at SUB");
    Ok(())
}

fn pubsub_multiple_subscribers(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let endpoint = publisher.bind_any(t)?;
    let topics: [&[&str]; 3] = [&["a"], &["b", "c"], &[""]];
    let mut subs = Vec::new();
    for tops in topics {
        let s = p.b(Kind::Sub)?;
        s.connect(&endpoint)?;
        for top in tops {
            s.set_subscribe(top.as_bytes())?;
        }
        s.set_subscribe(b"END")?;
        sync_subscriber(&publisher, &s)?;
        subs.push(s);
    }
    for m in ["a1", "b1", "c1", "d1", "a2"] {
        publisher.send(m.as_bytes(), 0)?;
    }
    publisher.send(b"END", 0)?;
    let want: [&[&str]; 3] = [
        &["a1", "a2"],
        &["b1", "c1"],
        &["a1", "b1", "c1", "d1", "a2"],
    ];
    for (k, s) in subs.iter().enumerate() {
        let mut got = Vec::new();
        loop {
            let m = recv_text(s)?;
            if m == "END" {
                break;
            }
            if !m.starts_with("SYNC") {
                got.push(m);
            }
        }
        ensure_eq!(got, want[k].to_vec(), "messages at SUB {k}");
    }
    Ok(())
}

fn pubsub_unsubscribe(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let sub = p.b(Kind::Sub)?;
    link(t, &publisher, &sub)?;
    sub.set_subscribe(b"a")?;
    sub.set_subscribe(b"b")?;
    sub.set_subscribe(b"END")?;
    sync_subscriber(&publisher, &sub)?;
    publisher.send(b"a1", 0)?;
    publisher.send(b"b1", 0)?;
    ensure_eq!(recv_text(&sub)?, "a1", "before unsubscribing");
    ensure_eq!(recv_text(&sub)?, "b1", "before unsubscribing");
    sub.set_unsubscribe(b"a")?;
    sub.set_unsubscribe(b"SYNC")?;
    // (Not SYNC2: that would still match SYNC until the unsubscription
    // is applied.)
    sub.set_subscribe(b"RESYNC")?;
    // Sync again on a new topic: the unsubscription travelled before it.
    let end = super::deadline(5000);
    loop {
        publisher.send(b"RESYNC", 0)?;
        if sub.poll_in(20)? {
            break;
        }
        ensure!(
            Instant::now() < end,
            "second subscription not in effect within 5 s"
        );
    }
    publisher.send(b"a2", 0)?;
    publisher.send(b"b2", 0)?;
    publisher.send(b"END", 0)?;
    let mut got = Vec::new();
    loop {
        let m = recv_text(&sub)?;
        if m == "END" {
            break;
        }
        if m != "RESYNC" {
            got.push(m);
        }
    }
    ensure_eq!(got, vec!["b2"], "after unsubscribing from a");
    Ok(())
}

fn pubsub_multipart(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    let sub = p.b(Kind::Sub)?;
    link(t, &publisher, &sub)?;
    sub.set_subscribe(b"keep")?;
    sync_subscriber(&publisher, &sub)?;
    publisher.send_parts(&[&b"drop"[..], b"keep"], 0)?;
    publisher.send_parts(&[&b"keep"[..], b"", b"x"], 0)?;
    publisher.send_parts(&[&b"dropkeep"[..]], 0)?;
    publisher.send_parts(&[&b"keep2"[..]], 0)?;
    ensure_eq!(
        sub.recv_parts(0)?,
        vec![b"keep".to_vec(), vec![], b"x".to_vec()],
        "first message"
    );
    ensure_eq!(
        sub.recv_parts(0)?,
        vec![b"keep2".to_vec()],
        "second message"
    );
    super::expect_silence(&sub, 50, "after the two")
}

fn sub_binds_pub_connects(p: &Pair, t: Transport) -> Outcome {
    let sub = p.a(Kind::Sub)?;
    let publisher = p.b(Kind::Pub)?;
    sub.set_subscribe(b"t")?;
    link(t, &sub, &publisher)?;
    sync_subscriber(&publisher, &sub)?;
    for i in 0..10 {
        publisher.send(format!("u{i}").as_bytes(), 0)?;
        publisher.send(format!("t{i}").as_bytes(), 0)?;
    }
    for i in 0..10 {
        ensure_eq!(recv_text(&sub)?, format!("t{i}"), "message {i}");
    }
    Ok(())
}

fn pub_no_subscribers(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    publisher.bind_any(t)?;
    let start = Instant::now();
    for _ in 0..10_000 {
        publisher.send(b"nobody listens", 0)?;
        publisher.send(b"nobody listens", DONTWAIT)?;
    }
    let took = start.elapsed().as_millis();
    ensure!(
        took < 5000,
        "20000 sends without subscribers took {took} ms"
    );
    Ok(())
}

fn pub_hwm_drops(p: &Pair, t: Transport) -> Outcome {
    let publisher = p.a(Kind::Pub)?;
    publisher.set_sndhwm(10)?;
    let sub = p.b(Kind::Sub)?;
    sub.set_rcvhwm(10)?;
    sub.set_subscribe(b"m")?;
    link(t, &publisher, &sub)?;
    sync_subscriber(&publisher, &sub)?;
    // The subscriber does not read; the publisher must not block.
    // 1 KiB messages: 20 MB is more than the socket buffers hold.
    const N: u32 = 20_000;
    let start = Instant::now();
    let mut msg = vec![b'.'; 1024];
    for i in 0..N {
        msg[..6].copy_from_slice(format!("m{i:05}").as_bytes());
        publisher.send(&msg, 0)?;
    }
    publisher.send(b"m-end", DONTWAIT)?;
    let took = start.elapsed().as_millis();
    ensure!(
        took < 10_000,
        "{N} sends to a stalled subscriber took {took} ms"
    );
    let mut got = 0u32;
    let mut last: Option<u32> = None;
    while let Some(m) = sub.recv_within(200)? {
        if m[0] == b"m-end" {
            break;
        }
        let text = String::from_utf8_lossy(&m[0][..6]).into_owned();
        let i: u32 = text[1..]
            .parse()
            .map_err(|_| format!("bad message {text:?}"))?;
        if let Some(l) = last {
            ensure!(i > l, "message {i} after {l}: out of order or duplicated");
        }
        last = Some(i);
        got += 1;
    }
    ensure!(got > 0, "the subscriber got nothing");
    ensure!(
        got < N,
        "all {N} messages arrived: nothing was dropped at HWM 10"
    );
    Ok(())
}
