//! Endpoint strings: `tcp://`, `ipc://`, `inproc://` (and, refused for
//! now with a clear message, `ofi+<provider>://`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use crate::error::{err, Error, Result};

/// Longest filesystem path for an `ipc://` endpoint (`sun_path` is 108
/// bytes including the terminating NUL).
pub(crate) const MAX_IPC_PATH: usize = 107;

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `tcp://host:port`; `host` is as written, `port` `None` for `*`/0.
    Tcp { host: String, port: Option<u16> },
    /// `ipc://path`, `ipc://@abstract`, or `ipc://*`.
    Ipc(IpcAddr),
    /// `inproc://name`.
    Inproc(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IpcAddr {
    Path(PathBuf),
    Abstract(Vec<u8>),
    /// `ipc://*`: a fresh path chosen at bind time.
    Wildcard,
}

/// Whether the endpoint is being bound or connected: the rules differ
/// (wildcards only make sense for bind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Bind,
    Connect,
}

const ACCEPTED: &str = "accepted forms: tcp://HOST:PORT, tcp://*:*, ipc://PATH, ipc://@NAME, \
                        ipc://*, inproc://NAME";

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
        match scheme {
            "tcp" => parse_tcp(text, rest, role),
            "ipc" => parse_ipc(text, rest, role),
            "inproc" => {
                if rest.is_empty() {
                    return err(
                        Error::EINVAL,
                        format!("inproc endpoint {text:?} has no name"),
                    );
                }
                Ok(Endpoint::Inproc(rest.to_string()))
            }
            s if s.starts_with("ofi+") => err(
                Error::EPROTONOSUPPORT,
                format!(
                    "endpoint {text:?}: the libfabric transport is not available in this build \
                     (planned); use tcp:// or ipc:// meanwhile"
                ),
            ),
            "pgm" | "epgm" | "norm" | "vmci" | "udp" | "tipc" | "ws" | "wss" => err(
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

fn parse_tcp(text: &str, rest: &str, role: Role) -> Result<Endpoint> {
    if role == Role::Connect && rest.contains(';') {
        return err(
            Error::EINVAL,
            format!("endpoint {text:?}: source-address connects (src;dst) are not supported"),
        );
    }
    let Some((host, port)) = rest.rsplit_once(':') else {
        return err(
            Error::EINVAL,
            format!("tcp endpoint {text:?} has no port; write tcp://HOST:PORT"),
        );
    };
    // A bare IPv6 address without brackets ("::1") would split wrongly.
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return err(
            Error::EINVAL,
            format!("tcp endpoint {text:?}: IPv6 addresses must be in brackets, tcp://[::1]:PORT"),
        );
    }
    if host.is_empty() {
        return err(Error::EINVAL, format!("tcp endpoint {text:?} has no host"));
    }
    let port = match port {
        "*" | "0" => None,
        p => match p.parse::<u16>() {
            Ok(n) => Some(n),
            Err(_) => {
                return err(
                    Error::EINVAL,
                    format!("tcp endpoint {text:?}: port {p:?} is not a number from 0 to 65535"),
                )
            }
        },
    };
    if role == Role::Connect {
        if host == "*" {
            return err(
                Error::EINVAL,
                format!("cannot connect to the wildcard host in {text:?}"),
            );
        }
        if port.is_none() {
            return err(
                Error::EINVAL,
                format!("cannot connect to a wildcard or zero port in {text:?}"),
            );
        }
    }
    Ok(Endpoint::Tcp {
        host: host.to_string(),
        port,
    })
}

fn parse_ipc(text: &str, rest: &str, role: Role) -> Result<Endpoint> {
    if rest.is_empty() {
        return err(Error::EINVAL, format!("ipc endpoint {text:?} has no path"));
    }
    if rest == "*" {
        if role == Role::Connect {
            return err(
                Error::EINVAL,
                format!("cannot connect to the wildcard ipc endpoint {text:?}"),
            );
        }
        return Ok(Endpoint::Ipc(IpcAddr::Wildcard));
    }
    if let Some(name) = rest.strip_prefix('@') {
        if name.len() + 1 > MAX_IPC_PATH {
            return err(
                Error::ENAMETOOLONG,
                format!(
                    "abstract ipc name in {text:?} is longer than {} bytes",
                    MAX_IPC_PATH - 1
                ),
            );
        }
        return Ok(Endpoint::Ipc(IpcAddr::Abstract(name.as_bytes().to_vec())));
    }
    if rest.len() > MAX_IPC_PATH {
        return err(
            Error::ENAMETOOLONG,
            format!("ipc path in {text:?} is longer than {MAX_IPC_PATH} bytes"),
        );
    }
    Ok(Endpoint::Ipc(IpcAddr::Path(PathBuf::from(rest))))
}

/// Resolves a tcp host for binding: `*` is every interface.
pub(crate) fn resolve_bind(host: &str, port: u16, ipv6: bool) -> Result<SocketAddr> {
    if host == "*" {
        let ip = if ipv6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        return Ok(SocketAddr::new(ip, port));
    }
    resolve(host, port, ipv6).map_err(|e| {
        if e == Error::EINVAL {
            crate::error::fail(
                Error::ENODEV,
                format!("cannot bind to {host:?}: not an address or a resolvable name"),
            )
        } else {
            e
        }
    })
}

/// Resolves a tcp host to one address (IPv4 preferred unless `ipv6`).
pub(crate) fn resolve(host: &str, port: u16, ipv6: bool) -> Result<SocketAddr> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        if ip.is_ipv6() && !ipv6 {
            return err(
                Error::EINVAL,
                format!("{host} is an IPv6 address; enable the ipv6 socket option first"),
            );
        }
        return Ok(SocketAddr::new(ip, port));
    }
    let addrs: Vec<SocketAddr> = match (bare, port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return err(Error::EINVAL, format!("cannot resolve host {host:?}: {e}"));
        }
    };
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.iter().find(|a| ipv6 && a.is_ipv6()))
        .copied()
        .ok_or_else(|| {
            crate::error::fail(
                Error::EINVAL,
                format!("host {host:?} has no usable address"),
            )
        })
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => match port {
                Some(p) => write!(f, "tcp://{host}:{p}"),
                None => write!(f, "tcp://{host}:*"),
            },
            Endpoint::Ipc(IpcAddr::Path(p)) => write!(f, "ipc://{}", p.display()),
            Endpoint::Ipc(IpcAddr::Abstract(n)) => {
                write!(f, "ipc://@{}", String::from_utf8_lossy(n))
            }
            Endpoint::Ipc(IpcAddr::Wildcard) => write!(f, "ipc://*"),
            Endpoint::Inproc(name) => write!(f, "inproc://{name}"),
        }
    }
}

