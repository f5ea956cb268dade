//! The CURVE mechanism: CurveZMQ (RFC 25) over ZMTP (RFC 26), byte for
//! byte as libzmq 4.3 (`curve_client.cpp`, `curve_client_tools.hpp`,
//! `curve_server.cpp`, `curve_mechanism_base.cpp`) puts it on the wire.
//!
//! ```text
//! C: HELLO    version(1.0) padding(72 zeros) C' short-nonce Box[64 zeros](C'->S)
//! S: WELCOME  nonce(16) Box[S' + cookie](S->C')
//!             cookie = nonce(16) SecretBox[C' + s'](K), K per connection
//! C: INITIATE cookie short-nonce Box[C + vouch + metadata](C'->S')
//!             vouch = nonce(16) Box[C' + S](C->S')
//! S: READY    short-nonce Box[metadata](S'->C')
//! then every frame, commands included:
//!    MESSAGE  short-nonce Box[flags + body](C'->S' or S'->C')
//! ```
//!
//! Nonces are a 16-byte prefix plus a big-endian 64-bit counter (short
//! nonces: "CurveZMQHELLO---", "CurveZMQINITIATE", "CurveZMQREADY---",
//! "CurveZMQMESSAGEC" from the client, "CurveZMQMESSAGES" from the
//! server), or an 8-byte prefix plus 16 random bytes ("WELCOME-",
//! "COOKIE--", "VOUCH---"). Each side's counter starts at 1 (the client's
//! HELLO is 1, INITIATE 2; the server's READY is 1) and grows by one per
//! box; a received short nonce that is not above the last one (a replayed
//! or reordered MESSAGE) fails the connection, as in libzmq.
//!
//! The MESSAGE flags byte carries bit 0 MORE and bit 1 COMMAND (libzmq's
//! `msg_t::more | msg_t::command`), so SUBSCRIBE, CANCEL, PING and PONG
//! travel boxed too. libzmq sends the MESSAGE itself as a ZMTP *data*
//! frame with no flags (it keeps a wire command flag through decoding,
//! so a command-flagged MESSAGE would confuse it); we send the same and
//! accept either frame kind.
//!
//! Boxes are NaCl `crypto_box` (X25519, HSalsa20, XSalsa20-Poly1305) as in
//! `crypto_box_easy`: the 16-byte MAC first, then the ciphertext. They are
//! libsodium's, as libzmq's are (`fabriq_sodium`): each pair of keys is
//! precomputed once (`crypto_box_beforenm`), so a MESSAGE costs
//! XSalsa20-Poly1305 only (`crypto_box_detached_afternm`); the cookie is a
//! `crypto_secretbox` under a random per-connection key, as libzmq makes
//! it.

use bytes::{BufMut, Bytes, BytesMut};
use fabriq_sodium::{BoxKey, Nonce, SecretBoxKey};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::{peer_error, Mechanism};
use crate::auth::AuthRequest;
use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::greeting::MechanismName;
use crate::keys::{CurveKeyPair, CurvePublicKey, CurveSecretKey};
use crate::properties::Properties;

const HELLO: &[u8] = b"HELLO";
const WELCOME: &[u8] = b"WELCOME";
const INITIATE: &[u8] = b"INITIATE";
const READY: &[u8] = b"READY";
const MESSAGE: &[u8] = b"\x07MESSAGE";

const HELLO_NONCE: &[u8; 16] = b"CurveZMQHELLO---";
const WELCOME_NONCE: &[u8; 8] = b"WELCOME-";
const COOKIE_NONCE: &[u8; 8] = b"COOKIE--";
const VOUCH_NONCE: &[u8; 8] = b"VOUCH---";
const INITIATE_NONCE: &[u8; 16] = b"CurveZMQINITIATE";
const READY_NONCE: &[u8; 16] = b"CurveZMQREADY---";
const MESSAGE_NONCE_C: &[u8; 16] = b"CurveZMQMESSAGEC";
const MESSAGE_NONCE_S: &[u8; 16] = b"CurveZMQMESSAGES";

