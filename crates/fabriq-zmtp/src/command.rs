//! ZMTP commands: READY, ERROR, SUBSCRIBE, CANCEL, PING, PONG, the
//! RADIO/DISH JOIN and LEAVE (body: the group's bytes, as libzmq's
//! `dish_session_t` writes them), and any
//! other command passed through by name (mechanism commands such as HELLO,
//! or commands from newer peers, which are ignored like libzmq does).
//!
//! ```text
//! command = name-len(1) name body
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;
use crate::properties::Properties;

/// Largest PING context echoed in a PONG (RFC 37).
pub const MAX_PING_CONTEXT: usize = 16;

/// A decoded command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// End of the NULL (and PLAIN/CURVE) handshake, with metadata.
    Ready(Properties),
    /// The sender refuses the connection; `reason` is at most 255 bytes.
    Error(String),
    /// ZMTP 3.1 subscription.
    Subscribe(Bytes),
    /// ZMTP 3.1 unsubscription.
    Cancel(Bytes),
    /// DISH to RADIO: join a group (draft sockets).
    Join(Bytes),
    /// DISH to RADIO: leave a group (draft sockets).
    Leave(Bytes),
    /// Heartbeat request. `ttl` is in tenths of a second (0 = none).
    Ping {
        /// How long the peer may wait for traffic before closing, in
        /// deciseconds.
        ttl: u16,
        /// Up to 16 bytes, echoed in the PONG.
        context: Bytes,
    },
    /// Heartbeat reply.
    Pong {
        /// The context of the PING this answers.
        context: Bytes,
    },
    /// Any other command: kept by name so mechanisms can read theirs.
    Other {
        /// Command name.
        name: Bytes,
        /// Command body.
        body: Bytes,
    },
}

impl Command {
    /// The command name as sent on the wire.
    pub fn name(&self) -> &[u8] {
        match self {
            Command::Ready(_) => b"READY",
            Command::Error(_) => b"ERROR",
            Command::Subscribe(_) => b"SUBSCRIBE",
            Command::Cancel(_) => b"CANCEL",
            Command::Join(_) => b"JOIN",
            Command::Leave(_) => b"LEAVE",
            Command::Ping { .. } => b"PING",
            Command::Pong { .. } => b"PONG",
            Command::Other { name, .. } => name,
        }
    }

    /// The name, for messages.
    pub fn display_name(&self) -> String {
        String::from_utf8_lossy(self.name()).into_owned()
    }

    /// Parses a command frame body. Slices of `frame` are kept, not
    /// copied.
    pub fn decode(frame: &Bytes) -> Result<Command, ProtocolError> {
        let (name, body) = split(frame)?;
        let malformed = |reason| ProtocolError::MalformedCommand {
            command: String::from_utf8_lossy(&name).into_owned(),
            reason,
        };
        Ok(match &name[..] {
            b"READY" => Command::Ready(Properties::decode(&body)?),
            b"ERROR" => {
                let len = usize::from(*body.first().ok_or_else(|| malformed("missing reason"))?);
                let reason = body
                    .get(1..1 + len)
                    .ok_or_else(|| malformed("reason runs past the end"))?;
                Command::Error(String::from_utf8_lossy(reason).into_owned())
            }
            b"SUBSCRIBE" => Command::Subscribe(body),
            b"CANCEL" => Command::Cancel(body),
            b"JOIN" => Command::Join(body),
            b"LEAVE" => Command::Leave(body),
            b"PING" => {
                if body.len() < 2 {
                    return Err(malformed("missing TTL"));
                }
                let ttl = u16::from_be_bytes([body[0], body[1]]);
                // libzmq echoes at most 16 context bytes; so do we.
                let end = body.len().min(2 + MAX_PING_CONTEXT);
                Command::Ping {
                    ttl,
                    context: body.slice(2..end),
                }
            }
            b"PONG" => Command::Pong {
                context: body.slice(..body.len().min(MAX_PING_CONTEXT)),
            },
            _ => Command::Other { name, body },
        })
    }

    /// Splits a command frame into name and body without reading the body,
    /// except ERROR, which is decoded as by [`Command::decode`]: what a
    /// mechanism whose handshake commands are not properties (CURVE's
    /// READY holds a box) receives.
    pub fn decode_raw(frame: &Bytes) -> Result<Command, ProtocolError> {
        let (name, body) = split(frame)?;
        if &name[..] == b"ERROR" {
            return Command::decode(frame);
        }
        Ok(Command::Other { name, body })
    }

    /// Length of the body [`Command::encode`] writes (name included).
    pub fn encoded_len(&self) -> usize {
        1 + self.name().len()
            + match self {
                Command::Ready(p) => p.encoded_len(),
                Command::Error(r) => 1 + truncate_utf8(r, 255).len(),
                Command::Subscribe(t)
                | Command::Cancel(t)
                | Command::Join(t)
                | Command::Leave(t) => t.len(),
                Command::Ping { context, .. } => 2 + context.len().min(MAX_PING_CONTEXT),
                Command::Pong { context } => context.len().min(MAX_PING_CONTEXT),
                Command::Other { body, .. } => body.len(),
            }
    }

    /// Appends the frame body (name length, name, body). Reasons longer
    /// than 255 bytes and contexts longer than 16 bytes are truncated.
    pub fn encode(&self, dst: &mut BytesMut) {
        let name = self.name();
        dst.reserve(self.encoded_len());
        dst.put_u8(name.len() as u8);
        dst.put_slice(name);
        match self {
            Command::Ready(p) => p.encode(dst),
            Command::Error(reason) => {
                let r = truncate_utf8(reason, 255);
                dst.put_u8(r.len() as u8);
                dst.put_slice(r.as_bytes());
            }
            Command::Subscribe(t) | Command::Cancel(t) | Command::Join(t) | Command::Leave(t) => {
                dst.put_slice(t)
            }
            Command::Ping { ttl, context } => {
                dst.put_u16(*ttl);
                dst.put_slice(&context[..context.len().min(MAX_PING_CONTEXT)]);
            }
            Command::Pong { context } => {
                dst.put_slice(&context[..context.len().min(MAX_PING_CONTEXT)])
            }
            Command::Other { body, .. } => dst.put_slice(body),
        }
    }
}

