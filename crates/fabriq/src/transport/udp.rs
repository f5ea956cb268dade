//! `udp://`, libzmq's datagram transport for RADIO, DISH and DGRAM: the
//! endpoint syntax, the datagram formats, and opening the socket. No
//! ZMTP: each message is one datagram. The I/O side (moving datagrams
//! between the socket and its pipe) is `reactor/udp.rs`.
//!
//! Endpoints, as libzmq's `udp_address_t` reads them (IPv4 only here):
//!
//! - `udp://HOST:PORT`: for RADIO (connect), the destination; for DISH
//!   and DGRAM (bind), the local address (`*` for any). Port 0 or `*`
//!   binds an ephemeral port.
//! - `udp://GROUP:PORT` with a multicast GROUP (224.0.0.0/4): RADIO sends
//!   to the group; DISH and DGRAM bind `0.0.0.0:PORT` and join it.
//! - `udp://IFACE;GROUP:PORT`: the same on the interface with IPv4 address
//!   IFACE (`*`: the kernel's choice). The part after `;` must then be a
//!   multicast group, and IFACE may not be one.
//!
//! Datagrams (libzmq's `udp_engine_t`): RADIO/DISH send `[group length
//! (1 byte), group, body]`; DGRAM sends the body alone. Datagrams are at
//! most [`MAX_DATAGRAM`] bytes: a message that would make a longer one is
//! dropped on send, a longer datagram arriving is cut to that size (the
//! kernel truncates), and a datagram whose group length runs past its end
//! is dropped.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};

use bytes::Bytes;
use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};

use crate::error::{err, Error, Result};
use crate::transport::Role;

/// libzmq's `MAX_UDP_MSG`: the largest datagram sent or read.
pub(crate) const MAX_DATAGRAM: usize = 8192;

const ACCEPTED: &str = "accepted forms: udp://HOST:PORT, udp://*:PORT (bind), \
                        udp://GROUP:PORT and udp://IFACE;GROUP:PORT (multicast, IPv4)";

/// A `udp://` endpoint, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UdpAddress {
    /// What follows `udp://`, as written.
    pub text: String,
    /// A host name still to look up (connect only; see [`resolve`]):
    /// `target` holds 0.0.0.0 until then.
    pub name: Option<String>,
    /// Where a sender sends (RADIO); the group for multicast.
    pub target: SocketAddrV4,
    /// What a receiver binds (DISH, DGRAM): `0.0.0.0:PORT` for multicast.
    pub bind: SocketAddrV4,
    /// The multicast interface (`IFACE;`), `0.0.0.0` if none was given.
    pub interface: Ipv4Addr,
    pub multicast: bool,
}

/// Parses what follows `udp://` for binding (DISH, DGRAM) or connecting
/// (RADIO): syntax only; a host name (connect only, as libzmq) is looked
/// up later by [`resolve`]. EINVAL with the reason.
pub(crate) fn parse(address: &str, role: Role) -> Result<UdpAddress> {
    let (interface, rest) = match address.rsplit_once(';') {
        Some((iface, rest)) => (Some(parse_interface(address, iface)?), rest),
        None => (None, address),
    };
    let Some((host, port)) = rest.rsplit_once(':') else {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?} has no port; {ACCEPTED}"),
        );
    };
    let port: u16 = match port {
        "*" if role == Role::Bind => 0,
        p => p.parse().map_err(|_| {
            crate::error::fail(
                Error::EINVAL,
                format!("udp endpoint {address:?}: bad port {p:?}; {ACCEPTED}"),
            )
        })?,
    };
    if port == 0 && role == Role::Connect {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: a destination needs a port"),
        );
    }
    let (ip, name) = match parse_host(address, host, role)? {
        Some(ip) => (ip, None),
        None => (Ipv4Addr::UNSPECIFIED, Some(host.to_string())),
    };
    let target = SocketAddrV4::new(ip, port);
    let multicast = ip.is_multicast();
    if interface.is_some() && !multicast {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: an interface (IFACE;) needs a multicast group"),
        );
    }
    let bind = if multicast || role == Role::Connect {
        SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)
    } else {
        target
    };
    Ok(UdpAddress {
        text: address.to_string(),
        name,
        target,
        bind,
        interface: interface.unwrap_or(Ipv4Addr::UNSPECIFIED),
        multicast,
    })
}

