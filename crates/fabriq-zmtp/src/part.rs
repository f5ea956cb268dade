//! `Part`: the body of one frame of a message, small ones held inline.
//!
//! A message frame of at most [`INLINE_MAX`] bytes is kept in the `Part`
//! itself; a larger one is a [`Bytes`] handle (a slice of the read buffer,
//! of a registered page, or of the sender's own buffer: no copy). A small
//! `Bytes` costs an atomic reference-count increment when it is cut from a
//! shared buffer and a decrement when it is dropped, usually on another
//! thread than the increment, so the count's cache line moves between
//! cores twice per message; an inline part costs a copy of its bytes and
//! nothing else. libzmq keeps messages of up to 33 bytes inline
//! (`zmq::msg_t`'s VSM) for the same reason.
//!
//! A `Part` is as large as a `Bytes` (32 bytes on 64-bit targets): the
//! inline variant fits beside the pointer that tells the two apart, so
//! moving a `Part` costs what moving a `Bytes` did.
//!
//! ```
//! use bytes::Bytes;
//! use fabriq_zmtp::Part;
//! let small = Part::copy_from_slice(b"tick");
//! assert!(small.is_inline());
//! assert_eq!(&small[..], b"tick");
//! let shared = Bytes::from(vec![7u8; 100]);
//! let big = Part::from(shared.clone());
//! assert!(!big.is_inline());
//! assert_eq!(big.into_bytes().as_ptr(), shared.as_ptr()); // no copy
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use bytes::Bytes;

/// The largest body kept inline, in bytes.
pub const INLINE_MAX: usize = 23;

/// The body of one message frame (see the module documentation).
#[derive(Clone)]
pub struct Part(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Bytes),
    Inline { len: u8, data: [u8; INLINE_MAX] },
}

impl Part {
    /// An empty part.
    pub const fn new() -> Part {
        Part(Repr::Inline {
            len: 0,
            data: [0; INLINE_MAX],
        })
    }

    /// A part holding a copy of `data`: inline if it fits, else in a new
    /// allocation.
    pub fn copy_from_slice(data: &[u8]) -> Part {
        Part::inline(data).unwrap_or_else(|| Part(Repr::Shared(Bytes::copy_from_slice(data))))
    }

    /// A part holding a copy of `data` if it fits inline.
    #[inline]
    pub fn inline(data: &[u8]) -> Option<Part> {
        if data.len() > INLINE_MAX {
            return None;
        }
        let mut buf = [0; INLINE_MAX];
        buf[..data.len()].copy_from_slice(data);
        Some(Part(Repr::Inline {
            len: data.len() as u8,
            data: buf,
        }))
    }

    /// A part for static bytes (no copy, no allocation).
    pub const fn from_static(data: &'static [u8]) -> Part {
        Part(Repr::Shared(Bytes::from_static(data)))
    }

    /// Whether the bytes are held inline.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// The bytes as a `Bytes` handle, if they are held in one.
    pub fn as_shared(&self) -> Option<&Bytes> {
        match &self.0 {
            Repr::Shared(b) => Some(b),
            Repr::Inline { .. } => None,
        }
    }

    /// The whole inline buffer and how many of its bytes are the part's,
    /// if the bytes are held inline: a copy of the fixed-size buffer is a
    /// few register moves, where a copy of `len` bytes is a `memcpy` call.
    #[inline]
    pub(crate) fn inline_buffer(&self) -> Option<(&[u8; INLINE_MAX], usize)> {
        match &self.0 {
            Repr::Inline { len, data } => Some((data, usize::from(*len))),
            Repr::Shared(_) => None,
        }
    }

    /// The bytes, writable in place, if they are held inline.
    pub fn inline_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.0 {
            Repr::Inline { len, data } => Some(&mut data[..*len as usize]),
            Repr::Shared(_) => None,
        }
    }

    /// The bytes as `Bytes`: the handle itself, or for an inline part a
    /// new allocation holding a copy (at most [`INLINE_MAX`] bytes).
    pub fn into_bytes(self) -> Bytes {
        match self.0 {
            Repr::Shared(b) => b,
            Repr::Inline { len, data } => Bytes::copy_from_slice(&data[..len as usize]),
        }
    }

    /// [`Part::into_bytes`] by reference: a reference-counted handle, or a
    /// copy of an inline part.
    pub fn to_bytes(&self) -> Bytes {
        self.clone().into_bytes()
    }
}

impl Default for Part {
    fn default() -> Part {
        Part::new()
    }
}

impl Deref for Part {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Shared(b) => b,
            Repr::Inline { len, data } => &data[..*len as usize],
        }
    }
}

impl AsRef<[u8]> for Part {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Bytes> for Part {
    #[inline]
    fn from(b: Bytes) -> Part {
        Part(Repr::Shared(b))
    }
}

impl From<Part> for Bytes {
    fn from(p: Part) -> Bytes {
        p.into_bytes()
    }
}

impl From<&'static [u8]> for Part {
    fn from(data: &'static [u8]) -> Part {
        Part::from_static(data)
    }
}

impl From<&'static str> for Part {
    fn from(data: &'static str) -> Part {
        Part::from_static(data.as_bytes())
    }
}

impl From<Vec<u8>> for Part {
    fn from(data: Vec<u8>) -> Part {
        Part::from(Bytes::from(data))
    }
}

impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Part {}

impl PartialEq<[u8]> for Part {
    fn eq(&self, other: &[u8]) -> bool {
        &self[..] == other
    }
}

impl PartialEq<&[u8]> for Part {
    fn eq(&self, other: &&[u8]) -> bool {
        &self[..] == *other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Part {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self[..] == other[..]
    }
}

impl PartialEq<Bytes> for Part {
    fn eq(&self, other: &Bytes) -> bool {
        self[..] == other[..]
    }
}

impl Hash for Part {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self[..].hash(state)
    }
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Shared(b) => fmt::Debug::fmt(b, f),
            // As `Bytes` prints (a debugging aid: the copy does not matter).
            Repr::Inline { .. } => fmt::Debug::fmt(&Bytes::copy_from_slice(self), f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_as_large_as_bytes() {
        assert_eq!(std::mem::size_of::<Part>(), std::mem::size_of::<Bytes>());
    }

    #[test]
    fn parts_up_to_the_limit_are_inline_and_keep_their_bytes() {
        for len in 0..=INLINE_MAX + 1 {
            let data: Vec<u8> = (0..len as u8).collect();
            let part = Part::copy_from_slice(&data);
            assert_eq!(part.is_inline(), len <= INLINE_MAX, "len {len}");
            assert_eq!(&part[..], &data[..]);
            assert_eq!(&part.to_bytes()[..], &data[..]);
            assert_eq!(part, Part::from(Bytes::from(data.clone())));
        }
    }

    #[test]
    fn an_inline_part_is_writable_in_place() {
        let mut part = Part::copy_from_slice(b"abc");
        part.inline_mut().unwrap()[0] = b'x';
        assert_eq!(&part[..], b"xbc");
        assert!(Part::from(Bytes::from_static(b"abc"))
            .inline_mut()
            .is_none());
    }

    #[test]
    fn debug_prints_like_bytes() {
        let part = Part::copy_from_slice(b"a\"\n\x01");
        assert_eq!(
            format!("{part:?}"),
            format!("{:?}", Bytes::from_static(b"a\"\n\x01"))
        );
    }
}
