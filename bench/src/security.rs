//! CURVE in the bench: the run's keys, and each library's way of making a
//! socket a CURVE server or client ([`crate::zmqlike`] calls `server` on
//! the binding side, `client` on the connecting side, of every socket of a
//! CURVE scenario; in the other scenarios these do nothing).
//!
//! The runner makes two fresh key pairs per run (fabriq's
//! [`::fabriq::CurveKeyPair::new`]) and hands them to every worker of a
//! CURVE trial in its spec, as Z85 text ([`CurveKeys`]). Each side also
//! records what it set up ([`note`]), so the report can show that every
//! library really ran CURVE (the worker puts it in its report).

use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::scenario::Scenario;

/// The keys of a CURVE trial, Z85 (40 characters each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurveKeys {
    /// The server's public key (the client's `curve_serverkey`).
    pub server_public: String,
    /// The server's secret key.
    pub server_secret: String,
    /// The client's public key.
    pub client_public: String,
    /// The client's secret key.
    pub client_secret: String,
}

impl CurveKeys {
    /// Two fresh key pairs.
    pub fn generate() -> Result<CurveKeys, String> {
        let pair = || -> Result<(String, String), String> {
            let kp = ::fabriq::CurveKeyPair::new().map_err(|e| format!("CURVE key pair: {e}"))?;
            let z = |k: &[u8]| ::fabriq::z85_encode(k).map_err(|e| format!("Z85: {e:?}"));
            Ok((z(&kp.public_key)?, z(&kp.secret_key)?))
        };
        let (server_public, server_secret) = pair()?;
        let (client_public, client_secret) = pair()?;
        Ok(CurveKeys {
            server_public,
            server_secret,
            client_public,
            client_secret,
        })
    }
}

static KEYS: OnceLock<CurveKeys> = OnceLock::new();
static NOTE: Mutex<Option<String>> = Mutex::new(None);

/// Installs this worker's keys (once, from its spec).
pub fn install(keys: CurveKeys) {
    let _ = KEYS.set(keys);
}

/// The keys of a CURVE scenario's worker; an error if it has none.
pub fn keys() -> Result<&'static CurveKeys, String> {
    KEYS.get()
        .ok_or_else(|| "a CURVE scenario's worker got no keys in its spec".to_string())
}

/// Records what this worker's sockets run (the last note wins: every
/// socket of a worker runs the same).
pub fn note(text: String) {
    *NOTE.lock().expect("note lock") = Some(text);
}

/// What [`note`] recorded, if anything.
pub fn noted() -> Option<String> {
    NOTE.lock().expect("note lock").clone()
}

fn decode(z85: &str) -> Result<[u8; 32], String> {
    ::fabriq::z85_decode(z85)
        .map_err(|e| format!("bad Z85 key: {e:?}"))?
        .try_into()
        .map_err(|_| "a CURVE key is 32 bytes".to_string())
}

/// fabriq's sockets.
pub mod fabriq {
    use super::*;

    fn check(sock: &::fabriq::Socket, side: &str) -> Result<(), String> {
        let mech = sock
            .get_mechanism()
            .map_err(|e| format!("mechanism: {e}"))?;
        if mech != ::fabriq::Mechanism::ZMQ_CURVE {
            return Err(format!("fabriq {side}: mechanism {mech:?}, not CURVE"));
        }
        super::note(format!("fabriq CURVE {side} (get_mechanism: {mech:?})"));
        Ok(())
    }

    /// Makes `sock` a CURVE server (CURVE scenarios only).
    pub fn server(sock: &::fabriq::Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        let e = |e: ::fabriq::Error| format!("CURVE server option: {e}");
        sock.set_curve_server(true).map_err(e)?;
        sock.set_curve_secretkey(k.server_secret.as_bytes())
            .map_err(e)?;
        sock.set_curve_publickey(k.server_public.as_bytes())
            .map_err(e)?;
        check(sock, "server")
    }

    /// Makes `sock` a CURVE client (CURVE scenarios only).
    pub fn client(sock: &::fabriq::Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        let e = |e: ::fabriq::Error| format!("CURVE client option: {e}");
        sock.set_curve_serverkey(k.server_public.as_bytes())
            .map_err(e)?;
        sock.set_curve_publickey(k.client_public.as_bytes())
            .map_err(e)?;
        sock.set_curve_secretkey(k.client_secret.as_bytes())
            .map_err(e)?;
        check(sock, "client")
    }
}