const MAC: usize = 16;
/// HELLO body after its name: version 2, padding 72, C' 32, nonce 8, box 80.
const HELLO_BODY: usize = 2 + 72 + 32 + 8 + 80;
/// WELCOME body: nonce 16, box 144 (S' 32 + cookie 96, plus the MAC).
const WELCOME_BODY: usize = 16 + 144;
/// Cookie: nonce 16, secret box 80 (C' 32 + s' 32, plus the MAC).
const COOKIE: usize = 16 + 80;
/// Smallest INITIATE body: cookie, nonce 8, box of C + vouch (128) + MAC.
const INITIATE_MIN: usize = COOKIE + 8 + 128 + MAC;
/// MESSAGE frame body: name, nonce, MAC, flags.
const MESSAGE_MIN: usize = MESSAGE.len() + 8 + MAC + 1;

const MORE: u8 = 0x01;
const COMMAND: u8 = 0x02;

fn short_nonce(prefix: &[u8; 16], n: u64) -> Nonce {
    let mut full = [0u8; 24];
    full[..16].copy_from_slice(prefix);
    full[16..].copy_from_slice(&n.to_be_bytes());
    full
}

fn long_nonce(prefix: &[u8; 8], tail: &[u8]) -> Nonce {
    let mut full = [0u8; 24];
    full[..8].copy_from_slice(prefix);
    full[8..].copy_from_slice(tail);
    full
}

fn random16() -> [u8; 16] {
    let mut out = [0u8; 16];
    fabriq_sodium::random_bytes(&mut out);
    out
}

fn crypto(what: &'static str) -> ProtocolError {
    ProtocolError::Cryptographic(what)
}

fn malformed(command: &str, reason: &'static str) -> ProtocolError {
    ProtocolError::MalformedCommand {
        command: command.into(),
        reason,
    }
}

/// `crypto_box_easy_afternm`: MAC then ciphertext.
fn seal_box(b: &BoxKey, nonce: &Nonce, plain: &[u8]) -> Result<Vec<u8>, ProtocolError> {
    b.seal(nonce, plain)
        .map_err(|_| crypto("cannot seal a CURVE box"))
}

/// `crypto_box_open_easy_afternm`; the plaintext is zeroed when dropped.
fn open_box(
    b: &BoxKey,
    nonce: &Nonce,
    boxed: &[u8],
    what: &'static str,
) -> Result<Zeroizing<Vec<u8>>, ProtocolError> {
    b.open(nonce, boxed).map_err(|_| crypto(what))
}

fn read_u64(bytes: &[u8]) -> u64 {
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(n)
}

