//! The bodies of fabriq's fuzz targets, one plain function each, taking
//! the fuzzer's bytes. `fuzz/fuzz_targets/*.rs` hands them to libFuzzer;
//! `tests/corpus.rs` replays every file under `fuzz/corpus/` through the
//! same functions under `cargo test`, so the corpus (seeds captured from
//! libzmq, and every crash found) is a regression suite without cargo-fuzz.
//!
//! Each function panics exactly when a property fails: no panic inside
//! fabriq, every error is an error (the state machines end in a stable
//! failed state, never loop, and the handshake deadline always ends a
//! handshake), and round trips (encode then decode) give back what went
//! in. [`TARGETS`] lists them; `docs/reliability.md` describes each input
//! layout.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::command::Command;
use fabriq_zmtp::frame::{encode_header, Frame, FrameDecoder};
use fabriq_zmtp::greeting::{Greeting, GreetingDecoder, MechanismName, Version, GREETING_LEN};
use fabriq_zmtp::{
    AuthReply, Config, Connection, CurveKeyPair, CurveSecretKey, Event, MechanismConfig, Part,
    Properties, ProtocolError, SocketType,
};

#[allow(dead_code, missing_docs)]
#[path = "../../fabriq-cli/src/format.rs"]
mod cli_format;
mod fabric_core;

pub use fabric_core::{fabric_flow, fabric_ready};

/// A target's body.
pub type Target = fn(&[u8]);

/// Every target: its name (the file under `fuzz/fuzz_targets/` and the
/// directory under `fuzz/corpus/`) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("greeting", greeting),
    ("frame", frame),
    ("handshake_null", handshake_null),
    ("handshake_plain", handshake_plain),
    ("handshake_curve", handshake_curve),
    ("fabric_pages", fabric_pages),
    ("fabric_control", fabric_control),
    ("fabric_ready", fabric_ready),
    ("fabric_flow", fabric_flow),
    ("endpoint", endpoint),
    ("socket_options", socket_options),
    ("cli_line", cli_line),
];

/// The CURVE server's fixed test secret key (the capture tool gives
/// libzmq the same keys, so captured HELLOs open here).
pub const CURVE_SERVER_SECRET: [u8; 32] = [0x11; 32];
/// The CURVE client's fixed test secret key.
pub const CURVE_CLIENT_SECRET: [u8; 32] = [0x22; 32];
/// The PLAIN credentials of the honest peers and the capture.
pub const PLAIN_USER: &[u8] = b"admin";
/// See [`PLAIN_USER`].
pub const PLAIN_PASSWORD: &[u8] = b"secret";

/// How many events one `poll_event` loop may yield for `input` bytes
/// before the state machine counts as looping.
fn event_bound(input: usize) -> usize {
    input + 16
}

// ---- greeting --------------------------------------------------------------

fn feed_greeting(data: &[u8], step: usize) -> Result<(usize, Option<Greeting>), ProtocolError> {
    let mut dec = GreetingDecoder::new();
    let mut used = 0;
    for chunk in data.chunks(step.max(1)) {
        let (n, g) = dec.feed(chunk)?;
        assert!(n <= chunk.len(), "greeting decoder took more than it got");
        used += n;
        assert_eq!(dec.received(), used);
        if g.is_some() {
            return Ok((used, g));
        }
        assert_eq!(n, chunk.len(), "an incomplete greeting left input behind");
    }
    Ok((used, None))
}

