//! Property tests: any sequence of messages and subscriptions, cut into
//! any chunks on the way and handed in by any input style, arrives whole
//! and in order (as slices of the caller's buffers where the caller owns
//! them); every output style produces the same byte stream; any garbage
//! yields an error or waits for more, never a panic.

mod common;

use std::io::IoSlice;
use std::ops::Range;
use std::time::Instant;

use bytes::Bytes;
use common::{connected_types, drain, raw_greeting, ready_frame};
use fabriq_zmtp::{Config, Connection, Event, Part, SocketType};
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

/// Queues `items` on `conn` and returns the events the peer should see.
fn send_items(conn: &mut Connection, items: &[Item]) -> Vec<Event> {
    items.iter().map(|item| send_item(conn, item)).collect()
}

fn send_item(conn: &mut Connection, item: &Item) -> Event {
    match item {
        Item::Message(parts) => {
            let parts: Vec<Part> = parts.iter().cloned().map(Part::from).collect();
            conn.send(&parts).unwrap();
            // A single frame starting 0/1 reads as a 3.0 subscription.
            match &parts[..] {
                [one] if one.first() == Some(&1) => Event::Subscribe(one.to_bytes().slice(1..)),
                [one] if one.first() == Some(&0) => Event::Cancel(one.to_bytes().slice(1..)),
                _ => Event::Message(parts.into_iter().collect()),
            }
        }
        Item::Subscribe(t) => {
            conn.subscribe(t).unwrap();
            Event::Subscribe(Bytes::from(t.clone()))
        }
        Item::Cancel(t) => {
            conn.cancel(t).unwrap();
            Event::Cancel(Bytes::from(t.clone()))
        }
    }
}

/// Sorted cut points in `0..=len`, both ends included.
fn cut_points(len: usize, cuts: &[f64]) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|c| (c * len as f64) as usize).collect();
    points.push(0);
    points.push(len);
    points.sort_unstable();
    points
}

/// Each piece of `data` in its own allocation, as a transport's received
/// pages would be, with the range of the stream it holds.
fn pages(data: &[u8], cuts: &[f64]) -> Vec<(Range<usize>, Bytes)> {
    cut_points(data.len(), cuts)
        .windows(2)
        .map(|w| (w[0]..w[1], Bytes::from(data[w[0]..w[1]].to_vec())))
        .collect()
}

/// The wire ranges of each frame (header and body) and of its body, in
/// order. `wire` holds whole frames only.
fn frames(wire: &[u8]) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < wire.len() {
        let (header, size) = if wire[at] & 0x02 != 0 {
            let size: [u8; 8] = wire[at + 1..at + 9].try_into().unwrap();
            (9, u64::from_be_bytes(size) as usize)
        } else {
            (2, usize::from(wire[at + 1]))
        };
        out.push((at..at + header + size, at + header..at + header + size));
        at += header + size;
    }
    out
}

/// Feeds pieces of `data` in the style `styles` picks for each (0: feed,
/// 1: recv_buf, 2: handle_input), collecting events as they come.
fn feed_styled(conn: &mut Connection, data: &[u8], cuts: &[f64], styles: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, (range, page)) in pages(data, cuts).into_iter().enumerate() {
        match styles.get(i % styles.len().max(1)).copied().unwrap_or(2) % 3 {
            0 => conn.feed(&data[range], Instant::now()),
            1 => {
                conn.recv_buf().extend_from_slice(&data[range]);
                conn.input_received(Instant::now());
            }
            _ => conn.handle_input(page, Instant::now()),
        }
        while let Some(ev) = conn.poll_event().expect("valid stream") {
            events.push(ev);
        }
    }
    events
}

/// An XSUB connection whose handshake with a scripted XPUB is done, so
/// that two of them produce the same bytes for the same calls.
fn scripted_xsub() -> Connection {
    let now = Instant::now();
    let mut conn = Connection::new(Config::new(SocketType::XSub), now).unwrap();
    conn.feed(&raw_greeting(3, 1, b"NULL"), now);
    conn.feed(&ready_frame(&[("Socket-Type", b"XPUB")]), now);
    assert_eq!(conn.poll_event(), Ok(Some(Event::HandshakeComplete)));
    conn
}

