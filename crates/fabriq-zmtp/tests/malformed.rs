//! Hostile and broken input: every case yields a typed error, none panics,
//! none allocates what a header announces.

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{command_frame, connected_types, raw_greeting, ready_frame};
use fabriq_zmtp::{Config, Connection, Event, Part, ProtocolError, SocketType};

fn fresh(socket_type: SocketType) -> Connection {
    Connection::new(Config::new(socket_type), Instant::now()).unwrap()
}

/// Feeds `input` to a fresh PULL connection and returns the first error.
fn error_for(input: &[u8]) -> ProtocolError {
    let mut conn = fresh(SocketType::Pull);
    conn.feed(input, Instant::now());
    loop {
        match conn.poll_event() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error for {input:02x?}"),
            Err(e) => return e,
        }
    }
}

fn after_handshake(extra: &[u8]) -> Vec<u8> {
    let mut input = raw_greeting(3, 1, b"NULL");
    input.extend_from_slice(&ready_frame(&[("Socket-Type", b"PUSH")]));
    input.extend_from_slice(extra);
    input
}

// ---- greeting ------------------------------------------------------------

#[test]
fn truncated_greeting() {
    let mut conn = fresh(SocketType::Pull);
    conn.feed(&raw_greeting(3, 1, b"NULL")[..40], Instant::now());
    assert_eq!(conn.poll_event(), Ok(None));
    assert_eq!(
        conn.end_of_input(),
        Some(ProtocolError::Truncated {
            stage: "greeting",
            buffered: 0
        })
    );
    // The connection stays failed.
    assert!(conn.poll_event().is_err());
}

#[test]
fn truncated_frame_and_multipart_and_clean_close() {
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    pull.feed(b"\x00\x05abc", Instant::now());
    assert_eq!(pull.poll_event(), Ok(None));
    assert_eq!(
        pull.end_of_input(),
        Some(ProtocolError::Truncated {
            stage: "frame",
            buffered: 5
        })
    );

    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    pull.feed(b"\x01\x01a", Instant::now());
    assert_eq!(pull.poll_event(), Ok(None));
    assert!(matches!(
        pull.end_of_input(),
        Some(ProtocolError::Truncated {
            stage: "multipart message",
            ..
        })
    ));

    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    pull.feed(b"\x00\x01a", Instant::now());
    assert!(matches!(pull.poll_event(), Ok(Some(Event::Message(_)))));
    assert_eq!(pull.end_of_input(), None);
}

#[test]
fn wrong_signature_first_byte() {
    // A ZMTP 1.0 peer, or anything that is not ZMTP, fails on byte 0.
    assert_eq!(
        error_for(b"\x01"),
        ProtocolError::BadSignature {
            offset: 0,
            found: 0x01,
            expected: 0xFF
        }
    );
    assert!(matches!(
        error_for(b"GET / HTTP/1.1\r\n"),
        ProtocolError::BadSignature { offset: 0, .. }
    ));
}

#[test]
fn wrong_signature_tenth_byte() {
    let mut g = raw_greeting(3, 1, b"NULL");
    g[9] = 0x00;
    assert_eq!(
        error_for(&g[..10]),
        ProtocolError::BadSignature {
            offset: 9,
            found: 0,
            expected: 0x7F
        }
    );
}

#[test]
fn version_1_and_2_are_refused_on_the_major_byte() {
    for major in [0u8, 1, 2] {
        let g = raw_greeting(major, 0, b"NULL");
        // Only 11 bytes are needed to refuse: no waiting for the rest.
        assert_eq!(
            error_for(&g[..11]),
            ProtocolError::UnsupportedVersion { major }
        );
    }
}

#[test]
fn unknown_mechanism() {
    assert_eq!(
        error_for(&raw_greeting(3, 1, b"GSSAPI")),
        ProtocolError::UnknownMechanism("GSSAPI".into())
    );
    assert!(matches!(
        error_for(&raw_greeting(3, 1, b"N\xffLL")),
        ProtocolError::UnknownMechanism(_)
    ));
    // A known name followed by garbage in the padding is not that name.
    assert!(matches!(
        error_for(&raw_greeting(3, 1, b"NULL\0X")),
        ProtocolError::UnknownMechanism(_)
    ));
}

#[test]
fn mechanism_mismatch_and_bad_credentials() {
    assert_eq!(
        error_for(&raw_greeting(3, 1, b"PLAIN")),
        ProtocolError::MechanismMismatch {
            ours: fabriq_zmtp::MechanismName::Null,
            theirs: fabriq_zmtp::MechanismName::Plain
        }
    );
    let mut config = Config::new(SocketType::Pull);
    config.mechanism = fabriq_zmtp::MechanismConfig::plain_client(vec![b'u'; 256], "pw");
    assert!(matches!(
        Connection::new(config, Instant::now()).unwrap_err(),
        fabriq_zmtp::UsageError::InvalidCredentials(_)
    ));
}