/// The system's libzmq ([`crate::syszmq`]).
pub mod syszmq {
    use super::*;
    use crate::syszmq::{loaded, Socket, ZMQ_CURVE};

    fn check(sock: &Socket, side: &str) -> Result<(), String> {
        let lib = loaded()?;
        if !lib.curve {
            return Err(format!(
                "{} {} says zmq_has(\"curve\") = 0: no CURVE",
                crate::syszmq::SONAME,
                lib.version
            ));
        }
        let mech = sock
            .get_mechanism()
            .map_err(|e| format!("mechanism: {e}"))?;
        if mech != ZMQ_CURVE {
            return Err(format!("libzmq {side}: ZMQ_MECHANISM {mech}, not CURVE"));
        }
        super::note(format!(
            "libzmq {} from {} (zmq_has(\"curve\") = 1), CURVE {side} (ZMQ_MECHANISM = {mech})",
            lib.version,
            if lib.path.is_empty() {
                crate::syszmq::SONAME
            } else {
                &lib.path
            }
        ));
        Ok(())
    }

    /// Makes `sock` a CURVE server (CURVE scenarios only).
    pub fn server(sock: &Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        let e = |e: crate::syszmq::Error| format!("CURVE server option: {e}");
        sock.set_curve_server(true).map_err(e)?;
        sock.set_curve_secretkey(&k.server_secret).map_err(e)?;
        sock.set_curve_publickey(&k.server_public).map_err(e)?;
        check(sock, "server")
    }

    /// Makes `sock` a CURVE client (CURVE scenarios only).
    pub fn client(sock: &Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        let e = |e: crate::syszmq::Error| format!("CURVE client option: {e}");
        sock.set_curve_serverkey(&k.server_public).map_err(e)?;
        sock.set_curve_publickey(&k.client_public).map_err(e)?;
        sock.set_curve_secretkey(&k.client_secret).map_err(e)?;
        check(sock, "client")
    }
}

/// omq.rs ([`crate::omqzmq`]): the mechanism is an option set before the
/// socket is made.
pub mod omq {
    use super::*;
    use crate::omqzmq::Socket;
    use omq_tokio::{CurveKeypair, CurvePublicKey, CurveSecretKey};

    fn pair(public: &str, secret: &str) -> Result<CurveKeypair, String> {
        Ok(CurveKeypair {
            public: CurvePublicKey::from_bytes(decode(public)?),
            secret: CurveSecretKey::from_bytes(decode(secret)?),
        })
    }

    /// Makes `sock` a CURVE server (CURVE scenarios only).
    pub fn server(sock: &Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        sock.curve_server(pair(&k.server_public, &k.server_secret)?)
            .map_err(|e| format!("CURVE server: {e}"))?;
        super::note("omq CURVE server (Options::curve_server)".into());
        Ok(())
    }

    /// Makes `sock` a CURVE client (CURVE scenarios only).
    pub fn client(sock: &Socket, sc: &Scenario) -> Result<(), String> {
        if !sc.pattern.is_curve() {
            return Ok(());
        }
        let k = keys()?;
        let server = CurvePublicKey::from_bytes(decode(&k.server_public)?);
        sock.curve_client(pair(&k.client_public, &k.client_secret)?, server)
            .map_err(|e| format!("CURVE client: {e}"))?;
        super::note("omq CURVE client (Options::curve_client)".into());
        Ok(())
    }
}

/// The `zmq` crate's libzmq, which has no CURVE: CURVE scenarios never run
/// it (their libzmq side is [`syszmq`]); if asked, it says so.
pub mod libzmq {
    use super::*;

    /// Errors on a CURVE scenario.
    pub fn server(_sock: &::zmq::Socket, sc: &Scenario) -> Result<(), String> {
        refuse(sc)
    }

    /// Errors on a CURVE scenario.
    pub fn client(_sock: &::zmq::Socket, sc: &Scenario) -> Result<(), String> {
        refuse(sc)
    }

    fn refuse(sc: &Scenario) -> Result<(), String> {
        if sc.pattern.is_curve() {
            Err("the zmq crate's libzmq is built without CURVE".into())
        } else {
            Ok(())
        }
    }
}
