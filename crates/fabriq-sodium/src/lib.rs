//! The NaCl boxes fabriq uses, on libsodium (the library libzmq and pyzmq
//! use for CURVE), behind a small safe API:
//!
//! - [`BoxKey`]: a `crypto_box` between two X25519 keys, precomputed once
//!   (`crypto_box_beforenm`) so that each box afterwards is XSalsa20-
//!   Poly1305 only (`crypto_box_*_afternm`), no X25519 per message;
//! - [`SecretBoxKey`]: `crypto_secretbox` under a 32-byte key (CURVE's
//!   cookie, fabric pages);
//! - [`keypair`], [`public_key`] (`crypto_box_keypair`,
//!   `crypto_scalarmult_base`) and [`random_bytes`] (`randombytes_buf`).
//!
//! Boxes come in two layouts: `seal`/`open` as `crypto_box_easy` (the
//! 16-byte MAC, then the ciphertext) and `seal_in_place`/`open_in_place`
//! with the MAC apart (`*_detached`), the buffer encrypted or decrypted
//! where it is. An open that fails authentication leaves the buffer as
//! it was: libsodium checks the MAC before it decrypts.
//!
//! Keys live on the heap (they do not move, so leave no copies behind)
//! and are zeroed with `sodium_memzero` when dropped. `sodium_init` runs
//! once (`std::sync::Once`) before any key is made; it picks libsodium's
//! fastest implementations for this CPU. The only `unsafe` in fabriq's
//! crypto is here, at the calls into libsodium.
//!
//! ```
//! use fabriq_sodium::{keypair, BoxKey, SecretBoxKey};
//! let (alice_pk, alice_sk) = keypair();
//! let (bob_pk, bob_sk) = keypair();
//! let to_bob = BoxKey::new(&bob_pk, &alice_sk).unwrap();
//! let from_alice = BoxKey::new(&alice_pk, &bob_sk).unwrap();
//! let nonce = [7u8; 24];
//! let boxed = to_bob.seal(&nonce, b"hello").unwrap();
//! assert_eq!(&from_alice.open(&nonce, &boxed).unwrap()[..], b"hello");
//!
//! let k = SecretBoxKey::generate();
//! let mut page = *b"a page";
//! let mac = k.seal_in_place(&nonce, &mut page).unwrap();
//! k.open_in_place(&nonce, &mut page, &mac).unwrap();
//! assert_eq!(&page, b"a page");
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod ffi;

use std::fmt;
use std::os::raw::{c_int, c_uchar, c_ulonglong};
use std::sync::Once;

use zeroize::Zeroizing;

/// Length of X25519 keys, precomputed box keys and secretbox keys.
pub const KEY_LEN: usize = 32;
/// Length of a box nonce (XSalsa20's).
pub const NONCE_LEN: usize = 24;
/// Length of a box's authenticator (Poly1305's).
pub const MAC_LEN: usize = 16;

/// A box nonce.
pub type Nonce = [u8; NONCE_LEN];
/// A box's authenticator.
pub type Mac = [u8; MAC_LEN];

/// Why libsodium refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The public key is of small order: X25519 with it gives a shared
    /// secret anyone can compute (all zeros), which libsodium refuses.
    WeakKey,
    /// The box does not open: tampered with, truncated, or sealed under
    /// another key or nonce. Nothing was decrypted.
    Forged,
    /// The message is longer than libsodium takes.
    TooLong,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::WeakKey => "the public key is of small order",
            Error::Forged => "the box does not open",
            Error::TooLong => "the message is too long for a box",
        })
    }
}

impl std::error::Error for Error {}

static INIT: Once = Once::new();

/// Runs `sodium_init` once. Every key constructor and free function calls
/// it, so a key's methods can rely on it having run.
fn init() {
    INIT.call_once(|| {
        // SAFETY: sodium_init takes no arguments and is thread-safe; it
        // returns 0 (done now), 1 (done before, e.g. by libzmq in the same
        // process) or -1 (no random source: nothing of libsodium may be
        // used, so we stop here rather than return).
        let rc = unsafe { ffi::sodium_init() };
        assert!(
            rc >= 0,
            "sodium_init failed ({rc}): libsodium cannot be used on this system"
        );
    });
}

