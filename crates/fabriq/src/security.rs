//! Security options: the PLAIN, CURVE and ZAP setters and getters, with
//! libzmq 4.3's checks and side effects (`options.cpp`). What they become
//! for a connection (mechanism, when ZAP is asked) is `options.rs`'s
//! `Security`.
//!
//! As in libzmq, the options are read when a socket binds or connects:
//! each connection runs the mechanism the socket had then.
//!
//! ```
//! let ctx = fabriq::Context::new();
//! let server_keys = fabriq::CurveKeyPair::new().unwrap();
//! let server = ctx.socket(fabriq::PULL).unwrap();
//! server.set_curve_server(true).unwrap();
//! server.set_curve_secretkey(&server_keys.secret_key).unwrap();
//! server.bind("tcp://127.0.0.1:*").unwrap();
//!
//! let client_keys = fabriq::CurveKeyPair::new().unwrap();
//! let client = ctx.socket(fabriq::PUSH).unwrap();
//! // Binary or Z85, as libzmq takes them.
//! let server_public = fabriq::z85_encode(&server_keys.public_key).unwrap();
//! client.set_curve_serverkey(server_public.as_bytes()).unwrap();
//! client.set_curve_publickey(&client_keys.public_key).unwrap();
//! client.set_curve_secretkey(&client_keys.secret_key).unwrap();
//! assert_eq!(client.get_mechanism().unwrap(), fabriq::Mechanism::ZMQ_CURVE);
//! client.connect(&server.get_last_endpoint().unwrap().unwrap()).unwrap();
//! client.send("sealed", 0).unwrap();
//! assert_eq!(server.recv_bytes(0).unwrap(), b"sealed");
//! ```

use fabriq_zmtp::z85::{self, Z85Error};
use zeroize::Zeroizing;

use crate::error::{err, Error, Result};
use crate::mechanism::Mechanism;
use crate::socket::Socket;

/// A CURVE key option value: 32 bytes, or 40 (or 41 with a trailing NUL)
/// characters of Z85, as libzmq's `set_curve_key` takes it.
fn curve_key(name: &str, value: &[u8]) -> Result<[u8; 32]> {
    let text = match value.len() {
        32 => return Ok(value.try_into().expect("checked length")),
        40 => value,
        41 if value[40] == 0 => &value[..40],
        n => {
            return err(
                Error::EINVAL,
                format!("{name} must be 32 bytes or 40 Z85 characters, got {n} bytes"),
            )
        }
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return err(
            Error::EINVAL,
            format!("{name}: 40 bytes that are not Z85 text"),
        );
    };
    z85::decode_array::<32>(text).or_else(|e| {
        // Name the place, not the character: this may be a secret key.
        let why = match e {
            Z85Error::BadCharacter { offset, .. } => {
                format!("a character outside the Z85 alphabet at offset {offset}")
            }
            Z85Error::Overflow(offset) => format!("the group at offset {offset} is too large"),
            other => other.to_string(),
        };
        err(
            Error::EINVAL,
            format!("{name} is not a valid Z85 key: {why}"),
        )
    })
}

/// A PLAIN user name or password (`None`: back to NULL, as libzmq does
/// for an empty value with no buffer).
fn plain_text(name: &str, value: Option<&str>) -> Result<Option<Vec<u8>>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_empty() || v.len() > 255 => err(
            Error::EINVAL,
            format!("{name} must be 1 to 255 bytes, got {}", v.len()),
        ),
        Some(v) => Ok(Some(v.as_bytes().to_vec())),
    }
}

fn text(bytes: &[u8]) -> std::result::Result<String, Vec<u8>> {
    String::from_utf8(bytes.to_vec()).map_err(|e| e.into_bytes())
}

/// The security options, with the zmq crate's names and signatures.
impl Socket {
    /// The security mechanism the socket's next connections run:
    /// `ZMQ_NULL`, `ZMQ_PLAIN` or `ZMQ_CURVE`.
    pub fn get_mechanism(&self) -> Result<Mechanism> {
        Ok(self.core().opts.security.mechanism)
    }

