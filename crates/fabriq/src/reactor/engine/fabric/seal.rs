//! Sealing fabric pages (the `fabric_encrypt` design, issue 13 item 4):
//! each direction of a connection has its own fresh random 32-byte key,
//! and each page is one XSalsa20-Poly1305 secretbox (libsodium's
//! `crypto_secretbox_detached`, through `fabriq_sodium` as CURVE's boxes)
//! whose nonce comes from a per-direction page counter.
//!
//! Page layout: `counter` (u64, big endian) | `tag` (16 bytes) |
//! ciphertext, [`OVERHEAD`] = 24 bytes before the plaintext. The nonce is
//! 16 fixed bytes followed by the counter, so a counter is never used
//! twice under one key (the sealer refuses to wrap). The receiver's
//! [`Opener`] accepts only the next counter it expects: a replayed or
//! reordered page is refused before any decryption, and a tampered page
//! (or one under another key) fails authentication. Either way nothing
//! of the page is decrypted or delivered. Decryption is in place, so the
//! plaintext stays in the received page (zero-copy delivery still works:
//! frames are slices of the page after [`OVERHEAD`]).
//!
//! Used by the fabric engine (`reactor/engine/fabric/`) when a socket sets
//! `fabric_encrypt`; the keys travel in `KEY` commands on the
//! CURVE-encrypted control connection (docs/fabric.md, "Encryption of
//! the data path").

use fabriq_sodium::{Mac, Nonce, SecretBoxKey};
use zeroize::Zeroizing;

/// Bytes before the plaintext in a sealed page: the counter (8) and the
/// Poly1305 tag (16).
pub(crate) const OVERHEAD: usize = 24;
/// Length of a direction's key.
pub(crate) const KEY_LEN: usize = 32;
/// The fixed first 16 bytes of every page nonce.
const NONCE_PREFIX: &[u8; 16] = b"fabriq-ofi-page\0";

fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; 24];
    n[..16].copy_from_slice(NONCE_PREFIX);
    n[16..].copy_from_slice(&counter.to_be_bytes());
    n
}

/// Seals the pages of one sending direction. The key is zeroed when the
/// sealer is dropped (`SecretBoxKey` does it with `sodium_memzero`).
pub(crate) struct Sealer {
    cipher: SecretBoxKey,
    next: u64,
}

impl Sealer {
    /// A sealer under a fresh random key, and that key (for the peer,
    /// sent inside the CURVE-encrypted control connection).
    pub(crate) fn generate() -> (Sealer, Zeroizing<[u8; KEY_LEN]>) {
        let cipher = SecretBoxKey::generate();
        let key = Zeroizing::new(*cipher.as_bytes());
        (Sealer { cipher, next: 0 }, key)
    }

    /// A sealer under `key`, starting at counter 0.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn with_key(key: &[u8; KEY_LEN]) -> Sealer {
        Sealer {
            cipher: SecretBoxKey::from_bytes(key),
            next: 0,
        }
    }

    /// Seals `page` in place: `page[OVERHEAD..]` is the plaintext; the
    /// counter and tag are written into `page[..OVERHEAD]`.
    pub(crate) fn seal(&mut self, page: &mut [u8]) -> Result<(), String> {
        if page.len() < OVERHEAD {
            return Err(format!(
                "a page of {} bytes has no room for its seal",
                page.len()
            ));
        }
        let counter = self.next;
        self.next = counter
            .checked_add(1)
            .ok_or("the page counter is exhausted: the connection must end")?;
        let (head, body) = page.split_at_mut(OVERHEAD);
        let tag = self
            .cipher
            .seal_in_place(&nonce(counter), body)
            .map_err(|e| format!("page encryption failed: {e}"))?;
        head[..8].copy_from_slice(&counter.to_be_bytes());
        head[8..].copy_from_slice(&tag);
        Ok(())
    }
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealer(next {})", self.next)
    }
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opener(next {})", self.next)
    }
}

/// Opens the pages of one receiving direction, in order.
pub(crate) struct Opener {
    cipher: SecretBoxKey,
    next: u64,
}

