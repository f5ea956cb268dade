//! The handshake state machines against a hostile peer, alone or as a
//! man in the middle of an honest one ([`handshake_null`],
//! [`handshake_plain`], [`handshake_curve`]).

use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::greeting::{Greeting, Version, GREETING_LEN};
use fabriq_zmtp::{
    AuthReply, Config, Connection, CurveKeyPair, CurveSecretKey, Event, MechanismConfig, Part,
    ProtocolError, SocketType,
};

use crate::{CURVE_CLIENT_SECRET, CURVE_SERVER_SECRET, PLAIN_PASSWORD, PLAIN_USER};

/// How many events one `poll_event` loop may yield for `input` bytes
/// before the state machine counts as looping.
fn event_bound(input: usize) -> usize {
    input + 16
}

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
