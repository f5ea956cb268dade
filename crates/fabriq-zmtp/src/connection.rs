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
use std::mem;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use smallvec::SmallVec;

use crate::auth::{AuthReply, AuthRequest};
use crate::command::Command;
use crate::copies::{self, Site};
use crate::encoder::{Encoder, DEFAULT_BY_REF_THRESHOLD};
use crate::error::{ProtocolError, UsageError};
use crate::frame::{Frame, FrameDecoder};
use crate::greeting::{Greeting, GreetingDecoder, Version, OUR_VERSION};
use crate::mechanism::{
    CurveClient, CurveServer, Mechanism, MechanismConfig, NullMechanism, PlainClient, PlainServer,
};
use crate::part::Part;
use crate::properties::{Properties, IDENTITY, SOCKET_TYPE};
use crate::socket_type::SocketType;

/// The frames of one message. One or two frames live inline (no
/// allocation beyond the payloads), and so do small payloads ([`Part`]).
pub type Multipart = SmallVec<[Part; 2]>;

/// Largest command accepted before the handshake completes. Handshake
/// commands are small; an unauthenticated peer gets no more.
pub const HANDSHAKE_MAX_COMMAND: u64 = 64 * 1024;

/// Slack allowed for a command's name on top of the message size limit
/// (a SUBSCRIBE carries a topic up to the message size).
const COMMAND_OVERHEAD: u64 = 256;

/// Default read size: how much spare room [`Connection::recv_buf`] makes.
pub const DEFAULT_READ_CHUNK: usize = 64 * 1024;

/// How a connection presents itself and what it accepts.
#[derive(Debug, Clone)]
pub struct Config {
    /// Our socket type, announced in READY and checked against the peer's.
    pub socket_type: SocketType,
    /// Our routing id, announced by REQ, DEALER and ROUTER (at most 255
    /// bytes, not starting with a zero byte).
    pub identity: Bytes,
    /// Security mechanism, role and credentials. The greeting's mechanism
    /// name and as-server flag follow from it.
    pub mechanism: MechanismConfig,
    /// Whether to ask the owner to authenticate the peer
    /// ([`Event::AuthRequest`], answered with
    /// [`Connection::auth_reply`]): the PLAIN and CURVE server sides, and
    /// NULL (either side), as libzmq asks its ZAP handler. Set it when a
    /// ZAP handler runs (and, for NULL, a ZAP domain is set). Without it a
    /// CURVE server lets in every client that knows its key and NULL
    /// everyone, while a PLAIN server refuses everyone
    /// ([`ProtocolError::NoAuthenticator`]), all as libzmq 4.3 does with no
    /// ZAP handler. Ignored by PLAIN and CURVE clients.
    pub authenticate: bool,
    /// Application metadata sent in READY; names must start with `X-`.
    pub metadata: Properties,
    /// Largest data frame accepted (`ZMQ_MAXMSGSIZE`, which libzmq applies
    /// per frame). `None`: no limit.
    pub max_msg_size: Option<u64>,
    /// Time allowed for greeting and handshake (`ZMQ_HANDSHAKE_IVL`).
    pub handshake_ivl: Option<Duration>,
    /// Interval between our PINGs (`ZMQ_HEARTBEAT_IVL`). ZMTP 3.1 peers only.
    pub heartbeat_ivl: Option<Duration>,
    /// TTL announced in our PINGs (`ZMQ_HEARTBEAT_TTL`), in 100 ms steps.
    pub heartbeat_ttl: Option<Duration>,
    /// How long to wait for any traffic after a PING
    /// (`ZMQ_HEARTBEAT_TIMEOUT`). `None` uses `heartbeat_ivl`, as libzmq
    /// does when the option is unset.
    pub heartbeat_timeout: Option<Duration>,
    /// Spare read-buffer room made before each read.
    pub read_chunk: usize,
    /// Frame bodies of at least this size are sent by reference.
    pub by_ref_threshold: usize,
}

impl Config {
    /// Defaults as in libzmq: NULL mechanism, no size limit, a 30 s
    /// handshake limit, no heartbeats.
    pub fn new(socket_type: SocketType) -> Self {
        Config {
            socket_type,
            identity: Bytes::new(),
            mechanism: MechanismConfig::Null,
            authenticate: false,
            metadata: Properties::new(),
            max_msg_size: None,
            handshake_ivl: Some(Duration::from_secs(30)),
            heartbeat_ivl: None,
            heartbeat_ttl: None,
            heartbeat_timeout: None,
            read_chunk: DEFAULT_READ_CHUNK,
            by_ref_threshold: DEFAULT_BY_REF_THRESHOLD,
        }
    }