fn parse_interface(address: &str, iface: &str) -> Result<Ipv4Addr> {
    if iface == "*" {
        return Ok(Ipv4Addr::UNSPECIFIED);
    }
    match iface.parse::<Ipv4Addr>() {
        Ok(ip) if ip.is_multicast() => err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: the interface may not be a multicast address"),
        ),
        Ok(ip) => Ok(ip),
        Err(_) => err(
            Error::EINVAL,
            format!(
                "udp endpoint {address:?}: interface {iface:?} is not an IPv4 address \
                 (interface names are not supported; give the interface's address)"
            ),
        ),
    }
}

/// The host's address if it is a literal (or `*`), `None` for a name to
/// look up.
fn parse_host(address: &str, host: &str, role: Role) -> Result<Option<Ipv4Addr>> {
    if host == "*" {
        if role == Role::Connect {
            return err(
                Error::EINVAL,
                format!("udp endpoint {address:?}: a destination cannot be \"*\""),
            );
        }
        return Ok(Some(Ipv4Addr::UNSPECIFIED));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(Some(ip));
    }
    if host.is_empty() || host.starts_with('[') || host.parse::<std::net::Ipv6Addr>().is_ok() {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: fabriq's udp:// is IPv4 only; {ACCEPTED}"),
        );
    }
    if role == Role::Bind {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: bind takes an IPv4 address or \"*\""),
        );
    }
    Ok(None)
}

/// Looks up the host name [`parse`] left (`address.name`), if any: its
/// first IPv4 address, which may not be a multicast one (a group is given
/// as an address), becomes the target.
pub(crate) fn resolve(address: &UdpAddress) -> Result<UdpAddress> {
    let Some(host) = &address.name else {
        return Ok(address.clone());
    };
    let found = (host.as_str(), 0u16)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| {
            addrs.find_map(|a| match a {
                SocketAddr::V4(v4) => Some(*v4.ip()),
                SocketAddr::V6(_) => None,
            })
        });
    let Some(ip) = found.filter(|ip| !ip.is_multicast()) else {
        return err(
            Error::EINVAL,
            format!(
                "udp endpoint {:?}: {host:?} has no IPv4 unicast address",
                address.text
            ),
        );
    };
    let mut out = address.clone();
    out.name = None;
    out.target = SocketAddrV4::new(ip, address.target.port());
    Ok(out)
}

/// A RADIO datagram: group length, group, body. `None` if it would be
/// longer than [`MAX_DATAGRAM`] (libzmq drops such a message) or the group
/// longer than 255 bytes.
pub(crate) fn encode_group(group: &[u8], body: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(len) = u8::try_from(group.len()) else {
        return false;
    };
    if 1 + group.len() + body.len() > MAX_DATAGRAM {
        return false;
    }
    out.clear();
    out.push(len);
    out.extend_from_slice(group);
    out.extend_from_slice(body);
    true
}

