//! High-water marks (libzmq's test_hwm, test_sockopt_hwm).

use std::time::Instant;

use super::{deadline, link, Fabric, Outcome, Pair, Scenario, Sides, ALL, INPROC, WIRE};
use crate::adapter::{Errno, Kind, Sock, Transport, DONTWAIT};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "hwm_push_dontwait_eagain",
            about: "PUSH to a stalled PULL: DONTWAIT sends reach EAGAIN; nothing sent is lost",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: hwm_push_dontwait_eagain,
        },
        Scenario {
            name: "hwm_push_send_times_out",
            about: "PUSH at the HWM: a blocking send fails with EAGAIN after SNDTIMEO",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: hwm_push_send_times_out,
        },
        Scenario {
            name: "hwm_inproc_sum",
            about: "inproc: the limit is the sender's SNDHWM plus the receiver's RCVHWM",
            transports: INPROC,
            sides: Sides::Two,
            fabric: Fabric::Excluded(super::FABRIC_NOT_INPROC),
            run: hwm_inproc_sum,
        },
        Scenario {
            name: "hwm_queue_before_connect",
            about: "PUSH connected to a missing peer queues exactly SNDHWM messages",
            transports: WIRE,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: hwm_queue_before_connect,
        },
        Scenario {
            name: "hwm_resumes_after_drain",
            about: "after EAGAIN at the HWM, reading frees room and sending resumes",
            transports: ALL,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: hwm_resumes_after_drain,
        },
    ]
}

const BODY: usize = 16 * 1024;

fn body(i: usize) -> Vec<u8> {
    let mut b = vec![(i % 251) as u8; BODY];
    b[..8].copy_from_slice(&(i as u64).to_le_bytes());
    b
}

/// Sends with DONTWAIT, numbering from `from`, until EAGAIN; returns how
/// many went out.
fn fill(push: &Sock, from: usize) -> Result<usize, String> {
    let end = deadline(5000);
    let mut sent = 0;
    loop {
        match push.send(&body(from + sent), DONTWAIT) {
            Ok(()) => sent += 1,
            Err(f) if f.is(Errno::EAGAIN) => return Ok(sent),
            Err(f) => return Err(format!("after {sent} sends: {f}")),
        }
        ensure!(
            sent < 20_000,
            "no EAGAIN after {sent} messages of {BODY} bytes"
        );
        ensure!(Instant::now() < end, "no EAGAIN within 5 s ({sent} sent)");
    }
}

/// Fills until the socket stays full: over tcp and ipc the I/O thread
/// keeps moving messages into the kernel's buffers after the first
/// EAGAIN, so fill again until POLLOUT stays clear for 100 ms.
fn fill_until_stable(push: &Sock) -> Result<usize, String> {
    let end = deadline(10_000);
    let mut sent = 0;
    loop {
        sent += fill(push, sent)?;
        if !push.poll_out(100)? {
            return Ok(sent);
        }
        ensure!(
            Instant::now() < end,
            "still not full after 10 s ({sent} sent)"
        );
    }
}

fn drain(pull: &Sock, from: usize, count: usize) -> Outcome {
    for i in from..from + count {
        let m = pull
            .recv(0)
            .map_err(|f| format!("message {i} of {}: {f}", from + count))?;
        ensure!(m == body(i), "message {i}: wrong content or order");
    }
    Ok(())
}

/// PULL (A, RCVHWM 5, not reading) and PUSH (B, SNDHWM 5), connected.
fn stalled(p: &Pair, t: Transport) -> Result<(Sock, Sock), String> {
    let pull = p.a(Kind::Pull)?;
    pull.set_rcvhwm(5)?;
    let push = p.b(Kind::Push)?;
    push.set_sndhwm(5)?;
    link(t, &pull, &push)?;
    if t != Transport::Inproc {
        // A first message proves the connection is up (inproc is up at
        // connect, and its exact limit is checked below).
        push.send(&body(0), 0)?;
        drain(&pull, 0, 1)?;
    }
    Ok((pull, push))
}

fn hwm_push_dontwait_eagain(p: &Pair, t: Transport) -> Outcome {
    let (pull, push) = stalled(p, t)?;
    let sent = fill(&push, 0)?;
    // libzmq learns of messages read from a pipe in batches, so it may
    // refuse before its own SNDHWM when a message has just been read: at
    // least one must go, and EAGAIN must come.
    ensure!(sent >= 1, "EAGAIN at once (SNDHWM 5)");
    if t == Transport::Inproc {
        ensure_eq!(
            sent,
            10,
            "inproc messages before EAGAIN (SNDHWM 5 + RCVHWM 5)"
        );
    }
    drain(&pull, 0, sent)?;
    super::expect_silence(&pull, 20, "after draining")
}

fn hwm_push_send_times_out(p: &Pair, t: Transport) -> Outcome {
    let (pull, push) = stalled(p, t)?;
    // Blocking sends with SNDTIMEO 200 ms: while there is room they return
    // at once; at the HWM one must block and fail with EAGAIN after about
    // 200 ms. (Over tcp and ipc the kernel's buffers take a varying
    // amount first, so count is not fixed.)
    push.set_sndtimeo(200)?;
    let end = deadline(15_000);
    let mut sent = 0;
    loop {
        let start = Instant::now();
        match push.send(&body(sent), 0) {
            Ok(()) => sent += 1,
            Err(f) if f.is(Errno::EAGAIN) => {
                let took = start.elapsed().as_millis();
                ensure!(
                    (150..3000).contains(&took),
                    "SNDTIMEO 200 ms took {took} ms"
                );
                break;
            }
            Err(f) => return Err(format!("after {sent} sends: {f}")),
        }
        ensure!(
            Instant::now() < end && sent < 20_000,
            "no EAGAIN after {sent} sends"
        );
    }
    drain(&pull, 0, sent)
}

fn hwm_inproc_sum(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.set_rcvhwm(4)?;
    let push = p.b(Kind::Push)?;
    push.set_sndhwm(3)?;
    link(t, &pull, &push)?;
    let sent = fill(&push, 0)?;
    ensure_eq!(sent, 7, "messages before EAGAIN (SNDHWM 3 + RCVHWM 4)");
    drain(&pull, 0, sent)
}

fn hwm_queue_before_connect(p: &Pair, t: Transport) -> Outcome {
    let endpoint = super::lifecycle::absent_endpoint(t)?;
    let push = p.a(Kind::Push)?;
    push.set_sndhwm(10)?;
    push.connect(&endpoint)?;
    let sent = fill(&push, 0)?;
    ensure_eq!(
        sent,
        10,
        "messages queued for a missing peer with SNDHWM 10"
    );
    Ok(())
}

fn hwm_resumes_after_drain(p: &Pair, t: Transport) -> Outcome {
    let (pull, push) = stalled(p, t)?;
    for round in 0..3 {
        // Each round numbers its messages from 0 again.
        let sent = fill_until_stable(&push)?;
        ensure!(sent > 0, "round {round}: no room");
        drain(&pull, 0, sent)?;
        ensure!(
            push.poll_out(3000)?,
            "round {round}: no POLLOUT after draining"
        );
    }
    Ok(())
}