/// The greeting decoder: the same verdict for any chunking (libzmq sends
/// in stages), a greeting exactly when 64 valid bytes are in, and
/// decode(encode(g)) == g.
pub fn greeting(data: &[u8]) {
    let Some((&step, wire)) = data.split_first() else {
        return;
    };
    let whole = feed_greeting(wire, usize::MAX);
    let chunked = feed_greeting(wire, usize::from(step % 13) + 1);
    let bytewise = feed_greeting(wire, 1);
    assert_eq!(whole, chunked, "chunking changed the verdict");
    assert_eq!(whole, bytewise, "byte-by-byte changed the verdict");
    if let Ok((used, Some(g))) = whole {
        assert_eq!(used, GREETING_LEN);
        assert_eq!(feed_greeting(&g.encode(), usize::MAX), Ok((64, Some(g))));
    }
    if let Ok((_, None)) = whole {
        assert!(wire.len() < GREETING_LEN);
    }
    // A greeting built from the input's first bytes round-trips.
    if wire.len() >= 3 {
        let mechanism = match wire[2] % 3 {
            0 => MechanismName::Null,
            1 => MechanismName::Plain,
            _ => MechanismName::Curve,
        };
        let g = Greeting {
            version: Version {
                major: wire[0].max(3),
                minor: wire[1],
            },
            mechanism,
            as_server: wire[2] & 0x80 != 0,
        };
        assert_eq!(
            feed_greeting(&g.encode(), usize::from(step % 7) + 1),
            Ok((64, Some(g)))
        );
    }
}

// ---- frames, commands, properties --------------------------------------------

fn reencode(frame: &Frame) -> BytesMut {
    let mut wire = BytesMut::new();
    encode_header(&mut wire, frame.data.len(), frame.more, frame.command);
    wire.extend_from_slice(&frame.data);
    wire
}

/// The frame decoder, then the command and property parsers on what it
/// cut: `decode` (read buffer) and `decode_bytes` (caller's page) agree
/// frame by frame; every frame, command and property list re-encodes to
/// something that decodes to the same.
///
/// Input: `[max_data, max_command, stream...]`; a limit byte of 0 means
/// none (data) or 64 KiB (commands), else `n * 7` bytes.
pub fn frame(data: &[u8]) {
    let [max_data, max_command, wire @ ..] = data else {
        return;
    };
    let max_data = (*max_data != 0).then(|| u64::from(*max_data) * 7);
    let max_command = if *max_command == 0 {
        64 * 1024
    } else {
        u64::from(*max_command) * 7
    };
    let dec = FrameDecoder::new(max_data, max_command);
    let mut stream = BytesMut::from(wire);
    let mut page = Bytes::copy_from_slice(wire);
    let mut frames = 0;
    loop {
        let a = dec.decode(&mut stream);
        let b = dec.decode_bytes(&mut page);
        assert_eq!(a, b, "decode and decode_bytes disagree");
        assert_eq!(stream.len(), page.len());
        let Ok(Some(f)) = a else { break };
        frames += 1;
        assert!(frames <= wire.len(), "more frames than bytes");
        let limit = if f.command {
            Some(max_command)
        } else {
            max_data
        };
        assert!(limit.map_or(true, |l| f.data.len() as u64 <= l));
        let mut again = reencode(&f);
        assert_eq!(dec.decode(&mut again), Ok(Some(f.clone())));
        assert!(again.is_empty());
        if f.command {
            command(&f.data);
        } else {
            // Data frames are also fed to the property parser.
            properties(&f.data);
        }
    }
    // The whole stream as one command body, and as properties.
    command(&Bytes::copy_from_slice(wire));
    properties(&Bytes::copy_from_slice(wire));
}

fn command(body: &Bytes) {
    let raw = Command::decode_raw(body);
    let Ok(cmd) = Command::decode(body) else {
        return;
    };
    assert_eq!(cmd.name(), raw.as_ref().expect("decode ok, raw not").name());
    let mut wire = BytesMut::new();
    cmd.encode(&mut wire);
    assert_eq!(wire.len(), cmd.encoded_len());
    let back = Command::decode(&wire.freeze()).expect("a re-encoded command decodes");
    match (&cmd, &back) {
        // Reasons are cut to 255 bytes (and lossy UTF-8 can grow them).
        (Command::Error(r), Command::Error(_)) if r.len() > 255 => {}
        _ => assert_eq!(cmd, back),
    }
}

fn properties(src: &Bytes) {
    let Ok(props) = Properties::decode(src) else {
        return;
    };
    let mut wire = BytesMut::new();
    props.encode(&mut wire);
    assert_eq!(wire.len(), props.encoded_len());
    assert_eq!(&wire[..], &src[..], "properties re-encode byte for byte");
}

// ---- handshakes ------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mech {
    Null,
    Plain,
    Curve,
}

fn server_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_bytes(CURVE_SERVER_SECRET))
}

