//! The handshake: the peer's greeting, its READY, and the answer to an
//! authentication request.

use crate::auth::AuthReply;
use crate::error::{ProtocolError, UsageError};
use crate::greeting::{Greeting, OUR_VERSION};
use crate::properties::{Properties, IDENTITY, SOCKET_TYPE};
use crate::socket_type::SocketType;

use super::{Auth, Connection, PeerInfo, State};

/// Slack allowed for a command's name on top of the message size limit
/// (a SUBSCRIBE carries a topic up to the message size).
const COMMAND_OVERHEAD: u64 = 256;

impl Connection {
    pub(super) fn on_greeting(&mut self, peer: Greeting) -> Result<(), ProtocolError> {
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

    pub(super) fn on_peer_ready(&mut self, props: Properties) -> Result<(), ProtocolError> {
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

    /// Answers the [`Event::AuthRequest`](super::Event::AuthRequest) the connection is waiting on.
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
}
