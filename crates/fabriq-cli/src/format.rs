//! Messages as lines: how the frames of a message are written to stdout
//! and read from stdin.
//!
//! One message is one line. In the `text`, `hex` and `base64` formats its
//! frames are separated by `--sep` (a tab by default) and each frame is
//! written verbatim, in hex or in base64. In `json` a line is an array of
//! frames, each a string when it is UTF-8 and `{"hex": "..."}` otherwise
//! (`{"base64": "..."}` is accepted on input too).
//!
//! Two socket types get special fields in `text`: a ROUTER's first frame
//! is a routing id, written as text when it is printable and as `0x` plus
//! hex otherwise (and read back the same way); XPUB prints, and XSUB
//! reads, the subscription byte of a subscription message as `+` or `-`.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use bytes::Bytes;
use clap::ValueEnum;
use serde_json::{json, Map, Value};

/// Standard base64 alphabet; padding written, optional when read.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// How frames are written and read.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Frames verbatim
    Text,
    /// Frames in lowercase hex
    Hex,
    /// Frames in standard base64
    Base64,
    /// A JSON array of frames: strings, or {"hex": ...} for non-UTF-8 frames
    Json,
}

/// Writes messages as lines and reads lines as messages.
#[derive(Debug, Clone)]
pub struct Codec {
    /// The format.
    pub format: Format,
    /// Frame separator on a line (empty: a line is one frame).
    pub sep: Vec<u8>,
    /// The first frame is a routing id (ROUTER).
    pub identity_first: bool,
    /// Write the first byte of subscription messages (1 or 0) as `+`/`-`
    /// (XPUB output, text format only).
    pub marks_out: bool,
    /// Read a leading `+`/`-` as the subscription byte 1/0 (XSUB input,
    /// text format only).
    pub marks_in: bool,
}

impl Codec {
    /// A codec with no special fields.
    pub fn new(format: Format, sep: &str) -> Codec {
        Codec {
            format,
            sep: sep.as_bytes().to_vec(),
            identity_first: false,
            marks_out: false,
            marks_in: false,
        }
    }

    /// Appends `frames` as one line (without the newline) to `out`.
    pub fn encode(&self, frames: &[Bytes], out: &mut Vec<u8>) {
        if self.format == Format::Json {
            let items: Vec<Value> = frames
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let text = if i == 0 && self.identity_first {
                        printable(f)
                    } else {
                        std::str::from_utf8(f).ok()
                    };
                    match text {
                        Some(s) => Value::String(s.to_string()),
                        None => json!({ "hex": hex_encode(f) }),
                    }
                })
                .collect();
            // Serializing a Value into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, &Value::Array(items));
            return;
        }
        for (i, frame) in frames.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.sep);
            }
            match self.format {
                Format::Text if i == 0 && self.identity_first => {
                    match printable(frame).filter(|s| {
                        !s.starts_with("0x") && !s.starts_with("0X") && !self.has_sep(s)
                    }) {
                        Some(s) => out.extend_from_slice(s.as_bytes()),
                        None => {
                            out.extend_from_slice(b"0x");
                            out.extend_from_slice(hex_encode(frame).as_bytes());
                        }
                    }
                }
                Format::Text
                    if i == 0 && self.marks_out && matches!(frame.first(), Some(0 | 1)) =>
                {
                    out.push(if frame[0] == 1 { b'+' } else { b'-' });
                    out.extend_from_slice(&frame[1..]);
                }
                Format::Text => out.extend_from_slice(frame),
                Format::Hex => out.extend_from_slice(hex_encode(frame).as_bytes()),
                Format::Base64 => out.extend_from_slice(BASE64.encode(frame).as_bytes()),
                Format::Json => unreachable!("handled above"),
            }
        }
    }

    /// Reads one line (without its newline) as the frames of a message.
    pub fn decode(&self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        let frames = match self.format {
            Format::Json => decode_json(line)?,
            _ => {
                let fields = split(line, &self.sep);
                let mut frames = Vec::with_capacity(fields.len());
                for (i, field) in fields.into_iter().enumerate() {
                    let which = || {
                        if self.sep.is_empty() {
                            String::new()
                        } else {
                            format!(" in field {}", i + 1)
                        }
                    };
                    let frame = match self.format {
                        Format::Text if i == 0 && self.identity_first => parse_identity(field)?,
                        Format::Text if i == 0 && self.marks_in => match field.first() {
                            Some(b'+') => [&[1u8][..], &field[1..]].concat(),
                            Some(b'-') => [&[0u8][..], &field[1..]].concat(),
                            _ => field.to_vec(),
                        },
                        Format::Text => field.to_vec(),
                        Format::Hex => hex_decode(field).map_err(|e| format!("{e}{}", which()))?,
                        Format::Base64 => BASE64
                            .decode(field)
                            .map_err(|e| format!("bad base64{}: {e}", which()))?,
                        Format::Json => unreachable!("handled above"),
                    };
                    frames.push(Bytes::from(frame));
                }
                frames
            }
        };
        if self.identity_first {
            let sep = String::from_utf8_lossy(&self.sep);
            match frames.first() {
                Some(id) if id.is_empty() => {
                    return Err("the routing id (first field) is empty".to_string())
                }
                Some(_) if frames.len() >= 2 => {}
                _ => {
                    return Err(format!(
                        "expected ROUTING_ID{}MESSAGE: the first field names the peer",
                        sep.escape_debug()
                    ))
                }
            }
        }
        Ok(frames)
    }

    fn has_sep(&self, s: &str) -> bool {
        !self.sep.is_empty() && s.as_bytes().windows(self.sep.len()).any(|w| w == self.sep)
    }
}

