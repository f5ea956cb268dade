//! The libsodium functions fabriq calls, declared as in libsodium 1.0.18's
//! headers (`sodium/core.h`, `randombytes.h`, `utils.h`, `crypto_box.h`,
//! `crypto_secretbox.h`, `crypto_scalarmult.h`, `crypto_core_hsalsa20.h`).
//! Linked by `build.rs` (pkg-config `libsodium`).

use std::os::raw::{c_int, c_uchar, c_ulonglong, c_void};

extern "C" {
    pub fn sodium_init() -> c_int;
    pub fn randombytes_buf(buf: *mut c_void, size: usize);
    pub fn sodium_memzero(pnt: *mut c_void, len: usize);

    pub fn crypto_box_keypair(pk: *mut c_uchar, sk: *mut c_uchar) -> c_int;
    pub fn crypto_scalarmult_base(q: *mut c_uchar, n: *const c_uchar) -> c_int;
    pub fn crypto_box_beforenm(k: *mut c_uchar, pk: *const c_uchar, sk: *const c_uchar) -> c_int;
    pub fn crypto_core_hsalsa20(
        out: *mut c_uchar,
        input: *const c_uchar,
        k: *const c_uchar,
        c: *const c_uchar,
    ) -> c_int;

    pub fn crypto_box_easy_afternm(
        c: *mut c_uchar,
        m: *const c_uchar,
        mlen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_box_open_easy_afternm(
        m: *mut c_uchar,
        c: *const c_uchar,
        clen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_box_detached_afternm(
        c: *mut c_uchar,
        mac: *mut c_uchar,
        m: *const c_uchar,
        mlen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_box_open_detached_afternm(
        m: *mut c_uchar,
        c: *const c_uchar,
        mac: *const c_uchar,
        clen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;

    pub fn crypto_secretbox_easy(
        c: *mut c_uchar,
        m: *const c_uchar,
        mlen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_secretbox_open_easy(
        m: *mut c_uchar,
        c: *const c_uchar,
        clen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_secretbox_detached(
        c: *mut c_uchar,
        mac: *mut c_uchar,
        m: *const c_uchar,
        mlen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
    pub fn crypto_secretbox_open_detached(
        m: *mut c_uchar,
        c: *const c_uchar,
        mac: *const c_uchar,
        clen: c_ulonglong,
        n: *const c_uchar,
        k: *const c_uchar,
    ) -> c_int;
}

// The sizes, checked against the constants of lib.rs by a test.
#[cfg(test)]
extern "C" {
    pub fn crypto_box_publickeybytes() -> usize;
    pub fn crypto_box_secretkeybytes() -> usize;
    pub fn crypto_box_beforenmbytes() -> usize;
    pub fn crypto_box_noncebytes() -> usize;
    pub fn crypto_box_macbytes() -> usize;
    pub fn crypto_secretbox_keybytes() -> usize;
    pub fn crypto_secretbox_noncebytes() -> usize;
    pub fn crypto_secretbox_macbytes() -> usize;
    pub fn crypto_scalarmult_bytes() -> usize;
    pub fn crypto_scalarmult_scalarbytes() -> usize;
}
