//! A ready-made ZAP handler (RFC 27), like pyzmq's
//! `zmq.auth.thread.ThreadAuthenticator` and czmq's `zauth`: a thread
//! with a REP socket bound at `inproc://zeromq.zap.01` in a context, which
//! answers the ZAP requests of that context's PLAIN and CURVE servers (and
//! of NULL sockets with a ZAP domain) from a [`Authenticator`]'s policy.
//!
//! The decision follows pyzmq's `Authenticator`:
//! 1. IP addresses: if any address is allowed, only those get in; else,
//!    if any is denied, those are refused. (ipc peers have no address.)
//! 2. NULL: in, unless refused by address.
//! 3. PLAIN: the user name and password must be in the table of the
//!    request's domain (or of `"*"`); user id = the user name.
//! 4. CURVE: the client's public key must be allowed for the domain (or
//!    `"*"`), or any key is; user id = the key in Z85.
//!
//! Refusals are status 400 with pyzmq's reasons as status text.
//!
//! ```
//! use fabriq::auth::{Authenticator, CurveKeys};
//!
//! let ctx = fabriq::Context::new();
//! let auth = Authenticator::start(&ctx).unwrap();
//! auth.configure_plain("*", [("admin", "secret")]);
//!
//! let server = ctx.socket(fabriq::REP).unwrap();
//! server.set_plain_server(true).unwrap();
//! server.bind("tcp://127.0.0.1:*").unwrap();
//! let client = ctx.socket(fabriq::REQ).unwrap();
//! client.set_plain_username(Some("admin")).unwrap();
//! client.set_plain_password(Some("secret")).unwrap();
//! client.connect(&server.get_last_endpoint().unwrap().unwrap()).unwrap();
//! client.send("hello", 0).unwrap();
//! let mut msg = server.recv_msg(0).unwrap();
//! assert_eq!(msg.gets("User-Id"), Some("admin"));
//! auth.stop();
//! ```

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use subtle::ConstantTimeEq;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::flags::DONTWAIT;
use crate::keys::z85_encode;
use crate::poll::{poll, POLLIN};
use crate::socket::Socket;
use crate::socket_type::SocketType;

/// Which CURVE clients a domain lets in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurveKeys {
    /// Any client that knows the server's key (pyzmq's `CURVE_ALLOW_ANY`).
    Any,
    /// Only clients with one of these long-term public keys.
    Only(HashSet<[u8; 32]>),
}

/// What the handler lets in. Shared between the [`Authenticator`] and its
/// thread; changes apply to the next request.
#[derive(Debug, Default)]
struct Policy {
    allow: HashSet<IpAddr>,
    deny: HashSet<IpAddr>,
    /// Domain -> user name -> password.
    passwords: HashMap<String, HashMap<String, String>>,
    /// Domain -> allowed CURVE keys.
    curve: HashMap<String, CurveKeys>,
}

/// A ZAP handler thread for one context (see the module documentation).
/// Stops when [`Authenticator::stop`] is called or it is dropped.
#[derive(Debug)]
pub struct Authenticator {
    policy: Arc<Mutex<Policy>>,
    stop: Option<(Socket, JoinHandle<()>)>,
}

/// The inproc name of an authenticator's stop signal.
fn control_name(id: u64) -> String {
    format!("fabriq.auth.control.{id}")
}