fn client_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_bytes(CURVE_CLIENT_SECRET))
}

fn mechanism(mech: Mech, server: bool) -> MechanismConfig {
    match (mech, server) {
        (Mech::Null, _) => MechanismConfig::Null,
        (Mech::Plain, false) => MechanismConfig::plain_client(PLAIN_USER, PLAIN_PASSWORD),
        (Mech::Plain, true) => MechanismConfig::PlainServer,
        (Mech::Curve, false) => MechanismConfig::CurveClient {
            server_public: server_keys().public,
            keys: client_keys(),
        },
        (Mech::Curve, true) => MechanismConfig::CurveServer {
            keys: server_keys(),
        },
    }
}

/// A type that may talk to `t`.
fn peer_type(t: SocketType) -> SocketType {
    use SocketType::*;
    match t {
        Pair => Pair,
        Pub | XPub => Sub,
        Sub | XSub => XPub,
        Req => Router,
        Rep => Dealer,
        Dealer => Router,
        Router => Dealer,
        Pull => Push,
        Push => Pull,
        Server => Client,
        Client => Server,
        Radio => Dish,
        Dish => Radio,
        Gather => Scatter,
        Scatter => Gather,
        Peer => Peer,
        Channel => Channel,
        // Not a ZMTP type (not in SocketType::ALL): it has no ZMTP peer.
        Stream => unreachable!("STREAM speaks no ZMTP"),
        Dgram => unreachable!("DGRAM speaks no ZMTP"),
    }
}

/// One side of a connection under test, with what the harness checks
/// across calls.
struct Side {
    conn: Connection,
    authenticate: bool,
    accept: bool,
    failed: Option<ProtocolError>,
    complete: bool,
    messages: Vec<Vec<Bytes>>,
    out: usize,
}

impl Side {
    fn new(config: Config, accept: bool, now: Instant) -> Side {
        Side {
            authenticate: config.authenticate,
            conn: Connection::new(config, now).expect("a valid test config"),
            accept,
            failed: None,
            complete: false,
            messages: Vec::new(),
            out: 0,
        }
    }

    /// Polls events until the connection wants input, answering auth
    /// requests; checks the loop ends and a failure stays.
    fn poll(&mut self, input: usize) {
        for _ in 0..event_bound(input) {
            match self.conn.poll_event() {
                Ok(None) => return,
                Ok(Some(event)) => {
                    assert!(self.failed.is_none(), "an event after an error");
                    match event {
                        Event::HandshakeComplete => {
                            assert!(!self.complete, "two HandshakeComplete events");
                            assert!(self.conn.is_ready() && self.conn.peer().is_some());
                            self.complete = true;
                        }
                        Event::AuthRequest(_) => {
                            assert!(!self.complete, "an auth request after the handshake");
                            let reply = if self.accept {
                                AuthReply::allow(Bytes::from_static(b"fuzz"))
                            } else {
                                AuthReply::deny("denied")
                            };
                            self.conn.auth_reply(reply).expect("an auth reply is taken");
                        }
                        Event::Message(m) => {
                            assert!(self.complete, "a message before the handshake");
                            assert!(!m.is_empty());
                            self.messages.push(m.iter().map(Part::to_bytes).collect());
                        }
                        Event::Subscribe(_) | Event::Cancel(_) | Event::Command { .. } => {
                            assert!(self.complete, "traffic before the handshake");
                        }
                    }
                }
                Err(e) => {
                    if let Some(prev) = &self.failed {
                        assert_eq!(prev, &e, "the error changed");
                    }
                    assert!(!self.conn.is_ready());
                    // Sticky: asking again gives the same error.
                    assert_eq!(self.conn.poll_event(), Err(e.clone()));
                    self.failed = Some(e);
                    return;
                }
            }
        }
        panic!("poll_event kept yielding events: a loop");
    }

