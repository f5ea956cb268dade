//! The ZAP client (RFC 27): what a session does with the protocol
//! engine's [`AuthRequest`]. It asks the REP or ROUTER socket the
//! application bound at `inproc://zeromq.zap.01` in the same context,
//! through a pipe whose reply wakes the session (the I/O thread never
//! waits for it), and turns the reply into the engine's [`AuthReply`].
//!
//! The frames are libzmq 4.3's (`zap_client.cpp`). Request: an empty
//! delimiter, then `1.0`, request id `1`, the socket's ZAP domain, the
//! peer's IP address (empty for ipc), the socket's own routing id, the
//! mechanism name and its credentials. Reply: delimiter, `1.0`, `1`, the
//! status code (200, 300, 400, 500), status text, user id and metadata
//! (ZMTP property encoding), exactly seven frames. A reply that breaks
//! these rules fails the handshake with HANDSHAKE_FAILED_PROTOCOL and
//! libzmq's `ZMQ_PROTOCOL_ERROR_ZAP_*` code.
//!
//! Without a handler, libzmq's rules: a PLAIN server refuses the peer
//! (HANDSHAKE_FAILED_NO_DETAIL, EFAULT); CURVE and NULL let it in, unless
//! `zap_enforce_domain` is on (then they refuse it the same way).

use std::sync::Arc;

use bytes::Bytes;
use fabriq_zmtp::{AuthReply, AuthRequest, Multipart, Part, PeerInfo, Properties, ProtocolError};

use crate::mechanism::Mechanism;
use crate::options::Options;
use crate::pipe::{Item, PeerIo, PipeEnd, Queue, Waker};

/// The inproc name ZAP handlers bind (without `inproc://`).
pub(crate) const HANDLER_NAME: &str = "zeromq.zap.01";

/// The only version and request id libzmq sends and accepts.
const VERSION: &[u8] = b"1.0";
const REQUEST_ID: &[u8] = b"1";

/// What became of a request.
pub(crate) enum Asked {
    /// Sent; the reply comes through [`Pending::poll`].
    Sent(Pending),
    /// No handler, and libzmq lets the peer in without one.
    Allowed(AuthReply),
    /// No handler, and libzmq refuses the peer without one.
    Refused(ProtocolError),
}

/// A malformed reply: libzmq's protocol error code and what was wrong.
#[derive(Debug)]
pub(crate) struct BadReply {
    pub code: u32,
    pub what: &'static str,
}

impl std::fmt::Display for BadReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed ZAP reply: {}", self.what)
    }
}

/// A request in flight: the pipe to the handler. Dropping it closes the
/// pipe (a reply that comes later is discarded).
#[derive(Debug)]
pub(crate) struct Pending {
    pipe: PipeEnd,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.pipe.close();
    }
}

impl Pending {
    /// The handler's reply, if it has come.
    pub(crate) fn poll(&self) -> Option<Result<AuthReply, BadReply>> {
        loop {
            match self.pipe.rx.pop()? {
                Item::Msg(frames) => return Some(parse_reply(&frames)),
                // Nothing else travels on a ZAP pipe.
                Item::Subscribe(_) | Item::Cancel(_) => continue,
            }
        }
    }
}

/// Wakes a session (and only wakes it) when its ZAP reply arrives.
#[derive(Debug)]
struct WakeSession(Arc<dyn PeerIo>);

impl PeerIo for WakeSession {
    fn wake(&self) {
        self.0.wake();
    }

    fn output_ready(&self, _: &Queue) {
        self.0.wake();
    }

    fn flush(&self, _: &Queue) -> crate::pipe::Flush {
        crate::pipe::Flush::Nothing
    }

    fn pull(&self, _: &Queue) -> bool {
        false
    }
}

/// Asks the context's ZAP handler about the peer at `peer_address`;
/// `session` is woken when the reply comes.
pub(crate) fn ask(
    opts: &Options,
    request: &AuthRequest,
    peer_address: &str,
    session: Arc<dyn PeerIo>,
) -> Asked {
    let security = &opts.security;
    let waker = Waker::Peer(Arc::new(WakeSession(session)));
    let pipe = security
        .names
        .upgrade()
        .and_then(|names| crate::inproc::connect_handler(&names, HANDLER_NAME, waker));
    let Some(pipe) = pipe else {
        let refuse = security.mechanism == Mechanism::ZMQ_PLAIN || security.zap_enforce_domain;
        return if refuse {
            tracing::debug!("no ZAP handler at inproc://{HANDLER_NAME}: peer refused");
            Asked::Refused(ProtocolError::NoAuthenticator(request.mechanism))
        } else {
            Asked::Allowed(AuthReply::allow(Bytes::new()))
        };
    };
    let mut msg = Multipart::new();
    msg.push(Part::new());
    msg.push(Part::from_static(VERSION));
    msg.push(Part::from_static(REQUEST_ID));
    msg.push(Part::copy_from_slice(security.zap_domain.as_bytes()));
    msg.push(Part::copy_from_slice(peer_address.as_bytes()));
    msg.push(Part::from(opts.identity.clone()));
    msg.push(Part::from_static(request.mechanism.as_str().as_bytes()));
    for c in &request.credentials {
        msg.push(Part::from(c.clone()));
    }
    pipe.tx.push(Item::Msg(msg));
    Asked::Sent(Pending { pipe })
}