/// Fills `buf` from libsodium's generator (the operating system's).
pub fn random_bytes(buf: &mut [u8]) {
    init();
    // SAFETY: buf is valid for writes of buf.len() bytes; randombytes_buf
    // writes exactly that many and cannot fail (it aborts the process if
    // the system generator does, after sodium_init checked it exists).
    unsafe { ffi::randombytes_buf(buf.as_mut_ptr().cast(), buf.len()) }
}

/// Zeroes `buf` in a way the compiler does not remove.
pub fn memzero(buf: &mut [u8]) {
    // SAFETY: buf is valid for writes of buf.len() bytes, exactly what
    // sodium_memzero writes.
    unsafe { ffi::sodium_memzero(buf.as_mut_ptr().cast(), buf.len()) }
}

/// A fresh X25519 key pair (`crypto_box_keypair`): the public key and the
/// secret key, the latter zeroed when dropped.
pub fn keypair() -> ([u8; KEY_LEN], Zeroizing<[u8; KEY_LEN]>) {
    init();
    let mut public = [0u8; KEY_LEN];
    let mut secret = Zeroizing::new([0u8; KEY_LEN]);
    // SAFETY: both buffers are 32 writable bytes (crypto_box_PUBLICKEYBYTES,
    // crypto_box_SECRETKEYBYTES), all crypto_box_keypair writes.
    let rc = unsafe { ffi::crypto_box_keypair(public.as_mut_ptr(), secret.as_mut_ptr()) };
    // Documented to return 0; a failure would leave a key pair that does
    // not belong together, which must not be used.
    assert_eq!(rc, 0, "crypto_box_keypair failed");
    (public, secret)
}

/// The X25519 public key of `secret` (`crypto_scalarmult_base`).
pub fn public_key(secret: &[u8; KEY_LEN]) -> Result<[u8; KEY_LEN], Error> {
    init();
    let mut public = [0u8; KEY_LEN];
    // SAFETY: public is 32 writable bytes (crypto_scalarmult_BYTES), secret
    // 32 readable ones (crypto_scalarmult_SCALARBYTES); nothing else is
    // touched, whatever the result.
    let rc = unsafe { ffi::crypto_scalarmult_base(public.as_mut_ptr(), secret.as_ptr()) };
    if rc != 0 {
        // Newer libsodium refuses a result of all zeros, which a clamped
        // scalar cannot give; never seen, but not a key either.
        return Err(Error::WeakKey);
    }
    Ok(public)
}

/// 32 key bytes on the heap (so moves of the owner copy no key material),
/// zeroed with `sodium_memzero` when dropped.
struct KeyBytes(Box<[u8; KEY_LEN]>);

impl KeyBytes {
    fn zeroed() -> KeyBytes {
        KeyBytes(Box::new([0u8; KEY_LEN]))
    }

    fn ptr(&self) -> *const c_uchar {
        self.0.as_ptr()
    }
}

impl Drop for KeyBytes {
    fn drop(&mut self) {
        memzero(&mut self.0[..]);
    }
}

/// The signature libsodium's `*_easy` and `*_open_easy` functions share:
/// (out, in, in_len, nonce, key).
type EasyFn = unsafe extern "C" fn(
    *mut c_uchar,
    *const c_uchar,
    c_ulonglong,
    *const c_uchar,
    *const c_uchar,
) -> c_int;
/// `*_detached`: (c, mac, m, m_len, nonce, key).
type SealDetachedFn = unsafe extern "C" fn(
    *mut c_uchar,
    *mut c_uchar,
    *const c_uchar,
    c_ulonglong,
    *const c_uchar,
    *const c_uchar,
) -> c_int;
/// `*_open_detached`: (m, c, mac, c_len, nonce, key).
type OpenDetachedFn = unsafe extern "C" fn(
    *mut c_uchar,
    *const c_uchar,
    *const c_uchar,
    c_ulonglong,
    *const c_uchar,
    *const c_uchar,
) -> c_int;

fn len(n: usize) -> Result<c_ulonglong, Error> {
    c_ulonglong::try_from(n).map_err(|_| Error::TooLong)
}

/// MAC then ciphertext of `plain`, in a new vector.
#[inline]
fn seal_easy(f: EasyFn, key: &KeyBytes, nonce: &Nonce, plain: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; plain.len().checked_add(MAC_LEN).ok_or(Error::TooLong)?];
    // SAFETY: out is plain.len() + 16 writable bytes, the length libsodium
    // writes for a message of plain.len() bytes; plain, the 24-byte nonce
    // and the 32-byte key are readable for the lengths libsodium reads;
    // out does not overlap them. On failure (a message too long) nothing
    // useful is in out and it is dropped.
    let rc = unsafe {
        f(
            out.as_mut_ptr(),
            plain.as_ptr(),
            len(plain.len())?,
            nonce.as_ptr(),
            key.ptr(),
        )
    };
    if rc != 0 {
        return Err(Error::TooLong);
    }
    Ok(out)
}

