//! The authentication hook: how a connection asks its owner whether a peer
//! may in, without doing any I/O itself.
//!
//! libzmq asks a ZAP handler (RFC 27, over `inproc://zeromq.zap.01`). A
//! [`Connection`](crate::Connection) with [`Config::authenticate`](crate::Config::authenticate)
//! set instead stops its handshake at the point where libzmq sends its ZAP
//! request and returns [`Event::AuthRequest`](crate::Event::AuthRequest)
//! from `poll_event`. The owner decides (the `fabriq` crate by running ZAP),
//! then calls [`Connection::auth_reply`](crate::Connection::auth_reply) and
//! polls again. The handshake timer keeps running meanwhile.
//!
//! Where the request comes, as in libzmq 4.3:
//! * PLAIN server: after the client's HELLO, before WELCOME; credentials
//!   are the user name and the password.
//! * CURVE server: after the client's INITIATE (vouch checked), before
//!   READY; the credential is the client's long-term public key (32 bytes).
//! * NULL (either side): before our READY; no credentials.
//!
//! Replies: 200 lets the peer in; 400 and 500 refuse it with an ERROR whose
//! reason is the three-digit status code (libzmq sends exactly that, and a
//! libzmq CURVE client turns it into `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH`); 300 (a
//! temporary failure) closes without an ERROR, as RFC 27 and libzmq do.
//! The connection then fails with
//! [`ProtocolError::AuthFailed`](crate::ProtocolError::AuthFailed).

use bytes::Bytes;

use crate::greeting::MechanismName;
use crate::properties::Properties;

/// What a server needs to decide about a peer: the fields of a ZAP request
/// that the protocol engine knows (domain, address and routing id are the
/// socket's business).
#[derive(Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// The mechanism in use ("NULL", "PLAIN", "CURVE" in a ZAP request).
    pub mechanism: MechanismName,
    /// The ZAP credential frames: PLAIN user name and password; CURVE the
    /// client's long-term public key (32 bytes); NULL none.
    pub credentials: Vec<Bytes>,
}

impl std::fmt::Debug for AuthRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A PLAIN password is not for logs.
        let shown: Vec<&dyn std::fmt::Debug> = match self.mechanism {
            MechanismName::Plain => self
                .credentials
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == 0 {
                        c as &dyn std::fmt::Debug
                    } else {
                        &"<password>"
                    }
                })
                .collect(),
            _ => self
                .credentials
                .iter()
                .map(|c| c as &dyn std::fmt::Debug)
                .collect(),
        };
        f.debug_struct("AuthRequest")
            .field("mechanism", &self.mechanism)
            .field("credentials", &shown)
            .finish()
    }
}

/// The owner's decision on an [`AuthRequest`]: the fields of a ZAP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthReply {
    /// 200 (success), 300 (temporary failure), 400 (authentication
    /// failure) or 500 (internal error), as in ZAP.
    pub status_code: u16,
    /// Human-readable reason (kept locally; libzmq does not send it to the
    /// peer either).
    pub status_text: String,
    /// The user id the handler assigned (libzmq's "User-Id" message
    /// property); empty for none.
    pub user_id: Bytes,
    /// Metadata the handler attached to the peer (ZAP reply metadata).
    pub metadata: Properties,
}

impl AuthReply {
    /// A 200 reply with the given user id.
    pub fn allow(user_id: impl Into<Bytes>) -> Self {
        AuthReply {
            status_code: 200,
            status_text: "OK".into(),
            user_id: user_id.into(),
            metadata: Properties::new(),
        }
    }

    /// A 400 reply with the given reason.
    pub fn deny(status_text: impl Into<String>) -> Self {
        AuthReply {
            status_code: 400,
            status_text: status_text.into(),
            user_id: Bytes::new(),
            metadata: Properties::new(),
        }
    }

    /// Whether the status code is one ZAP defines (200, 300, 400, 500).
    pub fn is_valid_status(&self) -> bool {
        matches!(self.status_code, 200 | 300 | 400 | 500)
    }
}

/// A ZAP status code (300, 400, 500) used as an ERROR reason, as libzmq
/// sends it; `None` for any other reason.
pub(crate) fn status_in_reason(reason: &str) -> Option<u16> {
    match reason {
        "300" => Some(300),
        "400" => Some(400),
        "500" => Some(500),
        _ => None,
    }
}
