//! PUSH and PULL (libzmq's test_spec_pushpull).

use std::thread;

use super::{deadline, link, recv_text, Fabric, Outcome, Pair, Scenario, Sides, ALL, WIRE};
use crate::adapter::{Errno, Kind, Sock, Transport, DONTWAIT};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "push_pull_in_order",
            about: "1000 messages arrive complete and in order",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: push_pull_in_order,
        },
        Scenario {
            name: "pull_binds_push_connects",
            about: "the roles reversed: PULL binds, PUSH connects, 100 messages",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pull_binds_push_connects,
        },
        Scenario {
            name: "push_round_robin",
            about: "PUSH connected to three PULLs deals messages out in turn",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: push_round_robin,
        },
        Scenario {
            name: "pull_fair_queue",
            about: "PULL fair-queues two saturating PUSHes (no long runs from one)",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: pull_fair_queue,
        },
        Scenario {
            name: "push_no_peer_eagain",
            about: "PUSH without peers: DONTWAIT is EAGAIN, a send with SNDTIMEO times out",
            transports: ALL,
            sides: Sides::One,
            fabric: Fabric::Excluded(super::FABRIC_NO_ENDPOINT),
            run: push_no_peer_eagain,
        },
        Scenario {
            name: "push_queues_before_bind",
            about: "PUSH connects before PULL binds; messages sent meanwhile are not lost",
            transports: WIRE,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: push_queues_before_bind,
        },
        Scenario {
            name: "push_pull_multipart_atomic",
            about: "two PUSHes sending multipart messages: frames never interleave",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: push_pull_multipart_atomic,
        },
    ]
}

fn push_pull_in_order(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let push = p.b(Kind::Push)?;
    link(t, &pull, &push)?;
    for i in 0..1000 {
        push.send(format!("m{i}").as_bytes(), 0)?;
    }
    for i in 0..1000 {
        ensure_eq!(recv_text(&pull)?, format!("m{i}"), "message {i}");
    }
    Ok(())
}

fn pull_binds_push_connects(p: &Pair, t: Transport) -> Outcome {
    let push = p.a(Kind::Push)?;
    let pull = p.b(Kind::Pull)?;
    link(t, &push, &pull)?;
    for i in 0..100 {
        push.send(format!("m{i}").as_bytes(), 0)?;
    }
    for i in 0..100 {
        ensure_eq!(recv_text(&pull)?, format!("m{i}"), "message {i}");
    }
    Ok(())
}

fn push_round_robin(p: &Pair, t: Transport) -> Outcome {
    let pulls = [p.a(Kind::Pull)?, p.a(Kind::Pull)?, p.a(Kind::Pull)?];
    let push = p.b(Kind::Push)?;
    for pull in &pulls {
        link(t, pull, &push)?;
    }
    // A connecting PUSH has a pipe per endpoint from connect on, so the
    // first message already goes round.
    for i in 0..30 {
        push.send(format!("{i}").as_bytes(), 0)?;
    }
    let mut firsts = Vec::new();
    for (k, pull) in pulls.iter().enumerate() {
        let mut got = Vec::new();
        for _ in 0..10 {
            let m = recv_text(pull)?;
            got.push(m.parse::<u32>().map_err(|_| format!("bad message {m:?}"))?);
        }
        super::expect_silence(pull, 50, &format!("PULL {k} after 10 messages"))?;
        for w in got.windows(2) {
            ensure!(
                w[1] == w[0] + 3,
                "PULL {k} got {got:?}: not every third message"
            );
        }
        firsts.push(got[0]);
    }
    firsts.sort();
    ensure_eq!(firsts, vec![0, 1, 2], "first message at each PULL");
    Ok(())
}

