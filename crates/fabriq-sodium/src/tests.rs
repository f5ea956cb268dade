//! Known answers: the X25519 keys of RFC 7748 section 6.1 (Alice's and
//! Bob's), which NaCl's and libsodium's `box` tests use, with their box
//! vector (`test/default/box.c`, `box2.c`, `secretbox.c`: the 131-byte
//! message, its nonce, the precomputed key `firstkey` and the 147-byte
//! box, MAC first).

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn key(s: &str) -> [u8; 32] {
    hex(s).try_into().unwrap()
}

const ALICE_SK: &str = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
const ALICE_PK: &str = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
const BOB_SK: &str = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
const BOB_PK: &str = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
/// X25519(alice_sk, bob_pk), RFC 7748.
const SHARED: &str = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
/// crypto_box_beforenm(bob_pk, alice_sk): NaCl's `firstkey`.
const FIRSTKEY: &str = "1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389";
const NONCE: &str = "69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37";
const MESSAGE: &str = "
    be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffc
    e5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb31
    0e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde
    048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705";
const BOXED: &str = "
    f3ffc7703f9400e52a7dfb4b3d3305d9
    8e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186a
    c0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738
    b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da
    99832b61ca01b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5";

fn nonce() -> Nonce {
    hex(NONCE).try_into().unwrap()
}

#[test]
fn sizes_are_libsodium_s() {
    // SAFETY: these take no arguments and return constants.
    unsafe {
        assert_eq!(ffi::crypto_box_publickeybytes(), KEY_LEN);
        assert_eq!(ffi::crypto_box_secretkeybytes(), KEY_LEN);
        assert_eq!(ffi::crypto_box_beforenmbytes(), KEY_LEN);
        assert_eq!(ffi::crypto_box_noncebytes(), NONCE_LEN);
        assert_eq!(ffi::crypto_box_macbytes(), MAC_LEN);
        assert_eq!(ffi::crypto_secretbox_keybytes(), KEY_LEN);
        assert_eq!(ffi::crypto_secretbox_noncebytes(), NONCE_LEN);
        assert_eq!(ffi::crypto_secretbox_macbytes(), MAC_LEN);
        assert_eq!(ffi::crypto_scalarmult_bytes(), KEY_LEN);
        assert_eq!(ffi::crypto_scalarmult_scalarbytes(), KEY_LEN);
    }
}

#[test]
fn public_keys_of_rfc_7748() {
    assert_eq!(public_key(&key(ALICE_SK)).unwrap(), key(ALICE_PK));
    assert_eq!(public_key(&key(BOB_SK)).unwrap(), key(BOB_PK));
}

#[test]
fn the_nacl_box_vector() {
    let firstkey = key(FIRSTKEY);
    let expected = hex(BOXED);
    let message = hex(MESSAGE);
    // Both ends compute the same box key, and it is NaCl's firstkey
    // (= HSalsa20 of the RFC's shared secret).
    let alice = BoxKey::new(&key(BOB_PK), &key(ALICE_SK)).unwrap();
    let bob = BoxKey::new(&key(ALICE_PK), &key(BOB_SK)).unwrap();
    assert_eq!(alice.0 .0[..], firstkey);
    assert_eq!(bob.0 .0[..], firstkey);
    assert_eq!(BoxKey::from_dh_output(&key(SHARED)).0 .0[..], firstkey);

    assert_eq!(alice.seal(&nonce(), &message).unwrap(), expected);
    assert_eq!(&bob.open(&nonce(), &expected).unwrap()[..], &message[..]);

    let mut data = message.clone();
    let mac = alice.seal_in_place(&nonce(), &mut data).unwrap();
    assert_eq!(mac[..], expected[..MAC_LEN]);
    assert_eq!(data, expected[MAC_LEN..]);
    bob.open_in_place(&nonce(), &mut data, &mac).unwrap();
    assert_eq!(data, message);

    // A box after beforenm is a secretbox under the precomputed key.
    let secret = SecretBoxKey::from_bytes(&firstkey);
    assert_eq!(secret.seal(&nonce(), &message).unwrap(), expected);
    assert_eq!(&secret.open(&nonce(), &expected).unwrap()[..], &message[..]);
    let mut data = message.clone();
    let mac = secret.seal_in_place(&nonce(), &mut data).unwrap();
    assert_eq!([&mac[..], &data[..]].concat(), expected);
}

