//! Security mechanisms: the handshake that runs after the greetings and
//! ends with both sides knowing each other's metadata.
//!
//! Each mechanism is one file implementing [`Mechanism`]: `null.rs`
//! (RFC 37 NULL), `plain.rs` (RFC 24 PLAIN), `curve.rs` (RFC 25/26
//! CurveZMQ). [`MechanismConfig`] says which one a connection runs and
//! with which credentials.
//!
//! A server-side mechanism that needs an authentication decision raises
//! an [`AuthRequest`] (see [`crate::auth`]); the connection pauses the
//! handshake until its owner answers, then calls
//! [`Mechanism::auth_allowed`] (a refusal is the connection's business).
//!
//! After the handshake a mechanism may also transform every frame:
//! CurveZMQ sends each frame as a MESSAGE command (`\x07MESSAGE`, an 8-byte
//! nonce, then a box holding a flags byte and the body). A mechanism that
//! does so answers `true` from [`Mechanism::transforms_frames`]; the
//! [`Connection`](crate::Connection) then passes every outgoing frame
//! through [`Mechanism::seal`] and every incoming frame through
//! [`Mechanism::open`], each from exactly one place in its frame path. NULL
//! and PLAIN answer `false`, and the connection never calls the hooks: the
//! NULL frame path is the same code as without them.

mod curve;
mod null;
mod plain;

use std::fmt;

pub use curve::{CurveClient, CurveServer};
pub use null::NullMechanism;
pub use plain::{PlainClient, PlainServer};
use zeroize::Zeroizing;

use crate::auth::{self, AuthRequest};
use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::greeting::MechanismName;
use crate::keys::{CurveKeyPair, CurvePublicKey};
use crate::properties::Properties;

/// Which mechanism a connection runs, in which role, with which
/// credentials. The greeting's mechanism name and as-server flag follow
/// from it.
#[derive(Clone, Default)]
pub enum MechanismConfig {
    /// NULL: no security (the default).
    #[default]
    Null,
    /// PLAIN client: sends a user name and password in clear (RFC 24).
    PlainClient {
        /// User name, at most 255 bytes.
        username: Vec<u8>,
        /// Password, at most 255 bytes; zeroed when dropped.
        password: Zeroizing<Vec<u8>>,
    },
    /// PLAIN server: checks user name and password through the
    /// authentication hook ([`crate::auth`]); without
    /// [`Config::authenticate`](crate::Config::authenticate) it refuses
    /// every client, as libzmq does without a ZAP handler.
    PlainServer,
    /// CURVE client (RFC 26): knows the server's long-term public key.
    CurveClient {
        /// The server's long-term public key.
        server_public: CurvePublicKey,
        /// Our long-term key pair.
        keys: CurveKeyPair,
    },
    /// CURVE server: accepts any client that knows its public key (the
    /// Stonehouse pattern), or asks the authentication hook with the
    /// client's long-term public key when
    /// [`Config::authenticate`](crate::Config::authenticate) is set.
    CurveServer {
        /// Our long-term key pair.
        keys: CurveKeyPair,
    },
}

impl MechanismConfig {
    /// A PLAIN client configuration.
    pub fn plain_client(username: impl Into<Vec<u8>>, password: impl Into<Vec<u8>>) -> Self {
        MechanismConfig::PlainClient {
            username: username.into(),
            password: Zeroizing::new(password.into()),
        }
    }

    /// The mechanism's name in the greeting.
    pub fn name(&self) -> MechanismName {
        match self {
            MechanismConfig::Null => MechanismName::Null,
            MechanismConfig::PlainClient { .. } | MechanismConfig::PlainServer => {
                MechanismName::Plain
            }
            MechanismConfig::CurveClient { .. } | MechanismConfig::CurveServer { .. } => {
                MechanismName::Curve
            }
        }
    }

    /// The greeting's as-server flag: set for PLAIN and CURVE servers.
    pub fn as_server(&self) -> bool {
        matches!(
            self,
            MechanismConfig::PlainServer | MechanismConfig::CurveServer { .. }
        )
    }
}

