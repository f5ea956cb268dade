//! Metadata properties carried by READY (and later by PLAIN/CURVE
//! handshake commands).
//!
//! ```text
//! property = name-len(1) name value-len(4, big endian) value
//! ```
//! Names are sent exactly as given (libzmq matches `Socket-Type` and
//! `Identity` case-sensitively) and looked up case-insensitively (RFC 37).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{ProtocolError, UsageError};

/// Name of the socket-type property.
pub const SOCKET_TYPE: &str = "Socket-Type";
/// Name of the identity (routing id) property.
pub const IDENTITY: &str = "Identity";

/// An ordered list of metadata properties.
///
/// ```
/// use fabriq_zmtp::Properties;
/// let mut p = Properties::new();
/// p.push("Socket-Type", "SUB").unwrap();
/// assert_eq!(p.get("socket-type").map(|v| &v[..]), Some(&b"SUB"[..]));
/// let mut wire = bytes::BytesMut::new();
/// p.encode(&mut wire);
/// assert_eq!(&wire[..], b"\x0BSocket-Type\x00\x00\x00\x03SUB");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<(String, Bytes)>,
}

impl Properties {
    /// No properties.
    pub fn new() -> Self {
        Properties::default()
    }

    /// Appends a property. Names are 1 to 255 characters of
    /// `A-Z a-z 0-9 - _ . +`; values at most `u32::MAX` bytes.
    pub fn push(
        &mut self,
        name: impl Into<String>,
        value: impl Into<Bytes>,
    ) -> Result<(), UsageError> {
        let name = name.into();
        let value = value.into();
        if let Err(reason) = check_name(name.as_bytes()) {
            return Err(UsageError::InvalidProperty { name, reason });
        }
        if u32::try_from(value.len()).is_err() {
            return Err(UsageError::InvalidProperty {
                name,
                reason: "value longer than 4 GiB",
            });
        }
        self.entries.push((name, value));
        Ok(())
    }

    /// The first value whose name matches `name`, ignoring ASCII case.
    pub fn get(&self, name: &str) -> Option<&Bytes> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// All properties, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes [`Properties::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        self.entries
            .iter()
            .map(|(n, v)| 1 + n.len() + 4 + v.len())
            .sum()
    }

    /// Appends the wire form.
    pub fn encode(&self, dst: &mut BytesMut) {
        dst.reserve(self.encoded_len());
        for (name, value) in &self.entries {
            dst.put_u8(name.len() as u8);
            dst.put_slice(name.as_bytes());
            dst.put_u32(value.len() as u32);
            dst.put_slice(value);
        }
    }

    /// Parses the wire form. Values are slices of `src` (no copy).
    pub fn decode(src: &Bytes) -> Result<Properties, ProtocolError> {
        let mut entries = Vec::new();
        let mut pos = 0;
        while pos < src.len() {
            let name_len = usize::from(src[pos]);
            pos += 1;
            let name = src
                .get(pos..pos + name_len)
                .ok_or(ProtocolError::MalformedProperty("name runs past the end"))?;
            check_name(name).map_err(ProtocolError::MalformedProperty)?;
            pos += name_len;
            let len_bytes: [u8; 4] = src
                .get(pos..pos + 4)
                .and_then(|b| b.try_into().ok())
                .ok_or(ProtocolError::MalformedProperty(
                    "value length runs past the end",
                ))?;
            pos += 4;
            let value_len = u32::from_be_bytes(len_bytes) as usize;
            if src.len() - pos < value_len {
                return Err(ProtocolError::MalformedProperty("value runs past the end"));
            }
            let name = String::from_utf8(name.to_vec()).expect("checked to be ASCII");
            entries.push((name, src.slice(pos..pos + value_len)));
            pos += value_len;
        }
        Ok(Properties { entries })
    }
}

fn check_name(name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.len() > 255 {
        return Err("name longer than 255 bytes");
    }
    if !name
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-_.+".contains(&b))
    {
        return Err("name has characters outside A-Z a-z 0-9 - _ . +");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_case_insensitive_lookup() {
        let mut p = Properties::new();
        p.push(SOCKET_TYPE, "DEALER").unwrap();
        p.push(IDENTITY, Bytes::new()).unwrap();
        p.push("X-Trace", vec![0u8; 300]).unwrap();
        let mut wire = BytesMut::new();
        p.encode(&mut wire);
        assert_eq!(wire.len(), p.encoded_len());
        let back = Properties::decode(&wire.freeze()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.get("IDENTITY").unwrap().len(), 0);
        assert_eq!(back.get("x-trace").unwrap().len(), 300);
        assert!(back.get("Missing").is_none());
    }

    #[test]
    fn rejects_bad_names_on_push() {
        let mut p = Properties::new();
        assert!(p.push("", "x").is_err());
        assert!(p.push("has space", "x").is_err());
        assert!(p.push("x".repeat(256), "x").is_err());
    }

    #[test]
    fn malformed_wire_forms() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x05Sock", "name runs past the end"),
            (b"\x00\x00\x00\x00\x00", "empty name"),
            (b"\x01A\x00\x00", "value length runs past the end"),
            (b"\x01A\x00\x00\x00\x05abc", "value runs past the end"),
            (b"\x01A\xff\xff\xff\xffabc", "value runs past the end"),
            (
                b"\x02A \x00\x00\x00\x00",
                "name has characters outside A-Z a-z 0-9 - _ . +",
            ),
        ];
        for (wire, reason) in cases {
            assert_eq!(
                Properties::decode(&Bytes::copy_from_slice(wire)),
                Err(ProtocolError::MalformedProperty(reason)),
                "{wire:?}"
            );
        }
    }
}