/// libsodium's list of small-order X25519 points (`has_small_order`).
fn small_order() -> Vec<[u8; 32]> {
    let mut keys = vec![
        [0u8; 32],
        key("0100000000000000000000000000000000000000000000000000000000000000"),
        key("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        key("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
        key("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        key("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        key("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    ];
    for i in 0..7 {
        let mut high = keys[i];
        high[31] |= 0x80;
        keys.push(high);
    }
    keys
}

#[test]
fn small_order_public_keys_are_refused() {
    let (_, secret) = keypair();
    for k in small_order() {
        assert_eq!(
            BoxKey::new(&k, &secret).err(),
            Some(Error::WeakKey),
            "{k:?}"
        );
    }
}

#[test]
fn generated_pairs_agree() {
    let (a_pk, a_sk) = keypair();
    let (b_pk, b_sk) = keypair();
    assert_eq!(public_key(&a_sk).unwrap(), a_pk);
    assert_ne!(a_pk, b_pk);
    let ab = BoxKey::new(&b_pk, &a_sk).unwrap();
    let ba = BoxKey::new(&a_pk, &b_sk).unwrap();
    assert_eq!(ab.0 .0[..], ba.0 .0[..]);
    let mut r = [0u8; 64];
    random_bytes(&mut r);
    assert_ne!(r, [0u8; 64]);
}

#[test]
fn forged_boxes_are_refused_and_left_untouched() {
    let k = SecretBoxKey::generate();
    let n = nonce();
    let mut data = *b"0123456789abcdef0123";
    let mac = k.seal_in_place(&n, &mut data).unwrap();
    let sealed = data;
    for at in 0..data.len() {
        let mut d = sealed;
        d[at] ^= 1;
        let tampered = d;
        assert_eq!(k.open_in_place(&n, &mut d, &mac), Err(Error::Forged));
        assert_eq!(d, tampered, "nothing decrypted on refusal");
    }
    let mut bad_mac = mac;
    bad_mac[0] ^= 1;
    let mut d = sealed;
    assert_eq!(k.open_in_place(&n, &mut d, &bad_mac), Err(Error::Forged));
    assert_eq!(d, sealed);
    let mut other_nonce = n;
    other_nonce[23] ^= 1;
    assert_eq!(
        k.open_in_place(&other_nonce, &mut d, &mac),
        Err(Error::Forged)
    );
    let other = SecretBoxKey::generate();
    assert_eq!(other.open_in_place(&n, &mut d, &mac), Err(Error::Forged));
    k.open_in_place(&n, &mut d, &mac).unwrap();
    assert_eq!(&d, b"0123456789abcdef0123");

    let boxed = k.seal(&n, b"").unwrap();
    assert_eq!(boxed.len(), MAC_LEN);
    assert!(k.open(&n, &boxed).unwrap().is_empty());
    assert_eq!(k.open(&n, &boxed[..MAC_LEN - 1]).err(), Some(Error::Forged));
    assert_eq!(k.open(&n, &[]).err(), Some(Error::Forged));
}

#[test]
fn keys_do_not_print() {
    let k = SecretBoxKey::from_bytes(&[0x41; 32]);
    assert_eq!(format!("{k:?}"), "SecretBoxKey(<secret>)");
    let (pk, sk) = keypair();
    let b = BoxKey::new(&pk, &sk).unwrap();
    assert_eq!(format!("{b:?}"), "BoxKey(<secret>)");
}

#[test]
fn memzero_zeroes() {
    let mut b = [0xa5u8; 40];
    memzero(&mut b);
    assert_eq!(b, [0u8; 40]);
}
