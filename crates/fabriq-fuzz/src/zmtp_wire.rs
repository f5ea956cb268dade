//! The ZMTP wire decoders, as a hostile peer reaches them: the greeting
//! ([`greeting`]), and frames with the command and property parsers on
//! what they cut ([`frame`]).

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::command::Command;
use fabriq_zmtp::frame::{encode_header, Frame, FrameDecoder};
use fabriq_zmtp::greeting::{Greeting, GreetingDecoder, MechanismName, Version, GREETING_LEN};
use fabriq_zmtp::{Properties, ProtocolError};

// ---- greeting --------------------------------------------------------------

fn feed_greeting(data: &[u8], step: usize) -> Result<(usize, Option<Greeting>), ProtocolError> {
    let mut dec = GreetingDecoder::new();
    let mut used = 0;
    for chunk in data.chunks(step.max(1)) {
        let (n, g) = dec.feed(chunk)?;
        assert!(n <= chunk.len(), "greeting decoder took more than it got");
        used += n;
        assert_eq!(dec.received(), used);
        if g.is_some() {
            return Ok((used, g));
        }
        assert_eq!(n, chunk.len(), "an incomplete greeting left input behind");
    }
    Ok((used, None))
}

/// The greeting decoder: the same verdict for any chunking (libzmq sends
/// in stages), a greeting exactly when 64 valid bytes are in, and
/// decode(encode(g)) == g.
pub fn greeting(data: &[u8]) {
    let Some((&step, wire)) = data.split_first() else {
        return;
    };
    let whole = feed_greeting(wire, usize::MAX);
    let chunked = feed_greeting(wire, usize::from(step % 13) + 1);
    let bytewise = feed_greeting(wire, 1);
    assert_eq!(whole, chunked, "chunking changed the verdict");
    assert_eq!(whole, bytewise, "byte-by-byte changed the verdict");
    if let Ok((used, Some(g))) = whole {
        assert_eq!(used, GREETING_LEN);
        assert_eq!(feed_greeting(&g.encode(), usize::MAX), Ok((64, Some(g))));
    }
    if let Ok((_, None)) = whole {
        assert!(wire.len() < GREETING_LEN);
    }
    // A greeting built from the input's first bytes round-trips.
    if wire.len() >= 3 {
        let mechanism = match wire[2] % 3 {
            0 => MechanismName::Null,
            1 => MechanismName::Plain,
            _ => MechanismName::Curve,
        };
        let g = Greeting {
            version: Version {
                major: wire[0].max(3),
                minor: wire[1],
            },
            mechanism,
            as_server: wire[2] & 0x80 != 0,
        };
        assert_eq!(
            feed_greeting(&g.encode(), usize::from(step % 7) + 1),
            Ok((64, Some(g)))
        );
    }
}

// ---- frames, commands, properties --------------------------------------------

fn reencode(frame: &Frame) -> BytesMut {
    let mut wire = BytesMut::new();
    encode_header(&mut wire, frame.data.len(), frame.more, frame.command);
    wire.extend_from_slice(&frame.data);
    wire
}

/// The frame decoder, then the command and property parsers on what it
/// cut: `decode` (read buffer) and `decode_bytes` (caller's page) agree
/// frame by frame; every frame, command and property list re-encodes to
/// something that decodes to the same.
///
/// Input: `[max_data, max_command, stream...]`; a limit byte of 0 means
/// none (data) or 64 KiB (commands), else `n * 7` bytes.
pub fn frame(data: &[u8]) {
    let [max_data, max_command, wire @ ..] = data else {
        return;
    };
    let max_data = (*max_data != 0).then(|| u64::from(*max_data) * 7);
    let max_command = if *max_command == 0 {
        64 * 1024
    } else {
        u64::from(*max_command) * 7
    };
    let dec = FrameDecoder::new(max_data, max_command);
    let mut stream = BytesMut::from(wire);
    let mut page = Bytes::copy_from_slice(wire);
    let mut frames = 0;
    loop {
        let a = dec.decode(&mut stream);
        let b = dec.decode_bytes(&mut page);
        assert_eq!(a, b, "decode and decode_bytes disagree");
        assert_eq!(stream.len(), page.len());
        let Ok(Some(f)) = a else { break };
        frames += 1;
        assert!(frames <= wire.len(), "more frames than bytes");
        let limit = if f.command {
            Some(max_command)
        } else {
            max_data
        };
        assert!(limit.map_or(true, |l| f.data.len() as u64 <= l));
        let mut again = reencode(&f);
        assert_eq!(dec.decode(&mut again), Ok(Some(f.clone())));
        assert!(again.is_empty());
        if f.command {
            command(&f.data);
        } else {
            // Data frames are also fed to the property parser.
            properties(&f.data);
        }
    }
    // The whole stream as one command body, and as properties.
    command(&Bytes::copy_from_slice(wire));
    properties(&Bytes::copy_from_slice(wire));
}

fn command(body: &Bytes) {
    let raw = Command::decode_raw(body);
    let Ok(cmd) = Command::decode(body) else {
        return;
    };
    assert_eq!(cmd.name(), raw.as_ref().expect("decode ok, raw not").name());
    let mut wire = BytesMut::new();
    cmd.encode(&mut wire);
    assert_eq!(wire.len(), cmd.encoded_len());
    let back = Command::decode(&wire.freeze()).expect("a re-encoded command decodes");
    match (&cmd, &back) {
        // Reasons are cut to 255 bytes (and lossy UTF-8 can grow them).
        (Command::Error(r), Command::Error(_)) if r.len() > 255 => {}
        _ => assert_eq!(cmd, back),
    }
}

fn properties(src: &Bytes) {
    let Ok(props) = Properties::decode(src) else {
        return;
    };
    let mut wire = BytesMut::new();
    props.encode(&mut wire);
    assert_eq!(wire.len(), props.encoded_len());
    assert_eq!(&wire[..], &src[..], "properties re-encode byte for byte");
}
