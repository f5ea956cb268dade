//! [`Config`]: how a connection presents itself and what it accepts.

use std::time::Duration;

use bytes::Bytes;

use crate::encoder::DEFAULT_BY_REF_THRESHOLD;
use crate::error::UsageError;
use crate::mechanism::MechanismConfig;
use crate::properties::{Properties, IDENTITY, SOCKET_TYPE};
use crate::socket_type::SocketType;

use super::DEFAULT_READ_CHUNK;

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
    /// ([`Event::AuthRequest`](super::Event::AuthRequest), answered with
    /// [`Connection::auth_reply`](super::Connection::auth_reply)): the PLAIN and CURVE server sides, and
    /// NULL (either side), as libzmq asks its ZAP handler. Set it when a
    /// ZAP handler runs (and, for NULL, a ZAP domain is set). Without it a
    /// CURVE server lets in every client that knows its key and NULL
    /// everyone, while a PLAIN server refuses everyone
    /// ([`ProtocolError::NoAuthenticator`](crate::error::ProtocolError::NoAuthenticator)), all as libzmq 4.3 does with no
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

    pub(super) fn ready_properties(&self) -> Result<Properties, UsageError> {
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
