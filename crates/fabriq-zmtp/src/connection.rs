//! One ZMTP connection as a sans-IO state machine.
//!
//! The transport owns the socket; the [`Connection`] owns the protocol.
//! Bytes and time go in through `handle_*` methods, the socket's wishes
//! through `send`/`subscribe`/`cancel`, and events, bytes and deadlines
//! come out through `poll_*` methods; the [`Connection`] documentation
//! lists them all and the order to call them in.
//!
//! Nothing in here reads a clock, spawns a thread or touches a socket, so
//! the same engine runs over TCP, IPC, and fabric pages, and the tests can
//! drive it byte by byte.
//!
//! ```
//! use std::time::Instant;
//! use fabriq_zmtp::{Config, Connection, Event, SocketType};
//!
//! let now = Instant::now();
//! let mut push = Connection::new(Config::new(SocketType::Push), now).unwrap();
//! let mut pull = Connection::new(Config::new(SocketType::Pull), now).unwrap();
//!
//! // A loopback "transport": move bytes both ways until both are quiet.
//! fn pump(a: &mut Connection, b: &mut Connection, now: Instant) -> Vec<Event> {
//!     let mut events = Vec::new();
//!     fn transfer(from: &mut Connection, to: &mut Connection, now: Instant) {
//!         while let Some(chunk) = from.pop_tx_chunk() {
//!             to.feed(&chunk, now);
//!         }
//!     }
//!     for _ in 0..4 {
//!         transfer(a, b, now);
//!         transfer(b, a, now);
//!         while let Some(ev) = b.poll_event().unwrap() { events.push(ev); }
//!         while let Some(ev) = a.poll_event().unwrap() { events.push(ev); }
//!     }
//!     events
//! }
//! pump(&mut push, &mut pull, now);
//! assert!(push.is_ready() && pull.is_ready());
//! push.send(&[fabriq_zmtp::Part::from_static(b"hello")]).unwrap();
//! let events = pump(&mut push, &mut pull, now);
//! assert!(matches!(&events[..], [Event::Message(m)] if &m[0][..] == b"hello"));
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use smallvec::SmallVec;

use crate::auth::{AuthReply, AuthRequest};
use crate::command::Command;
use crate::encoder::Encoder;
use crate::error::{ProtocolError, UsageError};
use crate::frame::FrameDecoder;
use crate::greeting::{Greeting, GreetingDecoder, Version, OUR_VERSION};
use crate::mechanism::{
    CurveClient, CurveServer, Mechanism, MechanismConfig, NullMechanism, PlainClient, PlainServer,
};
use crate::part::Part;
use crate::properties::Properties;
use crate::socket_type::SocketType;

mod config;
mod events;
mod handshake;
mod input;
mod output;
mod timers;

pub use config::Config;

/// The frames of one message. One or two frames live inline (no
/// allocation beyond the payloads), and so do small payloads ([`Part`]).
pub type Multipart = SmallVec<[Part; 2]>;

/// Largest command accepted before the handshake completes. Handshake
/// commands are small; an unauthenticated peer gets no more.
pub const HANDSHAKE_MAX_COMMAND: u64 = 64 * 1024;

/// Default read size: how much spare room [`Connection::recv_buf`] makes.
pub const DEFAULT_READ_CHUNK: usize = 64 * 1024;

/// What the handshake told us about the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The ZMTP version both sides speak (3.0 or 3.1).
    pub version: Version,
    /// The peer's socket type.
    pub socket_type: SocketType,
    /// The peer's `Identity` (empty if it sent none).
    pub identity: Bytes,
    /// All metadata the peer sent, `X-` properties included.
    pub properties: Properties,
    /// The user id our authentication reply assigned (libzmq's `User-Id`
    /// message property); empty without one.
    pub user_id: Bytes,
    /// Metadata our authentication reply attached to the peer (libzmq
    /// merges ZAP reply metadata into the message properties).
    pub auth_metadata: Properties,
}