/// libzmq's `receive_and_process_zap_reply` checks, in its order.
fn parse_reply(frames: &[Part]) -> Result<AuthReply, BadReply> {
    let bad = |code, what| Err(BadReply { code, what });
    if frames.len() != 7 {
        return bad(0x2000_0001, "not seven frames");
    }
    if !frames[0].is_empty() {
        return bad(0x2000_0000, "no empty delimiter");
    }
    if frames[1] != VERSION {
        return bad(0x2000_0003, "version is not 1.0");
    }
    if frames[2] != REQUEST_ID {
        return bad(0x2000_0002, "request id is not the one sent");
    }
    let status_code = match &frames[3][..] {
        b"200" => 200,
        b"300" => 300,
        b"400" => 400,
        b"500" => 500,
        _ => return bad(0x2000_0004, "status code is not 200, 300, 400 or 500"),
    };
    let Ok(metadata) = Properties::decode(&frames[6].to_bytes()) else {
        return bad(0x2000_0005, "metadata frame does not parse");
    };
    Ok(AuthReply {
        status_code,
        status_text: String::from_utf8_lossy(&frames[4]).into_owned(),
        user_id: frames[5].to_bytes(),
        metadata,
    })
}

/// The properties `Message::gets` sees for a peer, in libzmq's order of
/// precedence: `User-Id` and the ZAP handler's metadata, then what the
/// peer sent in its handshake.
pub(crate) fn message_properties(peer: &PeerInfo) -> Properties {
    if peer.user_id.is_empty() && peer.auth_metadata.is_empty() {
        return peer.properties.clone();
    }
    let mut all = Properties::new();
    if !peer.user_id.is_empty() {
        let _ = all.push("User-Id", peer.user_id.clone());
    }
    for (name, value) in peer.auth_metadata.iter().chain(peer.properties.iter()) {
        let _ = all.push(name, value.clone());
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(parts: &[&'static [u8]]) -> Vec<Part> {
        parts.iter().map(|p| Part::from_static(p)).collect()
    }

    #[test]
    fn replies_are_checked_as_libzmq_does() {
        let ok = parse_reply(&reply(&[b"", b"1.0", b"1", b"200", b"OK", b"alice", b""])).unwrap();
        assert_eq!((ok.status_code, &ok.user_id[..]), (200, &b"alice"[..]));
        let code = |parts: &[&'static [u8]]| parse_reply(&reply(parts)).unwrap_err().code;
        assert_eq!(code(&[b"", b"1.0", b"1", b"200", b"OK", b""]), 0x2000_0001);
        assert_eq!(
            code(&[b"x", b"1.0", b"1", b"200", b"", b"", b""]),
            0x2000_0000
        );
        assert_eq!(
            code(&[b"", b"2.0", b"1", b"200", b"", b"", b""]),
            0x2000_0003
        );
        assert_eq!(
            code(&[b"", b"1.0", b"7", b"200", b"", b"", b""]),
            0x2000_0002
        );
        assert_eq!(
            code(&[b"", b"1.0", b"1", b"201", b"", b"", b""]),
            0x2000_0004
        );
        assert_eq!(
            code(&[b"", b"1.0", b"1", b"200", b"", b"", b"\x05"]),
            0x2000_0005
        );
        let mut meta = bytes::BytesMut::new();
        let mut props = Properties::new();
        props.push("Hello", Bytes::from_static(b"World")).unwrap();
        props.encode(&mut meta);
        let mut parts = reply(&[b"", b"1.0", b"1", b"400", b"no", b""]);
        parts.push(Part::from(meta.freeze()));
        let denied = parse_reply(&parts).unwrap();
        assert_eq!(denied.status_code, 400);
        assert_eq!(&denied.metadata.get("hello").unwrap()[..], b"World");
    }
}