/// A datagram a DISH received, as `(group, body)`; `None` if it is empty
/// or its group length runs past its end.
pub(crate) fn decode_group(datagram: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = datagram.split_first()?;
    let len = usize::from(len);
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The address frame of a DGRAM message received from `from`: `IP:PORT`
/// followed by a NUL byte, as libzmq's `sockaddr_to_msg` makes it.
pub(crate) fn address_frame(from: SocketAddrV4) -> Bytes {
    Bytes::from(format!("{}:{}\0", from.ip(), from.port()).into_bytes())
}

/// The destination a DGRAM address frame names (`IP:PORT`, a trailing NUL
/// allowed, so a received address frame can be sent back as it is).
/// `None` if it is not an IPv4 literal with a non-zero port; libzmq drops
/// such a message.
pub(crate) fn parse_address_frame(frame: &[u8]) -> Option<SocketAddrV4> {
    let frame = frame.strip_suffix(b"\0").unwrap_or(frame);
    let text = std::str::from_utf8(frame).ok()?;
    let (ip, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    Some(SocketAddrV4::new(ip.parse().ok()?, port))
}

/// What a udp socket does: RADIO sends, DISH receives, DGRAM does both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Directions {
    pub send: bool,
    pub recv: bool,
}

/// Opens the non-blocking socket for `address`, set up as libzmq's
/// `udp_engine_t::plug` does: a sender to a multicast group sets its
/// interface and hops; a receiver sets SO_REUSEADDR, binds, and joins a
/// multicast group on the given interface.
pub(crate) fn open(
    address: &UdpAddress,
    dirs: Directions,
    multicast_hops: i32,
) -> io::Result<std::net::UdpSocket> {
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    if dirs.send && address.multicast {
        sockopt::set_ip_multicast_loop(&fd, true)?;
        if multicast_hops > 0 {
            sockopt::set_ip_multicast_ttl(&fd, multicast_hops as u32)?;
        }
        if !address.interface.is_unspecified() {
            sockopt::set_ip_multicast_if(&fd, &address.interface)?;
        }
    }
    if dirs.recv {
        sockopt::set_socket_reuseaddr(&fd, true)?;
        rustix::net::bind(&fd, &SocketAddr::V4(address.bind))?;
        if address.multicast {
            sockopt::set_ip_add_membership(&fd, address.target.ip(), &address.interface)?;
        }
    }
    Ok(std::net::UdpSocket::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libzmq_forms() {
        let a = parse("127.0.0.1:5555", Role::Connect).unwrap();
        assert_eq!(a.target, "127.0.0.1:5555".parse().unwrap());
        assert!(!a.multicast);
        let b = parse("*:5555", Role::Bind).unwrap();
        assert_eq!(b.bind, "0.0.0.0:5555".parse().unwrap());
        let c = parse("127.0.0.1:*", Role::Bind).unwrap();
        assert_eq!(c.bind, "127.0.0.1:0".parse().unwrap());
        let m = parse("239.0.0.1:5555", Role::Bind).unwrap();
        assert!(m.multicast);
        assert_eq!(m.bind, "0.0.0.0:5555".parse().unwrap());
        let i = parse("127.0.0.1;239.0.0.1:5555", Role::Connect).unwrap();
        assert_eq!(i.interface, Ipv4Addr::LOCALHOST);
        assert_eq!(i.target, "239.0.0.1:5555".parse().unwrap());
        let l = parse("localhost:5555", Role::Connect).unwrap();
        assert_eq!(l.name.as_deref(), Some("localhost"));
        let l = resolve(&l).unwrap();
        assert_eq!(l.target, "127.0.0.1:5555".parse().unwrap());
    }

    #[test]
    fn refuses_bad_forms() {
        for (text, role) in [
            ("127.0.0.1", Role::Connect),
            ("127.0.0.1:x", Role::Connect),
            ("127.0.0.1:0", Role::Connect),
            ("*:5555", Role::Connect),
            ("127.0.0.1;127.0.0.2:5555", Role::Bind),
            ("239.0.0.2;239.0.0.1:5555", Role::Bind),
            ("eth0;239.0.0.1:5555", Role::Bind),
            ("[::1]:5555", Role::Connect),
            ("localhost:5555", Role::Bind),
            ("127.0.0.1:70000", Role::Bind),
        ] {
            assert_eq!(parse(text, role).err(), Some(Error::EINVAL), "{text}");
        }
    }

    #[test]
    fn group_datagrams_round_trip_and_bad_ones_are_dropped() {
        let mut out = Vec::new();
        assert!(encode_group(b"tv", b"hello", &mut out));
        assert_eq!(out, b"\x02tvhello");
        assert_eq!(decode_group(&out), Some((&b"tv"[..], &b"hello"[..])));
        assert_eq!(decode_group(b""), None);
        assert_eq!(decode_group(b"\x05ab"), None);
        assert_eq!(decode_group(b"\x00"), Some((&b""[..], &b""[..])));
        let big = vec![0u8; MAX_DATAGRAM - 3];
        assert!(encode_group(b"tv", &big, &mut out));
        assert!(!encode_group(b"tv", &[0; MAX_DATAGRAM - 2], &mut out));
        assert!(!encode_group(&[b'g'; 256], b"", &mut out));
    }

    #[test]
    fn address_frames_as_libzmq() {
        let a: SocketAddrV4 = "127.0.0.1:5556".parse().unwrap();
        assert_eq!(&address_frame(a)[..], b"127.0.0.1:5556\0");
        assert_eq!(parse_address_frame(b"127.0.0.1:5556\0"), Some(a));
        assert_eq!(parse_address_frame(b"127.0.0.1:5556"), Some(a));
        assert_eq!(parse_address_frame(b"127.0.0.1:0"), None);
        assert_eq!(parse_address_frame(b"localhost:5556"), None);
        assert_eq!(parse_address_frame(b"127.0.0.1"), None);
    }
}