/// What the connection has for the socket pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake finished; [`Connection::peer`] now answers.
    HandshakeComplete,
    /// A complete message (all frames of it).
    Message(Multipart),
    /// The peer subscribed to a topic prefix (publishers only; both the
    /// 3.1 command and the 3.0 `0x01` frame arrive as this).
    Subscribe(Bytes),
    /// The peer cancelled one subscription (publishers only).
    Cancel(Bytes),
    /// The handshake is paused until [`Connection::auth_reply`] says
    /// whether the peer may in (only with [`Config::authenticate`]; see
    /// [`crate::auth`]). The handshake deadline still applies.
    AuthRequest(AuthRequest),
    /// After the handshake, a command this crate does not handle itself
    /// (not READY, ERROR, SUBSCRIBE, CANCEL, PING or PONG). libzmq ignores
    /// such commands and so should a caller that does not know them; a
    /// transport that extends ZMTP between its own peers (the fabric
    /// engine's credits) reads its own here. See
    /// [`Connection::send_command`].
    Command {
        /// The command's name.
        name: Bytes,
        /// Its body.
        body: Bytes,
    },
}

/// Where the authentication hook stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Auth {
    /// No request outstanding.
    Idle,
    /// [`Event::AuthRequest`] returned; no reply yet.
    Waiting,
    /// A reply is in, for the next `poll_event` to act on.
    Replied(AuthReply),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Greeting,
    Handshake,
    Active,
    Failed(ProtocolError),
}

/// The protocol state of one connection.
///
/// # Method grammar
///
/// As in quinn-proto, a method's name says what kind of call it is.
///
/// **Getters** (`&self`, no effect): [`is_ready`](Self::is_ready),
/// [`peer`](Self::peer), [`read_size`](Self::read_size),
/// [`pending`](Self::pending).
///
/// **`handle_*`: input, bytes and time.** These only store what they are
/// given; nothing is decoded until `poll_event`.
/// * [`handle_input`](Self::handle_input)`(Bytes, now)`: a buffer the
///   caller owns; frames inside it come out as slices of it.
/// * [`recv_buf`](Self::recv_buf) then
///   [`input_received`](Self::input_received)`(now)`: read straight into
///   the connection's buffer (the TCP and IPC path).
/// * [`feed`](Self::feed)`(&[u8], now)`: copy a slice in.
/// * [`end_of_input`](Self::end_of_input): the peer closed its side.
/// * [`handle_timeout`](Self::handle_timeout)`(now)`: time passed; may
///   queue a PING or fail the connection.
///
/// The three byte styles can be mixed, in any order (see `handle_input`).
/// `recv_buf`, `input_received` and `feed` keep their older names.
///
/// **Mutators: what the socket wants sent.** [`send`](Self::send),
/// [`subscribe`](Self::subscribe), [`cancel`](Self::cancel). They queue
/// output and nothing else. [`auth_reply`](Self::auth_reply) answers an
/// [`Event::AuthRequest`]; it only stores the answer, which the next
/// `poll_event` acts on.
///
/// **`poll_*`: output, events, bytes and deadlines.**
/// * [`poll_event`](Self::poll_event): decodes buffered input, one event
///   per call, `Ok(None)` when it needs more. It may queue output too
///   (handshake commands, PONG, an ERROR for a refused handshake).
/// * transmit, four views of one queue, freely mixed:
///   [`poll_transmit`](Self::poll_transmit)`(buf, max)` and
///   [`encode_into`](Self::encode_into)`(&mut [u8])` copy into a buffer the
///   caller provides (fixed-size pages); [`pending`](Self::pending) then
///   [`advance_tx`](Self::advance_tx) write vectored from the connection's
///   own buffers without a copy; [`pop_tx_chunk`](Self::pop_tx_chunk)
///   takes whole pieces.
/// * [`poll_timeout`](Self::poll_timeout): when `handle_timeout` is next
///   due.
///
/// # Order of calls
///
/// 1. [`new`](Self::new); our greeting is queued at once, so transmit
///    (step 4) right away.
/// 2. On input: one `handle_*` byte call, then `poll_event` until
///    `Ok(None)`, handing each event to the socket pattern. An `Err` means
///    the connection is dead: transmit what is queued (it may hold an
///    ERROR for the peer) and close.
/// 3. Mutators, whenever the socket has something to send (after
///    [`Event::HandshakeComplete`]).
/// 4. Transmit until nothing is pending, after each of steps 1, 2, 3 and
///    5, since all of them can queue output.
/// 5. Wait for input or `poll_timeout`, whichever is first; when the
///    deadline passes call `handle_timeout`, then transmit.
///
/// At end of stream, poll the remaining events first, then call
/// `end_of_input` to tell a clean close from a truncated one.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    state: State,
    greeting: GreetingDecoder,
    mechanism: Box<dyn Mechanism>,
    /// The mechanism's [`Mechanism::transforms_frames`], asked once when
    /// the handshake completes: whether frames go through seal/open.
    sealing: bool,
    /// Received bytes not yet decoded, from `recv_buf` and `feed`.
    rx: BytesMut,
    /// Buffers handed in with `handle_input`, not yet decoded. Their bytes
    /// come after those in `rx`; none is empty.
    owned: VecDeque<Bytes>,
    decoder: FrameDecoder,
    tx: Encoder,
    partial: Multipart,
    version: Option<Version>,
    peer: Option<PeerInfo>,
    replies: Vec<Command>,
    auth: Auth,
    /// The accepted authentication reply, for [`PeerInfo`].
    accepted: Option<AuthReply>,
    handshake_deadline: Option<Instant>,
    last_rx: Instant,
    next_ping: Option<Instant>,
    ping_unanswered_since: Option<Instant>,
    peer_ttl: Option<Duration>,
}