/// The u-coordinates of small order on Curve25519 and its twist, as
/// libsodium lists them (`has_small_order`, crypto_scalarmult/curve25519/
/// ref10): 0 (order 4), 1 (order 1), two points of order 8, p-1 (order
/// 2), p (0 again) and p+1 (1 again).
const SMALL_ORDER: [[u8; 32]; 7] = [
    [0; 32],
    [
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,
    ],
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef,
        0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f,
        0x11, 0x57,
    ],
    [
        0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    [
        0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    [
        0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
];

/// Whether `key` is one of [`SMALL_ORDER`] (its top bit ignored, as X25519
/// ignores it), in constant time. X25519 with such a key gives a shared
/// secret anyone can compute (all zeros). libsodium's
/// `crypto_box_beforenm` refuses these keys too; this check comes first so
/// the refusal does not depend on the library's version.
fn has_small_order(key: &[u8; 32]) -> bool {
    let mut masked = *key;
    masked[31] &= 0x7f;
    SMALL_ORDER
        .iter()
        .fold(subtle::Choice::from(0), |found, bad| {
            found | masked.ct_eq(bad)
        })
        .into()
}

/// The box between a peer's `public` key and our `secret` one
/// (`crypto_box_beforenm`), refused when the public key is of small order
/// (here, then by libsodium); `whose` names the key in the error.
fn box_key(
    public: &CurvePublicKey,
    secret: &CurveSecretKey,
    whose: &'static str,
) -> Result<BoxKey, ProtocolError> {
    if has_small_order(public.as_bytes()) {
        return Err(crypto(whose));
    }
    BoxKey::new(public.as_bytes(), secret.as_bytes()).map_err(|_| crypto(whose))
}

fn public(bytes: &[u8]) -> CurvePublicKey {
    let mut k = [0u8; 32];
    k.copy_from_slice(&bytes[..32]);
    CurvePublicKey(k)
}

fn command(name: &'static [u8], body: Vec<u8>) -> Command {
    Command::Other {
        name: Bytes::from_static(name),
        body: Bytes::from(body),
    }
}

fn encoded(props: &Properties) -> Zeroizing<Vec<u8>> {
    let mut out = BytesMut::with_capacity(props.encoded_len());
    props.encode(&mut out);
    Zeroizing::new(out.to_vec())
}

/// The MESSAGE codec both sides run once the handshake is done.
struct Channel {
    /// Precomputed `crypto_box_beforenm(peer', ours')`.
    shared: BoxKey,
    send_prefix: &'static [u8; 16],
    recv_prefix: &'static [u8; 16],
    /// Our next short nonce.
    next_nonce: u64,
    /// The peer's last short nonce; the next must be above it.
    peer_nonce: u64,
}

impl Channel {
    fn take_nonce(&mut self) -> Result<u64, ProtocolError> {
        let n = self.next_nonce;
        if n == u64::MAX {
            return Err(ProtocolError::NonceExhausted);
        }
        self.next_nonce += 1;
        Ok(n)
    }

    fn check_peer_nonce(&mut self, n: u64) -> Result<(), ProtocolError> {
        if n <= self.peer_nonce {
            return Err(ProtocolError::BadNonce {
                received: n,
                last: self.peer_nonce,
            });
        }
        Ok(())
    }

    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        let n = self.take_nonce()?;
        let header = MESSAGE.len() + 8;
        let mut out = Vec::with_capacity(MESSAGE_MIN + frame.data.len());
        out.extend_from_slice(MESSAGE);
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&[0u8; MAC]);
        out.push((u8::from(frame.more) * MORE) | (u8::from(frame.command) * COMMAND));
        out.extend_from_slice(&frame.data);
        let tag = self
            .shared
            .seal_in_place(&short_nonce(self.send_prefix, n), &mut out[header + MAC..])
            .map_err(|_| crypto("cannot seal a MESSAGE"))?;
        out[header..header + MAC].copy_from_slice(&tag);
        Ok(Frame {
            more: false,
            command: false,
            data: Bytes::from(out),
        })
    }

    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        let data = &frame.data;
        if !data.starts_with(MESSAGE) {
            return Err(ProtocolError::UnexpectedCommand(
                "frame that is not a CURVE MESSAGE".into(),
            ));
        }
        if frame.more {
            return Err(malformed("MESSAGE", "a MESSAGE frame has the MORE flag"));
        }
        if data.len() < MESSAGE_MIN {
            return Err(malformed("MESSAGE", "shorter than nonce, MAC and flags"));
        }
        let at = MESSAGE.len();
        let n = read_u64(&data[at..]);
        self.check_peer_nonce(n)?;
        let tag: [u8; MAC] = data[at + 8..at + 8 + MAC].try_into().expect("16 bytes");
        let mut plain = BytesMut::from(&data[at + 8 + MAC..]);
        self.shared
            .open_in_place(&short_nonce(self.recv_prefix, n), &mut plain, &tag)
            .map_err(|_| crypto("MESSAGE box does not open"))?;
        self.peer_nonce = n;
        let flags = plain[0];
        Ok(Frame {
            more: flags & MORE != 0,
            command: flags & COMMAND != 0,
            data: plain.freeze().slice(1..),
        })
    }
}

// ---- client --------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientState {
    Start,
    ExpectWelcome,
    ExpectReady,
    Done,
}

/// The client side of CURVE.
pub struct CurveClient {
    ours: Properties,
    /// S: the server's long-term public key.
    server: CurvePublicKey,
    /// C and c: our long-term pair.
    public: CurvePublicKey,
    secret: CurveSecretKey,
    /// c': our short-term (per-connection) secret key; C' its public key.
    cn_secret: CurveSecretKey,
    cn_public: CurvePublicKey,
    /// The box between S and c', made for HELLO and kept to open WELCOME.
    to_server: Option<BoxKey>,
    next_nonce: u64,
    state: ClientState,
    channel: Option<Channel>,
}