/// Writes all pending output the vectored way: `pending()` then
/// `advance_tx`, as the TCP transport does.
fn write_pending(conn: &mut Connection, out: &mut Vec<u8>) {
    while !conn.pending().is_empty() {
        let mut slices = [IoSlice::new(&[]); 16];
        let n = conn.pending().io_slices(&mut slices);
        let before = out.len();
        for slice in &slices[..n] {
            out.extend_from_slice(slice);
        }
        let written = out.len() - before;
        conn.advance_tx(written);
    }
}

fn page_size() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 1..16usize, 3 => 16..600usize, 3 => 600..9000usize]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn handle_input_decodes_as_recv_buf_does_and_slices_the_pages(
        items in vec(item(), 0..24),
        cuts in vec(0.0f64..1.0, 0..40),
        poll_each in any::<bool>(),
    ) {
        let (mut xsub, mut xpub) = connected_types(SocketType::XSub, SocketType::XPub);
        let expected = send_items(&mut xsub, &items);
        let wire = drain(&mut xsub);

        // The read-buffer path, all at once, as the reference.
        let (_, mut reference) = connected_types(SocketType::XSub, SocketType::XPub);
        reference.recv_buf().extend_from_slice(&wire);
        reference.input_received(Instant::now());
        let mut by_recv_buf = Vec::new();
        while let Some(ev) = reference.poll_event().unwrap() {
            by_recv_buf.push(ev);
        }
        prop_assert_eq!(&by_recv_buf, &expected);

        let pages = pages(&wire, &cuts);
        let mut got = Vec::new();
        for (_, page) in &pages {
            xpub.handle_input(page.clone(), Instant::now());
            if poll_each {
                while let Some(ev) = xpub.poll_event().unwrap() {
                    got.push(ev);
                }
            }
        }
        while let Some(ev) = xpub.poll_event().unwrap() {
            got.push(ev);
        }
        prop_assert_eq!(&got, &by_recv_buf);
        prop_assert_eq!(xpub.end_of_input(), None);

        // Every payload is the tail of its frame's body. It is a slice of
        // the page that holds the whole frame, and a copy (pointing into
        // no page) when the frame straddles pages.
        let frames = frames(&wire);
        let payloads = got.iter().flat_map(|ev| match ev {
            Event::Message(parts) => parts.iter().map(Part::to_bytes).collect(),
            Event::Subscribe(t) | Event::Cancel(t) => vec![t.clone()],
            Event::HandshakeComplete | Event::AuthRequest(_) | Event::Command { .. } => {
                unreachable!()
            }
        });
        let mut checked = 0;
        for (payload, (frame, body)) in payloads.zip(&frames) {
            checked += 1;
            if payload.is_empty() {
                continue;
            }
            let at = body.end - payload.len();
            let ptr = payload.as_ptr() as usize;
            let home = pages
                .iter()
                .find(|(range, _)| range.start <= frame.start && frame.end <= range.end);
            match home {
                Some((range, page)) => {
                    prop_assert_eq!(ptr, page.as_ptr() as usize + (at - range.start));
                }
                None => {
                    let in_a_page = pages.iter().any(|(_, page)| {
                        let base = page.as_ptr() as usize;
                        base <= ptr && ptr < base + page.len()
                    });
                    prop_assert!(!in_a_page, "a straddling frame is copied");
                }
            }
        }
        prop_assert_eq!(checked, frames.len());
    }

    #[test]
    fn input_styles_mix_in_any_order(
        items in vec(item(), 0..24),
        cuts in vec(0.0f64..1.0, 0..40),
        styles in vec(0u8..3, 1..8),
    ) {
        let (mut xsub, mut xpub) = connected_types(SocketType::XSub, SocketType::XPub);
        let expected = send_items(&mut xsub, &items);
        let wire = drain(&mut xsub);
        let got = feed_styled(&mut xpub, &wire, &cuts, &styles);
        prop_assert_eq!(got, expected);
        prop_assert_eq!(xpub.end_of_input(), None);
    }

    #[test]
    fn encode_into_pages_reproduce_the_pending_stream(
        items in vec(item(), 0..24),
        sizes in vec(page_size(), 1..16),
    ) {
        let mut by_pending = scripted_xsub();
        send_items(&mut by_pending, &items);
        let mut expected = Vec::new();
        write_pending(&mut by_pending, &mut expected);

        let mut by_pages = scripted_xsub();
        send_items(&mut by_pages, &items);
        let mut got = Vec::new();
        let mut page = vec![0u8; 9000];
        for size in sizes.iter().cycle() {
            let n = by_pages.encode_into(&mut page[..*size]);
            prop_assert!(n <= *size);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&page[..n]);
        }
        prop_assert!(by_pages.pending().is_empty());
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn output_styles_mix_in_any_order(
        items in vec(item(), 0..24),
        ops in vec((0u8..4, page_size()), 1..16),
    ) {
        let mut by_pending = scripted_xsub();
        send_items(&mut by_pending, &items);
        let mut expected = Vec::new();
        write_pending(&mut by_pending, &mut expected);

        // Queue and drain in turns, each turn taking some output in one
        // of four ways; what is left at the end goes out in pages.
        let mut mixed = scripted_xsub();
        let mut got = Vec::new();
        let mut page = vec![0u8; 9000];
        let mut ops = ops.iter().cycle();
        for item in &items {
            send_item(&mut mixed, item);
            let (kind, size) = *ops.next().unwrap();
            match kind {
                0 => {
                    let n = mixed.encode_into(&mut page[..size]);
                    got.extend_from_slice(&page[..n]);
                }
                1 => {
                    mixed.poll_transmit(&mut got, size);
                }
                2 => {
                    let mut first = [IoSlice::new(&[])];
                    if mixed.pending().io_slices(&mut first) == 1 {
                        let n = first[0].len().min(size);
                        got.extend_from_slice(&first[0][..n]);
                        mixed.advance_tx(n);
                    }
                }
                _ => {
                    if let Some(chunk) = mixed.pop_tx_chunk() {
                        got.extend_from_slice(&chunk);
                    }
                }
            }
        }
        loop {
            let n = mixed.encode_into(&mut page[..100]);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&page[..n]);
        }
        prop_assert!(mixed.pending().is_empty());
        prop_assert_eq!(got, expected);
    }

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
                    let parts: Vec<Part> = parts.iter().cloned().map(Part::from).collect();
                    xsub.send(&parts).unwrap();
                    // A single frame starting 0/1 reads as a 3.0 subscription.
                    expected.push(match &parts[..] {
                        [one] if one.first() == Some(&1) => Event::Subscribe(one.to_bytes().slice(1..)),
                        [one] if one.first() == Some(&0) => Event::Cancel(one.to_bytes().slice(1..)),
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
    fn greeting_survives_any_chunking(
        cuts in vec(0.0f64..1.0, 0..10),
        styles in vec(0u8..3, 1..4),
    ) {
        let mut input = raw_greeting(3, 1, b"NULL");
        input.extend_from_slice(&common::ready_frame(&[("Socket-Type", b"PUSH")]));
        let mut conn = Connection::new(Config::new(SocketType::Pull), Instant::now()).unwrap();
        let events = feed_in_pieces(&mut conn, &input, &cuts);
        prop_assert_eq!(events, vec![Event::HandshakeComplete]);
        let mut conn = Connection::new(Config::new(SocketType::Pull), Instant::now()).unwrap();
        let events = feed_styled(&mut conn, &input, &cuts, &styles);
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
        'feed: for (i, end) in points.into_iter().enumerate() {
            // Copied, or handed over as the caller's buffer.
            if i % 2 == 0 {
                conn.feed(&input[start..end], Instant::now());
            } else {
                conn.handle_input(Bytes::copy_from_slice(&input[start..end]), Instant::now());
            }
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
        // A header may have us set aside up to TRUSTED_FRAME (address
        // space; untouched pages cost no memory), never the size garbage
        // announces.
        let bound = fabriq_zmtp::frame::TRUSTED_FRAME + (64 << 10);
        prop_assert!(conn.recv_buf().capacity() < bound);
    }
}