/// The canonical text of a bound TCP address, as LAST_ENDPOINT shows it.
pub(crate) fn tcp_text(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("tcp://{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("tcp://[{}]:{}", a.ip(), a.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_accepted_forms() {
        use Endpoint::*;
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:5555", Role::Connect).unwrap(),
            Tcp {
                host: "127.0.0.1".into(),
                port: Some(5555)
            }
        );
        assert_eq!(
            Endpoint::parse("tcp://*:*", Role::Bind).unwrap(),
            Tcp {
                host: "*".into(),
                port: None
            }
        );
        assert_eq!(
            Endpoint::parse("tcp://[::1]:0", Role::Bind).unwrap(),
            Tcp {
                host: "[::1]".into(),
                port: None
            }
        );
        assert_eq!(
            Endpoint::parse("ipc://@abc", Role::Bind).unwrap(),
            Ipc(IpcAddr::Abstract(b"abc".to_vec()))
        );
        assert_eq!(
            Endpoint::parse("ipc://*", Role::Bind).unwrap(),
            Ipc(IpcAddr::Wildcard)
        );
        assert_eq!(
            Endpoint::parse("inproc://x", Role::Connect).unwrap(),
            Inproc("x".into())
        );
    }

    #[test]
    fn refuses_bad_forms_with_the_right_kind() {
        let cases = [
            ("tcp://127.0.0.1", Role::Bind, Error::EINVAL),
            ("tcp://:5555", Role::Bind, Error::EINVAL),
            ("tcp://host:99999", Role::Connect, Error::EINVAL),
            ("tcp://host:*", Role::Connect, Error::EINVAL),
            ("tcp://*:5555", Role::Connect, Error::EINVAL),
            ("tcp://::1:5555", Role::Connect, Error::EINVAL),
            ("localhost:5555", Role::Connect, Error::EINVAL),
            ("ipc://", Role::Bind, Error::EINVAL),
            ("ipc://*", Role::Connect, Error::EINVAL),
            ("inproc://", Role::Bind, Error::EINVAL),
            ("foo://bar", Role::Bind, Error::EPROTONOSUPPORT),
            (
                "pgm://eth0;239.1.1.1:5555",
                Role::Bind,
                Error::EPROTONOSUPPORT,
            ),
            (
                "ofi+verbs://10.0.0.1:5555",
                Role::Connect,
                Error::EPROTONOSUPPORT,
            ),
        ];
        for (text, role, kind) in cases {
            assert_eq!(Endpoint::parse(text, role), Err(kind), "{text}");
        }
        let long = format!("ipc:///tmp/{}", "x".repeat(120));
        assert_eq!(Endpoint::parse(&long, Role::Bind), Err(Error::ENAMETOOLONG));
    }

    #[test]
    fn resolves_hosts() {
        assert_eq!(
            resolve("127.0.0.1", 1, false).unwrap(),
            "127.0.0.1:1".parse().unwrap()
        );
        assert_eq!(
            resolve("[::1]", 1, true).unwrap(),
            "[::1]:1".parse().unwrap()
        );
        assert_eq!(resolve("[::1]", 1, false), Err(Error::EINVAL));
        assert_eq!(
            resolve_bind("*", 7, false).unwrap(),
            "0.0.0.0:7".parse().unwrap()
        );
        assert!(resolve("localhost", 1, false).unwrap().ip().is_loopback());
    }
}