impl std::fmt::Debug for CurveClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CurveClient")
            .field("public", &self.public)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl CurveClient {
    /// A client with long-term `keys` that talks to the server whose
    /// long-term public key is `server`, announcing `ours` in INITIATE. A
    /// fresh short-term key pair is made for the connection.
    pub fn new(ours: Properties, server: &CurvePublicKey, keys: &CurveKeyPair) -> Self {
        let cn = CurveKeyPair::generate();
        CurveClient {
            ours,
            server: *server,
            public: keys.public,
            secret: keys.secret.clone(),
            cn_public: cn.public,
            cn_secret: cn.secret,
            to_server: None,
            next_nonce: 1,
            state: ClientState::Start,
            channel: None,
        }
    }

    fn take_nonce(&mut self) -> u64 {
        let n = self.next_nonce;
        self.next_nonce += 1;
        n
    }

    fn hello(&mut self) -> Result<Command, ProtocolError> {
        let n = self.take_nonce();
        let to_server = box_key(
            &self.server,
            &self.cn_secret,
            "the server's public key is of small order",
        )?;
        let signature = seal_box(&to_server, &short_nonce(HELLO_NONCE, n), &[0u8; 64])?;
        self.to_server = Some(to_server);
        let mut body = Vec::with_capacity(HELLO_BODY);
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&[0u8; 72]);
        body.extend_from_slice(self.cn_public.as_bytes());
        body.extend_from_slice(&n.to_be_bytes());
        body.extend_from_slice(&signature);
        debug_assert_eq!(body.len(), HELLO_BODY);
        Ok(command(HELLO, body))
    }

    fn on_welcome(&mut self, body: &[u8]) -> Result<Command, ProtocolError> {
        if body.len() != WELCOME_BODY {
            return Err(malformed("WELCOME", "a CURVE WELCOME body is 160 bytes"));
        }
        let to_server = self.to_server.take().expect("HELLO sent");
        let plain = open_box(
            &to_server,
            &long_nonce(WELCOME_NONCE, &body[..16]),
            &body[16..],
            "cannot open the server's WELCOME (wrong server key?)",
        )?;
        let server_cn = public(&plain[..32]);
        let cookie = &plain[32..32 + COOKIE];
        let shared = box_key(
            &server_cn,
            &self.cn_secret,
            "the server's short-term key (WELCOME) is of small order",
        )?;

        // vouch = nonce + Box[C' + S](C->S')
        let vouch_nonce = random16();
        let mut vouch_plain = [0u8; 64];
        vouch_plain[..32].copy_from_slice(self.cn_public.as_bytes());
        vouch_plain[32..].copy_from_slice(self.server.as_bytes());
        let vouch = seal_box(
            &box_key(
                &server_cn,
                &self.secret,
                "the server's short-term key (WELCOME) is of small order",
            )?,
            &long_nonce(VOUCH_NONCE, &vouch_nonce),
            &vouch_plain,
        )?;

        let meta = encoded(&self.ours);
        let mut inner = Zeroizing::new(Vec::with_capacity(128 + meta.len()));
        inner.extend_from_slice(self.public.as_bytes());
        inner.extend_from_slice(&vouch_nonce);
        inner.extend_from_slice(&vouch);
        inner.extend_from_slice(&meta);
        let n = self.take_nonce();
        let boxed = seal_box(&shared, &short_nonce(INITIATE_NONCE, n), &inner)?;

        let mut out = Vec::with_capacity(COOKIE + 8 + boxed.len());
        out.extend_from_slice(cookie);
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&boxed);
        self.channel = Some(Channel {
            shared,
            send_prefix: MESSAGE_NONCE_C,
            recv_prefix: MESSAGE_NONCE_S,
            next_nonce: self.next_nonce,
            peer_nonce: 0,
        });
        Ok(command(INITIATE, out))
    }

    fn on_ready(&mut self, body: &[u8]) -> Result<Properties, ProtocolError> {
        if body.len() < 8 + MAC {
            return Err(malformed("READY", "a CURVE READY holds a nonce and a box"));
        }
        let channel = self.channel.as_mut().expect("INITIATE sent");
        let n = read_u64(body);
        channel.check_peer_nonce(n)?;
        let plain = open_box(
            &channel.shared,
            &short_nonce(READY_NONCE, n),
            &body[8..],
            "cannot open the server's READY",
        )?;
        channel.peer_nonce = n;
        Properties::decode(&Bytes::copy_from_slice(&plain))
    }
}