impl Opener {
    /// An opener for the key the peer sent (exactly [`KEY_LEN`] bytes).
    pub(crate) fn new(key: &[u8]) -> Result<Opener, String> {
        let key: &[u8; KEY_LEN] = key
            .try_into()
            .map_err(|_| format!("a page key of {} bytes, not {KEY_LEN}", key.len()))?;
        Ok(Opener {
            cipher: SecretBoxKey::from_bytes(key),
            next: 0,
        })
    }

    /// Checks and decrypts `page` in place; the plaintext is then
    /// `page[OVERHEAD..]`. Refuses a page whose counter is not the next
    /// one expected (replayed, reordered or dropped pages) and one that
    /// fails authentication (tampered, or under another key); on refusal
    /// the page is left as it was and the counter does not advance.
    pub(crate) fn open(&mut self, page: &mut [u8]) -> Result<(), String> {
        if page.len() < OVERHEAD {
            return Err(format!(
                "a sealed fabric page of {} bytes, shorter than its seal",
                page.len()
            ));
        }
        let (head, body) = page.split_at_mut(OVERHEAD);
        let counter = u64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
        if counter != self.next {
            return Err(format!(
                "sealed fabric page {counter} where {} was expected: replayed or reordered",
                self.next
            ));
        }
        let tag: Mac = head[8..OVERHEAD].try_into().expect("16 bytes");
        self.cipher
            .open_in_place(&nonce(counter), body, &tag)
            .map_err(|_| {
                format!("sealed fabric page {counter} failed authentication: tampered or under another key")
            })?;
        self.next += 1;
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn page(text: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; OVERHEAD];
        p.extend_from_slice(text);
        p
    }

    #[test]
    fn pages_round_trip_in_order_and_hide_their_payload() {
        let (mut sealer, key) = Sealer::generate();
        let mut opener = Opener::new(&key[..]).unwrap();
        let payload = b"a secret payload that must not be visible on the fabric";
        for i in 0..3u64 {
            let mut p = page(payload);
            sealer.seal(&mut p).unwrap();
            assert_eq!(&p[..8], &i.to_be_bytes(), "the counter, in clear");
            assert!(
                !p.windows(8).any(|w| payload.windows(8).any(|q| q == w)),
                "no 8 bytes of the plaintext in the sealed page"
            );
            opener.open(&mut p).unwrap();
            assert_eq!(&p[OVERHEAD..], payload);
        }
        // An empty body seals too (tag only).
        let mut p = page(b"");
        sealer.seal(&mut p).unwrap();
        opener.open(&mut p).unwrap();
    }

    #[test]
    fn same_plaintext_never_seals_the_same_twice() {
        let (mut sealer, _) = Sealer::generate();
        let (mut a, mut b) = (page(&[7; 64]), page(&[7; 64]));
        sealer.seal(&mut a).unwrap();
        sealer.seal(&mut b).unwrap();
        assert_ne!(a[8..], b[8..], "a fresh nonce per page");
        // Two connections (two keys) differ at the same counter.
        let (mut other, _) = Sealer::generate();
        let mut c = page(&[7; 64]);
        other.seal(&mut c).unwrap();
        assert_eq!(a[..8], c[..8]);
        assert_ne!(a[8..], c[8..]);
    }

    #[test]
    fn replayed_reordered_and_skipped_pages_are_refused_untouched() {
        let (mut sealer, key) = Sealer::generate();
        let mut opener = Opener::new(&key[..]).unwrap();
        let mut sealed = Vec::new();
        for i in 0..3u8 {
            let mut p = page(&[i; 32]);
            sealer.seal(&mut p).unwrap();
            sealed.push(p);
        }
        // Page 1 before page 0: reordered.
        let mut p1 = sealed[1].clone();
        let why = opener.open(&mut p1).unwrap_err();
        assert!(why.contains("page 1 where 0 was expected"), "{why}");
        assert_eq!(p1, sealed[1], "left as it was");
        let mut p0 = sealed[0].clone();
        opener.open(&mut p0).unwrap();
        // Page 0 again: replayed.
        let mut again = sealed[0].clone();
        let why = opener.open(&mut again).unwrap_err();
        assert!(why.contains("replayed"), "{why}");
        // Page 2 skipping page 1.
        let mut p2 = sealed[2].clone();
        assert!(opener.open(&mut p2).is_err());
        // The refusals did not move the counter: page 1 then 2 open.
        let mut p1 = sealed[1].clone();
        opener.open(&mut p1).unwrap();
        let mut p2 = sealed[2].clone();
        opener.open(&mut p2).unwrap();
        assert_eq!(&p2[OVERHEAD..], &[2; 32]);
    }