    /// Whether the socket is a PLAIN server.
    pub fn is_plain_server(&self) -> Result<bool> {
        let opts = &self.core().opts;
        Ok(opts.security.as_server && opts.security.mechanism == Mechanism::ZMQ_PLAIN)
    }

    /// Makes the socket a PLAIN server (`true`) or back a NULL socket
    /// (`false`), as libzmq does. The ZAP handler bound at
    /// `inproc://zeromq.zap.01` checks each client's user name and
    /// password; without one every client is refused.
    pub fn set_plain_server(&self, value: bool) -> Result<()> {
        let s = &mut self.core().opts.security;
        s.as_server = value;
        s.mechanism = if value {
            Mechanism::ZMQ_PLAIN
        } else {
            Mechanism::ZMQ_NULL
        };
        Ok(())
    }

    /// The PLAIN user name.
    pub fn get_plain_username(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(text(&self.core().opts.security.plain_username))
    }

    /// Sets the PLAIN user name (1 to 255 bytes) and makes the socket a
    /// PLAIN client; `None` makes it a NULL socket again.
    pub fn set_plain_username(&self, value: Option<&str>) -> Result<()> {
        let value = plain_text("plain_username", value)?;
        let s = &mut self.core().opts.security;
        match value {
            None => s.mechanism = Mechanism::ZMQ_NULL,
            Some(v) => {
                s.plain_username = v;
                s.as_server = false;
                s.mechanism = Mechanism::ZMQ_PLAIN;
            }
        }
        Ok(())
    }

    /// The PLAIN password.
    pub fn get_plain_password(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(text(&self.core().opts.security.plain_password))
    }

    /// Sets the PLAIN password (1 to 255 bytes) and makes the socket a
    /// PLAIN client; `None` makes it a NULL socket again.
    pub fn set_plain_password(&self, value: Option<&str>) -> Result<()> {
        let value = plain_text("plain_password", value)?;
        let s = &mut self.core().opts.security;
        match value {
            None => s.mechanism = Mechanism::ZMQ_NULL,
            Some(v) => {
                s.plain_password = Zeroizing::new(v);
                s.as_server = false;
                s.mechanism = Mechanism::ZMQ_PLAIN;
            }
        }
        Ok(())
    }