impl Mechanism for CurveClient {
    fn start(&mut self, out: &mut Vec<Command>) -> Result<(), ProtocolError> {
        if self.state == ClientState::Start {
            out.push(self.hello()?);
            self.state = ClientState::ExpectWelcome;
        }
        Ok(())
    }

    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match (self.state, cmd) {
            (ClientState::ExpectWelcome | ClientState::ExpectReady, Command::Error(reason)) => {
                Err(peer_error(reason))
            }
            (ClientState::ExpectWelcome, Command::Other { name, body }) if name == WELCOME => {
                out.push(self.on_welcome(&body)?);
                self.state = ClientState::ExpectReady;
                Ok(None)
            }
            (ClientState::ExpectReady, Command::Other { name, body }) if name == READY => {
                let props = self.on_ready(&body)?;
                self.state = ClientState::Done;
                Ok(Some(props))
            }
            (_, cmd) => Err(ProtocolError::UnexpectedCommand(cmd.display_name())),
        }
    }

    fn raw_commands(&self) -> bool {
        true
    }

    fn transforms_frames(&self) -> bool {
        true
    }

    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        self.channel.as_mut().expect("handshake done").seal(frame)
    }

    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        self.channel.as_mut().expect("handshake done").open(frame)
    }
}

// ---- server --------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerState {
    ExpectHello,
    ExpectInitiate,
    WaitAuth,
    Done,
}

/// The server side of CURVE.
pub struct CurveServer {
    ours: Properties,
    /// S and s: our long-term pair.
    public: CurvePublicKey,
    secret: CurveSecretKey,
    /// s' and S': our short-term pair for this connection.
    cn_secret: CurveSecretKey,
    cn_public: CurvePublicKey,
    /// K: the cookie key, fresh for each connection (as libzmq).
    cookie_key: SecretBoxKey,
    /// C': the client's short-term public key, from HELLO.
    client_cn: Option<CurvePublicKey>,
    /// The short nonce of the client's HELLO.
    hello_nonce: u64,
    authenticate: bool,
    auth_request: Option<AuthRequest>,
    /// The client's metadata, held while the owner decides.
    client_props: Option<Properties>,
    state: ServerState,
    channel: Option<Channel>,
}