    /// Takes everything the connection queued to send.
    fn take_output(&mut self) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Some(chunk) = self.conn.pop_tx_chunk() {
            self.out += chunk.len();
            out.push(chunk);
        }
        out
    }

    /// The checks at the end of a run: end of input and the handshake
    /// deadline end every connection that is not ready.
    fn finish(mut self, input: usize, now: Instant) {
        // Output stays proportional to input (a PONG per PING at most).
        assert!(
            self.out <= 8192 + 2 * input,
            "{} bytes out for {input} in",
            self.out
        );
        if self.conn.is_ready() {
            let sent = self.conn.send(&[Part::from_static(b"after")]);
            assert!(sent.is_ok(), "a ready connection refused to send: {sent:?}");
        } else if self.failed.is_none() {
            // Not ready, not failed: either the stream's end or the
            // handshake deadline must end it (one of them, by parity).
            if input % 2 == 0 {
                assert!(
                    matches!(
                        self.conn.end_of_input(),
                        Some(ProtocolError::Truncated { .. })
                    ),
                    "end of input mid-handshake is not an error"
                );
            } else {
                let late = now + Duration::from_secs(31);
                assert!(
                    self.conn.handle_timeout(late).is_err(),
                    "a handshake outlived its deadline"
                );
            }
            assert!(self.conn.poll_event().is_err());
        }
    }
}

/// A hostile peer against one handshake state machine.
///
/// Input: `[flags, type, chunk, peer bytes...]`. `flags`: bit 0 our side is
/// the server (PLAIN, CURVE), bit 1 a valid greeting for our mechanism
/// is sent before the peer bytes, bit 2 we authenticate (`authenticate`),
/// bit 3 authentication requests are accepted, bit 4 man-in-the-middle
/// mode (below). `type`: our socket type (modulo 11). `chunk`: the peer
/// bytes arrive in chunks of `chunk % 64 + 1` bytes, through `feed`
/// (even chunks) and `handle_input` (odd ones).
///
/// Man-in-the-middle mode runs an honest fabriq peer of the matching
/// role and type; the peer bytes are then edit operations on what it
/// sends us, two bytes each, `[op, arg]`: forward its next chunk as it is
/// (op 0-3), flip bit `arg % 8` of byte `op` in it (4-5), forward only its
/// first `arg` bytes (6), or inject `arg % 16` raw bytes from the input (7;
/// ops are `op % 8`). What we send reaches the peer unchanged. With no
/// edit but forwarding (and an accepting, authenticating server where
/// PLAIN needs one), both handshakes must complete and a message from the
/// peer must arrive whole.
fn handshake(mech: Mech, data: &[u8]) {
    let [flags, ty, chunk, rest @ ..] = data else {
        return;
    };
    let server = flags & 1 != 0 && mech != Mech::Null;
    let greet = flags & 2 != 0;
    let authenticate = flags & 4 != 0;
    let accept = flags & 8 != 0;
    let mitm = flags & 16 != 0;
    let socket_type = SocketType::ALL[usize::from(*ty) % SocketType::ALL.len()];
    let now = Instant::now();
    let mut config = Config::new(socket_type);
    config.mechanism = mechanism(mech, server);
    config.authenticate = authenticate;
    config.identity = Bytes::from_static(b"us");
    config.max_msg_size = Some(1 << 20);
    let mut us = Side::new(config, accept, now);
    if mitm {
        return man_in_the_middle(mech, server, socket_type, us, rest, now);
    }
    us.take_output();
    let mut fed = 0;
    if greet {
        let g = Greeting {
            version: Version { major: 3, minor: 1 },
            mechanism: mechanism(mech, !server).name(),
            as_server: mech != Mech::Null && !server,
        };
        us.conn.feed(&g.encode(), now);
        fed += GREETING_LEN;
        us.poll(GREETING_LEN);
        us.take_output();
    }
    let step = usize::from(*chunk % 64) + 1;
    for (i, piece) in rest.chunks(step).enumerate() {
        if i % 2 == 0 {
            us.conn.feed(piece, now);
        } else {
            us.conn.handle_input(Bytes::copy_from_slice(piece), now);
        }
        fed += piece.len();
        us.poll(piece.len());
        us.take_output();
    }
    us.finish(fed, now);
}

