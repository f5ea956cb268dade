//! The CLI's line formats ([`cli_line`]), compiled in from the CLI's
//! sources.

#[allow(dead_code, missing_docs)]
#[path = "../../fabriq-cli/src/format.rs"]
mod cli_format;

/// The CLI's line codec (`fabriq-cli/src/format.rs`): a line it reads
/// as frames writes back as a line that reads as the same frames.
///
/// Input: `[format, sep, flags, line...]`: format `% 4` (text, hex,
/// base64, json), separator `% 5` (tab, none, space, comma, `::`), flags
/// bit 0 routing id first, bit 1 subscription marks.
pub fn cli_line(data: &[u8]) {
    use cli_format::{Codec, Format};
    let [format, sep, flags, line @ ..] = data else {
        return;
    };
    let format =
        [Format::Text, Format::Hex, Format::Base64, Format::Json][usize::from(*format % 4)];
    let sep = ["\t", "", " ", ",", "::"][usize::from(*sep % 5)];
    let mut codec = Codec::new(format, sep);
    codec.identity_first = flags & 1 != 0;
    codec.marks_in = flags & 2 != 0;
    codec.marks_out = flags & 2 != 0;
    let Ok(frames) = codec.decode(line) else {
        return;
    };
    let mut out = Vec::new();
    codec.encode(&frames, &mut out);
    let again = codec.decode(&out);
    if sep.is_empty() && frames.len() > 1 {
        return;
    }
    assert_eq!(again.as_ref(), Ok(&frames), "line {out:?}");
}