impl Authenticator {
    /// Binds a REP socket at `inproc://zeromq.zap.01` in `ctx` and starts
    /// answering on a thread. Fails with `EADDRINUSE` if a ZAP handler is
    /// already bound in the context. The policy starts empty: NULL peers
    /// get in, PLAIN and CURVE peers are refused until configured.
    pub fn start(ctx: &Context) -> Result<Authenticator> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let handler = ctx.socket(SocketType::REP)?;
        handler.set_linger(0)?;
        handler.bind(&format!("inproc://{}", crate::zap::HANDLER_NAME))?;
        let control = ctx.socket(SocketType::PAIR)?;
        control.bind(&format!("inproc://{}", control_name(id)))?;
        let stopper = ctx.socket(SocketType::PAIR)?;
        stopper.connect(&format!("inproc://{}", control_name(id)))?;
        let policy = Arc::new(Mutex::new(Policy::default()));
        let shared = policy.clone();
        let thread = std::thread::Builder::new()
            .name("fabriq-zap".into())
            .spawn(move || serve(handler, control, shared))
            .map_err(|e| crate::error::fail(Error::EMTHREAD, format!("cannot start: {e}")))?;
        Ok(Authenticator {
            policy,
            stop: Some((stopper, thread)),
        })
    }

    fn policy(&self) -> MutexGuard<'_, Policy> {
        self.policy.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets in only peers from the allowed addresses (pyzmq's `allow`).
    pub fn allow(&self, address: IpAddr) {
        self.policy().allow.insert(address);
    }

    /// Refuses peers from this address (used only while nothing is
    /// allowed, as in pyzmq).
    pub fn deny(&self, address: IpAddr) {
        self.policy().deny.insert(address);
    }

    /// Sets the PLAIN user names and passwords of `domain` (`"*"`: every
    /// domain without its own table; an empty request domain counts as
    /// `"*"`).
    pub fn configure_plain<U, P>(&self, domain: &str, passwords: impl IntoIterator<Item = (U, P)>)
    where
        U: Into<String>,
        P: Into<String>,
    {
        let table = passwords
            .into_iter()
            .map(|(u, p)| (u.into(), p.into()))
            .collect();
        self.policy().passwords.insert(domain.to_string(), table);
    }

    /// Sets which CURVE clients `domain` lets in (`"*"` as for PLAIN).
    pub fn configure_curve(&self, domain: &str, keys: CurveKeys) {
        self.policy().curve.insert(domain.to_string(), keys);
    }

    /// Lets the CURVE clients whose public certificates are in `dir` into
    /// `domain` (see [`load_public_keys`]); returns how many keys it read.
    pub fn configure_curve_dir(&self, domain: &str, dir: &Path) -> io::Result<usize> {
        let keys = load_public_keys(dir)?;
        let n = keys.len();
        self.configure_curve(domain, CurveKeys::Only(keys.into_iter().collect()));
        Ok(n)
    }

    /// Stops the thread and unbinds `inproc://zeromq.zap.01`. Handshakes
    /// waiting for it then wait until their handshake timeout.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some((stopper, thread)) = self.stop.take() {
            let _ = stopper.send("STOP", 0);
            let _ = thread.join();
        }
    }
}