fn man_in_the_middle(
    mech: Mech,
    server: bool,
    socket_type: SocketType,
    mut us: Side,
    ops: &[u8],
    now: Instant,
) {
    let mut config = Config::new(peer_type(socket_type));
    config.mechanism = mechanism(mech, !server);
    // The honest peer accepts us wherever it is asked.
    config.authenticate = mech == Mech::Plain && !server;
    config.identity = Bytes::from_static(b"peer");
    let mut peer = Side::new(config, true, now);
    let mut honest = true;
    let mut fed = 0;
    let mut queue: std::collections::VecDeque<Bytes> = peer.take_output().into();
    for chunk in us.take_output() {
        peer.conn.feed(&chunk, now);
        peer.poll(chunk.len());
    }
    let mut ops = ops.chunks_exact(2);
    let mut sent_message = false;
    // Rounds: apply one edit to the peer's next chunk, deliver, let both
    // sides answer. When the ops run out the rest goes unedited.
    // Enough rounds to apply every edit and then finish unedited.
    for _ in 0..ops.len() + 64 {
        let op = ops.next();
        if queue.is_empty() {
            queue.extend(peer.take_output());
        }
        if queue.is_empty() && op.is_none() {
            if peer.complete && !sent_message && peer.failed.is_none() {
                // Once both are up: one message from the peer.
                let _ = peer.conn.send(&[Part::from_static(b"hello"), Part::new()]);
                sent_message = true;
                continue;
            }
            break;
        }
        let piece: Option<Vec<u8>> = match op {
            None | Some([0..=3, _]) => queue.pop_front().map(|b| b.to_vec()),
            Some([op, arg]) => match op % 8 {
                4 | 5 => queue.pop_front().map(|b| {
                    let mut b = b.to_vec();
                    let at = usize::from(*op) % b.len().max(1);
                    if let Some(x) = b.get_mut(at) {
                        *x ^= 1 << (arg % 8);
                        honest = false;
                    }
                    b
                }),
                6 => queue.pop_front().map(|b| {
                    let keep = usize::from(*arg).min(b.len());
                    honest &= keep == b.len();
                    b[..keep].to_vec()
                }),
                7 => {
                    let n = usize::from(arg % 16);
                    let junk: Vec<u8> = ops.by_ref().flatten().take(n).copied().collect();
                    honest &= junk.is_empty();
                    Some(junk)
                }
                _ => queue.pop_front().map(|b| b.to_vec()),
            },
            Some(_) => unreachable!("chunks_exact(2)"),
        };
        if let Some(piece) = piece {
            fed += piece.len();
            us.conn.feed(&piece, now);
            us.poll(piece.len());
        }
        for chunk in us.take_output() {
            peer.conn.feed(&chunk, now);
            peer.poll(chunk.len());
        }
    }
    let may_complete = match (mech, server) {
        (Mech::Plain, true) => us.authenticate && us.accept,
        (Mech::Plain | Mech::Curve, false) => true,
        _ => !us.authenticate || us.accept,
    };
    if honest && may_complete && ops.next().is_none() {
        assert!(
            us.complete && peer.complete,
            "an honest {mech:?} exchange did not complete: us {:?}, peer {:?}",
            us.failed,
            peer.failed
        );
        assert_eq!(
            us.messages,
            vec![vec![Bytes::from_static(b"hello"), Bytes::new()]],
            "the peer's message did not arrive whole"
        );
    }
    us.finish(fed, now);
}

/// [`handshake`] for NULL (either side).
pub fn handshake_null(data: &[u8]) {
    handshake(Mech::Null, data);
}

/// [`handshake`] for PLAIN (client or server).
pub fn handshake_plain(data: &[u8]) {
    handshake(Mech::Plain, data);
}

/// [`handshake`] for CURVE (client or server), with the fixed test keys.
pub fn handshake_curve(data: &[u8]) {
    handshake(Mech::Curve, data);
}

// ---- fabric ----------------------------------------------------------------