/// The plaintext of `boxed` (MAC then ciphertext), zeroed when dropped.
#[inline]
fn open_easy(
    f: EasyFn,
    key: &KeyBytes,
    nonce: &Nonce,
    boxed: &[u8],
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let plain_len = boxed.len().checked_sub(MAC_LEN).ok_or(Error::Forged)?;
    let mut out = Zeroizing::new(vec![0u8; plain_len]);
    // SAFETY: out is boxed.len() - 16 writable bytes, what libsodium writes
    // for a box of boxed.len() bytes (and only once the MAC checked);
    // boxed, the nonce and the key are readable for the lengths read; no
    // overlap. On failure out holds zeros and is dropped.
    let rc = unsafe {
        f(
            out.as_mut_ptr(),
            boxed.as_ptr(),
            len(boxed.len())?,
            nonce.as_ptr(),
            key.ptr(),
        )
    };
    if rc != 0 {
        return Err(Error::Forged);
    }
    Ok(out)
}

/// Encrypts `data` where it is; returns the MAC.
#[inline]
fn seal_detached(
    f: SealDetachedFn,
    key: &KeyBytes,
    nonce: &Nonce,
    data: &mut [u8],
) -> Result<Mac, Error> {
    let mut mac = [0u8; MAC_LEN];
    let n = len(data.len())?;
    let p = data.as_mut_ptr();
    // SAFETY: p is valid for reads and writes of data.len() bytes, taken
    // from the one &mut borrow; libsodium's detached seal is documented to
    // work in place (c == m). mac is 16 writable bytes; the nonce and key
    // are 24 and 32 readable bytes. On failure (too long) data may be
    // partly encrypted; callers do not send it.
    let rc = unsafe { f(p, mac.as_mut_ptr(), p, n, nonce.as_ptr(), key.ptr()) };
    if rc != 0 {
        return Err(Error::TooLong);
    }
    Ok(mac)
}

/// Checks `mac` and decrypts `data` where it is; on failure `data` is
/// untouched.
#[inline]
fn open_detached(
    f: OpenDetachedFn,
    key: &KeyBytes,
    nonce: &Nonce,
    data: &mut [u8],
    mac: &Mac,
) -> Result<(), Error> {
    let n = len(data.len())?;
    let p = data.as_mut_ptr();
    // SAFETY: p is valid for reads and writes of data.len() bytes, from the
    // one &mut borrow; the detached open works in place (m == c) and
    // verifies the MAC before it writes anything, so on failure data is
    // as it was. mac, nonce and key are 16, 24 and 32 readable bytes.
    let rc = unsafe { f(p, p, mac.as_ptr(), n, nonce.as_ptr(), key.ptr()) };
    if rc != 0 {
        return Err(Error::Forged);
    }
    Ok(())
}

/// A `crypto_box` between a peer's public key and our secret key,
/// precomputed (`crypto_box_beforenm`: X25519, then HSalsa20). Zeroed when
/// dropped.
pub struct BoxKey(KeyBytes);

impl BoxKey {
    /// The box between `their_public` and `our_secret`. Refuses a public
    /// key of small order ([`Error::WeakKey`]), as libsodium does.
    pub fn new(their_public: &[u8; KEY_LEN], our_secret: &[u8; KEY_LEN]) -> Result<Self, Error> {
        init();
        let mut k = KeyBytes::zeroed();
        // SAFETY: k is 32 writable bytes (crypto_box_BEFORENMBYTES), the
        // keys 32 readable bytes each; nothing else is touched. On failure
        // k may hold part of a result: it is zeroed when dropped below.
        let rc = unsafe {
            ffi::crypto_box_beforenm(k.0.as_mut_ptr(), their_public.as_ptr(), our_secret.as_ptr())
        };
        if rc != 0 {
            return Err(Error::WeakKey);
        }
        Ok(BoxKey(k))
    }

