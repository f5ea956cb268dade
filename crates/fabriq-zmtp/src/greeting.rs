//! The 64-byte ZMTP 3.x greeting: encoding, incremental decoding and
//! version negotiation.
//!
//! ```text
//! offset  0      1..9      9     10     11     12..32      32         33..64
//!        0xFF  padding   0x7F  major  minor  mechanism  as-server  filler
//! ```
//!
//! libzmq sends its greeting in stages (10 bytes, then the major version,
//! then the rest) and waits for the peer between stages, so the decoder
//! accepts any chunking and checks each field as soon as it has arrived:
//! a ZMTP 1.0/2.0 peer or a port scanner is refused after the first bytes,
//! not after a 64-byte wait that would never end.

use std::fmt;

use crate::error::ProtocolError;

/// Length of a ZMTP 3.x greeting.
pub const GREETING_LEN: usize = 64;

const SIGNATURE_START: u8 = 0xFF;
const SIGNATURE_END: u8 = 0x7F;
const MAJOR_OFFSET: usize = 10;
const MINOR_OFFSET: usize = 11;
const MECHANISM_OFFSET: usize = 12;
const MECHANISM_LEN: usize = 20;
const AS_SERVER_OFFSET: usize = 32;

/// The protocol revision fabriq announces: ZMTP 3.1.
pub const OUR_VERSION: Version = Version { major: 3, minor: 1 };

/// A ZMTP protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version (3 for every peer fabriq accepts).
    pub major: u8,
    /// Minor version: 0 for ZMTP 3.0, 1 for 3.1.
    pub minor: u8,
}

impl Version {
    /// The version both sides speak: the lower of the two. A peer that
    /// announces a higher major version is talked to as 3.1 (RFC 37: a peer
    /// MUST accept higher versions).
    pub fn negotiate(self, peer: Version) -> Version {
        if peer.major > self.major {
            self
        } else {
            self.min(peer)
        }
    }

    /// Whether this revision has the 3.1 commands (PING/PONG, SUBSCRIBE,
    /// CANCEL).
    pub fn has_commands_3_1(self) -> bool {
        self >= Version { major: 3, minor: 1 }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The security mechanisms that may be named in a greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MechanismName {
    /// No security (RFC 37 NULL).
    Null,
    /// Clear-text user name and password (RFC 24).
    Plain,
    /// CurveZMQ (RFC 26).
    Curve,
}

impl MechanismName {
    /// The name as it appears in the greeting.
    pub fn as_str(self) -> &'static str {
        match self {
            MechanismName::Null => "NULL",
            MechanismName::Plain => "PLAIN",
            MechanismName::Curve => "CURVE",
        }
    }

    fn parse(field: &[u8]) -> Result<MechanismName, ProtocolError> {
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        let (name, padding) = field.split_at(end);
        let well_formed = padding.iter().all(|&b| b == 0)
            && name
                .iter()
                .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b"-_.+".contains(&b));
        match name {
            b"NULL" if well_formed => Ok(MechanismName::Null),
            b"PLAIN" if well_formed => Ok(MechanismName::Plain),
            b"CURVE" if well_formed => Ok(MechanismName::Curve),
            _ => Err(ProtocolError::UnknownMechanism(
                String::from_utf8_lossy(field)
                    .trim_end_matches('\0')
                    .to_string(),
            )),
        }
    }
}

impl fmt::Display for MechanismName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoded or to-be-sent greeting.
///
/// ```
/// use fabriq_zmtp::greeting::{Greeting, GreetingDecoder, MechanismName, OUR_VERSION};
/// let ours = Greeting { version: OUR_VERSION, mechanism: MechanismName::Null, as_server: false };
/// let bytes = ours.encode();
/// let mut dec = GreetingDecoder::new();
/// // Feed it in libzmq's stages: 10 bytes, 1 byte, then the rest.
/// assert_eq!(dec.feed(&bytes[..10]).unwrap(), (10, None));
/// assert_eq!(dec.feed(&bytes[10..11]).unwrap(), (1, None));
/// assert_eq!(dec.feed(&bytes[11..]).unwrap(), (53, Some(ours)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Greeting {
    /// Announced protocol version.
    pub version: Version,
    /// Security mechanism.
    pub mechanism: MechanismName,
    /// The as-server flag (meaningful for PLAIN and CURVE).
    pub as_server: bool,
}

impl Greeting {
    /// The 64 wire bytes of this greeting. Padding bytes 1..9 are zero
    /// (libzmq writes a ZMTP 1.0 length there for old peers; 3.x ignores
    /// it).
    pub fn encode(&self) -> [u8; GREETING_LEN] {
        let mut out = [0u8; GREETING_LEN];
        out[0] = SIGNATURE_START;
        out[9] = SIGNATURE_END;
        out[MAJOR_OFFSET] = self.version.major;
        out[MINOR_OFFSET] = self.version.minor;
        let name = self.mechanism.as_str().as_bytes();
        out[MECHANISM_OFFSET..MECHANISM_OFFSET + name.len()].copy_from_slice(name);
        out[AS_SERVER_OFFSET] = u8::from(self.as_server);
        out
    }
}

