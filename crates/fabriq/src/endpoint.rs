//! Endpoint strings: `scheme://address`. `inproc://` is handled here (it
//! needs no transport); every other scheme is looked up in the transport
//! table (`transport::lookup`), whose transport checks the address.

use std::fmt;

use crate::error::{err, Error, Result};
use crate::transport;
pub(crate) use crate::transport::Address;

/// A parsed endpoint.
#[derive(Clone)]
pub(crate) enum Endpoint {
    /// `inproc://name`: sockets of one context joined by pipes.
    Inproc(String),
    /// An endpoint a transport carries (`tcp://`, `ipc://`, ...).
    Io(Address),
    /// `udp://`: datagrams for RADIO, DISH and DGRAM (no connections, so
    /// not a [`transport::Transport`]; see `transport/udp.rs`).
    Udp(transport::udp::UdpAddress),
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Inproc(name) => write!(f, "inproc://{name}"),
            Endpoint::Io(a) => a.fmt(f),
            Endpoint::Udp(a) => write!(f, "udp://{}", a.text),
        }
    }
}

pub(crate) use crate::transport::Role;

const ACCEPTED: &str = "accepted forms: tcp://HOST:PORT, tcp://*:*, ipc://PATH, ipc://@NAME, \
                        ipc://*, inproc://NAME, ofi+PROVIDER://HOST:PORT, ofi://HOST:PORT, \
                        udp://HOST:PORT (RADIO, DISH, DGRAM)";

impl Endpoint {
    /// Parses `text`, returning `EINVAL` (malformed) or `EPROTONOSUPPORT`
    /// (unknown transport) with a detail naming the problem.
    pub(crate) fn parse(text: &str, role: Role) -> Result<Endpoint> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return err(
                Error::EINVAL,
                format!("endpoint {text:?} has no transport (missing \"://\"); {ACCEPTED}"),
            );
        };
        if scheme == "inproc" {
            if rest.is_empty() {
                return err(
                    Error::EINVAL,
                    format!("inproc endpoint {text:?} has no name"),
                );
            }
            return Ok(Endpoint::Inproc(rest.to_string()));
        }
        if scheme == "udp" {
            return Ok(Endpoint::Udp(transport::udp::parse(rest, role)?));
        }
        if let Some(transport) = transport::lookup(scheme) {
            let address = Address {
                transport,
                scheme: scheme.to_string(),
                address: rest.to_string(),
            };
            transport.parse(text, &address, role)?;
            return Ok(Endpoint::Io(address));
        }
        match scheme {
            "pgm" | "epgm" | "norm" | "vmci" | "tipc" | "ws" | "wss" => err(
                Error::EPROTONOSUPPORT,
                format!("transport {scheme}:// is not supported by fabriq; {ACCEPTED}"),
            ),
            _ => err(
                Error::EPROTONOSUPPORT,
                format!("unknown transport {scheme:?} in endpoint {text:?}; {ACCEPTED}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheme(e: &Endpoint) -> String {
        match e {
            Endpoint::Inproc(name) => format!("inproc {name}"),
            Endpoint::Io(a) => format!("{} {}", a.scheme, a.address),
            Endpoint::Udp(a) => format!("udp {}", a.text),
        }
    }

    #[test]
    fn maps_each_scheme_to_its_transport() {
        let cases = [
            ("tcp://127.0.0.1:5555", Role::Connect, "tcp 127.0.0.1:5555"),
            ("tcp://*:*", Role::Bind, "tcp *:*"),
            ("ipc://@abc", Role::Bind, "ipc @abc"),
            ("ipc://*", Role::Bind, "ipc *"),
            ("inproc://x", Role::Connect, "inproc x"),
        ];
        for (text, role, want) in cases {
            assert_eq!(scheme(&Endpoint::parse(text, role).unwrap()), want);
        }
    }

    #[test]
    fn refuses_bad_forms_with_the_right_kind() {
        let cases = [
            ("tcp://127.0.0.1", Role::Bind, Error::EINVAL),
            ("tcp://*:5555", Role::Connect, Error::EINVAL),
            ("localhost:5555", Role::Connect, Error::EINVAL),
            ("ipc://", Role::Bind, Error::EINVAL),
            ("inproc://", Role::Bind, Error::EINVAL),
            ("foo://bar", Role::Bind, Error::EPROTONOSUPPORT),
            (
                "pgm://eth0;239.1.1.1:5555",
                Role::Bind,
                Error::EPROTONOSUPPORT,
            ),
            ("ofi+://127.0.0.1:5555", Role::Connect, Error::EINVAL),
            ("ofi+tcp://127.0.0.1", Role::Connect, Error::EINVAL),
        ];
        for (text, role, kind) in cases {
            assert_eq!(Endpoint::parse(text, role).err(), Some(kind), "{text}");
        }
        let long = format!("ipc:///tmp/{}", "x".repeat(120));
        assert_eq!(
            Endpoint::parse(&long, Role::Bind).err(),
            Some(Error::ENAMETOOLONG)
        );
    }
}
