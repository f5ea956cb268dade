//! Hostile peers on the fabric's control connection (issue 15): raw TCP
//! clients connect to the control port of a fabriq PULL bound on
//! `ofi+tcp://` (the ZMTP connection that carries the handshake, the
//! fabric addresses and the credits) and misbehave, while a well-behaved
//! fabriq PUSH sends over the fabric to the same PULL. Every offender must
//! be dropped by fabriq (its connection closed) and every message of the
//! good peer must arrive, counted, in order. Real sockets on loopback and
//! the real libfabric tcp provider; every wait has a deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);
const MESSAGES: u32 = 1000;

fn greeting(major: u8, mechanism: &[u8]) -> Vec<u8> {
    let mut g = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, major, 1];
    g.extend_from_slice(mechanism);
    g.resize(64, 0);
    g
}

/// A READY command with these properties (long form when needed).
fn ready(props: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = vec![5];
    body.extend_from_slice(b"READY");
    for (name, value) in props {
        body.push(name.len() as u8);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value);
    }
    let mut cmd = if body.len() > 255 {
        let mut c = vec![0x06];
        c.extend_from_slice(&(body.len() as u64).to_be_bytes());
        c
    } else {
        vec![0x04, body.len() as u8]
    };
    cmd.extend_from_slice(&body);
    cmd
}

/// Reads until the peer closes (EOF or reset); whether it did in `limit`.
fn wait_closed(stream: &mut TcpStream, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// What each hostile client sends; fabriq must close every one.
fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let g = greeting(3, b"NULL");
    let push: &[u8] = b"PUSH";
    vec![
        ("garbage", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("zeros", vec![0; 64]),
        ("version 2 greeting", greeting(2, b"NULL")),
        ("unknown mechanism", greeting(3, b"BOGUS")),
        (
            "READY without fabric fields",
            [g.clone(), ready(&[("Socket-Type", push)])].concat(),
        ),
        (
            "READY with a malformed fabric address",
            [
                g.clone(),
                ready(&[
                    ("Socket-Type", push),
                    ("X-Fabriq-Ofi-Address", b"not hex at all"),
                    ("X-Fabriq-Ofi-Window", b"32"),
                    ("X-Fabriq-Ofi-Page", b"65600"),
                ]),
            ]
            .concat(),
        ),
        (
            "READY with an oversized fabric address",
            [
                g.clone(),
                ready(&[
                    ("Socket-Type", push),
                    ("X-Fabriq-Ofi-Address", &[b'a'; 60_000][..]),
                    ("X-Fabriq-Ofi-Window", b"32"),
                    ("X-Fabriq-Ofi-Page", b"65600"),
                ]),
            ]
            .concat(),
        ),
        (
            "READY with an overflowing window and page",
            [
                g.clone(),
                ready(&[
                    ("Socket-Type", push),
                    ("X-Fabriq-Ofi-Address", b"00"),
                    ("X-Fabriq-Ofi-Window", b"99999999999999999999"),
                    ("X-Fabriq-Ofi-Page", b"-1"),
                ]),
            ]
            .concat(),
        ),
        (
            "unknown command before READY",
            [g.clone(), vec![0x04, 6, 5], b"BOGUS".to_vec()].concat(),
        ),
        (
            "frame announcing 2^63 bytes",
            [g.clone(), vec![0x06], (1u64 << 63).to_be_bytes().to_vec()].concat(),
        ),
    ]
}

#[test]
fn hostile_control_connections_cost_a_good_fabric_peer_nothing() {
    let ctx = fabriq::Context::new();
    let pull = ctx.socket(fabriq::PULL).unwrap();
    pull.set_rcvtimeo(LIMIT.as_millis() as i32).unwrap();
    // A short handshake deadline, so the trickling client below meets it.
    pull.set_handshake_ivl(500).unwrap();
    pull.bind("ofi+tcp://127.0.0.1:*").unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();
    let port: u16 = endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let control = format!("127.0.0.1:{port}");

    // Many connections opened and dropped, some mid-greeting.
    for i in 0..200 {
        let mut s = TcpStream::connect(&control).unwrap();
        if i % 2 == 0 {
            let _ = s.write_all(&greeting(3, b"NULL")[..(i % 64)]);
        }
    }

    // The good peer joins, and sends half its messages.
    let push = ctx.socket(fabriq::PUSH).unwrap();
    push.connect(&endpoint).unwrap();
    let mut got = 0u32;
    let mut take = |upto: u32| {
        while got < upto {
            let m = pull.recv_bytes(0).expect("a good message within the limit");
            assert_eq!(m, got.to_be_bytes(), "in order, none lost");
            got += 1;
        }
    };
    for i in 0..MESSAGES / 2 {
        push.send(&i.to_be_bytes()[..], 0).unwrap();
    }
    take(MESSAGES / 4);

    // Each hostile client: fabriq must close it.
    for (name, bytes) in cases() {
        let mut s = TcpStream::connect(&control).unwrap();
        let _ = s.write_all(&bytes);
        assert!(
            wait_closed(&mut s, LIMIT),
            "{name}: not dropped in {LIMIT:?}"
        );
    }
    // A greeting trickled a byte at a time, never finished: dropped at the
    // handshake deadline (500 ms), not kept open by the trickle.
    {
        let mut s = TcpStream::connect(&control).unwrap();
        let g = greeting(3, b"NULL");
        let started = Instant::now();
        let mut closed = false;
        for b in &g[..63] {
            if s.write_all(std::slice::from_ref(b)).is_err() {
                closed = true;
                break;
            }
            // Wait for fabriq's answer (or its close) for up to 20 ms
            // between bytes: an event with a deadline, not a sleep.
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut buf = [0u8; 256];
            if matches!(s.read(&mut buf), Ok(0)) {
                closed = true;
                break;
            }
        }
        assert!(
            closed || wait_closed(&mut s, LIMIT),
            "trickled greeting: not dropped"
        );
        assert!(
            started.elapsed() < LIMIT,
            "dropped at the handshake deadline"
        );
    }
    // A greeting, then a disconnect mid-handshake.
    {
        let mut s = TcpStream::connect(&control).unwrap();
        s.write_all(&greeting(3, b"NULL")).unwrap();
    }

    for i in MESSAGES / 2..MESSAGES {
        push.send(&i.to_be_bytes()[..], 0).unwrap();
    }
    take(MESSAGES);
    assert_eq!(got, MESSAGES);
}