/// Two senders keep their pipes full; the receiver must alternate between
/// them. One thread feeds both senders with DONTWAIT sends, so neither
/// gets ahead through scheduling: each is topped up whenever it has room.
/// A receiver that prefers one pipe takes all 300 of one sender in a row.
pub(crate) fn fair_queue(receiver: Sock, senders: Vec<Sock>, t: Transport) -> Outcome {
    const EACH: usize = 300;
    // Short queues everywhere, so what the receiver takes next reflects
    // its choice, not how much one connection got ahead.
    receiver.set_rcvhwm(5)?;
    let endpoint = receiver.bind_any(t)?;
    for s in &senders {
        s.set_sndhwm(5)?;
        s.connect(&endpoint)?;
    }
    // Both connections up before the race starts.
    for (k, s) in senders.iter().enumerate() {
        s.send(format!("{k}:hello").as_bytes(), 0)?;
    }
    let mut hellos = Vec::new();
    for _ in 0..2 {
        let m = receiver.recv_parts(0)?;
        hellos.push(String::from_utf8_lossy(m.last().unwrap()).into_owned());
    }
    hellos.sort();
    ensure_eq!(hellos, vec!["0:hello", "1:hello"], "hellos");
    let feeder = thread::spawn(move || -> Result<Vec<Sock>, String> {
        // 64 KiB: the kernel's socket buffers hold only a few, so runs
        // from buffered data stay short (longest seen: 65 for libzmq).
        let body = vec![b'.'; 64 * 1024];
        let mut next = [0usize; 2];
        let end = deadline(20_000);
        while next.iter().any(|&n| n < EACH) {
            let mut progress = false;
            for (k, s) in senders.iter().enumerate() {
                if next[k] == EACH {
                    continue;
                }
                let tag = format!("{k}:{}", next[k]);
                match s.send_parts(&[&body[..], tag.as_bytes()], DONTWAIT) {
                    Ok(()) => {
                        next[k] += 1;
                        progress = true;
                    }
                    Err(f) if f.is(Errno::EAGAIN) => {}
                    Err(f) => return Err(f.into()),
                }
            }
            if !progress {
                let k = if next[0] < EACH { 0 } else { 1 };
                senders[k].poll_out(1)?;
            }
            ensure!(std::time::Instant::now() < end, "senders stuck at {next:?}");
        }
        // The sockets come back with the result: they stay open until
        // everything is read.
        Ok(senders)
    });
    let mut from = Vec::new();
    let mut next = [0usize; 2];
    for _ in 0..2 * EACH {
        let m = receiver.recv_parts(0)?;
        let text = String::from_utf8_lossy(m.last().unwrap()).into_owned();
        let (k, i) = text
            .split_once(':')
            .and_then(|(k, i)| Some((k.parse::<usize>().ok()?, i.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("bad message {text:?}"))?;
        ensure_eq!(i, next[k], "order from sender {k}");
        next[k] += 1;
        from.push(k);
    }
    drop(receiver);
    feeder
        .join()
        .map_err(|_| "feeder thread panicked".to_string())??;
    // Longest run from one sender while both still had messages.
    let both_until = from
        .iter()
        .rposition(|&k| k != *from.last().unwrap())
        .unwrap_or(0);
    let mut longest = 0;
    let mut run = 0;
    for i in 0..both_until {
        run = if i > 0 && from[i] == from[i - 1] {
            run + 1
        } else {
            1
        };
        longest = longest.max(run);
    }
    ensure!(
        longest <= 150,
        "one sender was served {longest} times in a row while the other waited"
    );
    Ok(())
}

fn pull_fair_queue(p: &Pair, t: Transport) -> Outcome {
    fair_queue(
        p.a(Kind::Pull)?,
        vec![p.b(Kind::Push)?, p.b(Kind::Push)?],
        t,
    )
}

fn push_no_peer_eagain(p: &Pair, _t: Transport) -> Outcome {
    let push = p.a(Kind::Push)?;
    match push.send(b"x", DONTWAIT) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => {
            return Err(format!(
                "DONTWAIT send without peers: {other:?}, expected EAGAIN"
            ))
        }
    }
    push.set_sndtimeo(100)?;
    let start = std::time::Instant::now();
    match push.send(b"x", 0) {
        Err(f) if f.is(Errno::EAGAIN) => {}
        other => return Err(format!("send without peers: {other:?}, expected EAGAIN")),
    }
    let took = start.elapsed().as_millis();
    ensure!((80..2000).contains(&took), "SNDTIMEO 100 ms took {took} ms");
    Ok(())
}

fn push_queues_before_bind(p: &Pair, t: Transport) -> Outcome {
    // For tcp and the fabric: a port that was free a moment ago.
    let endpoint = super::lifecycle::absent_endpoint(t)?;
    let push = p.b(Kind::Push)?;
    push.set_reconnect_ivl(20)?;
    push.connect(&endpoint)?;
    for i in 0..10 {
        push.send(format!("early {i}").as_bytes(), 0)?;
    }
    let pull = p.a(Kind::Pull)?;
    let end = deadline(3000);
    loop {
        match pull.bind(&endpoint) {
            Ok(()) => break,
            Err(f) if f.is(Errno::EADDRINUSE) && std::time::Instant::now() < end => {
                thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(f) => return Err(f.into()),
        }
    }
    for i in 0..10 {
        ensure_eq!(
            recv_text(&pull)?,
            format!("early {i}"),
            "queued message {i}"
        );
    }
    Ok(())
}

fn push_pull_multipart_atomic(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    let endpoint = pull.bind_any(t)?;
    let mut threads = Vec::new();
    for k in 0..2u8 {
        let push = p.b(Kind::Push)?;
        push.connect(&endpoint)?;
        threads.push(thread::spawn(move || -> Result<Sock, String> {
            for i in 0..200u32 {
                let parts: Vec<Vec<u8>> = (0..(1 + i % 5))
                    .map(|f| format!("{k}/{i}/{f}").into_bytes())
                    .collect();
                push.send_parts(&parts, 0)?;
            }
            Ok(push)
        }));
    }
    let mut next = [0u32; 2];
    for _ in 0..400 {
        let m = pull.recv_parts(0)?;
        let first = String::from_utf8_lossy(&m[0]).into_owned();
        let k: usize = first[..1]
            .parse()
            .map_err(|_| format!("bad frame {first:?}"))?;
        let i = next[k];
        let want: Vec<Vec<u8>> = (0..(1 + i % 5))
            .map(|f| format!("{k}/{i}/{f}").into_bytes())
            .collect();
        ensure_eq!(m, want, "message {i} of sender {k}");
        next[k] += 1;
    }
    drop(pull);
    for th in threads {
        th.join()
            .map_err(|_| "sender thread panicked".to_string())??;
    }
    Ok(())
}