impl Connection {
    /// A new connection whose greeting is already queued for sending: the
    /// transport should write [`Connection::pending`] at once, without
    /// waiting for the peer's greeting (libzmq waits for ours).
    pub fn new(config: Config, now: Instant) -> Result<Connection, UsageError> {
        let ours = config.ready_properties()?;
        let mechanism: Box<dyn Mechanism> = match &config.mechanism {
            MechanismConfig::Null if config.authenticate => {
                Box::new(NullMechanism::with_auth(ours))
            }
            MechanismConfig::Null => Box::new(NullMechanism::new(ours)),
            MechanismConfig::PlainClient { username, password } => {
                if username.len() > 255 {
                    return Err(UsageError::InvalidCredentials(
                        "PLAIN user name longer than 255 bytes",
                    ));
                }
                if password.len() > 255 {
                    return Err(UsageError::InvalidCredentials(
                        "PLAIN password longer than 255 bytes",
                    ));
                }
                Box::new(PlainClient::new(ours, username.clone(), password.clone()))
            }
            MechanismConfig::PlainServer => Box::new(PlainServer::new(ours, config.authenticate)),
            MechanismConfig::CurveClient {
                server_public,
                keys,
            } => Box::new(CurveClient::new(ours, server_public, keys)),
            MechanismConfig::CurveServer { keys } => {
                Box::new(CurveServer::new(ours, keys, config.authenticate))
            }
        };
        Ok(Connection::with_mechanism(config, mechanism, now))
    }

    /// A new connection running `mechanism` (which must match
    /// `config.mechanism` on the wire).
    fn with_mechanism(config: Config, mechanism: Box<dyn Mechanism>, now: Instant) -> Connection {
        let mut tx = Encoder::new(config.by_ref_threshold);
        tx.push_raw(
            &Greeting {
                version: OUR_VERSION,
                mechanism: config.mechanism.name(),
                as_server: config.mechanism.as_server(),
            }
            .encode(),
        );
        Connection {
            decoder: FrameDecoder::new(config.max_msg_size, HANDSHAKE_MAX_COMMAND),
            handshake_deadline: config.handshake_ivl.map(|ivl| now + ivl),
            state: State::Greeting,
            greeting: GreetingDecoder::new(),
            mechanism,
            sealing: false,
            rx: BytesMut::new(),
            owned: VecDeque::new(),
            tx,
            partial: Multipart::new(),
            version: None,
            peer: None,
            replies: Vec::new(),
            auth: Auth::Idle,
            accepted: None,
            last_rx: now,
            next_ping: None,
            ping_unanswered_since: None,
            peer_ttl: None,
            config,
        }
    }

    /// Whether the handshake is complete and messages can flow.
    pub fn is_ready(&self) -> bool {
        self.state == State::Active
    }