impl fmt::Debug for MechanismConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MechanismConfig::Null => f.write_str("Null"),
            MechanismConfig::PlainClient { username, .. } => f
                .debug_struct("PlainClient")
                .field("username", &String::from_utf8_lossy(username))
                .field("password", &"<secret>")
                .finish(),
            MechanismConfig::PlainServer => f.write_str("PlainServer"),
            MechanismConfig::CurveClient {
                server_public,
                keys,
            } => f
                .debug_struct("CurveClient")
                .field("server_public", server_public)
                .field("public", &keys.public)
                .finish_non_exhaustive(),
            MechanismConfig::CurveServer { keys } => f
                .debug_struct("CurveServer")
                .field("public", &keys.public)
                .finish_non_exhaustive(),
        }
    }
}

/// The error for an ERROR command from the peer: a ZAP status code as the
/// reason (what libzmq servers send when their ZAP handler refuses) is
/// [`ProtocolError::PeerRefusedAuth`], anything else
/// [`ProtocolError::PeerError`].
pub(crate) fn peer_error(reason: String) -> ProtocolError {
    match auth::status_in_reason(&reason) {
        Some(status) => ProtocolError::PeerRefusedAuth { status },
        None => ProtocolError::PeerError(reason),
    }
}

/// One side of a mechanism handshake.
pub trait Mechanism: fmt::Debug + Send {
    /// Commands to send as soon as the greetings have been exchanged. An
    /// error ends the connection (a CURVE client whose server key cannot
    /// make a box).
    fn start(&mut self, out: &mut Vec<Command>) -> Result<(), ProtocolError>;

    /// Handles one command from the peer during the handshake. Returns the
    /// peer's metadata once the handshake is complete, `None` while it
    /// goes on. Replies are pushed to `out`.
    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError>;

    /// Whether handshake commands reach [`Mechanism::on_command`] as
    /// [`Command::Other`] (name and raw body), ERROR excepted. CURVE needs
    /// this: its READY holds a box, not properties.
    fn raw_commands(&self) -> bool {
        false
    }

    /// An authentication request raised by the last [`Mechanism::start`]
    /// or [`Mechanism::on_command`], taken once. The connection asks after
    /// each of them; with a request it stops reading handshake input until
    /// its owner answers.
    fn take_auth_request(&mut self) -> Option<AuthRequest> {
        None
    }

    /// Goes on with the handshake after the owner allowed the peer (ZAP
    /// status 200). Returns the peer's metadata if that completes the
    /// handshake. (A refusal never reaches the mechanism: the connection
    /// sends the ERROR and fails.)
    fn auth_allowed(
        &mut self,
        _out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        Ok(None)
    }

    /// Whether [`Mechanism::seal`] and [`Mechanism::open`] must see every
    /// frame after the handshake. The connection asks once, when the
    /// handshake completes, and keeps the answer; with `false` (the
    /// default, NULL, PLAIN) it never calls the two hooks. A mechanism that
    /// overrides them must return `true` here.
    fn transforms_frames(&self) -> bool {
        false
    }

    /// Turns one outgoing frame, as the connection would send it, into the
    /// frame that goes on the wire. Called after the handshake for every
    /// data frame of a message and every command (SUBSCRIBE, CANCEL, PING,
    /// PONG), in order, when [`Mechanism::transforms_frames`] is `true`.
    ///
    /// `frame.command` and `frame.more` say what the frame is; the result
    /// may be of the other kind (CURVE sends a data frame, MORE flag
    /// included, as a single MESSAGE command frame). An error fails the
    /// connection.
    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }

    /// The inverse of [`Mechanism::seal`]: turns one frame decoded from
    /// the wire after the handshake into the frame the peer sealed, which
    /// the connection then handles as a command or message data. Called,
    /// in order, for every frame received after the handshake when
    /// [`Mechanism::transforms_frames`] is `true`. An error (a frame that
    /// does not open) fails the connection.
    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }
}