    #[test]
    fn a_replay_with_a_forged_counter_fails_authentication() {
        let (mut sealer, key) = Sealer::generate();
        let mut opener = Opener::new(&key[..]).unwrap();
        let mut p0 = page(b"first");
        sealer.seal(&mut p0).unwrap();
        let mut copy = p0.clone();
        opener.open(&mut p0).unwrap();
        // The same box relabelled as page 1: the nonce differs.
        copy[..8].copy_from_slice(&1u64.to_be_bytes());
        let why = opener.open(&mut copy).unwrap_err();
        assert!(why.contains("failed authentication"), "{why}");
    }

    #[test]
    fn tampered_pages_and_other_keys_fail_authentication() {
        let (mut sealer, key) = Sealer::generate();
        let mut original = page(b"0123456789abcdef");
        sealer.seal(&mut original).unwrap();
        // Every single-byte change after the counter is caught.
        for at in 8..original.len() {
            let mut opener = Opener::new(&key[..]).unwrap();
            let mut p = original.clone();
            p[at] ^= 0x01;
            let tampered = p.clone();
            let why = opener.open(&mut p).unwrap_err();
            assert!(why.contains("tampered"), "byte {at}: {why}");
            assert_eq!(p, tampered, "byte {at}: nothing decrypted on refusal");
        }
        // A truncated page.
        let mut opener = Opener::new(&key[..]).unwrap();
        let mut short = original[..original.len() - 1].to_vec();
        assert!(opener.open(&mut short).is_err());
        assert!(opener.open(&mut [0u8; OVERHEAD - 1]).is_err());
        // Another key.
        let (_, other) = Sealer::generate();
        let mut wrong = Opener::new(&other[..]).unwrap();
        let mut p = original.clone();
        assert!(wrong.open(&mut p).unwrap_err().contains("another key"));
        // The right key still opens the untampered page.
        let mut p = original.clone();
        opener.open(&mut p).unwrap();
        assert_eq!(&p[OVERHEAD..], b"0123456789abcdef");
    }

    #[test]
    fn bad_keys_short_pages_and_an_exhausted_counter_are_refused() {
        assert!(Opener::new(&[0u8; 31]).is_err());
        assert!(Opener::new(&[0u8; 33]).is_err());
        let mut sealer = Sealer::with_key(&[9u8; KEY_LEN]);
        assert!(sealer.seal(&mut [0u8; OVERHEAD - 1]).is_err());
        sealer.next = u64::MAX;
        let why = sealer.seal(&mut page(b"x")).unwrap_err();
        assert!(why.contains("exhausted"), "{why}");
    }

    #[test]
    fn the_format_is_a_plain_secretbox_with_the_documented_nonce() {
        // Independent of Sealer: the layout as documented, checked with
        // libsodium's combined form (MAC then ciphertext) directly.
        let key = [5u8; KEY_LEN];
        let mut sealer = Sealer::with_key(&key);
        let mut p = page(b"layout");
        sealer.seal(&mut p).unwrap();
        let mut n = [0u8; 24];
        n[..16].copy_from_slice(b"fabriq-ofi-page\0");
        let body = SecretBoxKey::from_bytes(&key).open(&n, &p[8..]).unwrap();
        assert_eq!(&body[..], b"layout");
        // And the MAC and ciphertext are what secretbox_easy makes.
        let easy = SecretBoxKey::from_bytes(&key).seal(&n, b"layout").unwrap();
        assert_eq!(easy, p[8..]);
    }
}