    fn ready_properties(&self) -> Result<Properties, UsageError> {
        if self.identity.len() > 255 {
            return Err(UsageError::InvalidIdentity("longer than 255 bytes"));
        }
        if self.identity.first() == Some(&0) {
            return Err(UsageError::InvalidIdentity(
                "starts with a zero byte (reserved for generated ids)",
            ));
        }
        let mut props = Properties::new();
        props.push(SOCKET_TYPE, self.socket_type.name())?;
        if self.socket_type.sends_identity() {
            props.push(IDENTITY, self.identity.clone())?;
        }
        for (name, value) in self.metadata.iter() {
            if !name.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("x-")) {
                return Err(UsageError::InvalidProperty {
                    name: name.to_string(),
                    reason: "application metadata names must start with X-",
                });
            }
            props.push(name, value.clone())?;
        }
        Ok(props)
    }
}

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

    // ---- input -----------------------------------------------------------

    /// The read buffer, with spare capacity for the next read. Append the
    /// bytes read (e.g. with `BufMut` methods) and call
    /// [`Connection::input_received`]. The spare room follows what has
    /// arrived: a frame that announces gigabytes gets buffer space only
    /// as its bytes come in.
    ///
    /// Buffers given to [`Connection::handle_input`] and not yet decoded
    /// are first copied into this buffer, so input stays in order however
    /// the styles are mixed.
    pub fn recv_buf(&mut self) -> &mut BytesMut {
        self.take_owned_input();
        let want = self.read_size();
        // Grow only when less than a read chunk is left: growing whenever
        // the spare room fell short of `want` let the allocator's doubling
        // overshoot the frame's trusted size. And not when more than a
        // chunk of a large frame is buffered and the room left holds its
        // rest: growing then moved all of it for its last few bytes (a
        // 300 kB frame moved 289 kB). A shorter read costs less than that
        // copy; for small frames the copy is the cheaper one.
        //
        // Between small frames, a buffer that cannot be reused in place is
        // read into until less than a quarter chunk is left: the frames
        // decoded from it are slices of it, and while any is still queued
        // growing allocates a new chunk, leaving the room left in this one
        // pinned, unused, by those frames. A receiver whose reads came in
        // a few kB at a time while its messages queued held a whole 64 KiB
        // chunk per read (libzmq's are 8 KiB).
        let chunk = self.config.read_chunk;
        let spare = self.rx.capacity() - self.rx.len();
        let rest_fits = self.rx.len() > chunk
            && self
                .decoder
                .missing(&self.rx)
                .is_some_and(|m| m > 0 && m <= spare);
        if spare < want.min(chunk) && !rest_fits {
            let before = self.rx.as_ptr();
            let tail_will_do = want <= chunk && spare >= chunk / 4;
            if !self.rx.try_reclaim(want) && !tail_will_do {
                self.rx.reserve(want);
            }
            // Growing moves what is buffered (the start of a frame) to the
            // new memory, or to the front of the old.
            if self.rx.as_ptr() != before {
                copies::count(Site::Regrow, self.rx.len());
            }
        }
        &mut self.rx
    }

    /// How many bytes the next read should ask for: one read chunk, or
    /// the rest of a large frame that is arriving, as far as the decoder
    /// trusts its announced size (see [`crate::frame::FrameDecoder`]).
    /// [`Connection::recv_buf`] leaves at least this much spare room, or
    /// at least a read chunk's worth, or the rest of a large frame.
    pub fn read_size(&self) -> usize {
        self.decoder.read_hint(&self.rx, self.config.read_chunk)
    }

    /// Records that bytes were appended to [`Connection::recv_buf`] at
    /// `now` (any traffic proves the peer alive).
    pub fn input_received(&mut self, now: Instant) {
        self.last_rx = now;
        self.ping_unanswered_since = None;
    }

    /// Copies `data` into the read buffer and records it: for transports
    /// that receive owned buffers, and for tests.
    pub fn feed(&mut self, data: &[u8], now: Instant) {
        self.take_owned_input();
        self.rx.extend_from_slice(data);
        copies::count(Site::Gather, data.len());
        self.input_received(now);
    }

    /// Hands over a buffer of received bytes that the caller owns (for
    /// example a registered page that a fabric transport received whole)
    /// and records it at `now`. Nothing is copied here: decoding happens
    /// in [`Connection::poll_event`], which returns every frame lying
    /// wholly inside `data` as a slice of it (`Bytes` sharing its memory),
    /// so the buffer stays alive as long as any such frame, or the
    /// connection, holds it. (A small message thus keeps its whole page:
    /// a transport that must recycle pages quickly copies such messages
    /// out.)
    ///
    /// A frame cut by the end of one buffer is assembled by copying, once
    /// the next buffer arrives: its bytes (and only its bytes) go to the
    /// internal read buffer, and decoding goes back to slicing the caller's
    /// buffers right after it. Size limits are checked on the header,
    /// before anything is copied.
    ///
    /// The input styles can be mixed at any point, even in the middle of
    /// a frame: bytes count in the order they were handed in. Calling
    /// [`Connection::recv_buf`] or [`Connection::feed`] while buffers from
    /// this method are still undecoded copies those into the read buffer
    /// first, so for zero copy poll events until `Ok(None)` before
    /// switching.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bytes::Bytes;
    /// use fabriq_zmtp::{Config, Connection, Event, SocketType};
    ///
    /// let now = Instant::now();
    /// let mut pull = Connection::new(Config::new(SocketType::Pull), now).unwrap();
    /// // A PUSH peer's greeting and READY, then two one-frame messages,
    /// // all in one received page.
    /// let mut wire = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1];
    /// wire.extend_from_slice(b"NULL");
    /// wire.resize(64, 0);
    /// wire.extend_from_slice(b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH");
    /// let at = wire.len();
    /// wire.extend_from_slice(b"\x00\x05hello\x00\x02hi");
    /// let page = Bytes::from(wire);
    ///
    /// pull.handle_input(page.clone(), now);
    /// assert_eq!(pull.poll_event(), Ok(Some(Event::HandshakeComplete)));
    /// let Ok(Some(Event::Message(m))) = pull.poll_event() else { panic!() };
    /// assert_eq!(&m[0][..], b"hello");
    /// assert_eq!(m[0].as_ptr(), page[at + 2..].as_ptr()); // a slice of the page
    /// assert!(matches!(pull.poll_event(), Ok(Some(Event::Message(_)))));
    /// assert_eq!(pull.poll_event(), Ok(None));
    /// ```
    pub fn handle_input(&mut self, data: Bytes, now: Instant) {
        if !data.is_empty() {
            self.owned.push_back(data);
        }
        self.input_received(now);
    }

    /// Moves undecoded [`Connection::handle_input`] buffers behind the read
    /// buffer's contents (a copy), before more bytes are appended there.
    fn take_owned_input(&mut self) {
        for data in self.owned.drain(..) {
            self.rx.extend_from_slice(&data);
            copies::count(Site::Gather, data.len());
        }
    }

    /// Received bytes not yet decoded, in both buffers.
    fn buffered(&self) -> usize {
        self.rx.len() + self.owned.iter().map(Bytes::len).sum::<usize>()
    }

    /// Tells the connection that the peer closed its side (end of stream),
    /// after every buffered event has been polled. Returns the
    /// [`ProtocolError::Truncated`] error if the stream stopped inside the
    /// greeting, the handshake, a frame or a multipart message, and `None`
    /// for a clean close between messages.
    pub fn end_of_input(&mut self) -> Option<ProtocolError> {
        let stage = match self.state {
            State::Failed(_) => return None,
            State::Greeting => "greeting",
            State::Handshake => "handshake",
            State::Active if self.buffered() > 0 => "frame",
            State::Active if !self.partial.is_empty() => "multipart message",
            State::Active => return None,
        };
        let error = ProtocolError::Truncated {
            stage,
            buffered: self.buffered(),
        };
        self.state = State::Failed(error.clone());
        Some(error)
    }

    /// The next event decoded from buffered input, `Ok(None)` if more input
    /// is needed. After an error the connection is dead and every call
    /// returns that error; queued output may hold an ERROR for the peer.
    pub fn poll_event(&mut self) -> Result<Option<Event>, ProtocolError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        self.step().inspect_err(|e| self.fail(e.clone()))
    }

    fn step(&mut self) -> Result<Option<Event>, ProtocolError> {
        loop {
            match self.state {
                State::Greeting => match self.next_greeting()? {
                    Some(g) => self.on_greeting(g)?,
                    None => return Ok(None),
                },
                State::Handshake => {
                    match mem::replace(&mut self.auth, Auth::Idle) {
                        Auth::Idle => {}
                        Auth::Waiting => {
                            // Paused until the owner answers; input waits.
                            self.auth = Auth::Waiting;
                            return Ok(None);
                        }
                        Auth::Replied(reply) => {
                            if reply.status_code != 200 {
                                return Err(ProtocolError::AuthFailed {
                                    status: reply.status_code,
                                    reason: reply.status_text,
                                });
                            }
                            self.accepted = Some(reply);
                            let done = self.mechanism.auth_allowed(&mut self.replies)?;
                            self.flush_replies();
                            if let Some(props) = done {
                                self.on_peer_ready(props)?;
                                return Ok(Some(Event::HandshakeComplete));
                            }
                            continue;
                        }
                    }
                    if let Some(request) = self.mechanism.take_auth_request() {
                        self.auth = Auth::Waiting;
                        return Ok(Some(Event::AuthRequest(request)));
                    }
                    let Some(frame) = self.next_frame()? else {
                        return Ok(None);
                    };
                    if !frame.command {
                        return Err(ProtocolError::DataBeforeHandshake);
                    }
                    if frame.more {
                        return Err(ProtocolError::MultipartCommand);
                    }
                    let cmd = if self.mechanism.raw_commands() {
                        Command::decode_raw(&frame.data)?
                    } else {
                        Command::decode(&frame.data)?
                    };
                    let done = self.mechanism.on_command(cmd, &mut self.replies)?;
                    self.flush_replies();
                    if let Some(props) = done {
                        self.on_peer_ready(props)?;
                        return Ok(Some(Event::HandshakeComplete));
                    }
                }
                State::Active => {
                    // Small data frames are copied out of the read buffer
                    // into their part (see `part.rs`); the rest are cut
                    // out of it.
                    let small = if !self.sealing && self.owned.is_empty() {
                        self.decoder.decode_small(&mut self.rx)
                    } else {
                        None
                    };
                    let (part, more) = match small {
                        Some(small) => small,
                        None => {
                            let Some(frame) = self.next_frame()? else {
                                return Ok(None);
                            };
                            let frame = self.open(frame)?;
                            if frame.command {
                                if frame.more {
                                    return Err(ProtocolError::MultipartCommand);
                                }
                                match self.on_command(Command::decode(&frame.data)?)? {
                                    Some(event) => return Ok(Some(event)),
                                    None => continue,
                                }
                            }
                            (Part::from(frame.data), frame.more)
                        }
                    };
                    self.partial.push(part);
                    if !more {
                        let msg = mem::take(&mut self.partial);
                        return Ok(Some(self.classify(msg)));
                    }
                }
                State::Failed(ref e) => return Err(e.clone()),
            }
        }
    }

    /// Feeds buffered input to the greeting decoder until the greeting is
    /// complete or the input runs out.
    fn next_greeting(&mut self) -> Result<Option<Greeting>, ProtocolError> {
        loop {
            let greeting = if !self.rx.is_empty() {
                let (used, greeting) = self.greeting.feed(&self.rx)?;
                self.rx.advance(used);
                greeting
            } else if let Some(front) = self.owned.front_mut() {
                let (used, greeting) = self.greeting.feed(front)?;
                front.advance(used);
                if front.is_empty() {
                    self.owned.pop_front();
                }
                greeting
            } else {
                return Ok(None);
            };
            if greeting.is_some() {
                return Ok(greeting);
            }
        }
    }

    /// The next complete frame of buffered input.
    #[inline]
    fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if self.owned.is_empty() {
            // Only the read buffer holds input: the stream path.
            return self.decoder.decode(&mut self.rx);
        }
        self.next_frame_from_owned()
    }

    /// The next frame when caller buffers are queued: sliced out of the
    /// first one when it holds the whole frame, else assembled in `rx`.
    fn next_frame_from_owned(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if self.rx.is_empty() {
            if let Some(front) = self.owned.front_mut() {
                if let Some(frame) = self.decoder.decode_bytes(front)? {
                    if front.is_empty() {
                        self.owned.pop_front();
                    }
                    return Ok(Some(frame));
                }
            }
            if self.owned.len() < 2 {
                // The frame goes on in a buffer yet to come; copy nothing
                // until then.
                return Ok(None);
            }
        }
        // The frame at the front continues into the next buffer (or began
        // in `rx`): copy exactly its bytes into `rx`, then cut it there.
        self.decoder.assemble(&mut self.rx, &mut self.owned)?;
        self.decoder.decode(&mut self.rx)
    }

    fn on_greeting(&mut self, peer: Greeting) -> Result<(), ProtocolError> {
        let ours = self.config.mechanism.name();
        if peer.mechanism != ours {
            return Err(ProtocolError::MechanismMismatch {
                ours,
                theirs: peer.mechanism,
            });
        }
        // The peer's as-server flag is not checked: libzmq 4.3 always
        // sends 0 there (zmtp_engine.cpp zeroes the 32 bytes after the
        // mechanism name) and picks its role from its own options. Two
        // clients or two servers fail later (unexpected HELLO, or the
        // handshake timer).
        self.version = Some(OUR_VERSION.negotiate(peer.version));
        self.state = State::Handshake;
        self.mechanism.start(&mut self.replies)?;
        self.flush_replies();
        Ok(())
    }

    fn on_peer_ready(&mut self, props: Properties) -> Result<(), ProtocolError> {
        let ours = self.config.socket_type;
        let raw_type = props
            .get(SOCKET_TYPE)
            .ok_or(ProtocolError::MissingSocketType)?;
        let theirs = SocketType::from_name(raw_type).ok_or_else(|| {
            ProtocolError::UnknownSocketType(String::from_utf8_lossy(raw_type).into_owned())
        })?;
        if !ours.is_compatible(theirs) {
            return Err(ProtocolError::IncompatibleSocketType { ours, theirs });
        }
        let identity = props.get(IDENTITY).cloned().unwrap_or_default();
        if identity.len() > 255 {
            return Err(ProtocolError::IdentityTooLong(identity.len()));
        }
        let version = self.peer_version();
        let (user_id, auth_metadata) = self
            .accepted
            .take()
            .map(|r| (r.user_id, r.metadata))
            .unwrap_or_default();
        self.peer = Some(PeerInfo {
            version,
            socket_type: theirs,
            identity,
            properties: props,
            user_id,
            auth_metadata,
        });
        self.state = State::Active;
        self.sealing = self.mechanism.transforms_frames();
        self.handshake_deadline = None;
        self.decoder.set_max_command(
            self.config
                .max_msg_size
                .map_or(u64::MAX, |m| m.saturating_add(COMMAND_OVERHEAD)),
        );
        if version.has_commands_3_1() {
            self.next_ping = self.config.heartbeat_ivl.map(|ivl| self.last_rx + ivl);
        }
        Ok(())
    }

    fn on_command(&mut self, cmd: Command) -> Result<Option<Event>, ProtocolError> {
        let ty = self.config.socket_type;
        let publisher = ty.is_publisher() && !ty.uses_groups();
        let radio = ty == SocketType::Radio;
        Ok(match cmd {
            Command::Ping { ttl, context } => {
                self.queue_command(&Command::Pong { context })?;
                self.peer_ttl = (ttl > 0).then(|| Duration::from_millis(u64::from(ttl) * 100));
                None
            }
            Command::Pong { .. } => None,
            Command::Subscribe(topic) if publisher => Some(Event::Subscribe(topic)),
            Command::Cancel(topic) if publisher => Some(Event::Cancel(topic)),
            Command::Subscribe(_) | Command::Cancel(_) => None,
            // A RADIO's peers join and leave groups; the pipe carries them
            // as subscriptions to the exact group.
            Command::Join(group) if radio => Some(Event::Subscribe(group)),
            Command::Leave(group) if radio => Some(Event::Cancel(group)),
            Command::Join(_) | Command::Leave(_) => None,
            Command::Error(reason) => return Err(ProtocolError::PeerError(reason)),
            Command::Ready(_) => return Err(ProtocolError::UnexpectedCommand("READY".into())),
            // Not ours: the caller decides (libzmq ignores them).
            Command::Other { name, body } => Some(Event::Command { name, body }),
        })
    }

    /// A publisher reads single-frame messages starting with 0x01/0x00 as
    /// ZMTP 3.0 subscriptions.
    #[inline]
    fn classify(&self, mut msg: Multipart) -> Event {
        let ty = self.config.socket_type;
        if ty.is_publisher() && !ty.uses_groups() && msg.len() == 1 {
            match msg[0].first() {
                Some(1) => return Event::Subscribe(msg.remove(0).into_bytes().slice(1..)),
                Some(0) => return Event::Cancel(msg.remove(0).into_bytes().slice(1..)),
                _ => {}
            }
        }
        Event::Message(msg)
    }

    /// Undoes the mechanism's transform on a frame received after the
    /// handshake: the one place where [`Mechanism::open`] is called.
    #[inline]
    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        if self.sealing {
            self.mechanism.open(frame)
        } else {
            Ok(frame)
        }
    }

    fn flush_replies(&mut self) {
        for cmd in self.replies.drain(..) {
            self.tx.push_command(&cmd);
        }
    }

    fn fail(&mut self, error: ProtocolError) {
        // Tell the peer why its handshake was refused, as RFC 37 allows.
        if self.state == State::Handshake {
            let reason = match &error {
                // The peer said why already.
                ProtocolError::PeerError(_) | ProtocolError::PeerRefusedAuth { .. } => None,
                // A temporary failure closes silently (RFC 27, libzmq).
                ProtocolError::AuthFailed { status: 300, .. } => None,
                // libzmq sends the bare status code, which libzmq clients
                // turn into HANDSHAKE_FAILED_AUTH.
                ProtocolError::AuthFailed { status, .. } => Some(status.to_string()),
                other => Some(other.to_string()),
            };
            if let Some(reason) = reason {
                self.tx.push_command(&Command::Error(reason));
            }
        }
        self.state = State::Failed(error);
    }

    // ---- authentication --------------------------------------------------

    /// Answers the [`Event::AuthRequest`] the connection is waiting on.
    /// Then call [`Connection::poll_event`]: with status 200 the handshake
    /// goes on (and may complete there); with 300, 400 or 500 it fails
    /// with [`ProtocolError::AuthFailed`], after queueing an ERROR whose
    /// reason is the status code (none for 300), as libzmq does.
    ///
    /// The reply's user id and metadata end up in [`PeerInfo`]. Fails
    /// with [`UsageError::NoAuthPending`] when no request is waiting
    /// (never asked, or answered already), [`UsageError::Closed`] when the
    /// connection has failed (the handshake timer may have run out), and
    /// [`UsageError::InvalidAuthStatus`] for a status code ZAP does not
    /// define (the request then stays open).
    pub fn auth_reply(&mut self, reply: AuthReply) -> Result<(), UsageError> {
        if matches!(self.state, State::Failed(_)) {
            return Err(UsageError::Closed);
        }
        if self.auth != Auth::Waiting {
            return Err(UsageError::NoAuthPending);
        }
        if !reply.is_valid_status() {
            return Err(UsageError::InvalidAuthStatus(reply.status_code));
        }
        self.auth = Auth::Replied(reply);
        Ok(())
    }

    // ---- output ----------------------------------------------------------

    fn check_sendable(&self) -> Result<(), UsageError> {
        match self.state {
            State::Active => Ok(()),
            State::Failed(_) => Err(UsageError::Closed),
            _ => Err(UsageError::NotReady),
        }
    }

    /// Queues a message (all its frames).
    ///
    /// Fails with [`UsageError::NotReady`] before the handshake, with
    /// [`UsageError::Closed`] once the connection has failed, and with
    /// [`UsageError::EmptyMessage`] for no frames. If the mechanism cannot
    /// seal a frame the connection fails ([`Connection::poll_event`] then
    /// says why) and this returns [`UsageError::Closed`]; frames of the
    /// message queued before that may still be written, as with any
    /// connection that dies mid-message.
    pub fn send(&mut self, parts: &[Part]) -> Result<(), UsageError> {
        self.check_sendable()?;
        let (last, rest) = parts.split_last().ok_or(UsageError::EmptyMessage)?;
        for part in rest {
            let queued = self.queue_data(part, true);
            self.or_close(queued)?;
        }
        let queued = self.queue_data(last, false);
        self.or_close(queued)
    }

    /// Queues one data frame after the handshake, sealed if the mechanism
    /// transforms frames.
    #[inline]
    fn queue_data(&mut self, body: &Part, more: bool) -> Result<(), ProtocolError> {
        if self.sealing {
            self.seal_and_queue(Frame {
                more,
                command: false,
                data: body.to_bytes(),
            })
        } else {
            self.tx.push_frame(body, more);
            Ok(())
        }
    }

    /// Queues one command after the handshake, sealed if the mechanism
    /// transforms frames. (Handshake commands are the mechanism's own and
    /// go out as they are.)
    #[inline]
    fn queue_command(&mut self, cmd: &Command) -> Result<(), ProtocolError> {
        if self.sealing {
            let mut body = BytesMut::with_capacity(cmd.encoded_len());
            cmd.encode(&mut body);
            self.seal_and_queue(Frame {
                more: false,
                command: true,
                data: body.freeze(),
            })
        } else {
            self.tx.push_command(cmd);
            Ok(())
        }
    }

    /// The one place where [`Mechanism::seal`] is called.
    fn seal_and_queue(&mut self, plain: Frame) -> Result<(), ProtocolError> {
        let wire = self.mechanism.seal(plain)?;
        self.tx.push_wire(&wire);
        Ok(())
    }

    /// A local sealing failure ends the connection; the caller sees
    /// [`UsageError::Closed`] and `poll_event` the reason.
    fn or_close(&mut self, queued: Result<(), ProtocolError>) -> Result<(), UsageError> {
        queued.map_err(|e| {
            self.fail(e);
            UsageError::Closed
        })
    }

    /// Queues a command of the caller's own (see [`Event::Command`]), after
    /// the handshake. The names this crate speaks itself (READY, ERROR,
    /// SUBSCRIBE, CANCEL, PING, PONG) and those of the security mechanisms
    /// are refused with [`UsageError::ReservedCommand`], as is a name longer
    /// than 255 bytes.
    pub fn send_command(&mut self, name: &[u8], body: Bytes) -> Result<(), UsageError> {
        const RESERVED: [&[u8]; 12] = [
            b"READY",
            b"ERROR",
            b"SUBSCRIBE",
            b"CANCEL",
            b"PING",
            b"PONG",
            b"HELLO",
            b"WELCOME",
            b"INITIATE",
            b"MESSAGE",
            b"JOIN",
            b"LEAVE",
        ];
        if name.is_empty()
            || name.len() > 255
            || RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
        {
            return Err(UsageError::ReservedCommand);
        }
        self.check_sendable()?;
        let cmd = Command::Other {
            name: Bytes::copy_from_slice(name),
            body,
        };
        let queued = self.queue_command(&cmd);
        self.or_close(queued)
    }

    /// Queues a subscription: a SUBSCRIBE command to a ZMTP 3.1 peer, the
    /// 3.0 `0x01 + topic` frame to a 3.0 peer.
    pub fn subscribe(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.subscription(topic, true)
    }

    /// Queues a cancellation, in the form the peer's version expects.
    pub fn cancel(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.subscription(topic, false)
    }

    fn subscription(&mut self, topic: &[u8], subscribe: bool) -> Result<(), UsageError> {
        self.check_sendable()?;
        let topic = Bytes::copy_from_slice(topic);
        if self.config.socket_type == SocketType::Dish {
            // libzmq's DISH sends JOIN/LEAVE commands whatever the peer's
            // version (there is no 3.0 form).
            let cmd = if subscribe {
                Command::Join(topic)
            } else {
                Command::Leave(topic)
            };
            let queued = self.queue_command(&cmd);
            return self.or_close(queued);
        }
        if self.peer_version().has_commands_3_1() {
            let cmd = if subscribe {
                Command::Subscribe(topic)
            } else {
                Command::Cancel(topic)
            };
            let queued = self.queue_command(&cmd);
            self.or_close(queued)
        } else {
            let mut frame = BytesMut::with_capacity(topic.len() + 1);
            frame.extend_from_slice(&[u8::from(subscribe)]);
            frame.extend_from_slice(&topic);
            let queued = self.queue_data(&Part::from(frame.freeze()), false);
            self.or_close(queued)
        }
    }

    /// The negotiated version (ours until the peer's greeting is in).
    fn peer_version(&self) -> Version {
        self.version.unwrap_or(OUR_VERSION)
    }

    /// Bytes waiting to be written, as pieces for a vectored write.
    pub fn pending(&self) -> &Encoder {
        &self.tx
    }

    /// Drops `n` bytes that the transport has written.
    pub fn advance_tx(&mut self, n: usize) {
        self.tx.advance(n);
    }

    /// Takes the next whole piece of output, for transports that move
    /// owned buffers.
    pub fn pop_tx_chunk(&mut self) -> Option<Bytes> {
        self.tx.pop_chunk()
    }

    /// Moves up to `max` bytes of pending output (greeting, commands,
    /// frames, in order) into `buf`, never more than `buf` has room for
    /// (`BufMut::remaining_mut`), and returns how many. `0` means nothing
    /// is pending, or no room. The bytes leave the same queue that
    /// [`Connection::pending`] shows and [`Connection::advance_tx`] and
    /// [`Connection::pop_tx_chunk`] consume, so the styles can be mixed:
    /// the stream is the same byte for byte. Every byte is copied, large
    /// bodies included; transports that can write from the connection's
    /// own buffers should prefer [`Connection::pending`].
    pub fn poll_transmit<B: BufMut + ?Sized>(&mut self, buf: &mut B, max: usize) -> usize {
        self.tx.copy_into(buf, max)
    }

    /// Fills `out` (say, a registered page of fixed size) with pending
    /// output and returns how many bytes were written at its start: all
    /// of `out` unless less was pending. The same as
    /// [`Connection::poll_transmit`] with `out` as the buffer.
    ///
    /// ```
    /// use std::time::Instant;
    /// use fabriq_zmtp::{Config, Connection, SocketType};
    ///
    /// let mut conn = Connection::new(Config::new(SocketType::Push), Instant::now()).unwrap();
    /// let mut page = [0u8; 48];
    /// let mut stream = Vec::new();
    /// loop {
    ///     let n = conn.encode_into(&mut page);
    ///     if n == 0 {
    ///         break;
    ///     }
    ///     stream.extend_from_slice(&page[..n]); // post the page
    /// }
    /// assert_eq!(stream.len(), 64); // the greeting, in two pages
    /// assert!(conn.pending().is_empty());
    /// ```
    pub fn encode_into(&mut self, out: &mut [u8]) -> usize {
        let mut dst = out;
        self.tx.copy_into(&mut dst, usize::MAX)
    }

    // ---- time ------------------------------------------------------------

    fn heartbeat_timeout(&self) -> Option<Duration> {
        self.config.heartbeat_timeout.or(self.config.heartbeat_ivl)
    }

    /// The next instant at which [`Connection::handle_timeout`] must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.state, State::Failed(_)) {
            return None;
        }
        [
            self.handshake_deadline,
            self.next_ping,
            self.ping_unanswered_since
                .zip(self.heartbeat_timeout())
                .map(|(t, d)| t + d),
            self.peer_ttl.map(|ttl| self.last_rx + ttl),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the timers due at `now`: sends PINGs, and fails the connection
    /// if the handshake or the peer's liveness ran out of time.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        let expired = if self.handshake_deadline.is_some_and(|d| now >= d) {
            Some(ProtocolError::HandshakeTimeout)
        } else if self
            .ping_unanswered_since
            .zip(self.heartbeat_timeout())
            .is_some_and(|(t, d)| now >= t + d)
        {
            Some(ProtocolError::HeartbeatExpired("timeout"))
        } else if self.peer_ttl.is_some_and(|ttl| now >= self.last_rx + ttl) {
            Some(ProtocolError::HeartbeatExpired("TTL"))
        } else {
            None
        };
        if let Some(error) = expired {
            self.fail(error.clone());
            return Err(error);
        }
        if let (Some(due), Some(ivl)) = (self.next_ping, self.config.heartbeat_ivl) {
            if now >= due {
                let ttl = self.config.heartbeat_ttl.map_or(0, |t| {
                    u16::try_from(t.as_millis() / 100).unwrap_or(u16::MAX)
                });
                let ping = Command::Ping {
                    ttl,
                    context: Bytes::new(),
                };
                if let Err(e) = self.queue_command(&ping) {
                    self.fail(e.clone());
                    return Err(e);
                }
                self.next_ping = Some(now + ivl);
                if self.ping_unanswered_since.is_none() {
                    self.ping_unanswered_since = Some(now);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
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