impl std::fmt::Debug for CurveServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CurveServer")
            .field("public", &self.public)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl CurveServer {
    /// A server with long-term `keys`, announcing `ours` in READY. With
    /// `authenticate`, each client's long-term public key goes to the
    /// owner before READY; without, every client that knows our public key
    /// is let in (libzmq without a ZAP handler).
    pub fn new(ours: Properties, keys: &CurveKeyPair, authenticate: bool) -> Self {
        let cn = CurveKeyPair::generate();
        CurveServer {
            ours,
            public: keys.public,
            secret: keys.secret.clone(),
            cn_public: cn.public,
            cn_secret: cn.secret,
            cookie_key: SecretBoxKey::generate(),
            client_cn: None,
            hello_nonce: 0,
            authenticate,
            auth_request: None,
            client_props: None,
            state: ServerState::ExpectHello,
            channel: None,
        }
    }

    fn on_hello(&mut self, body: &[u8]) -> Result<Command, ProtocolError> {
        if body.len() != HELLO_BODY {
            return Err(malformed("HELLO", "a CURVE HELLO is 200 bytes"));
        }
        if body[..2] != [1, 0] {
            return Err(malformed("HELLO", "unsupported CurveZMQ version (not 1.0)"));
        }
        // body[2..74] is anti-amplification padding; libzmq does not look
        // at its contents either.
        let client_cn = public(&body[74..106]);
        let n = read_u64(&body[106..114]);
        let to_client = box_key(
            &client_cn,
            &self.secret,
            "the client's short-term key (HELLO) is of small order",
        )?;
        let signature = open_box(
            &to_client,
            &short_nonce(HELLO_NONCE, n),
            &body[114..],
            "cannot open the client's HELLO (it has the wrong server key)",
        )?;
        if signature.iter().any(|&b| b != 0) {
            return Err(crypto("HELLO signature box is not 64 zero bytes"));
        }

        // cookie = nonce + SecretBox[C' + s'](K)
        let cookie_nonce = random16();
        let mut cookie_plain = Zeroizing::new([0u8; 64]);
        cookie_plain[..32].copy_from_slice(client_cn.as_bytes());
        cookie_plain[32..].copy_from_slice(self.cn_secret.as_bytes());
        let cookie_box = self
            .cookie_key
            .seal(&long_nonce(COOKIE_NONCE, &cookie_nonce), &cookie_plain[..])
            .map_err(|_| crypto("cannot seal the cookie"))?;

        let mut welcome_plain = Zeroizing::new(Vec::with_capacity(128));
        welcome_plain.extend_from_slice(self.cn_public.as_bytes());
        welcome_plain.extend_from_slice(&cookie_nonce);
        welcome_plain.extend_from_slice(&cookie_box);
        let welcome_nonce = random16();
        let boxed = seal_box(
            &to_client,
            &long_nonce(WELCOME_NONCE, &welcome_nonce),
            &welcome_plain,
        )?;
        let mut out = Vec::with_capacity(WELCOME_BODY);
        out.extend_from_slice(&welcome_nonce);
        out.extend_from_slice(&boxed);
        debug_assert_eq!(out.len(), WELCOME_BODY);
        self.client_cn = Some(client_cn);
        self.hello_nonce = n;
        Ok(command(WELCOME, out))
    }

    /// Checks INITIATE; returns the client's long-term key and metadata.
    fn on_initiate(&mut self, body: &[u8]) -> Result<(CurvePublicKey, Properties), ProtocolError> {
        if body.len() < INITIATE_MIN {
            return Err(malformed(
                "INITIATE",
                "shorter than cookie, nonce and vouch",
            ));
        }
        let client_cn = self.client_cn.expect("HELLO seen");
        let cookie = self
            .cookie_key
            .open(&long_nonce(COOKIE_NONCE, &body[..16]), &body[16..COOKIE])
            .map_err(|_| crypto("cannot open the INITIATE cookie"))?;
        let mut expected = Zeroizing::new([0u8; 64]);
        expected[..32].copy_from_slice(client_cn.as_bytes());
        expected[32..].copy_from_slice(self.cn_secret.as_bytes());
        if !bool::from(cookie.ct_eq(&expected[..])) {
            return Err(crypto("the INITIATE cookie is not ours"));
        }

        let n = read_u64(&body[COOKIE..]);
        if n <= self.hello_nonce {
            return Err(ProtocolError::BadNonce {
                received: n,
                last: self.hello_nonce,
            });
        }
        let shared = box_key(
            &client_cn,
            &self.cn_secret,
            "the client's short-term key (HELLO) is of small order",
        )?;
        let plain = open_box(
            &shared,
            &short_nonce(INITIATE_NONCE, n),
            &body[COOKIE + 8..],
            "cannot open the client's INITIATE",
        )?;
        let client_key = public(&plain[..32]);
        let vouch = open_box(
            &box_key(
                &client_key,
                &self.cn_secret,
                "the client's long-term key (INITIATE) is of small order",
            )?,
            &long_nonce(VOUCH_NONCE, &plain[32..48]),
            &plain[48..128],
            "cannot open the client's vouch",
        )?;
        let mut vouched = [0u8; 64];
        vouched[..32].copy_from_slice(client_cn.as_bytes());
        vouched[32..].copy_from_slice(self.public.as_bytes());
        if !bool::from(vouch.ct_eq(&vouched[..])) {
            return Err(ProtocolError::Cryptographic(
                "the vouch does not name this connection's keys",
            ));
        }
        let props = Properties::decode(&Bytes::copy_from_slice(&plain[128..]))?;
        self.channel = Some(Channel {
            shared,
            send_prefix: MESSAGE_NONCE_S,
            recv_prefix: MESSAGE_NONCE_C,
            next_nonce: 1,
            peer_nonce: n,
        });
        Ok((client_key, props))
    }

    fn ready(&mut self) -> Result<Command, ProtocolError> {
        let channel = self.channel.as_mut().expect("INITIATE checked");
        let n = channel.take_nonce()?;
        let boxed = seal_box(
            &channel.shared,
            &short_nonce(READY_NONCE, n),
            &encoded(&self.ours),
        )?;
        let mut out = Vec::with_capacity(8 + boxed.len());
        out.put_u64(n);
        out.extend_from_slice(&boxed);
        Ok(command(READY, out))
    }
}