/// Reads a routing id as written in text: `0x` and hex, or text.
pub fn parse_identity(field: &[u8]) -> Result<Vec<u8>, String> {
    match field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
    {
        Some(hex) if !hex.is_empty() => {
            hex_decode(hex).map_err(|e| format!("routing id {}: {e}", show(field)))
        }
        _ => Ok(field.to_vec()),
    }
}

/// The frame as text if it is UTF-8 without control characters.
fn printable(frame: &[u8]) -> Option<&str> {
    std::str::from_utf8(frame)
        .ok()
        .filter(|s| !s.is_empty() && !s.chars().any(char::is_control))
}

/// Splits `line` at every `sep` (not at all for an empty `sep`).
fn split<'a>(line: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    if sep.is_empty() {
        return vec![line];
    }
    let mut fields = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= line.len() {
        if &line[i..i + sep.len()] == sep {
            fields.push(&line[start..i]);
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    fields.push(&line[start..]);
    fields
}

fn decode_json(line: &[u8]) -> Result<Vec<Bytes>, String> {
    let value: Value =
        serde_json::from_slice(line).map_err(|e| format!("not JSON ({e}); expected an array"))?;
    let items = match value {
        Value::Array(items) => items,
        one @ (Value::String(_) | Value::Object(_)) => vec![one],
        _ => return Err("expected a JSON array of frames".to_string()),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(Bytes::from(s.into_bytes())),
            Value::Object(map) => json_frame(&map)
                .map(Bytes::from)
                .map_err(|e| format!("frame {}: {e}", i + 1)),
            _ => Err(format!(
                "frame {}: expected a string, {{\"hex\": ...}} or {{\"base64\": ...}}",
                i + 1
            )),
        })
        .collect()
}

fn json_frame(map: &Map<String, Value>) -> Result<Vec<u8>, String> {
    match (map.len(), map.get("hex"), map.get("base64")) {
        (1, Some(Value::String(h)), None) => hex_decode(h.as_bytes()),
        (1, None, Some(Value::String(b))) => BASE64
            .decode(b.as_bytes())
            .map_err(|e| format!("bad base64: {e}")),
        _ => Err("expected {\"hex\": \"...\"} or {\"base64\": \"...\"}".to_string()),
    }
}

/// Lowercase hex.
pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// Hex in either case, an even number of digits.
pub fn hex_decode(text: &[u8]) -> Result<Vec<u8>, String> {
    if text.len() % 2 != 0 {
        return Err(format!("bad hex {}: odd number of digits", show(text)));
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    text.chunks(2)
        .map(|pair| match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(format!("bad hex {}: not a hex digit", show(text))),
        })
        .collect()
}

