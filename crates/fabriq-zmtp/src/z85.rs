//! Z85 (ZeroMQ RFC 32): the printable encoding of binary keys, four bytes
//! as five characters from an 85-character alphabet.
//!
//! ```
//! use fabriq_zmtp::z85;
//! let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
//! assert_eq!(z85::encode(&bytes).unwrap(), "HelloWorld");
//! assert_eq!(z85::decode("HelloWorld").unwrap(), bytes);
//! ```

/// The Z85 alphabet, in value order (RFC 32).
const ALPHABET: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Why a Z85 conversion failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Z85Error {
    /// Binary input must be a multiple of 4 bytes long.
    #[error("Z85 encodes multiples of 4 bytes; got {0} bytes")]
    BadBinaryLength(usize),
    /// Text input must be a multiple of 5 characters long.
    #[error("Z85 text must be a multiple of 5 characters; got {0}")]
    BadTextLength(usize),
    /// A character outside the Z85 alphabet.
    #[error("invalid Z85 character {found:?} at offset {offset}")]
    BadCharacter {
        /// Offset of the character in the text (in bytes).
        offset: usize,
        /// The offending character.
        found: char,
    },
    /// A group of five characters whose value exceeds 2^32 - 1.
    #[error("Z85 group at offset {0} does not fit in 32 bits")]
    Overflow(usize),
}

/// Encodes `data` (a multiple of 4 bytes long) as Z85 text.
pub fn encode(data: &[u8]) -> Result<String, Z85Error> {
    if data.len() % 4 != 0 {
        return Err(Z85Error::BadBinaryLength(data.len()));
    }
    let mut out = String::with_capacity(data.len() / 4 * 5);
    for chunk in data.chunks_exact(4) {
        let mut value = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let mut group = [0u8; 5];
        for slot in group.iter_mut().rev() {
            *slot = ALPHABET[(value % 85) as usize];
            value /= 85;
        }
        out.extend(group.iter().map(|&b| char::from(b)));
    }
    Ok(out)
}

/// Decodes Z85 `text` (a multiple of 5 characters long).
pub fn decode(text: &str) -> Result<Vec<u8>, Z85Error> {
    let bytes = text.as_bytes();
    if bytes.len() % 5 != 0 {
        return Err(Z85Error::BadTextLength(text.chars().count()));
    }
    let mut out = Vec::with_capacity(bytes.len() / 5 * 4);
    for (group_index, group) in bytes.chunks_exact(5).enumerate() {
        let mut value: u64 = 0;
        for (i, &b) in group.iter().enumerate() {
            let offset = group_index * 5 + i;
            let digit = digit(b).ok_or_else(|| Z85Error::BadCharacter {
                offset,
                found: text[offset..].chars().next().unwrap_or('\u{fffd}'),
            })?;
            value = value * 85 + u64::from(digit);
        }
        let value = u32::try_from(value).map_err(|_| Z85Error::Overflow(group_index * 5))?;
        out.extend_from_slice(&value.to_be_bytes());
    }
    Ok(out)
}

/// Decodes Z85 text that must hold exactly `N` bytes (a 40-character key
/// is 32 bytes).
pub fn decode_array<const N: usize>(text: &str) -> Result<[u8; N], Z85Error> {
    if text.len() != N / 4 * 5 || N % 4 != 0 {
        return Err(Z85Error::BadTextLength(text.chars().count()));
    }
    let bytes = decode(text)?;
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes);
    Ok(out)
}

fn digit(b: u8) -> Option<u8> {
    ALPHABET.iter().position(|&a| a == b).map(|p| p as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_vector() {
        let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
        assert_eq!(encode(&bytes).unwrap(), "HelloWorld");
        assert_eq!(decode("HelloWorld").unwrap(), bytes);
    }

    #[test]
    fn errors() {
        assert_eq!(encode(&[1, 2, 3]), Err(Z85Error::BadBinaryLength(3)));
        assert_eq!(decode("Hell"), Err(Z85Error::BadTextLength(4)));
        assert_eq!(
            decode("Hell\"World"),
            Err(Z85Error::BadCharacter {
                offset: 4,
                found: '"'
            })
        );
        // "%nSc1" is 2^32: one past the largest 32-bit value.
        assert_eq!(decode("%nSc0").unwrap(), [0xFF; 4]);
        assert_eq!(decode("%nSc1"), Err(Z85Error::Overflow(0)));
        assert!(matches!(
            decode("é1234"),
            Err(Z85Error::BadTextLength(_)) | Err(Z85Error::BadCharacter { .. })
        ));
        assert_eq!(
            decode_array::<32>("HelloWorld"),
            Err(Z85Error::BadTextLength(10))
        );
    }

    #[test]
    fn empty() {
        assert_eq!(encode(&[]).unwrap(), "");
        assert_eq!(decode("").unwrap(), Vec::<u8>::new());
    }
}
