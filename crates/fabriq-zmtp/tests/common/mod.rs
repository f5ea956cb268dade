//! In-memory plumbing shared by the protocol tests: two connections joined
//! by a "wire" that moves their output into each other.

#![allow(dead_code)]

use std::time::Instant;

use fabriq_zmtp::{Config, Connection, Event, ProtocolError, SocketType};

/// Everything `from` has queued, as one byte vector.
pub fn drain(from: &mut Connection) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = from.pop_tx_chunk() {
        out.extend_from_slice(&chunk);
    }
    out
}

/// All events `conn` can produce from what it has buffered.
pub fn events(conn: &mut Connection) -> Result<Vec<Event>, ProtocolError> {
    let mut out = Vec::new();
    while let Some(ev) = conn.poll_event()? {
        out.push(ev);
    }
    Ok(out)
}

/// Moves bytes both ways until neither side has anything to say, and
/// returns the events each side saw.
pub fn pump(
    a: &mut Connection,
    b: &mut Connection,
    now: Instant,
) -> (
    Result<Vec<Event>, ProtocolError>,
    Result<Vec<Event>, ProtocolError>,
) {
    let (mut ea, mut eb) = (Ok(Vec::new()), Ok(Vec::new()));
    for _ in 0..16 {
        let ab = drain(a);
        let ba = drain(b);
        if ab.is_empty() && ba.is_empty() {
            break;
        }
        b.feed(&ab, now);
        a.feed(&ba, now);
        collect(&mut eb, b);
        collect(&mut ea, a);
    }
    (ea, eb)
}

fn collect(acc: &mut Result<Vec<Event>, ProtocolError>, conn: &mut Connection) {
    if let Ok(list) = acc {
        match events(conn) {
            Ok(more) => list.extend(more),
            Err(e) => *acc = Err(e),
        }
    }
}

/// Two connections of the given types with a completed handshake.
pub fn connected(a: Config, b: Config) -> (Connection, Connection) {
    let now = Instant::now();
    let mut a = Connection::new(a, now).unwrap();
    let mut b = Connection::new(b, now).unwrap();
    let (ea, eb) = pump(&mut a, &mut b, now);
    assert_eq!(ea.unwrap(), vec![Event::HandshakeComplete]);
    assert_eq!(eb.unwrap(), vec![Event::HandshakeComplete]);
    (a, b)
}

/// Shorthand for a pair with default configs.
pub fn connected_types(a: SocketType, b: SocketType) -> (Connection, Connection) {
    connected(Config::new(a), Config::new(b))
}

/// A raw 64-byte greeting with the given version and mechanism name.
pub fn raw_greeting(major: u8, minor: u8, mechanism: &[u8]) -> Vec<u8> {
    let mut g = vec![0u8; 64];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = major;
    g[11] = minor;
    g[12..12 + mechanism.len()].copy_from_slice(mechanism);
    g
}

/// A command frame (short or long header) with `body` as given.
pub fn command_frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if body.len() <= 255 {
        out.extend_from_slice(&[0x04, body.len() as u8]);
    } else {
        out.push(0x06);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    }
    out.extend_from_slice(body);
    out
}

/// The READY command frame a peer of type `name` would send.
pub fn ready_frame(props: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = b"\x05READY".to_vec();
    for (name, value) in props {
        body.push(name.len() as u8);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value);
    }
    command_frame(&body)
}
