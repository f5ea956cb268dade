//! The fabric engine's wire formats, as a hostile peer reaches them: the
//! page stream ([`fabric_pages`]) and the control channel's commands, the
//! rendezvous body and the READY fields ([`fabric_control`]).

use bytes::{Bytes, BytesMut};

use fabriq::fuzzing::{parse_control, parse_peer, Control, PageItem, PageReader, Rdv};
use fabriq_zmtp::frame::encode_header;
use fabriq_zmtp::{Part, Properties, ProtocolError};

/// Runs a page reader over `pages`; checks it ends and counts pages.
fn read_pages(
    pages: Vec<Bytes>,
    max_data: Option<u64>,
    publisher: bool,
) -> Result<Vec<PageItem>, ProtocolError> {
    let total = pages.len();
    let bytes: usize = pages.iter().map(Bytes::len).sum();
    let mut received: std::collections::VecDeque<Bytes> = pages.into();
    let mut reader = PageReader::new(max_data, publisher);
    let mut consumed = 0u32;
    let mut items = Vec::new();
    for _ in 0..=bytes + total {
        match reader.next(&mut received, &mut consumed)? {
            Some(item) => items.push(item),
            None => {
                assert!(received.is_empty() || received.iter().all(Bytes::is_empty));
                assert!(consumed as usize <= total, "more pages consumed than given");
                return Ok(items);
            }
        }
    }
    panic!("the page reader kept yielding items");
}

/// The fabric engine's page stream (`reactor/engine/fabric/wire.rs`).
///
/// Input: `[flags, page, rest...]`. `flags` bit 0: a publisher's reader;
/// bit 1: MAXMSGSIZE of `page * 16` bytes. `page % 200 + 1` is the page
/// size. Bit 2 clear: `rest` is a raw page stream cut into pages. Bit 2
/// set: `rest` describes messages (`[len, more, bytes...]` records, and
/// len 255 is a rendezvous frame made from the next 29 bytes), which
/// are encoded as the sender does, cut into pages, and must come back
/// as they went.
pub fn fabric_pages(data: &[u8]) {
    let [flags, page, rest @ ..] = data else {
        return;
    };
    let publisher = flags & 1 != 0;
    let max_data = (flags & 2 != 0).then(|| u64::from(*page) * 16);
    let page = usize::from(*page % 200) + 1;
    let cut =
        |wire: &[u8]| -> Vec<Bytes> { wire.chunks(page).map(Bytes::copy_from_slice).collect() };
    if flags & 4 == 0 {
        let _ = read_pages(cut(rest), max_data, publisher);
        return;
    }
    // Round trip.
    let mut wire = BytesMut::new();
    let mut want = Vec::new();
    let mut parts: Vec<Bytes> = Vec::new();
    let mut rest = rest;
    while let [len, more, tail @ ..] = rest {
        if *len == 255 {
            let Some(body) = tail.get(..29) else { break };
            let rdv = Rdv::decode(body).expect("29 bytes are an RDV");
            let body = rdv.encode();
            encode_header(&mut wire, body.len(), false, true);
            wire.extend_from_slice(&body);
            // (In the middle of a message the reader yields it and
            // keeps the parts so far for the message after it.)
            want.push(Err(rdv));
            rest = &tail[29..];
            continue;
        }
        let len = usize::from(*len).min(tail.len());
        let body = Bytes::copy_from_slice(&tail[..len]);
        let more = more & 1 != 0;
        encode_header(&mut wire, len, more, false);
        wire.extend_from_slice(&body);
        parts.push(body);
        if !more {
            want.push(Ok(std::mem::take(&mut parts)));
        }
        rest = &tail[len..];
    }
    let got = read_pages(cut(&wire), max_data, publisher);
    let too_big = |w: &Vec<Result<Vec<Bytes>, Rdv>>| {
        max_data.is_some_and(|m| {
            w.iter()
                .flatten()
                .flatten()
                .chain(parts.iter())
                .any(|p| p.len() as u64 > m)
        })
    };
    match got {
        Err(e) => assert!(too_big(&want), "a valid page stream was refused: {e}"),
        Ok(items) => {
            assert!(!too_big(&want), "a frame over MAXMSGSIZE got through");
            let got: Vec<Result<Vec<Bytes>, Rdv>> = items
                .into_iter()
                .map(|i| match i {
                    PageItem::Msg(m) => Ok(m.iter().map(Part::to_bytes).collect()),
                    PageItem::Rdv(r) => Err(r),
                    other => panic!("a data stream yielded {other:?}"),
                })
                .collect();
            // Rendezvous frames come out where they were.
            assert_eq!(got.len(), want.len());
            let mut want_msgs: Vec<Bytes> = Vec::new();
            let mut got_msgs: Vec<Bytes> = Vec::new();
            for (g, w) in got.iter().zip(&want) {
                match (g, w) {
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    (Ok(a), Ok(b)) => {
                        got_msgs.extend(a.iter().cloned());
                        want_msgs.extend(b.iter().cloned());
                    }
                    _ => panic!("items out of order: {got:?} vs {want:?}"),
                }
            }
            assert_eq!(got_msgs, want_msgs);
        }
    }
}

