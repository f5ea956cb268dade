//! The Majordomo Protocol, MDP/0.1 (RFC 7): the zguide's `mdp.h`.
//!
//! A client's request is `[MDPC01, service, body...]` (after REQ's empty
//! delimiter); a worker's frames are `["", MDPW01, command, ...]`.

/// This is the version of MDP/Client we implement.
pub const MDPC_CLIENT: &[u8] = b"MDPC01";
/// This is the version of MDP/Worker we implement.
pub const MDPW_WORKER: &[u8] = b"MDPW01";

/// Worker command: ready for `service`.
pub const MDPW_READY: &[u8] = b"\x01";
/// Broker command: a request for the worker.
pub const MDPW_REQUEST: &[u8] = b"\x02";
/// Worker command: the reply to a request.
pub const MDPW_REPLY: &[u8] = b"\x03";
/// Either side: still alive.
pub const MDPW_HEARTBEAT: &[u8] = b"\x04";
/// Either side: going away.
pub const MDPW_DISCONNECT: &[u8] = b"\x05";

/// The command's name, for traces.
pub fn command_name(command: &[u8]) -> &'static str {
    match command {
        MDPW_READY => "READY",
        MDPW_REQUEST => "REQUEST",
        MDPW_REPLY => "REPLY",
        MDPW_HEARTBEAT => "HEARTBEAT",
        MDPW_DISCONNECT => "DISCONNECT",
        _ => "UNKNOWN",
    }
}

/// Liveness: heartbeats missed before a peer counts as gone.
pub const HEARTBEAT_LIVENESS: u32 = 3;