impl Drop for Authenticator {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The handler thread: answers requests until told to stop or the
/// context is terminated.
fn serve(handler: Socket, control: Socket, policy: Arc<Mutex<Policy>>) {
    loop {
        let mut items = [handler.as_poll_item(POLLIN), control.as_poll_item(POLLIN)];
        if poll(&mut items, -1).is_err() || items[1].is_readable() {
            return;
        }
        if !items[0].is_readable() {
            continue;
        }
        let request = match handler.recv_multipart(DONTWAIT) {
            Ok(r) => r,
            Err(Error::EAGAIN) => continue,
            Err(_) => return,
        };
        let reply = policy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .decide(&request);
        if handler.send_multipart(reply, 0).is_err() {
            return;
        }
    }
}

impl Policy {
    /// The reply frames for one request (pyzmq's `handle_zap_message`).
    fn decide(&self, request: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let reply = |id: &[u8], code: &str, text: &str, user: &[u8]| {
            vec![
                b"1.0".to_vec(),
                id.to_vec(),
                code.as_bytes().to_vec(),
                text.as_bytes().to_vec(),
                user.to_vec(),
                Vec::new(),
            ]
        };
        if request.len() < 6 {
            return reply(b"", "500", "Malformed request", b"");
        }
        let (version, id, domain, address, mechanism) = (
            &request[0][..],
            &request[1][..],
            String::from_utf8_lossy(&request[2]),
            String::from_utf8_lossy(&request[3]),
            &request[5][..],
        );
        let credentials = &request[6..];
        if version != b"1.0" {
            return reply(id, "400", "Invalid version", b"");
        }
        let ip = address.parse::<IpAddr>().ok();
        let (mut allowed, mut denied, mut reason) = (false, false, "NO ACCESS");
        if !self.allow.is_empty() {
            if ip.is_some_and(|a| self.allow.contains(&a)) {
                allowed = true;
                reason = "OK";
            } else {
                denied = true;
                reason = "Address not in whitelist";
            }
        } else if !self.deny.is_empty() {
            if ip.is_some_and(|a| self.deny.contains(&a)) {
                denied = true;
                reason = "Address is blacklisted";
            } else {
                allowed = true;
                reason = "Address not blacklisted";
            }
        }
        let mut user = b"anonymous".to_vec();
        if !denied {
            match mechanism {
                b"NULL" => allowed = true,
                b"PLAIN" => {
                    (allowed, reason) = self.plain(&domain, credentials);
                    if allowed {
                        user = credentials[0].clone();
                    }
                }
                b"CURVE" => {
                    (allowed, reason) = self.curve(&domain, credentials);
                    if allowed {
                        user = z85_encode(&credentials[0]).unwrap_or_default().into_bytes();
                    }
                }
                _ => (allowed, reason) = (false, "Unsupported mechanism"),
            }
        }
        if allowed {
            reply(id, "200", "OK", &user)
        } else {
            reply(id, "400", reason, b"")
        }
    }

    fn for_domain<'a, T>(table: &'a HashMap<String, T>, domain: &str) -> Option<&'a T> {
        let domain = if domain.is_empty() { "*" } else { domain };
        table.get(domain).or_else(|| table.get("*"))
    }

    fn plain(&self, domain: &str, credentials: &[Vec<u8>]) -> (bool, &'static str) {
        let [user, password] = credentials else {
            return (false, "Malformed PLAIN credentials");
        };
        let Some(table) = Self::for_domain(&self.passwords, domain) else {
            return (false, "No passwords defined");
        };
        let user = String::from_utf8_lossy(user);
        match table.get(user.as_ref()) {
            // Constant time: how long the check takes tells nothing of
            // how much of the password was right.
            Some(p) if bool::from(p.as_bytes().ct_eq(&password[..])) => (true, "OK"),
            Some(_) => (false, "Invalid password"),
            None => (false, "Invalid username"),
        }
    }

    fn curve(&self, domain: &str, credentials: &[Vec<u8>]) -> (bool, &'static str) {
        let Some(key) = credentials
            .first()
            .and_then(|k| <[u8; 32]>::try_from(&k[..]).ok())
        else {
            return (false, "Malformed CURVE credentials");
        };
        match Self::for_domain(&self.curve, domain) {
            Some(CurveKeys::Any) => (true, "OK"),
            Some(CurveKeys::Only(keys)) if keys.contains(&key) => (true, "OK"),
            Some(CurveKeys::Only(_)) => (false, "Unknown key"),
            None => (false, "Unknown domain"),
        }
    }
}

/// The public keys of the certificates in `dir`, in czmq's zcert format
/// (what `zcert_save_public` and pyzmq's `zmq.auth.create_certificates`
/// write):
///
/// ```text
/// metadata
/// curve
///     public-key = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
/// ```
///
/// Every regular file whose name does not end in `_secret` is read;
/// files without a `curve` / `public-key` entry are skipped, and a
/// `public-key` that is not a 40-character Z85 key is an error naming the
/// file.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fabriq-doc-certs-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(
///     dir.join("client.key"),
///     "curve\n    public-key = \"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID\"\n",
/// )
/// .unwrap();
/// let keys = fabriq::auth::load_public_keys(&dir).unwrap();
/// assert_eq!(
///     fabriq::z85_encode(&keys[0]).unwrap(),
///     "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
/// );
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn load_public_keys(dir: &Path) -> io::Result<Vec<[u8; 32]>> {
    let mut keys = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let secret = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with("_secret"));
        if secret || !entry.file_type()?.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(value) = zpl_value(&text, &["curve", "public-key"]) {
            let key = fabriq_zmtp::CurvePublicKey::from_z85(&value).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: public-key is not a Z85 key: {e}", path.display()),
                )
            })?;
            keys.push(key.0);
        }
    }
    Ok(keys)
}