impl Mechanism for CurveServer {
    fn start(&mut self, _out: &mut Vec<Command>) -> Result<(), ProtocolError> {
        Ok(())
    }

    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match (self.state, cmd) {
            (_, Command::Error(reason)) => Err(peer_error(reason)),
            (ServerState::ExpectHello, Command::Other { name, body }) if name == HELLO => {
                out.push(self.on_hello(&body)?);
                self.state = ServerState::ExpectInitiate;
                Ok(None)
            }
            (ServerState::ExpectInitiate, Command::Other { name, body }) if name == INITIATE => {
                let (client_key, props) = self.on_initiate(&body)?;
                if self.authenticate {
                    self.auth_request = Some(AuthRequest {
                        mechanism: MechanismName::Curve,
                        credentials: vec![Bytes::copy_from_slice(client_key.as_bytes())],
                    });
                    self.client_props = Some(props);
                    self.state = ServerState::WaitAuth;
                    return Ok(None);
                }
                out.push(self.ready()?);
                self.state = ServerState::Done;
                Ok(Some(props))
            }
            (_, cmd) => Err(ProtocolError::UnexpectedCommand(cmd.display_name())),
        }
    }

    fn raw_commands(&self) -> bool {
        true
    }

    fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.auth_request.take()
    }

    fn auth_allowed(
        &mut self,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        if self.state != ServerState::WaitAuth {
            return Ok(None);
        }
        out.push(self.ready()?);
        self.state = ServerState::Done;
        Ok(self.client_props.take())
    }

    fn transforms_frames(&self) -> bool {
        true
    }

    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        self.channel.as_mut().expect("handshake done").seal(frame)
    }

    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        self.channel.as_mut().expect("handshake done").open(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The small-order keys, each also with its top bit set.
    fn small_order_keys() -> Vec<[u8; 32]> {
        let mut keys = SMALL_ORDER.to_vec();
        for k in SMALL_ORDER {
            let mut high = k;
            high[31] |= 0x80;
            keys.push(high);
        }
        keys
    }

    fn body(c: Command) -> Bytes {
        match c {
            Command::Other { body, .. } => body,
            other => panic!("not a CURVE command: {other:?}"),
        }
    }

    /// A HELLO from short-term key `cn` whose signature box `sealer` seals.
    fn hello(cn: &[u8; 32], sealer: &BoxKey) -> Vec<u8> {
        let mut out = vec![1, 0];
        out.extend_from_slice(&[0; 72]);
        out.extend_from_slice(cn);
        out.extend_from_slice(&1u64.to_be_bytes());
        out.extend_from_slice(&seal_box(sealer, &short_nonce(HELLO_NONCE, 1), &[0; 64]).unwrap());
        out
    }

    /// A box that anyone can make with a peer that uses the small-order
    /// `_key`: X25519 of such a point and a clamped scalar (a multiple of
    /// the cofactor 8) is the identity, u = 0, whatever the secret.
    /// libsodium will not compute it (`BoxKey::new` refuses the key), so
    /// the box key is made from that known output.
    fn forged(_key: &[u8; 32]) -> BoxKey {
        BoxKey::from_dh_output(&[0u8; 32])
    }

    #[test]
    fn small_order_is_told_apart_from_a_real_key() {
        for key in small_order_keys() {
            assert!(has_small_order(&key), "{key:?}");
        }
        let real = CurveKeyPair::generate().public.0;
        assert!(!has_small_order(&real));
        let mut one_off = SMALL_ORDER[2];
        one_off[0] ^= 1;
        assert!(!has_small_order(&one_off));
    }

    #[test]
    fn a_hello_from_the_zero_key_is_refused() {
        // Its box opens: the server's shared secret with u = 0 is known.
        let mut server = CurveServer::new(Properties::new(), &CurveKeyPair::generate(), false);
        let zero = [0u8; 32];
        assert_eq!(
            server.on_hello(&hello(&zero, &forged(&zero))),
            Err(crypto(
                "the client's short-term key (HELLO) is of small order"
            ))
        );
    }

    #[test]
    fn a_hello_from_any_small_order_key_is_refused() {
        let mut server = CurveServer::new(Properties::new(), &CurveKeyPair::generate(), false);
        for key in small_order_keys() {
            assert_eq!(
                server.on_hello(&hello(&key, &forged(&key))),
                Err(crypto(
                    "the client's short-term key (HELLO) is of small order"
                )),
                "{key:?}"
            );
        }
    }

    #[test]
    fn a_welcome_naming_a_small_order_short_term_key_is_refused() {
        let server_keys = CurveKeyPair::generate();
        for key in small_order_keys() {
            let mut client = CurveClient::new(
                Properties::new(),
                &server_keys.public,
                &CurveKeyPair::generate(),
            );
            let _ = client.hello().unwrap();
            // What the real server would send, with S' of small order.
            let mut plain = key.to_vec();
            plain.extend_from_slice(&[7; COOKIE]);
            let nonce = random16();
            let mut welcome = nonce.to_vec();
            welcome.extend_from_slice(
                &seal_box(
                    &BoxKey::new(client.cn_public.as_bytes(), server_keys.secret.as_bytes())
                        .unwrap(),
                    &long_nonce(WELCOME_NONCE, &nonce),
                    &plain,
                )
                .unwrap(),
            );
            assert_eq!(
                client.on_welcome(&welcome).err(),
                Some(crypto(
                    "the server's short-term key (WELCOME) is of small order"
                )),
                "{key:?}"
            );
        }
    }

    #[test]
    fn an_initiate_vouched_for_by_the_zero_key_is_refused() {
        let server_keys = CurveKeyPair::generate();
        let mut server = CurveServer::new(Properties::new(), &server_keys, false);
        let mut client = CurveClient::new(
            Properties::new(),
            &server_keys.public,
            &CurveKeyPair::generate(),
        );
        let welcome = server.on_hello(&body(client.hello().unwrap())).unwrap();
        let initiate = body(client.on_welcome(&body(welcome)).unwrap());
        // The client's INITIATE, its long-term key swapped for 0 and the
        // vouch sealed with a box anyone can make for that key.
        let zero = [0u8; 32];
        let mut vouched = client.cn_public.as_bytes().to_vec();
        vouched.extend_from_slice(server_keys.public.as_bytes());
        let vouch_nonce = random16();
        let mut inner = zero.to_vec();
        inner.extend_from_slice(&vouch_nonce);
        inner.extend_from_slice(
            &seal_box(
                &forged(&zero),
                &long_nonce(VOUCH_NONCE, &vouch_nonce),
                &vouched,
            )
            .unwrap(),
        );
        inner.extend_from_slice(&encoded(&Properties::new()));
        let n = 3u64;
        let shared = &client.channel.as_ref().unwrap().shared;
        let mut forged_initiate = initiate[..COOKIE].to_vec();
        forged_initiate.extend_from_slice(&n.to_be_bytes());
        forged_initiate
            .extend_from_slice(&seal_box(shared, &short_nonce(INITIATE_NONCE, n), &inner).unwrap());
        assert_eq!(
            server.on_initiate(&forged_initiate).err(),
            Some(crypto(
                "the client's long-term key (INITIATE) is of small order"
            ))
        );
        // The real INITIATE still passes.
        assert!(server.on_initiate(&initiate).is_ok());
    }
}
