//! CURVE keys: 32-byte X25519 public and secret keys, their Z85 forms
//! (40 characters, as `zmq_curve_keypair` prints them), and key pairs.
//!
//! ```
//! use fabriq_zmtp::keys::{CurveKeyPair, CurvePublicKey};
//! let pair = CurveKeyPair::generate();
//! let text = pair.public.to_z85();
//! assert_eq!(text.len(), 40);
//! assert_eq!(CurvePublicKey::from_z85(&text).unwrap(), pair.public);
//! ```

use std::fmt;

use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::z85::{self, Z85Error};

/// Length of a CURVE key in bytes.
pub const KEY_LEN: usize = 32;

/// A CURVE public key (X25519).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CurvePublicKey(pub [u8; KEY_LEN]);

impl CurvePublicKey {
    /// The key from its 40-character Z85 form.
    pub fn from_z85(text: &str) -> Result<Self, Z85Error> {
        z85::decode_array(text).map(CurvePublicKey)
    }

    /// The 40-character Z85 form.
    pub fn to_z85(&self) -> String {
        z85::encode(&self.0).expect("32 bytes are a multiple of 4")
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for CurvePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CurvePublicKey({})", self.to_z85())
    }
}

/// A CURVE secret key: zeroed when dropped, compared in constant time,
/// never printed by `Debug`.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct CurveSecretKey([u8; KEY_LEN]);

impl CurveSecretKey {
    /// A secret key from its raw bytes (the caller should zero its copy).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        CurveSecretKey(bytes)
    }

    /// The key from its 40-character Z85 form.
    pub fn from_z85(text: &str) -> Result<Self, Z85Error> {
        let bytes = Zeroizing::new(z85::decode(text)?);
        if bytes.len() != KEY_LEN {
            return Err(Z85Error::BadTextLength(text.chars().count()));
        }
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(&bytes);
        Ok(CurveSecretKey(key))
    }

    /// The 40-character Z85 form, in a string that is zeroed when dropped.
    pub fn to_z85(&self) -> Zeroizing<String> {
        Zeroizing::new(z85::encode(&self.0).expect("32 bytes are a multiple of 4"))
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The public key that belongs to this secret key
    /// (`crypto_scalarmult_base`).
    pub fn public_key(&self) -> CurvePublicKey {
        CurvePublicKey(
            fabriq_sodium::public_key(&self.0)
                .expect("X25519 of the base point and a clamped scalar is never zero"),
        )
    }
}

impl PartialEq for CurveSecretKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for CurveSecretKey {}

impl fmt::Debug for CurveSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CurveSecretKey(<secret>)")
    }
}

/// A long-term CURVE key pair, as `zmq_curve_keypair` makes them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CurveKeyPair {
    /// The public half, given to peers.
    pub public: CurvePublicKey,
    /// The secret half.
    pub secret: CurveSecretKey,
}

impl CurveKeyPair {
    /// A fresh random key pair from the operating system's generator
    /// (libsodium's `crypto_box_keypair`).
    pub fn generate() -> Self {
        let (public, secret) = fabriq_sodium::keypair();
        CurveKeyPair {
            public: CurvePublicKey(public),
            secret: CurveSecretKey(*secret),
        }
    }

    /// The pair for a secret key (the public key is derived from it).
    pub fn from_secret(secret: CurveSecretKey) -> Self {
        CurveKeyPair {
            public: secret.public_key(),
            secret,
        }
    }

    /// A pair from the Z85 forms of both halves; fails if they do not
    /// belong together.
    pub fn from_z85(public: &str, secret: &str) -> Result<Self, KeyError> {
        let public = CurvePublicKey::from_z85(public)?;
        let pair = CurveKeyPair::from_secret(CurveSecretKey::from_z85(secret)?);
        if pair.public != public {
            return Err(KeyError::Mismatch);
        }
        Ok(pair)
    }
}

/// Why a key pair could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A key is not valid Z85 of 32 bytes.
    #[error(transparent)]
    Z85(#[from] Z85Error),
    /// The public key does not belong to the secret key.
    #[error("the public key does not belong to the secret key")]
    Mismatch,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_pairs_round_trip_through_z85() {
        let pair = CurveKeyPair::generate();
        let again = CurveKeyPair::from_z85(&pair.public.to_z85(), &pair.secret.to_z85()).unwrap();
        assert_eq!(again, pair);
        let other = CurveKeyPair::generate();
        assert_eq!(
            CurveKeyPair::from_z85(&other.public.to_z85(), &pair.secret.to_z85()),
            Err(KeyError::Mismatch)
        );
        assert!(!format!("{:?}", pair.secret).contains(&*pair.secret.to_z85()));
    }

    /// The key pairs libzmq's own tests use (tests/test_sodium.cpp checks
    /// `zmq_curve_public` on the first; tests/test_heartbeats.cpp uses both).
    #[test]
    fn libzmq_reference_pair() {
        let pair = CurveKeyPair::from_z85(
            "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
            "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6",
        )
        .unwrap();
        assert_eq!(
            pair.public.to_z85(),
            "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
        );
        let secret = CurveSecretKey::from_z85("D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs").unwrap();
        assert_eq!(
            secret.public_key().to_z85(),
            "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
        );
    }
}