/// The value at `path` in ZPL text (ZeroMQ RFC 4: sections nested by four
/// spaces of indentation, `name = value`, `#` comments, values optionally
/// quoted).
fn zpl_value(text: &str, path: &[&str]) -> Option<String> {
    let mut stack: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let depth = (line.len() - line.trim_start().len()) / 4;
        stack.truncate(depth);
        let (name, value) = match trimmed.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (trimmed, None),
        };
        stack.push(name.to_string());
        if let Some(v) = value {
            if stack.iter().map(String::as_str).eq(path.iter().copied()) {
                let unquoted = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                    .unwrap_or(v);
                return Some(unquoted.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(address: &str, mechanism: &str, credentials: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut r = vec![
            b"1.0".to_vec(),
            b"1".to_vec(),
            Vec::new(),
            address.as_bytes().to_vec(),
            Vec::new(),
            mechanism.as_bytes().to_vec(),
        ];
        r.extend(credentials.iter().map(|c| c.to_vec()));
        r
    }

    #[test]
    fn decisions() {
        let mut p = Policy::default();
        let plain = request("10.0.0.1", "PLAIN", &[b"admin", b"secret"]);
        assert_eq!(p.decide(&plain)[2], b"400");
        p.passwords.insert(
            "*".into(),
            [("admin".to_string(), "secret".to_string())].into(),
        );
        let ok = p.decide(&plain);
        assert_eq!((&ok[2][..], &ok[4][..]), (&b"200"[..], &b"admin"[..]));
        let wrong = request("10.0.0.1", "PLAIN", &[b"admin", b"guess"]);
        assert_eq!(p.decide(&wrong)[3], b"Invalid password");
        // Shorter, longer, empty: refused too (compared in constant time,
        // lengths apart).
        for guess in [&b"secre"[..], b"secret!", b""] {
            let near = request("10.0.0.1", "PLAIN", &[b"admin", guess]);
            assert_eq!(p.decide(&near)[3], b"Invalid password");
        }
        p.deny.insert("10.0.0.1".parse().unwrap());
        assert_eq!(p.decide(&plain)[3], b"Address is blacklisted");
        p.allow.insert("10.0.0.2".parse().unwrap());
        assert_eq!(p.decide(&plain)[3], b"Address not in whitelist");
        assert_eq!(p.decide(&request("10.0.0.2", "NULL", &[]))[2], b"200");
        let key = [9u8; 32];
        let curve = request("10.0.0.2", "CURVE", &[&key]);
        assert_eq!(p.decide(&curve)[3], b"Unknown domain");
        p.curve
            .insert("*".into(), CurveKeys::Only([[1; 32]].into()));
        assert_eq!(p.decide(&curve)[3], b"Unknown key");
        p.curve.insert("*".into(), CurveKeys::Any);
        let ok = p.decide(&curve);
        assert_eq!(ok[4], crate::z85_encode(&key).unwrap().into_bytes());
    }

    #[test]
    fn zcert_files() {
        let text = "#   ****  Generated by CZMQ  ****\n\
                    #   ZeroMQ CURVE Public Certificate\n\
                    \n\
                    metadata\n    name = \"x\"\n\
                    curve\n    public-key = \"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"\n";
        assert_eq!(
            zpl_value(text, &["curve", "public-key"]).as_deref(),
            Some("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")
        );
        assert_eq!(zpl_value(text, &["metadata", "public-key"]), None);
    }
}
