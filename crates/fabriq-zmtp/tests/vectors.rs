//! Byte-exact vectors: what fabriq-zmtp puts on the wire must match the
//! specs and libzmq to the byte.

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{connected_types, drain};
use fabriq_zmtp::{Config, Connection, Part, SocketType};

fn greeting_and_ready(config: Config) -> (Vec<u8>, Vec<u8>) {
    let mut conn = Connection::new(config, Instant::now()).unwrap();
    let greeting = drain(&mut conn);
    // Any 3.1 NULL greeting makes it send READY.
    conn.feed(&common::raw_greeting(3, 1, b"NULL"), Instant::now());
    assert!(conn.poll_event().unwrap().is_none());
    (greeting, drain(&mut conn))
}

#[test]
fn greeting_is_zmtp_3_1_null() {
    let (greeting, _) = greeting_and_ready(Config::new(SocketType::Sub));
    let mut expected = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1];
    expected.extend_from_slice(b"NULL");
    expected.resize(64, 0);
    assert_eq!(greeting, expected);
}

#[test]
fn sub_ready_matches_the_interop_notes() {
    let (_, ready) = greeting_and_ready(Config::new(SocketType::Sub));
    // 04 19 05 'READY' 0B 'Socket-Type' 00 00 00 03 'SUB'
    let expected = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB";
    assert_eq!(ready, expected);
}

#[test]
fn dealer_ready_carries_an_empty_identity() {
    let (_, ready) = greeting_and_ready(Config::new(SocketType::Dealer));
    let expected =
        b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00";
    assert_eq!(ready, expected);
}

#[test]
fn router_ready_with_identity_and_metadata() {
    let mut config = Config::new(SocketType::Router);
    config.identity = Bytes::from_static(b"R1");
    config.metadata.push("X-Hello", "world").unwrap();
    let (_, ready) = greeting_and_ready(config);
    let body = b"\x05READY\x0bSocket-Type\x00\x00\x00\x06ROUTER\
\x08Identity\x00\x00\x00\x02R1\x07X-Hello\x00\x00\x00\x05world";
    let mut expected = vec![0x04, body.len() as u8];
    expected.extend_from_slice(body);
    assert_eq!(ready, expected);
}

#[test]
fn message_frames() {
    let (mut dealer, _router) = connected_types(SocketType::Dealer, SocketType::Router);
    let long = Bytes::from(vec![0xAB; 256]);
    dealer
        .send(&[
            Part::new(),
            Part::from_static(b"hi"),
            Part::from(long.clone()),
        ])
        .unwrap();
    let mut expected = vec![0x01, 0x00, 0x01, 0x02, b'h', b'i', 0x02];
    expected.extend_from_slice(&256u64.to_be_bytes());
    expected.extend_from_slice(&long);
    assert_eq!(drain(&mut dealer), expected);
}

#[test]
fn subscription_forms_follow_the_peer_version() {
    // A 3.1 peer gets the SUBSCRIBE / CANCEL commands.
    let (mut sub, _pub) = connected_types(SocketType::Sub, SocketType::Pub);
    sub.subscribe(b"ab").unwrap();
    sub.cancel(b"ab").unwrap();
    assert_eq!(
        drain(&mut sub),
        b"\x04\x0c\x09SUBSCRIBEab\x04\x09\x06CANCELab".to_vec()
    );

    // A 3.0 peer gets the 0x01 / 0x00 data frames.
    let now = Instant::now();
    let mut sub = Connection::new(Config::new(SocketType::Sub), now).unwrap();
    drain(&mut sub);
    sub.feed(&common::raw_greeting(3, 0, b"NULL"), now);
    sub.feed(&common::ready_frame(&[("Socket-Type", b"PUB")]), now);
    assert_eq!(
        sub.poll_event().unwrap(),
        Some(fabriq_zmtp::Event::HandshakeComplete)
    );
    assert_eq!(sub.peer().unwrap().version.minor, 0);
    drain(&mut sub);
    sub.subscribe(b"ab").unwrap();
    sub.cancel(b"ab").unwrap();
    assert_eq!(drain(&mut sub), b"\x00\x03\x01ab\x00\x03\x00ab".to_vec());
}

#[test]
fn pong_echoes_the_ping_context() {
    let (mut a, _b) = connected_types(SocketType::Pair, SocketType::Pair);
    a.feed(
        &common::command_frame(b"\x04PING\x00\x05ctx"),
        Instant::now(),
    );
    assert_eq!(a.poll_event().unwrap(), None);
    assert_eq!(drain(&mut a), b"\x04\x08\x04PONGctx".to_vec());
}