/// The fabric engine's control-channel commands, rendezvous body and
/// READY fields (`reactor/engine/fabric/wire.rs`).
///
/// Input: `[which, rest...]`. `which % 4`: 0, a control command named by
/// `rest[0] % 5` (CREDIT, FIN, RING, RDVDONE, or the rest up to a NUL) with
/// the remaining bytes as body; 1, an RDV body, which must round-trip;
/// 2, READY properties in wire form; 3, READY fields built from `rest`
/// (address bytes, token, window, page), which must parse back.
pub fn fabric_control(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            let Some((&n, body)) = rest.split_first() else {
                return;
            };
            let (name, body): (&[u8], &[u8]) = match n % 5 {
                0 => (b"CREDIT", body),
                1 => (b"FIN", body),
                2 => (b"RING", body),
                3 => (b"RDVDONE", body),
                _ => match body.iter().position(|b| *b == 0) {
                    Some(i) => (&body[..i], &body[i + 1..]),
                    None => (body, &[]),
                },
            };
            let parsed = parse_control(name, body);
            let count = <[u8; 4]>::try_from(body).ok().map(u32::from_be_bytes);
            let long = <[u8; 8]>::try_from(body).ok().map(u64::from_be_bytes);
            let want = match name {
                b"RING" => Some(Control::Ring),
                b"CREDIT" => count.map(Control::Credit),
                b"FIN" => long.map(Control::Fin),
                b"RDVDONE" => count.map(Control::RdvDone),
                _ => None,
            };
            assert_eq!(parsed, want);
        }
        1 => match Rdv::decode(rest) {
            Ok(rdv) => {
                assert_eq!(rest.len(), 29);
                let wire = rdv.encode();
                assert_eq!(&wire[..4], b"\x03RDV");
                assert_eq!(Rdv::decode(&wire[4..]), Ok(rdv));
                if rest[28] <= 1 {
                    assert_eq!(&wire[4..], rest);
                }
            }
            Err(_) => assert_ne!(rest.len(), 29),
        },
        2 => {
            if let Ok(props) = Properties::decode(&Bytes::copy_from_slice(rest)) {
                if let Ok(peer) = parse_peer(&props) {
                    assert!((64..=1 << 30).contains(&peer.page));
                    assert!((1..=1 << 16).contains(&peer.window));
                    assert!(!peer.address.is_empty() && peer.address.len() <= 256);
                    assert_ne!(peer.token, 0);
                    if let Some(name) = &peer.doorbell {
                        assert!(name.len() <= 128);
                        assert!(name
                            .bytes()
                            .all(|c| c.is_ascii_alphanumeric() || b":._-".contains(&c)));
                    }
                }
            }
        }
        _ => {
            let [t0, t1, w, p0, p1, address @ ..] = rest else {
                return;
            };
            let token = u64::from(u16::from_be_bytes([*t0, *t1])) << 40 | 0x5eed;
            let window = u32::from(*w);
            let page = usize::from(u16::from_be_bytes([*p0, *p1]));
            let hex: String = address.iter().map(|b| format!("{b:02x}")).collect();
            let mut props = Properties::new();
            let push = |props: &mut Properties, k: &str, v: String| {
                props.push(k, Bytes::from(v)).expect("a valid property");
            };
            push(&mut props, "X-Fabriq-Ofi-Address", hex);
            push(&mut props, "X-Fabriq-Ofi-Token", format!("{token:016x}"));
            push(&mut props, "X-Fabriq-Ofi-Window", window.to_string());
            push(&mut props, "X-Fabriq-Ofi-Page", page.to_string());
            match parse_peer(&props) {
                Ok(peer) => {
                    assert_eq!(peer.address, address);
                    assert_eq!((peer.token, peer.window, peer.page), (token, window, page));
                    assert!(peer.doorbell.is_none() && peer.read_max.is_none());
                }
                Err(why) => assert!(
                    page < 64 || window == 0 || address.is_empty() || address.len() > 256,
                    "valid READY fields refused: {why}"
                ),
            }
        }
    }
}