/// Incremental greeting decoder: feed it bytes as they arrive.
#[derive(Debug, Clone)]
pub struct GreetingDecoder {
    buf: [u8; GREETING_LEN],
    len: usize,
}

impl Default for GreetingDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl GreetingDecoder {
    /// A decoder that has seen nothing yet.
    pub fn new() -> Self {
        GreetingDecoder {
            buf: [0; GREETING_LEN],
            len: 0,
        }
    }

    /// How many greeting bytes have been received so far.
    pub fn received(&self) -> usize {
        self.len
    }

    /// Consumes bytes from `input` (never more than the greeting needs) and
    /// returns how many it took, plus the greeting once it is complete.
    /// Each field is validated as soon as it is complete.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Greeting>), ProtocolError> {
        let take = input.len().min(GREETING_LEN - self.len);
        let start = self.len;
        self.buf[start..start + take].copy_from_slice(&input[..take]);
        self.len += take;
        self.validate_prefix(start)?;
        if self.len < GREETING_LEN {
            return Ok((take, None));
        }
        let mechanism =
            MechanismName::parse(&self.buf[MECHANISM_OFFSET..MECHANISM_OFFSET + MECHANISM_LEN])?;
        let as_server = match self.buf[AS_SERVER_OFFSET] {
            0 => false,
            1 => true,
            other => return Err(ProtocolError::BadAsServer(other)),
        };
        Ok((
            take,
            Some(Greeting {
                version: Version {
                    major: self.buf[MAJOR_OFFSET],
                    minor: self.buf[MINOR_OFFSET],
                },
                mechanism,
                as_server,
            }),
        ))
    }

    /// Checks the fields that became complete with bytes `from..self.len`.
    fn validate_prefix(&self, from: usize) -> Result<(), ProtocolError> {
        let newly = |offset: usize| from <= offset && offset < self.len;
        if newly(0) && self.buf[0] != SIGNATURE_START {
            return Err(ProtocolError::BadSignature {
                offset: 0,
                found: self.buf[0],
                expected: SIGNATURE_START,
            });
        }
        if newly(9) && self.buf[9] != SIGNATURE_END {
            return Err(ProtocolError::BadSignature {
                offset: 9,
                found: self.buf[9],
                expected: SIGNATURE_END,
            });
        }
        if newly(MAJOR_OFFSET) && self.buf[MAJOR_OFFSET] < 3 {
            return Err(ProtocolError::UnsupportedVersion {
                major: self.buf[MAJOR_OFFSET],
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null_greeting() -> [u8; GREETING_LEN] {
        Greeting {
            version: OUR_VERSION,
            mechanism: MechanismName::Null,
            as_server: false,
        }
        .encode()
    }

    #[test]
    fn encodes_the_spec_layout() {
        let g = Greeting {
            version: Version { major: 3, minor: 0 },
            mechanism: MechanismName::Curve,
            as_server: true,
        }
        .encode();
        assert_eq!(g[0], 0xFF);
        assert_eq!(&g[1..9], &[0; 8]);
        assert_eq!(g[9], 0x7F);
        assert_eq!(&g[10..12], &[3, 0]);
        assert_eq!(&g[12..17], b"CURVE");
        assert!(g[17..32].iter().all(|&b| b == 0));
        assert_eq!(g[32], 1);
        assert!(g[33..].iter().all(|&b| b == 0));
    }

    #[test]
    fn decodes_byte_by_byte() {
        let bytes = null_greeting();
        let mut dec = GreetingDecoder::new();
        for (i, b) in bytes.iter().enumerate() {
            let (n, g) = dec.feed(std::slice::from_ref(b)).unwrap();
            assert_eq!(n, 1);
            assert_eq!(g.is_some(), i == GREETING_LEN - 1);
        }
    }

    #[test]
    fn does_not_consume_past_the_greeting() {
        let mut bytes = null_greeting().to_vec();
        bytes.extend_from_slice(b"frames");
        let (n, g) = GreetingDecoder::new().feed(&bytes).unwrap();
        assert_eq!(n, GREETING_LEN);
        assert!(g.is_some());
    }

    #[test]
    fn negotiation_picks_the_lower_version() {
        let v30 = Version { major: 3, minor: 0 };
        let v40 = Version { major: 4, minor: 0 };
        assert_eq!(OUR_VERSION.negotiate(v30), v30);
        assert_eq!(OUR_VERSION.negotiate(OUR_VERSION), OUR_VERSION);
        assert_eq!(OUR_VERSION.negotiate(v40), OUR_VERSION);
        assert_eq!(
            OUR_VERSION.negotiate(Version { major: 3, minor: 7 }),
            OUR_VERSION
        );
    }
}