#[test]
fn bad_as_server_flag() {
    let mut g = raw_greeting(3, 1, b"NULL");
    g[32] = 7;
    assert_eq!(error_for(&g), ProtocolError::BadAsServer(7));
}

// ---- frames --------------------------------------------------------------

#[test]
fn oversized_frame_lengths_are_refused_before_allocating() {
    for size in [u64::MAX, 1 << 63, (isize::MAX as u64) + 1] {
        let mut frame = vec![0x02];
        frame.extend_from_slice(&size.to_be_bytes());
        let err = error_for(&after_handshake(&frame));
        assert!(
            matches!(err, ProtocolError::FrameTooLarge { size: s, .. } if s == size),
            "{err:?}"
        );
    }
}

#[test]
fn frame_over_max_msg_size() {
    let mut config = Config::new(SocketType::Pull);
    config.max_msg_size = Some(1000);
    let mut conn = Connection::new(config, Instant::now()).unwrap();
    let mut frame = vec![0x02];
    frame.extend_from_slice(&1001u64.to_be_bytes());
    conn.feed(&after_handshake(&frame), Instant::now());
    assert_eq!(conn.poll_event(), Ok(Some(Event::HandshakeComplete)));
    assert_eq!(
        conn.poll_event(),
        Err(ProtocolError::FrameTooLarge {
            size: 1001,
            limit: 1000
        })
    );
}

#[test]
fn a_huge_announced_frame_costs_only_what_arrives() {
    // 1 TiB announced, allowed by the (absent) limit: the read buffer must
    // grow with the bytes that actually come (at most 16 times them, or
    // 1 MiB), not to the announced size.
    use fabriq_zmtp::frame::{TRUSTED_FRAME, TRUST_FACTOR};
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    let mut header = vec![0x02];
    header.extend_from_slice(&(1u64 << 40).to_be_bytes());
    pull.feed(&header, Instant::now());
    let mut arrived = header.len();
    for _ in 0..256 {
        let buf = pull.recv_buf();
        let bound = TRUSTED_FRAME.max(TRUST_FACTOR * arrived) + arrived;
        assert!(
            buf.capacity() <= bound,
            "capacity {} after {arrived} bytes",
            buf.capacity()
        );
        buf.extend_from_slice(&[0u8; 16 * 1024]);
        arrived += 16 * 1024;
        pull.input_received(Instant::now());
        assert_eq!(pull.poll_event(), Ok(None));
    }
}

#[test]
fn oversized_command_during_handshake() {
    let mut input = raw_greeting(3, 1, b"NULL");
    input.push(0x06);
    input.extend_from_slice(&(1u64 << 20).to_be_bytes());
    assert!(matches!(
        error_for(&input),
        ProtocolError::FrameTooLarge { limit: 65536, .. }
    ));
}

#[test]
fn command_with_bad_name_length() {
    let mut input = raw_greeting(3, 1, b"NULL");
    input.extend_from_slice(&command_frame(b"\x20READY"));
    assert!(matches!(
        error_for(&input),
        ProtocolError::MalformedCommand { reason, .. }
            if reason.contains("name length")
    ));
    // The same after the handshake.
    assert!(matches!(
        error_for(&after_handshake(&command_frame(b"\x09PING"))),
        ProtocolError::MalformedCommand { .. }
    ));
}

#[test]
fn ready_with_property_length_past_the_end() {
    let mut input = raw_greeting(3, 1, b"NULL");
    input.extend_from_slice(&command_frame(
        b"\x05READY\x0bSocket-Type\x00\x00\x01\x00PUSH",
    ));
    assert_eq!(
        error_for(&input),
        ProtocolError::MalformedProperty("value runs past the end")
    );
    let mut input = raw_greeting(3, 1, b"NULL");
    input.extend_from_slice(&command_frame(b"\x05READY\x30Socket-Type"));
    assert_eq!(
        error_for(&input),
        ProtocolError::MalformedProperty("name runs past the end")
    );
}

#[test]
fn handshake_protocol_violations() {
    let greeting = raw_greeting(3, 1, b"NULL");
    let cases: Vec<(Vec<u8>, ProtocolError)> = vec![
        (b"\x00\x01x".to_vec(), ProtocolError::DataBeforeHandshake),
        (
            {
                let mut f = ready_frame(&[("Socket-Type", b"PUSH")]);
                f[0] |= 0x01;
                f
            },
            ProtocolError::MultipartCommand,
        ),
        (ready_frame(&[]), ProtocolError::MissingSocketType),
        (
            ready_frame(&[("Socket-Type", b"STREAM")]),
            ProtocolError::UnknownSocketType("STREAM".into()),
        ),
        (
            ready_frame(&[("Socket-Type", b"PUB")]),
            ProtocolError::IncompatibleSocketType {
                ours: SocketType::Pull,
                theirs: SocketType::Pub,
            },
        ),
        (
            ready_frame(&[("Socket-Type", b"PUSH"), ("Identity", &[b'x'; 256])]),
            ProtocolError::IdentityTooLong(256),
        ),
        (
            command_frame(b"\x05ERROR\x0bgo away now"),
            ProtocolError::PeerError("go away now".into()),
        ),
        (
            command_frame(b"\x05HELLO"),
            ProtocolError::UnexpectedCommand("HELLO".into()),
        ),
    ];
    for (frame, expected) in cases {
        let mut input = greeting.clone();
        input.extend_from_slice(&frame);
        assert_eq!(error_for(&input), expected, "{frame:02x?}");
    }
}