/// A command frame's name and body (slices of `frame`).
fn split(frame: &Bytes) -> Result<(Bytes, Bytes), ProtocolError> {
    let name_len = usize::from(*frame.first().ok_or(ProtocolError::MalformedCommand {
        command: "(unnamed)".into(),
        reason: "empty command frame",
    })?);
    if name_len == 0 {
        return Err(ProtocolError::MalformedCommand {
            command: "(unnamed)".into(),
            reason: "empty command name",
        });
    }
    if frame.len() - 1 < name_len {
        return Err(ProtocolError::MalformedCommand {
            command: "(unnamed)".into(),
            reason: "name length runs past the end of the frame",
        });
    }
    Ok((frame.slice(1..1 + name_len), frame.slice(1 + name_len..)))
}

fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_at_a_character_and_its_length_says_so() {
        // 200 two-byte characters: 255 bytes would end inside one, so the
        // reason is cut to 254. encoded_len used to say 255, and the
        // encoder wrote that into the frame header: two bytes more than
        // followed (found by the `frame` fuzz target; corpus file
        // fuzz/corpus/frame/regress-error-reason-cut-inside-a-character).
        let cmd = Command::Error("é".repeat(200));
        let mut wire = BytesMut::new();
        cmd.encode(&mut wire);
        assert_eq!(wire.len(), cmd.encoded_len());
        assert_eq!(wire.len(), 1 + 5 + 1 + 254);
        // What the encoder writes decodes as one frame holding exactly it.
        let mut enc = crate::encoder::Encoder::default();
        enc.push_command(&cmd);
        let mut stream = BytesMut::new();
        while let Some(chunk) = enc.pop_chunk() {
            stream.extend_from_slice(&chunk);
        }
        let dec = crate::frame::FrameDecoder::new(None, 1 << 20);
        let frame = dec.decode(&mut stream).unwrap().expect("one whole frame");
        assert!(frame.command && stream.is_empty());
        assert_eq!(frame.data[..], wire[..]);
    }

    fn round_trip(cmd: Command) {
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf);
        assert_eq!(buf.len(), cmd.encoded_len());
        assert_eq!(Command::decode(&buf.freeze()).unwrap(), cmd);
    }

    #[test]
    fn round_trips() {
        let mut props = Properties::new();
        props.push("Socket-Type", "REQ").unwrap();
        round_trip(Command::Ready(props));
        round_trip(Command::Error("Invalid socket type".into()));
        round_trip(Command::Subscribe(Bytes::from_static(b"weather")));
        round_trip(Command::Cancel(Bytes::new()));
        round_trip(Command::Join(Bytes::from_static(b"movies")));
        round_trip(Command::Leave(Bytes::from_static(b"movies")));
        round_trip(Command::Ping {
            ttl: 300,
            context: Bytes::from_static(b"ctx"),
        });
        round_trip(Command::Pong {
            context: Bytes::from_static(b"0123456789abcdef"),
        });
        round_trip(Command::Other {
            name: Bytes::from_static(b"HELLO"),
            body: Bytes::from_static(b"\x05admin"),
        });
    }

    #[test]
    fn join_and_leave_match_libzmq_dish() {
        // libzmq's dish_session_t: "\4JOIN" or "\5LEAVE", then the group.
        let mut b = BytesMut::new();
        Command::Join(Bytes::from_static(b"tv")).encode(&mut b);
        assert_eq!(&b[..], b"\x04JOINtv");
        let mut b = BytesMut::new();
        Command::Leave(Bytes::from_static(b"tv")).encode(&mut b);
        assert_eq!(&b[..], b"\x05LEAVEtv");
    }

    #[test]
    fn ping_vector() {
        let mut buf = BytesMut::new();
        Command::Ping {
            ttl: 0x0102,
            context: Bytes::from_static(b"x"),
        }
        .encode(&mut buf);
        assert_eq!(&buf[..], b"\x04PING\x01\x02x");
    }

    #[test]
    fn long_error_reason_is_truncated_on_a_char_boundary() {
        let reason = "é".repeat(200); // 400 bytes
        let mut buf = BytesMut::new();
        Command::Error(reason).encode(&mut buf);
        let Command::Error(back) = Command::decode(&buf.freeze()).unwrap() else {
            panic!("not an ERROR");
        };
        assert_eq!(back.len(), 254);
    }

    #[test]
    fn oversized_ping_context_is_cut_to_16_bytes() {
        let frame = Bytes::from_static(b"\x04PING\x00\x0a0123456789abcdefXYZ");
        assert_eq!(
            Command::decode(&frame).unwrap(),
            Command::Ping {
                ttl: 10,
                context: Bytes::from_static(b"0123456789abcdef")
            }
        );
    }

    #[test]
    fn malformed_commands() {
        let cases: &[&[u8]] = &[
            b"",
            b"\x00READY",
            b"\x09READY",
            b"\xffPING",
            b"\x05ERROR",
            b"\x05ERROR\x10short",
            b"\x04PING\x01",
        ];
        for wire in cases {
            assert!(
                matches!(
                    Command::decode(&Bytes::copy_from_slice(wire)),
                    Err(ProtocolError::MalformedCommand { .. })
                ),
                "{wire:?}"
            );
        }
    }
}