    /// The peer's handshake metadata, once the handshake is complete.
    pub fn peer(&self) -> Option<&PeerInfo> {
        self.peer.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::frame::Frame;
    use crate::properties::Properties;

    const MESSAGE: &[u8] = b"\x07MESSAGE";
    const KEY: u8 = 0xA5;

    /// A test-only mechanism shaped like CURVE's frame transform: the NULL
    /// handshake, then every frame travels as a MESSAGE command holding a
    /// flags byte (bit0 MORE, bit1 COMMAND) and the body XORed with a key.
    #[derive(Debug)]
    struct Boxed {
        null: NullMechanism,
        sealed: Arc<AtomicUsize>,
        opened: Arc<AtomicUsize>,
        /// Refuse to seal (as CURVE must when its nonces run out).
        refuse: bool,
    }

    impl Mechanism for Boxed {
        fn start(&mut self, out: &mut Vec<Command>) -> Result<(), ProtocolError> {
            self.null.start(out)
        }

        fn on_command(
            &mut self,
            cmd: Command,
            out: &mut Vec<Command>,
        ) -> Result<Option<Properties>, ProtocolError> {
            self.null.on_command(cmd, out)
        }

        fn transforms_frames(&self) -> bool {
            true
        }

        fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
            self.sealed.fetch_add(1, Ordering::Relaxed);
            if self.refuse {
                return Err(ProtocolError::MalformedCommand {
                    command: "MESSAGE".into(),
                    reason: "cannot seal",
                });
            }
            let mut body = BytesMut::from(MESSAGE);
            body.extend_from_slice(&[u8::from(frame.more) | u8::from(frame.command) << 1]);
            body.extend(frame.data.iter().map(|b| b ^ KEY));
            Ok(Frame {
                more: false,
                command: true,
                data: body.freeze(),
            })
        }

        fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
            self.opened.fetch_add(1, Ordering::Relaxed);
            let bad = |reason| ProtocolError::MalformedCommand {
                command: "MESSAGE".into(),
                reason,
            };
            if !frame.command || frame.more {
                return Err(bad("not a single command frame"));
            }
            let rest = frame
                .data
                .strip_prefix(MESSAGE)
                .ok_or(bad("not a MESSAGE"))?;
            let (&flags, body) = rest.split_first().ok_or(bad("no flags"))?;
            Ok(Frame {
                more: flags & 1 != 0,
                command: flags & 2 != 0,
                data: body.iter().map(|b| b ^ KEY).collect(),
            })
        }
    }

    struct Counted {
        conn: Connection,
        sealed: Arc<AtomicUsize>,
        opened: Arc<AtomicUsize>,
    }

    fn boxed(socket_type: SocketType, now: Instant) -> Counted {
        boxed_with(Config::new(socket_type), false, now)
    }

    fn boxed_with(config: Config, refuse: bool, now: Instant) -> Counted {
        let (sealed, opened) = (Arc::default(), Arc::default());
        let mechanism = Boxed {
            null: NullMechanism::new(config.ready_properties().unwrap()),
            sealed: Arc::clone(&sealed),
            opened: Arc::clone(&opened),
            refuse,
        };
        Counted {
            conn: Connection::with_mechanism(config, Box::new(mechanism), now),
            sealed,
            opened,
        }
    }

    fn drain(conn: &mut Connection) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(chunk) = conn.pop_tx_chunk() {
            out.extend_from_slice(&chunk);
        }
        out
    }

    fn events(conn: &mut Connection) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(ev) = conn.poll_event().unwrap() {
            out.push(ev);
        }
        out
    }

    /// Cuts a byte stream into (flags, body) frames.
    fn frames(mut wire: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        while !wire.is_empty() {
            let flags = wire[0];
            assert_eq!(flags & crate::frame::FLAG_LONG, 0, "test frames are short");
            let len = usize::from(wire[1]);
            out.push((flags, wire[2..2 + len].to_vec()));
            wire = &wire[2 + len..];
        }
        out
    }

    fn handshake(a: &mut Counted, b: &mut Counted, now: Instant) {
        for _ in 0..3 {
            let ab = drain(&mut a.conn);
            let ba = drain(&mut b.conn);
            b.conn.feed(&ab, now);
            a.conn.feed(&ba, now);
            events(&mut a.conn);
            events(&mut b.conn);
        }
        assert!(a.conn.is_ready() && b.conn.is_ready());
        // The handshake itself is the mechanism's business: no hook ran.
        for side in [&*a, &*b] {
            assert_eq!(side.sealed.load(Ordering::Relaxed), 0);
            assert_eq!(side.opened.load(Ordering::Relaxed), 0);
        }
    }

    #[test]
    fn seal_and_open_carry_messages_and_commands() {
        let now = Instant::now();
        let mut xsub = boxed(SocketType::XSub, now);
        let mut xpub = boxed(SocketType::XPub, now);
        handshake(&mut xsub, &mut xpub, now);

        let parts = [
            Part::from_static(b"topic"),
            Part::new(),
            Part::from_static(b"body"),
        ];
        xsub.conn.send(&parts).unwrap();
        xsub.conn.subscribe(b"news").unwrap();
        assert_eq!(xsub.sealed.load(Ordering::Relaxed), 4);

        // On the wire: four single MESSAGE command frames, nothing in clear.
        let wire = drain(&mut xsub.conn);
        let sent = frames(&wire);
        assert_eq!(sent.len(), 4);
        for (flags, body) in &sent {
            assert_eq!(*flags, crate::frame::FLAG_COMMAND);
            assert!(body.starts_with(MESSAGE));
        }
        assert_eq!(&sent[0].1[MESSAGE.len()..], b"\x01\xd1\xca\xd5\xcc\xc6");
        assert_eq!(&sent[1].1[MESSAGE.len()..], b"\x01");
        assert_eq!(sent[3].1[MESSAGE.len()], 0x02);

        xpub.conn.feed(&wire, now);
        assert_eq!(
            events(&mut xpub.conn),
            vec![
                Event::Message(parts.iter().cloned().collect()),
                Event::Subscribe(Bytes::from_static(b"news")),
            ]
        );
        assert_eq!(xpub.opened.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_heartbeat_is_sealed_both_ways() {
        let now = Instant::now();
        let mut config = Config::new(SocketType::Pair);
        config.heartbeat_ivl = Some(Duration::from_secs(1));
        let mut a = boxed_with(config, false, now);
        let mut b = boxed(SocketType::Pair, now);
        handshake(&mut a, &mut b, now);
        // a's timer PINGs; b answers with a PONG; both go sealed.
        a.conn
            .handle_timeout(a.conn.poll_timeout().unwrap())
            .unwrap();
        assert_eq!(a.sealed.load(Ordering::Relaxed), 1);
        b.conn.feed(&drain(&mut a.conn), now);
        assert_eq!(events(&mut b.conn), vec![]);
        let pong = drain(&mut b.conn);
        assert!(frames(&pong)[0].1.starts_with(MESSAGE));
        a.conn.feed(&pong, now);
        assert_eq!(events(&mut a.conn), vec![]);
        assert_eq!(b.opened.load(Ordering::Relaxed), 1);
        assert_eq!(b.sealed.load(Ordering::Relaxed), 1);
        assert_eq!(a.opened.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_frame_that_does_not_open_fails_the_connection() {
        let now = Instant::now();
        let mut push = boxed(SocketType::Push, now);
        let mut pull = boxed(SocketType::Pull, now);
        handshake(&mut push, &mut pull, now);
        // A plain data frame, as a NULL peer would send it.
        pull.conn.feed(b"\x00\x02hi", now);
        assert!(matches!(
            pull.conn.poll_event(),
            Err(ProtocolError::MalformedCommand { .. })
        ));
        assert_eq!(pull.opened.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_frame_that_cannot_be_sealed_closes_the_connection() {
        let now = Instant::now();
        let mut push = boxed_with(Config::new(SocketType::Push), true, now);
        let mut pull = boxed(SocketType::Pull, now);
        handshake(&mut push, &mut pull, now);
        assert_eq!(
            push.conn.send(&[Part::from_static(b"x")]),
            Err(UsageError::Closed)
        );
        assert!(matches!(
            push.conn.poll_event(),
            Err(ProtocolError::MalformedCommand { .. })
        ));
        assert_eq!(
            push.conn.send(&[Part::from_static(b"x")]),
            Err(UsageError::Closed)
        );
        assert_eq!(push.sealed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn null_never_calls_the_hooks() {
        let now = Instant::now();
        let mut push = Connection::new(Config::new(SocketType::Push), now).unwrap();
        let mut pull = Connection::new(Config::new(SocketType::Pull), now).unwrap();
        for _ in 0..3 {
            pull.feed(&drain(&mut push), now);
            push.feed(&drain(&mut pull), now);
            events(&mut pull);
            events(&mut push);
        }
        assert!(push.is_ready() && pull.is_ready());
        assert!(!push.sealing && !pull.sealing);
    }
}