    /// GSSAPI is not built in (`has("gssapi")` is false): `EINVAL`, as
    /// libzmq built without GSSAPI answers for its options.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let s = ctx.socket(fabriq::DEALER).unwrap();
    /// assert_eq!(s.set_gssapi_server(true), Err(fabriq::Error::EINVAL));
    /// assert_eq!(s.is_gssapi_server(), Err(fabriq::Error::EINVAL));
    /// ```
    pub fn is_gssapi_server(&self) -> Result<bool> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn set_gssapi_server(&self, _value: bool) -> Result<()> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn is_gssapi_plaintext(&self) -> Result<bool> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn set_gssapi_plaintext(&self, _value: bool) -> Result<()> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn get_gssapi_principal(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn set_gssapi_principal(&self, _value: &str) -> Result<()> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn get_gssapi_service_principal(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        no_gssapi()
    }

    /// GSSAPI is not built in: `EINVAL` (see [`Socket::is_gssapi_server`]).
    pub fn set_gssapi_service_principal(&self, _value: &str) -> Result<()> {
        no_gssapi()
    }

    /// Whether the socket is a CURVE server.
    pub fn is_curve_server(&self) -> Result<bool> {
        let opts = &self.core().opts;
        Ok(opts.security.as_server && opts.security.mechanism == Mechanism::ZMQ_CURVE)
    }

    /// Makes the socket a CURVE server (`true`; it also needs
    /// `curve_secretkey`) or back a NULL socket (`false`), as libzmq does.
    pub fn set_curve_server(&self, value: bool) -> Result<()> {
        let s = &mut self.core().opts.security;
        s.as_server = value;
        s.mechanism = if value {
            Mechanism::ZMQ_CURVE
        } else {
            Mechanism::ZMQ_NULL
        };
        Ok(())
    }

    /// The socket's CURVE public key, 32 bytes.
    pub fn get_curve_publickey(&self) -> Result<Vec<u8>> {
        Ok(self.core().opts.security.curve_public.to_vec())
    }

    /// Sets the socket's CURVE public key (32 bytes or 40 Z85
    /// characters); the socket runs CURVE from now on.
    pub fn set_curve_publickey(&self, value: &[u8]) -> Result<()> {
        let key = curve_key("curve_publickey", value)?;
        let s = &mut self.core().opts.security;
        s.curve_public = key;
        s.mechanism = Mechanism::ZMQ_CURVE;
        Ok(())
    }

    /// The socket's CURVE secret key, 32 bytes.
    pub fn get_curve_secretkey(&self) -> Result<Vec<u8>> {
        Ok(self.core().opts.security.curve_secret.to_vec())
    }

    /// Sets the socket's CURVE secret key (32 bytes or 40 Z85
    /// characters); the socket runs CURVE from now on.
    pub fn set_curve_secretkey(&self, value: &[u8]) -> Result<()> {
        let key = Zeroizing::new(curve_key("curve_secretkey", value)?);
        let s = &mut self.core().opts.security;
        s.curve_secret = key;
        s.mechanism = Mechanism::ZMQ_CURVE;
        Ok(())
    }

    /// The server's CURVE public key a client expects, 32 bytes.
    pub fn get_curve_serverkey(&self) -> Result<Vec<u8>> {
        Ok(self.core().opts.security.curve_server.to_vec())
    }

    /// Sets the server's public key (32 bytes or 40 Z85 characters): the
    /// socket becomes a CURVE client.
    pub fn set_curve_serverkey(&self, value: &[u8]) -> Result<()> {
        let key = curve_key("curve_serverkey", value)?;
        let s = &mut self.core().opts.security;
        s.curve_server = key;
        s.as_server = false;
        s.mechanism = Mechanism::ZMQ_CURVE;
        Ok(())
    }

    /// The ZAP domain (RFC 27) sent with each authentication request.
    pub fn get_zap_domain(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(Ok(self.core().opts.security.zap_domain.clone()))
    }

    /// Sets the ZAP domain (at most 255 bytes; empty: none). A NULL socket
    /// with a domain asks the ZAP handler about each peer, as libzmq does.
    pub fn set_zap_domain(&self, value: &str) -> Result<()> {
        if value.len() > 255 {
            return err(
                Error::EINVAL,
                format!("zap_domain must be at most 255 bytes, got {}", value.len()),
            );
        }
        self.core().opts.security.zap_domain = value.to_string();
        Ok(())
    }

    /// Whether `zap_enforce_domain` is on (not in the zmq crate; libzmq's
    /// draft `ZMQ_ZAP_ENFORCE_DOMAIN`).
    pub fn is_zap_enforce_domain(&self) -> Result<bool> {
        Ok(self.core().opts.security.zap_enforce_domain)
    }

    /// libzmq's `ZMQ_ZAP_ENFORCE_DOMAIN` (not in the zmq crate): with a
    /// domain set and no ZAP handler, CURVE and NULL handshakes fail
    /// instead of letting the peer in; a CURVE server with no domain
    /// skips ZAP.
    pub fn set_zap_enforce_domain(&self, value: bool) -> Result<()> {
        self.core().opts.security.zap_enforce_domain = value;
        Ok(())
    }
}

fn no_gssapi<T>() -> Result<T> {
    err(
        Error::EINVAL,
        "GSSAPI is not built into fabriq (has(\"gssapi\") is false)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_keys_binary_or_z85() {
        let raw = [7u8; 32];
        assert_eq!(curve_key("k", &raw).unwrap(), raw);
        let text = z85::encode(&raw).unwrap();
        assert_eq!(curve_key("k", text.as_bytes()).unwrap(), raw);
        let mut with_nul = text.clone().into_bytes();
        with_nul.push(0);
        assert_eq!(curve_key("k", &with_nul).unwrap(), raw);
        assert_eq!(curve_key("k", &[0; 31]), Err(Error::EINVAL));
        assert!(crate::last_error_detail()
            .unwrap()
            .contains("32 bytes or 40 Z85 characters, got 31"));
        let mut bad = text.into_bytes();
        bad[3] = b'"';
        assert_eq!(curve_key("k", &bad), Err(Error::EINVAL));
        assert!(crate::last_error_detail().unwrap().contains("offset 3"));
    }
}