#[test]
fn refused_handshake_tells_the_peer_why() {
    let mut conn = fresh(SocketType::Pull);
    common::drain(&mut conn);
    let mut input = raw_greeting(3, 1, b"NULL");
    input.extend_from_slice(&ready_frame(&[("Socket-Type", b"PUB")]));
    conn.feed(&input, Instant::now());
    assert!(conn.poll_event().is_err());
    let out = common::drain(&mut conn);
    // Our READY, then an ERROR command naming the problem.
    let error_at = out.windows(6).position(|w| w == b"\x05ERROR").unwrap();
    let reason = String::from_utf8_lossy(&out[error_at + 7..]);
    assert!(reason.contains("incompatible socket types"), "{reason}");
}

#[test]
fn after_handshake_violations() {
    let cases: Vec<(Vec<u8>, ProtocolError)> = vec![
        (
            ready_frame(&[("Socket-Type", b"PUSH")]),
            ProtocolError::UnexpectedCommand("READY".into()),
        ),
        (
            command_frame(b"\x05ERROR\x03bye"),
            ProtocolError::PeerError("bye".into()),
        ),
        (
            b"\x05\x04\x04PING".to_vec(),
            ProtocolError::MultipartCommand,
        ),
        (
            command_frame(b"\x05ERROR\x09bye"),
            ProtocolError::MalformedCommand {
                command: "ERROR".into(),
                reason: "reason runs past the end",
            },
        ),
    ];
    for (frame, expected) in cases {
        assert_eq!(
            error_for(&after_handshake(&frame)),
            expected,
            "{frame:02x?}"
        );
    }
}

/// An unknown command is handed to the caller (which ignores it, as
/// libzmq does, unless it is one of its own) and breaks nothing after it.
#[test]
fn unknown_commands_after_the_handshake_reach_the_caller_and_break_nothing() {
    let mut input = after_handshake(&command_frame(b"\x07UNKNOWNbody"));
    input.extend_from_slice(b"\x00\x02ok");
    let mut conn = fresh(SocketType::Pull);
    conn.feed(&input, Instant::now());
    assert_eq!(conn.poll_event(), Ok(Some(Event::HandshakeComplete)));
    assert_eq!(
        conn.poll_event(),
        Ok(Some(Event::Command {
            name: Bytes::from_static(b"UNKNOWN"),
            body: Bytes::from_static(b"body"),
        }))
    );
    assert_eq!(
        conn.poll_event(),
        Ok(Some(Event::Message(
            [Part::from_static(b"ok")].into_iter().collect()
        )))
    );
}

#[test]
fn a_large_frame_is_moved_at_most_once_on_its_way_in() {
    // A frame of up to 1 MiB is read into a buffer of its final size once
    // its header and a first piece are in: the buffer is moved once (the
    // first piece) and never again. It used to move twice: a 1 MiB body
    // was trusted short of its last nine bytes, and a nearly complete
    // frame was regrown for its last bytes when less than a read chunk
    // of room was left (found by crates/fabriq-copy-budget).
    for size in [300_000usize, 1 << 20] {
        let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
        let mut wire = vec![0x02];
        wire.extend_from_slice(&(size as u64).to_be_bytes());
        wire.resize(9 + size, 7);
        // The first read brings a chunk; later ones whatever fits, in
        // pieces of at most 50 kB (a socket that is read while it fills).
        let first = 16 * 1024;
        pull.feed(&wire[..first], Instant::now());
        let mut at = first;
        let mut moves = 0;
        let mut last = None;
        while at < wire.len() {
            let buf = pull.recv_buf();
            if last.is_some_and(|p| p != buf.as_ptr()) {
                moves += 1;
            }
            let room = buf.capacity() - buf.len();
            assert!(room > 0, "{size}: no room at {at}");
            let n = room.min(50_000).min(wire.len() - at);
            buf.extend_from_slice(&wire[at..at + n]);
            at += n;
            last = Some(buf.as_ptr());
            pull.input_received(Instant::now());
        }
        assert_eq!(moves, 0, "{size}: moved after its first piece");
        let Ok(Some(Event::Message(m))) = pull.poll_event() else {
            panic!("{size}: no message")
        };
        assert_eq!(m[0].len(), size);
    }
}
