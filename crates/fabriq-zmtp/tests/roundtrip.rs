//! Property tests: any sequence of messages and subscriptions, cut into
//! any chunks on the way, arrives whole and in order; any garbage yields
//! an error or waits for more, never a panic.

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{connected_types, drain, raw_greeting};
use fabriq_zmtp::{Config, Connection, Event, SocketType};
use proptest::collection::vec;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Item {
    Message(Vec<Vec<u8>>),
    Subscribe(Vec<u8>),
    Cancel(Vec<u8>),
}

fn frame_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..64),
        2 => vec(any::<u8>(), 250..260),          // short/long header edge
        1 => vec(any::<u8>(), 8 * 1024 - 2..8 * 1024 + 2), // by-reference edge
        1 => vec(any::<u8>(), 20_000..70_000),
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        6 => vec(frame_body(), 1..5).prop_map(Item::Message),
        1 => vec(any::<u8>(), 0..40).prop_map(Item::Subscribe),
        1 => vec(any::<u8>(), 0..40).prop_map(Item::Cancel),
    ]
}

/// Cuts `data` at the given fractions and feeds it piece by piece,
/// collecting events as they become available.
fn feed_in_pieces(conn: &mut Connection, data: &[u8], cuts: &[f64]) -> Vec<Event> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| (c * data.len() as f64) as usize)
        .collect();
    points.push(0);
    points.push(data.len());
    points.sort_unstable();
    let mut events = Vec::new();
    for w in points.windows(2) {
        // Alternate between the copying path and the read-buffer path.
        if w[0] % 2 == 0 {
            conn.feed(&data[w[0]..w[1]], Instant::now());
        } else {
            conn.recv_buf().extend_from_slice(&data[w[0]..w[1]]);
            conn.input_received(Instant::now());
        }
        while let Some(ev) = conn.poll_event().expect("valid stream") {
            events.push(ev);
        }
    }
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn messages_survive_any_chunking(
        items in vec(item(), 0..24),
        cuts in vec(0.0f64..1.0, 0..40),
    ) {
        // XSUB -> XPUB carries both data and subscriptions upstream.
        let (mut xsub, mut xpub) = connected_types(SocketType::XSub, SocketType::XPub);
        let mut expected = Vec::new();
        for item in &items {
            match item {
                Item::Message(parts) => {
                    let parts: Vec<Bytes> = parts.iter().cloned().map(Bytes::from).collect();
                    xsub.send(&parts).unwrap();
                    // A single frame starting 0/1 reads as a 3.0 subscription.
                    expected.push(match &parts[..] {
                        [one] if one.first() == Some(&1) => Event::Subscribe(one.slice(1..)),
                        [one] if one.first() == Some(&0) => Event::Cancel(one.slice(1..)),
                        _ => Event::Message(parts.into_iter().collect()),
                    });
                }
                Item::Subscribe(t) => {
                    xsub.subscribe(t).unwrap();
                    expected.push(Event::Subscribe(Bytes::from(t.clone())));
                }
                Item::Cancel(t) => {
                    xsub.cancel(t).unwrap();
                    expected.push(Event::Cancel(Bytes::from(t.clone())));
                }
            }
        }
        let wire = drain(&mut xsub);
        let got = feed_in_pieces(&mut xpub, &wire, &cuts);
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn greeting_survives_any_chunking(cuts in vec(0.0f64..1.0, 0..10)) {
        let mut conn = Connection::new(Config::new(SocketType::Pull), Instant::now()).unwrap();
        let mut input = raw_greeting(3, 1, b"NULL");
        input.extend_from_slice(&common::ready_frame(&[("Socket-Type", b"PUSH")]));
        let events = feed_in_pieces(&mut conn, &input, &cuts);
        prop_assert_eq!(events, vec![Event::HandshakeComplete]);
    }

    #[test]
    fn garbage_never_panics(
        prefix in 0usize..3,
        garbage in vec(any::<u8>(), 0..2048),
        cuts in vec(0.0f64..1.0, 0..8),
    ) {
        // Garbage from the first byte, after the greeting, or after the
        // whole handshake.
        let mut input = Vec::new();
        if prefix >= 1 {
            input.extend_from_slice(&raw_greeting(3, 1, b"NULL"));
        }
        if prefix >= 2 {
            input.extend_from_slice(&common::ready_frame(&[("Socket-Type", b"PUSH")]));
        }
        input.extend_from_slice(&garbage);
        let mut config = Config::new(SocketType::Pull);
        config.max_msg_size = Some(4096);
        let mut conn = Connection::new(config, Instant::now()).unwrap();
        let mut start = 0;
        let mut points: Vec<usize> = cuts.iter().map(|c| (c * input.len() as f64) as usize).collect();
        points.push(input.len());
        points.sort_unstable();
        'feed: for end in points {
            conn.feed(&input[start..end], Instant::now());
            start = end;
            loop {
                match conn.poll_event() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
        let _ = conn.end_of_input();
        prop_assert!(conn.recv_buf().capacity() < 1 << 20);
    }
}