/// Bytes for an error message: quoted, escaped, cut when long.
fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]);
    let more = if bytes.len() > 40 { "..." } else { "" };
    format!("\"{}{more}\"", text.escape_debug())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(parts: &[&[u8]]) -> Vec<Bytes> {
        parts.iter().map(|p| Bytes::copy_from_slice(p)).collect()
    }

    fn line(codec: &Codec, frames: &[Bytes]) -> String {
        let mut out = Vec::new();
        codec.encode(frames, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_round_trip_with_separator() {
        let c = Codec::new(Format::Text, "\t");
        let frames = b(&[b"a", b"", b"c d"]);
        assert_eq!(line(&c, &frames), "a\t\tc d");
        assert_eq!(c.decode(b"a\t\tc d").unwrap(), frames);
        let c = Codec::new(Format::Text, "::");
        assert_eq!(c.decode(b"a::b:c").unwrap(), b(&[b"a", b"b:c"]));
        let c = Codec::new(Format::Text, "");
        assert_eq!(c.decode(b"a\tb").unwrap(), b(&[b"a\tb"]));
    }

    #[test]
    fn hex_and_base64() {
        let frames = b(&[b"hi", b"\x00\xff"]);
        let c = Codec::new(Format::Hex, "\t");
        assert_eq!(line(&c, &frames), "6869\t00ff");
        assert_eq!(c.decode(b"6869\t00FF").unwrap(), frames);
        assert!(c.decode(b"686").unwrap_err().contains("odd"));
        assert!(c.decode(b"zz").unwrap_err().contains("hex digit"));
        let c = Codec::new(Format::Base64, ",");
        assert_eq!(line(&c, &frames), "aGk=,AP8=");
        assert_eq!(c.decode(b"aGk,AP8=").unwrap(), frames);
        assert!(c.decode(b"a").is_err());
    }

    #[test]
    fn json() {
        let c = Codec::new(Format::Json, "\t");
        let frames = b(&[b"hi", b"\x00\xff", b"tab\there"]);
        assert_eq!(line(&c, &frames), r#"["hi",{"hex":"00ff"},"tab\there"]"#);
        assert_eq!(
            c.decode(br#"["hi",{"hex":"00ff"},"tab\there"]"#).unwrap(),
            frames
        );
        assert_eq!(c.decode(br#""one""#).unwrap(), b(&[b"one"]));
        assert_eq!(
            c.decode(br#"[{"base64":"AP8="}]"#).unwrap(),
            b(&[b"\x00\xff"])
        );
        assert!(c.decode(b"[1]").is_err());
        assert!(c.decode(b"{").is_err());
        assert!(c.decode(br#"[{"hex":"0","x":1}]"#).is_err());
    }

    #[test]
    fn routing_ids() {
        let mut c = Codec::new(Format::Text, "\t");
        c.identity_first = true;
        assert_eq!(line(&c, &b(&[b"alice", b"hi"])), "alice\thi");
        assert_eq!(
            line(&c, &b(&[b"\x00\x80\x00\x00\x01", b"hi"])),
            "0x0080000001\thi"
        );
        assert_eq!(line(&c, &b(&[b"0xab", b"hi"])), "0x30786162\thi");
        assert_eq!(c.decode(b"alice\thi").unwrap(), b(&[b"alice", b"hi"]));
        assert_eq!(
            c.decode(b"0x0080000001\t\thi").unwrap(),
            b(&[b"\x00\x80\x00\x00\x01", b"", b"hi"])
        );
        assert!(c.decode(b"alice").unwrap_err().contains("ROUTING_ID"));
        assert!(c.decode(b"\thi").unwrap_err().contains("empty"));
        assert!(c.decode(b"0xzz\thi").is_err());
        c.format = Format::Json;
        assert_eq!(
            line(&c, &b(&[b"\x00\x80\x00\x00\x01", b"hi"])),
            r#"[{"hex":"0080000001"},"hi"]"#
        );
    }

    #[test]
    fn subscription_marks() {
        let mut c = Codec::new(Format::Text, "\t");
        c.marks_out = true;
        assert_eq!(line(&c, &b(&[b"\x01news"])), "+news");
        assert_eq!(line(&c, &b(&[b"\x00news"])), "-news");
        assert_eq!(line(&c, &b(&[b"data"])), "data");
        assert_eq!(c.decode(b"+news").unwrap(), b(&[b"+news"]));
        c.marks_in = true;
        assert_eq!(c.decode(b"+news").unwrap(), b(&[b"\x01news"]));
        assert_eq!(c.decode(b"-").unwrap(), b(&[b"\x00"]));
    }
}
