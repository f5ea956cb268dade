//! CURVE key pairs and Z85 text, shaped like the zmq crate's
//! `CurveKeyPair`, `z85_encode` and `z85_decode`.
//!
//! Keys are binary (32 bytes), as in the zmq crate; Z85 is their
//! 40-character printable form, which the `curve_*key` setters also take.
//!
//! ```
//! let pair = fabriq::CurveKeyPair::new().unwrap();
//! let text = fabriq::z85_encode(&pair.public_key).unwrap();
//! assert_eq!(text.len(), 40);
//! assert_eq!(fabriq::z85_decode(&text).unwrap(), pair.public_key);
//! ```

use std::ffi::{CString, NulError};
use std::fmt;
use std::string::FromUtf8Error;

use fabriq_zmtp::z85::{self, Z85Error};

use crate::error::Result;

/// A CURVE key pair (`zmq_curve_keypair`), both halves binary.
///
/// `Debug` shows the public key only.
pub struct CurveKeyPair {
    /// The public key, given to peers (`curve_serverkey` on a client,
    /// `curve_publickey` on the socket itself).
    pub public_key: [u8; 32],
    /// The secret key (`curve_secretkey`).
    pub secret_key: [u8; 32],
}

impl CurveKeyPair {
    /// A fresh key pair from the operating system's random generator.
    ///
    /// ```
    /// let pair = fabriq::CurveKeyPair::new().unwrap();
    /// assert_ne!(pair.public_key, pair.secret_key);
    /// ```
    pub fn new() -> Result<CurveKeyPair> {
        let pair = fabriq_zmtp::CurveKeyPair::generate();
        Ok(CurveKeyPair {
            public_key: pair.public.0,
            secret_key: *pair.secret.as_bytes(),
        })
    }
}

impl CurveKeyPair {
    /// The pair of a secret key: its public key derived from it
    /// (libzmq's `zmq_curve_public`; not in the zmq crate).
    ///
    /// ```
    /// let pair = fabriq::CurveKeyPair::new().unwrap();
    /// let again = fabriq::CurveKeyPair::from_secret_key(&pair.secret_key);
    /// assert_eq!(again.public_key, pair.public_key);
    /// ```
    pub fn from_secret_key(secret_key: &[u8; 32]) -> CurveKeyPair {
        let secret = fabriq_zmtp::CurveSecretKey::from_bytes(*secret_key);
        CurveKeyPair {
            public_key: secret.public_key().0,
            secret_key: *secret_key,
        }
    }
}

impl fmt::Debug for CurveKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveKeyPair")
            .field("public_key", &fabriq_zmtp::CurvePublicKey(self.public_key))
            .field("secret_key", &"<secret>")
            .finish()
    }
}

impl Drop for CurveKeyPair {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.secret_key);
    }
}

/// Why [`z85_encode`] failed (the zmq crate's type).
#[derive(Debug)]
pub enum EncodeError {
    /// The input is not a multiple of 4 bytes long.
    BadLength,
    /// Never produced by fabriq (the zmq crate's libzmq output check).
    FromUtf8Error(FromUtf8Error),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::BadLength => write!(f, "Invalid data length. Should be multiple of 4."),
            EncodeError::FromUtf8Error(e) => write!(f, "UTF8 conversion error: {e}"),
        }
    }
}

impl std::error::Error for EncodeError {}

impl From<FromUtf8Error> for EncodeError {
    fn from(e: FromUtf8Error) -> Self {
        EncodeError::FromUtf8Error(e)
    }
}

/// Why [`z85_decode`] failed: the zmq crate's variants, and one more for
/// text that is not Z85 (the zmq crate returns garbage bytes there).
#[derive(Debug)]
pub enum DecodeError {
    /// The input is not a multiple of 5 characters long.
    BadLength,
    /// The input holds a NUL byte.
    NulError(NulError),
    /// A character outside the Z85 alphabet, or a group above 2^32 - 1
    /// (at this byte offset). Not in the zmq crate.
    BadCharacter(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadLength => write!(f, "Invalid data length. Should be multiple of 5."),
            DecodeError::NulError(e) => write!(f, "Nul byte error: {e}"),
            DecodeError::BadCharacter(at) => write!(f, "not Z85 text at offset {at}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<NulError> for DecodeError {
    fn from(e: NulError) -> Self {
        DecodeError::NulError(e)
    }
}

/// Encodes binary data (a multiple of 4 bytes) as Z85 text (RFC 32).
///
/// ```
/// let text = fabriq::z85_encode(&[0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]).unwrap();
/// assert_eq!(text, "HelloWorld");
/// ```
pub fn z85_encode(data: &[u8]) -> std::result::Result<String, EncodeError> {
    z85::encode(data).map_err(|_| EncodeError::BadLength)
}

/// Decodes Z85 text (a multiple of 5 characters) into bytes.
///
/// ```
/// assert_eq!(
///     fabriq::z85_decode("HelloWorld").unwrap(),
///     [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
/// );
/// assert!(fabriq::z85_decode("Hell").is_err());
/// ```
pub fn z85_decode(data: &str) -> std::result::Result<Vec<u8>, DecodeError> {
    if data.len() % 5 != 0 {
        return Err(DecodeError::BadLength);
    }
    // The zmq crate hands the text to C, so a NUL is its own error.
    CString::new(data)?;
    z85::decode(data).map_err(|e| match e {
        Z85Error::BadCharacter { offset, .. } => DecodeError::BadCharacter(offset),
        Z85Error::Overflow(offset) => DecodeError::BadCharacter(offset),
        Z85Error::BadTextLength(_) | Z85Error::BadBinaryLength(_) => DecodeError::BadLength,
    })
}
