//! The one error type of the protocol engine.
//!
//! Every way a peer's bytes can be wrong has its own variant, so the socket
//! layer can report *why* a connection was dropped (monitor events, logs)
//! and tests can assert on the exact failure.

use crate::greeting::MechanismName;
use crate::socket_type::SocketType;

/// A protocol failure on one connection.
///
/// Once a [`Connection`](crate::Connection) has returned one of these it is
/// dead: the transport should flush what is queued (it may hold an `ERROR`
/// command for the peer) and close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The first bytes are not a ZMTP 3.x signature (`0xFF`, 8 padding
    /// bytes, `0x7F`). ZMTP 1.0 peers and non-ZMTP traffic end here.
    #[error("bad greeting signature: byte {offset} is {found:#04x}, expected {expected:#04x}")]
    BadSignature {
        /// Offset of the offending byte in the greeting.
        offset: usize,
        /// The byte the peer sent.
        found: u8,
        /// The byte the signature requires.
        expected: u8,
    },
    /// The peer speaks a ZMTP major version below 3 (ZMTP 2.0 and older).
    #[error("unsupported ZMTP version {major}: fabriq speaks ZMTP 3.0 and 3.1")]
    UnsupportedVersion {
        /// The major version byte of the peer's greeting.
        major: u8,
    },
    /// The greeting names a mechanism that is not NULL, PLAIN or CURVE, or
    /// the name field is not a NUL-padded ASCII name.
    #[error("unknown security mechanism {0:?} in greeting")]
    UnknownMechanism(String),
    /// Both sides must use the same mechanism.
    #[error("security mechanism mismatch: we use {ours}, the peer uses {theirs}")]
    MechanismMismatch {
        /// Our configured mechanism.
        ours: MechanismName,
        /// The mechanism in the peer's greeting.
        theirs: MechanismName,
    },
    /// The mechanism is known but fabriq does not implement it yet.
    #[error("security mechanism {0} is not implemented")]
    MechanismNotSupported(MechanismName),
    /// The as-server byte of the greeting is neither 0 nor 1.
    #[error("invalid as-server flag {0:#04x} in greeting (must be 0 or 1)")]
    BadAsServer(u8),
    /// A frame announces more bytes than this connection accepts. Raised
    /// as soon as the header is read, before anything is allocated.
    #[error("frame of {size} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge {
        /// The size announced by the frame header.
        size: u64,
        /// The limit in force (max message size, or the handshake limit).
        limit: u64,
    },
    /// A command frame could not be parsed (name length past the end,
    /// empty name, body too short for the command...).
    #[error("malformed {command} command: {reason}")]
    MalformedCommand {
        /// Name of the command, or `"(unnamed)"` if the name itself is bad.
        command: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A metadata property in READY (or another handshake command) is
    /// malformed: name or value length past the end of the command, empty
    /// or non-ASCII name.
    #[error("malformed metadata property: {0}")]
    MalformedProperty(&'static str),
    /// A command frame had the MORE flag set.
    #[error("command frame with MORE flag set")]
    MultipartCommand,
    /// A data frame arrived before the handshake completed.
    #[error("data frame received before the handshake completed")]
    DataBeforeHandshake,
    /// A command that is not valid in this state (e.g. a second READY).
    #[error("unexpected {0} command")]
    UnexpectedCommand(String),
    /// The peer's READY has no `Socket-Type` property.
    #[error("peer did not send a Socket-Type property")]
    MissingSocketType,
    /// The peer's `Socket-Type` is not a ZMTP socket type name.
    #[error("peer sent unknown socket type {0:?}")]
    UnknownSocketType(String),
    /// The peer's socket type cannot talk to ours (e.g. PUB to PUSH).
    #[error("incompatible socket types: we are {ours}, the peer is {theirs}")]
    IncompatibleSocketType {
        /// Our socket type.
        ours: SocketType,
        /// The peer's socket type.
        theirs: SocketType,
    },
    /// The peer's `Identity` is longer than 255 bytes.
    #[error("peer identity of {0} bytes exceeds 255")]
    IdentityTooLong(usize),
    /// The peer sent an ERROR command.
    #[error("peer sent ERROR: {0}")]
    PeerError(String),
    /// The peer closed the stream in the middle of something: the greeting,
    /// the handshake, a frame or a multipart message.
    #[error("peer closed the connection in the middle of the {stage} ({buffered} bytes buffered)")]
    Truncated {
        /// What was cut short.
        stage: &'static str,
        /// Bytes received but not yet decoded.
        buffered: usize,
    },
    /// The handshake did not complete within the handshake interval.
    #[error("handshake did not complete in time")]
    HandshakeTimeout,
    /// No traffic arrived within the heartbeat timeout (after our PING) or
    /// the TTL the peer announced.
    #[error("peer went silent: heartbeat {0}")]
    HeartbeatExpired(&'static str),
    /// We refused the peer: the owner answered our authentication request
    /// with a failure (ZAP status 300, 400 or 500). The socket layer
    /// reports `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH` with `status`.
    #[error("authentication failed ({status}): {reason}")]
    AuthFailed {
        /// The ZAP status code.
        status: u16,
        /// The status text of the reply.
        reason: String,
    },
    /// The peer refused us: its ERROR carried a ZAP status code (300, 400,
    /// 500), which is what a libzmq server sends when its ZAP handler says
    /// no. The socket layer reports `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH`.
    #[error("the peer refused our credentials (ZAP status {status})")]
    PeerRefusedAuth {
        /// The ZAP status code the peer sent.
        status: u16,
    },
    /// A PLAIN server without an authenticator (libzmq: no ZAP handler)
    /// refuses every client.
    #[error("{0} server has no authenticator to check credentials with")]
    NoAuthenticator(MechanismName),
    /// A CURVE box did not open, or opened to the wrong contents: wrong
    /// keys, a tampered frame, a forged cookie or vouch.
    #[error("CURVE: {0}")]
    Cryptographic(&'static str),
    /// A CURVE short nonce that is not above the peer's previous one: a
    /// replayed or reordered command or MESSAGE.
    #[error("CURVE nonce {received} is not above the previous {last} (replayed or reordered)")]
    BadNonce {
        /// The nonce received.
        received: u64,
        /// The highest nonce seen before.
        last: u64,
    },
    /// Our CURVE nonce counter has run out (2^64 - 1 boxes sent).
    #[error("CURVE nonces exhausted")]
    NonceExhausted,
}

/// Errors from the local side's use of a [`Connection`](crate::Connection)
/// or [`Config`](crate::Config): not the peer's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Messages and subscriptions can only be sent once the handshake is
    /// complete.
    #[error("the handshake is not complete")]
    NotReady,
    /// The connection has failed; nothing more can be sent.
    #[error("the connection is closed")]
    Closed,
    /// An empty multipart message has no frames to send.
    #[error("a message needs at least one frame")]
    EmptyMessage,
    /// Identity must be at most 255 bytes and must not start with a zero
    /// byte (those are reserved for generated identities).
    #[error("invalid identity: {0}")]
    InvalidIdentity(&'static str),
    /// A metadata property name or value is not valid.
    #[error("invalid property {name:?}: {reason}")]
    InvalidProperty {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The configured mechanism is not implemented.
    #[error("security mechanism {0} is not implemented")]
    MechanismNotSupported(MechanismName),
    /// PLAIN user names and passwords are at most 255 bytes.
    #[error("invalid credentials: {0}")]
    InvalidCredentials(&'static str),
    /// [`Connection::auth_reply`](crate::Connection::auth_reply) without
    /// an [`Event::AuthRequest`](crate::Event::AuthRequest) waiting for it.
    #[error("no authentication request is waiting for a reply")]
    NoAuthPending,
    /// An authentication reply with a status code ZAP does not define
    /// (only 200, 300, 400 and 500 are).
    #[error("invalid ZAP status code {0} (must be 200, 300, 400 or 500)")]
    InvalidAuthStatus(u16),
    /// [`Connection::send_command`](crate::Connection::send_command) with
    /// a name ZMTP or a mechanism uses, or an empty or over-long name.
    #[error("command names of ZMTP and its mechanisms cannot be sent as application commands")]
    ReservedCommand,
}