use fabriq::fuzzing::{parse_control, parse_peer, Control, PageItem, PageReader, Rdv};

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
                    for name in [&peer.doorbell, &peer.spinners].into_iter().flatten() {
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

// ---- endpoints and options ---------------------------------------------------

/// Endpoint strings as `bind` (`data[0]` odd) and `connect` check them:
/// an accepted endpoint reads back as `scheme://address`, a refused one
/// fails with EINVAL, EPROTONOSUPPORT or ENAMETOOLONG.
pub fn endpoint(data: &[u8]) {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    match fabriq::fuzzing::parse_endpoint(&text, mode & 1 != 0) {
        Ok((scheme, address)) => assert_eq!(format!("{scheme}://{address}"), text),
        Err(e) => assert!(
            matches!(
                e,
                fabriq::Error::EINVAL
                    | fabriq::Error::EPROTONOSUPPORT
                    | fabriq::Error::ENAMETOOLONG
            ),
            "{text:?}: {e:?}"
        ),
    }
}

thread_local! {
    static CONTEXT: &'static fabriq::Context = Box::leak(Box::new(fabriq::Context::new()));
}

/// Socket options that parse bytes or text, on a fresh socket each run:
/// the CURVE keys (32 bytes or Z85), identity, subscriptions, PLAIN
/// credentials, ZAP domain, metadata, XPUB welcome message; and Z85.
/// A setter that accepts a value must give it back from its getter;
/// Z85 round-trips both ways.
///
/// Input: `[option, value...]`, option `% 10`.
pub fn socket_options(data: &[u8]) {
    let Some((&which, value)) = data.split_first() else {
        return;
    };
    let text = std::str::from_utf8(value).ok();
    let ty = match which % 10 {
        3 => fabriq::SUB,
        9 => fabriq::XPUB,
        _ => fabriq::DEALER,
    };
    let socket = CONTEXT.with(|c| c.socket(ty)).expect("a socket");
    match which % 10 {
        k @ 0..=2 => {
            type Set = fn(&fabriq::Socket, &[u8]) -> fabriq::Result<()>;
            type Get = fn(&fabriq::Socket) -> fabriq::Result<Vec<u8>>;
            let (set, get): (Set, Get) = match k {
                0 => (
                    fabriq::Socket::set_curve_publickey,
                    fabriq::Socket::get_curve_publickey,
                ),
                1 => (
                    fabriq::Socket::set_curve_secretkey,
                    fabriq::Socket::get_curve_secretkey,
                ),
                _ => (
                    fabriq::Socket::set_curve_serverkey,
                    fabriq::Socket::get_curve_serverkey,
                ),
            };
            let want: Option<Vec<u8>> = match value.len() {
                32 => Some(value.to_vec()),
                40 | 41 if value.len() == 40 || value[40] == 0 => std::str::from_utf8(&value[..40])
                    .ok()
                    .and_then(|t| fabriq::z85_decode(t).ok()),
                _ => None,
            };
            match set(&socket, value) {
                Ok(()) => {
                    assert_eq!(Some(get(&socket).expect("get")), want);
                    assert_eq!(socket.get_mechanism(), Ok(fabriq::Mechanism::ZMQ_CURVE));
                }
                Err(e) => {
                    assert_eq!(e, fabriq::Error::EINVAL);
                    assert_eq!(want, None, "a valid key refused");
                }
            }
        }
        3 => {
            assert_eq!(socket.set_subscribe(value), Ok(()));
            assert_eq!(socket.set_unsubscribe(value), Ok(()));
        }
        4 => {
            let valid = (1..=255).contains(&value.len()) && value[0] != 0;
            match socket.set_identity(value) {
                Ok(()) => {
                    assert!(valid);
                    assert_eq!(socket.get_identity(), Ok(value.to_vec()));
                }
                Err(e) => assert!(!valid && e == fabriq::Error::EINVAL),
            }
        }
        5 | 6 => {
            let Some(text) = text else { return };
            type Set = fn(&fabriq::Socket, Option<&str>) -> fabriq::Result<()>;
            type Get = fn(&fabriq::Socket) -> fabriq::Result<Result<String, Vec<u8>>>;
            let (set, get): (Set, Get) = if which % 10 == 5 {
                (
                    fabriq::Socket::set_plain_username,
                    fabriq::Socket::get_plain_username,
                )
            } else {
                (
                    fabriq::Socket::set_plain_password,
                    fabriq::Socket::get_plain_password,
                )
            };
            match set(&socket, Some(text)) {
                Ok(()) => {
                    assert!((1..=255).contains(&text.len()));
                    assert_eq!(get(&socket), Ok(Ok(text.to_string())));
                }
                Err(e) => assert!(e == fabriq::Error::EINVAL && !(1..=255).contains(&text.len())),
            }
        }
        7 => {
            let Some(text) = text else { return };
            match socket.set_zap_domain(text) {
                Ok(()) => assert_eq!(socket.get_zap_domain(), Ok(Ok(text.to_string()))),
                Err(e) => assert!(e == fabriq::Error::EINVAL && text.len() > 255),
            }
            let (name, value) = text.split_once('=').unwrap_or((text, ""));
            let _ = socket.set_metadata(name, value.as_bytes());
        }
        8 => {
            if let Some(text) = text {
                if let Ok(bytes) = fabriq::z85_decode(text) {
                    assert_eq!(fabriq::z85_encode(&bytes).ok().as_deref(), Some(text));
                }
            }
            match fabriq::z85_encode(value) {
                Ok(t) => assert_eq!(fabriq::z85_decode(&t).ok().as_deref(), Some(value)),
                Err(_) => assert_ne!(value.len() % 4, 0),
            }
        }
        _ => {
            let _ = socket.set_xpub_welcome_msg(text);
        }
    }
}

// ---- the CLI's line formats ---------------------------------------------------

/// The CLI's line codec (`fabriq-cli/src/format.rs`): a line it reads
/// as frames writes back as a line that reads as the same frames.
///
/// Input: `[format, sep, flags, line...]`: format `% 4` (text, hex,
/// base64, json), separator `% 5` (tab, none, space, comma, `::`), flags
/// bit 0 routing id first, bit 1 subscription marks.
pub fn cli_line(data: &[u8]) {
    use cli_format::{Codec, Format};
    let [format, sep, flags, line @ ..] = data else {
        return;
    };
    let format =
        [Format::Text, Format::Hex, Format::Base64, Format::Json][usize::from(*format % 4)];
    let sep = ["\t", "", " ", ",", "::"][usize::from(*sep % 5)];
    let mut codec = Codec::new(format, sep);
    codec.identity_first = flags & 1 != 0;
    codec.marks_in = flags & 2 != 0;
    codec.marks_out = flags & 2 != 0;
    let Ok(frames) = codec.decode(line) else {
        return;
    };
    let mut out = Vec::new();
    codec.encode(&frames, &mut out);
    let again = codec.decode(&out);
    if sep.is_empty() && frames.len() > 1 {
        return;
    }
    assert_eq!(again.as_ref(), Ok(&frames), "line {out:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no edits the man-in-the-middle harness asserts that every
    /// mechanism, role and socket type completes its handshake and
    /// delivers a message (the target panics otherwise).
    #[test]
    fn honest_exchanges_complete_for_every_mechanism_role_and_type() {
        for ty in 0..11u8 {
            for flags in [16u8, 16 | 1, 16 | 4 | 8, 16 | 1 | 4 | 8] {
                handshake_null(&[flags, ty, 0]);
                handshake_plain(&[flags, ty, 0]);
                handshake_curve(&[flags, ty, 0]);
            }
        }
    }

    /// The captured libzmq seeds reach past the handshake: a libzmq
    /// DEALER's NULL and PLAIN streams, fed to our ROUTER, complete the
    /// handshake and deliver the four messages the capture sent.
    #[test]
    fn captured_libzmq_streams_complete_at_our_side() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus");
        for (mech, file) in [
            (Mech::Null, "handshake_null/capture-null-dealer-router-c2s"),
            (
                Mech::Plain,
                "handshake_plain/capture-plain-dealer-router-c2s",
            ),
        ] {
            let data = std::fs::read(format!("{root}/{file}")).expect(file);
            let now = Instant::now();
            let mut config = Config::new(SocketType::Router);
            config.mechanism = mechanism(mech, mech == Mech::Plain);
            config.authenticate = true;
            let mut us = Side::new(config, true, now);
            us.conn.feed(&data[3..], now);
            us.poll(data.len());
            assert!(us.complete, "{file}: {:?}", us.failed);
            assert_eq!(us.messages.len(), 4, "{file}");
            assert_eq!(us.messages[1], [&b"multi"[..], b"part", b""], "{file}");
        }
    }
}