    /// The box key an X25519 output of `shared` gives (HSalsa20 of it,
    /// the second half of `crypto_box_beforenm`). For tests that forge
    /// what a peer with a small-order key could send: libsodium refuses
    /// such keys in [`BoxKey::new`], but anyone can compute their shared
    /// secret.
    pub fn from_dh_output(shared: &[u8; KEY_LEN]) -> Self {
        init();
        let mut k = KeyBytes::zeroed();
        let zero = [0u8; 16];
        // SAFETY: k is 32 writable bytes (crypto_core_hsalsa20_OUTPUTBYTES),
        // zero 16 readable ones (INPUTBYTES), shared 32 (KEYBYTES); a null
        // constant selects the standard "expand 32-byte k", as
        // crypto_box_beforenm passes it.
        let rc = unsafe {
            ffi::crypto_core_hsalsa20(
                k.0.as_mut_ptr(),
                zero.as_ptr(),
                shared.as_ptr(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "crypto_core_hsalsa20 cannot fail");
        BoxKey(k)
    }

    /// `crypto_box_easy_afternm`: the MAC, then the ciphertext.
    pub fn seal(&self, nonce: &Nonce, plain: &[u8]) -> Result<Vec<u8>, Error> {
        seal_easy(ffi::crypto_box_easy_afternm, &self.0, nonce, plain)
    }

    /// `crypto_box_open_easy_afternm`; the plaintext is zeroed when dropped.
    pub fn open(&self, nonce: &Nonce, boxed: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        open_easy(ffi::crypto_box_open_easy_afternm, &self.0, nonce, boxed)
    }

    /// `crypto_box_detached_afternm` in place: `data` becomes the
    /// ciphertext; returns the MAC.
    pub fn seal_in_place(&self, nonce: &Nonce, data: &mut [u8]) -> Result<Mac, Error> {
        seal_detached(ffi::crypto_box_detached_afternm, &self.0, nonce, data)
    }

    /// `crypto_box_open_detached_afternm` in place; on failure `data` is
    /// left as it was.
    pub fn open_in_place(&self, nonce: &Nonce, data: &mut [u8], mac: &Mac) -> Result<(), Error> {
        open_detached(
            ffi::crypto_box_open_detached_afternm,
            &self.0,
            nonce,
            data,
            mac,
        )
    }
}

impl fmt::Debug for BoxKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BoxKey(<secret>)")
    }
}

/// A `crypto_secretbox` key (XSalsa20-Poly1305), zeroed when dropped.
pub struct SecretBoxKey(KeyBytes);

impl SecretBoxKey {
    /// A fresh random key.
    pub fn generate() -> Self {
        let mut k = KeyBytes::zeroed();
        random_bytes(&mut k.0[..]);
        SecretBoxKey(k)
    }

    /// The key `bytes` (the caller zeroes its copy).
    pub fn from_bytes(bytes: &[u8; KEY_LEN]) -> Self {
        init();
        let mut k = KeyBytes::zeroed();
        k.0.copy_from_slice(bytes);
        SecretBoxKey(k)
    }

    /// The key's bytes (to hand to the peer over an encrypted channel).
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0 .0
    }

    /// `crypto_secretbox_easy`: the MAC, then the ciphertext.
    pub fn seal(&self, nonce: &Nonce, plain: &[u8]) -> Result<Vec<u8>, Error> {
        seal_easy(ffi::crypto_secretbox_easy, &self.0, nonce, plain)
    }

    /// `crypto_secretbox_open_easy`; the plaintext is zeroed when dropped.
    pub fn open(&self, nonce: &Nonce, boxed: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        open_easy(ffi::crypto_secretbox_open_easy, &self.0, nonce, boxed)
    }

    /// `crypto_secretbox_detached` in place: `data` becomes the
    /// ciphertext; returns the MAC.
    pub fn seal_in_place(&self, nonce: &Nonce, data: &mut [u8]) -> Result<Mac, Error> {
        seal_detached(ffi::crypto_secretbox_detached, &self.0, nonce, data)
    }

    /// `crypto_secretbox_open_detached` in place; on failure `data` is
    /// left as it was.
    pub fn open_in_place(&self, nonce: &Nonce, data: &mut [u8], mac: &Mac) -> Result<(), Error> {
        open_detached(
            ffi::crypto_secretbox_open_detached,
            &self.0,
            nonce,
            data,
            mac,
        )
    }
}

impl fmt::Debug for SecretBoxKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretBoxKey(<secret>)")
    }
}

#[cfg(test)]
mod tests;
