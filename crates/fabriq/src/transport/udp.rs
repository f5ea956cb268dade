//! `udp://`, libzmq's datagram transport for RADIO, DISH and DGRAM: the
//! endpoint syntax, the datagram formats, and opening the socket. No
//! ZMTP: each message is one datagram. The I/O side (moving datagrams
//! between the socket and its pipe) is the udp engine,
//! `reactor/engine/udp.rs`.
//!
//! Endpoints, as libzmq 4.3's `udp_address_t` and `ip_resolver_t` read
//! them. IPv6 addresses may be written `[ADDR]` or bare (the port is after
//! the last `:`); like libzmq, they need the socket's `ipv6` option
//! (`ZMQ_IPV6`).
//!
//! - `udp://HOST:PORT`: for RADIO (connect), the destination; for DISH
//!   and DGRAM (bind), the local address (`*` for any: `0.0.0.0`, or
//!   `[::]`, dual stack, with the `ipv6` option). Port 0 or `*` binds an
//!   ephemeral port. A link-local IPv6 HOST may carry a zone,
//!   `[fe80::1%eth0]` or `[fe80::1%2]`.
//! - `udp://GROUP:PORT` with a multicast GROUP (224.0.0.0/4, ff00::/8):
//!   RADIO sends to the group; DISH and DGRAM bind `0.0.0.0:PORT` (or
//!   `[::]:PORT`) and join it.
//! - `udp://IFACE;GROUP:PORT`: the same on interface IFACE: an interface
//!   name (`lo`, `eth0`), one of its addresses, or `*` (the kernel's
//!   choice). The part after `;` must then be a multicast group of the
//!   same family, and IFACE may not be one.
//!
//! Where fabriq differs from libzmq 4.3: an IPv4 literal stays IPv4 with
//! the `ipv6` option set (libzmq maps it to `::ffff:a.b.c.d`, which makes
//! an IPv4 group no longer multicast); an IPv6 group on an interface given
//! by address is joined on that address's interface (libzmq: `ENODEV`, it
//! needs a name); an IPv4 interface given by name is joined by index
//! (`ip_mreqn`; libzmq uses the name's IPv4 address); IPv6 hops are set
//! with `IPV6_MULTICAST_HOPS` (libzmq passes `IP_MULTICAST_TTL`, 33, at
//! the IPv6 level, where Linux reads it as `IPV6_FLOWINFO_SEND`).
//!
//! Datagrams (libzmq's `udp_engine_t`): RADIO/DISH send `[group length
//! (1 byte), group, body]`; DGRAM sends the body alone. Datagrams are at
//! most [`MAX_DATAGRAM`] bytes: a message that would make a longer one is
//! dropped on send, a longer datagram arriving is cut to that size (the
//! kernel truncates), and a datagram whose group length runs past its end
//! is dropped.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, ToSocketAddrs};

use bytes::Bytes;
use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};

use crate::error::{err, fail, Error, Result};
use crate::transport::Role;

/// libzmq's `MAX_UDP_MSG`: the largest datagram sent or read.
pub(crate) const MAX_DATAGRAM: usize = 8192;

const ACCEPTED: &str = "accepted forms: udp://HOST:PORT, udp://*:PORT (bind), \
                        udp://GROUP:PORT and udp://IFACE;GROUP:PORT (multicast; IFACE an \
                        interface name, an address of it, or *), IPv6 as udp://[ADDR]:PORT \
                        (with the ipv6 option set)";

const NEEDS_IPV6: &str = "an IPv6 address needs the socket's ipv6 option \
                          (Socket::set_ipv6(true), ZMQ_IPV6) set before bind/connect";

/// A host as written, not yet resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// `*` (bind only).
    Any,
    /// A literal; an IPv6 one may have a zone (`%eth0`, `%2`).
    Ip(IpAddr, Option<String>),
    /// A name to look up (connect only).
    Name(String),
}

/// The `IFACE` of `IFACE;GROUP:PORT`, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Iface {
    Any,
    Ip(IpAddr),
    Name(String),
}

/// A `udp://` endpoint, parsed (syntax only); [`resolve`] gives its
/// addresses once the socket's options are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UdpAddress {
    /// What follows `udp://`, as written.
    pub text: String,
    role: Role,
    host: Host,
    iface: Option<Iface>,
    port: u16,
}

/// The interface multicast goes out of and is joined on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum McastIf {
    /// The kernel's choice (no `IFACE;`, or `*;`).
    Any,
    /// An IPv4 interface by its address (`ip_mreq`, `IP_MULTICAST_IF`).
    V4(Ipv4Addr),
    /// An interface by index: IPv6 (`ipv6_mreq`, `IPV6_MULTICAST_IF`), or
    /// an IPv4 interface given by name (`ip_mreqn`).
    Index(u32),
}

/// A `udp://` endpoint's addresses: all of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Where a sender sends (RADIO); the group for multicast.
    pub target: SocketAddr,
    /// What a receiver binds (DISH, DGRAM): ANY:PORT for multicast.
    pub bind: SocketAddr,
    pub interface: McastIf,
    pub multicast: bool,
}

/// Parses what follows `udp://` for binding (DISH, DGRAM) or connecting
/// (RADIO): syntax only; names and the address family are [`resolve`]'s.
/// EINVAL with the reason.
pub(crate) fn parse(address: &str, role: Role) -> Result<UdpAddress> {
    let (iface, rest) = match address.rsplit_once(';') {
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
            fail(
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
    let host = parse_host(address, host, role)?;
    if let Some(iface) = &iface {
        let Host::Ip(group, _) = &host else {
            return err(
                Error::EINVAL,
                format!("udp endpoint {address:?}: an interface (IFACE;) needs a multicast group"),
            );
        };
        if !group.is_multicast() {
            return err(
                Error::EINVAL,
                format!("udp endpoint {address:?}: an interface (IFACE;) needs a multicast group"),
            );
        }
        if let Iface::Ip(ip) = iface {
            if ip.is_ipv4() != group.is_ipv4() {
                return err(
                    Error::EINVAL,
                    format!(
                        "udp endpoint {address:?}: the interface address and the group \
                         are not of the same family (IPv4 / IPv6)"
                    ),
                );
            }
        }
    }
    Ok(UdpAddress {
        text: address.to_string(),
        role,
        host,
        iface,
        port,
    })
}

/// `ADDR` or `ADDR%ZONE` inside brackets, or bare.
fn parse_v6(address: &str, text: &str, zone_allowed: bool) -> Result<(Ipv6Addr, Option<String>)> {
    let (ip, zone) = match text.split_once('%') {
        Some((ip, zone)) => (ip, Some(zone)),
        None => (text, None),
    };
    if zone.is_some() && !zone_allowed {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: an interface address takes no zone (%...)"),
        );
    }
    if zone == Some("") {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: empty IPv6 zone after \"%\""),
        );
    }
    match ip.parse::<Ipv6Addr>() {
        Ok(ip) => Ok((ip, zone.map(str::to_string))),
        Err(_) => err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: {text:?} is not an IPv6 address; {ACCEPTED}"),
        ),
    }
}

/// `[...]` or a bare IPv6 literal (it has a `:`), if `text` is one.
fn v6_text<'a>(address: &str, text: &'a str) -> Result<Option<&'a str>> {
    if let Some(inner) = text.strip_prefix('[') {
        return match inner.strip_suffix(']') {
            Some(inner) => Ok(Some(inner)),
            None => err(
                Error::EINVAL,
                format!("udp endpoint {address:?}: {text:?} has no closing \"]\"; {ACCEPTED}"),
            ),
        };
    }
    if text.ends_with(']') {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: {text:?} has no opening \"[\"; {ACCEPTED}"),
        );
    }
    Ok(text.contains(':').then_some(text))
}

fn parse_interface(address: &str, iface: &str) -> Result<Iface> {
    if iface == "*" {
        return Ok(Iface::Any);
    }
    let ip = match v6_text(address, iface)? {
        Some(v6) => IpAddr::V6(parse_v6(address, v6, false)?.0),
        None => match iface.parse::<Ipv4Addr>() {
            Ok(ip) => IpAddr::V4(ip),
            Err(_) if iface.is_empty() => {
                return err(
                    Error::EINVAL,
                    format!("udp endpoint {address:?}: empty interface before \";\"; {ACCEPTED}"),
                )
            }
            // A name; whether there is such an interface is resolve's.
            Err(_) => return Ok(Iface::Name(iface.to_string())),
        },
    };
    if ip.is_multicast() {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: the interface may not be a multicast address"),
        );
    }
    Ok(Iface::Ip(ip))
}

fn parse_host(address: &str, host: &str, role: Role) -> Result<Host> {
    if host == "*" {
        if role == Role::Connect {
            return err(
                Error::EINVAL,
                format!("udp endpoint {address:?}: a destination cannot be \"*\""),
            );
        }
        return Ok(Host::Any);
    }
    if let Some(v6) = v6_text(address, host)? {
        let (ip, zone) = parse_v6(address, v6, true)?;
        return Ok(Host::Ip(IpAddr::V6(ip), zone));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip), None));
    }
    if host.is_empty() {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?} has no host; {ACCEPTED}"),
        );
    }
    if role == Role::Bind {
        return err(
            Error::EINVAL,
            format!("udp endpoint {address:?}: bind takes an IP address or \"*\""),
        );
    }
    Ok(Host::Name(host.to_string()))
}

/// libzmq's answer to an IPv6 address without `ZMQ_IPV6`: its resolver
/// asks `getaddrinfo` for AF_INET only, and a failure is ENODEV for a bind
/// address, EINVAL for a destination.
fn need_ipv6(address: &UdpAddress, ipv6: bool) -> Result<()> {
    if ipv6 {
        return Ok(());
    }
    let kind = if address.role == Role::Bind {
        Error::ENODEV
    } else {
        Error::EINVAL
    };
    err(
        kind,
        format!("udp endpoint {:?}: {NEEDS_IPV6}", address.text),
    )
}

/// The addresses of a parsed endpoint for a socket whose `ipv6` option is
/// `ipv6`: `*` is `[::]` with it; IPv6 literals need it; a destination
/// name is looked up (its first IPv6 address with the option, else its
/// first IPv4 one; never a multicast one); interface names and addresses
/// become indexes.
pub(crate) fn resolve(address: &UdpAddress, ipv6: bool) -> Result<Resolved> {
    let text = &address.text;
    let port = address.port;
    let target = match &address.host {
        Host::Any if ipv6 => SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
        Host::Any => SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)),
        Host::Ip(IpAddr::V4(ip), _) => SocketAddr::from((*ip, port)),
        Host::Ip(IpAddr::V6(ip), zone) => {
            need_ipv6(address, ipv6)?;
            let scope = match zone {
                Some(zone) => zone_index(text, zone)?,
                None => 0,
            };
            SocketAddr::V6(SocketAddrV6::new(*ip, port, 0, scope))
        }
        Host::Name(name) => lookup(text, name, port, ipv6)?,
    };
    let multicast = target.ip().is_multicast();
    let interface = match &address.iface {
        None | Some(Iface::Any) => McastIf::Any,
        Some(Iface::Ip(IpAddr::V4(ip))) => McastIf::V4(*ip),
        Some(Iface::Ip(IpAddr::V6(ip))) => {
            need_ipv6(address, ipv6)?;
            McastIf::Index(index_of_address(text, ip)?)
        }
        Some(Iface::Name(name)) => McastIf::Index(index_of_name(text, name)?),
    };
    let bind = if multicast || address.role == Role::Connect {
        let any = match target {
            SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        SocketAddr::new(any, port)
    } else {
        target
    };
    Ok(Resolved {
        target,
        bind,
        interface,
        multicast,
    })
}

fn lookup(text: &str, name: &str, port: u16, ipv6: bool) -> Result<SocketAddr> {
    let found: Vec<IpAddr> = (name, 0u16)
        .to_socket_addrs()
        .map(|addrs| {
            addrs
                .map(|a| a.ip())
                .filter(|ip| !ip.is_multicast())
                .collect()
        })
        .unwrap_or_default();
    let pick = if ipv6 {
        found.iter().find(|ip| ip.is_ipv6()).or(found.first())
    } else {
        found.iter().find(|ip| ip.is_ipv4())
    };
    match pick {
        Some(ip) => Ok(SocketAddr::new(*ip, port)),
        None => {
            let which = if ipv6 { "" } else { "IPv4 " };
            err(
                Error::EINVAL,
                format!("udp endpoint {text:?}: {name:?} has no {which}unicast address"),
            )
        }
    }
}

/// An IPv6 zone: an index, or an interface name (libzmq: EINVAL if
/// neither).
fn zone_index(text: &str, zone: &str) -> Result<u32> {
    let index = if zone.bytes().all(|b| b.is_ascii_digit()) {
        zone.parse().unwrap_or(0)
    } else {
        interface_index(zone).unwrap_or(0)
    };
    if index == 0 {
        return err(
            Error::EINVAL,
            format!("udp endpoint {text:?}: IPv6 zone {zone:?} is not an interface"),
        );
    }
    Ok(index)
}

fn index_of_name(text: &str, name: &str) -> Result<u32> {
    interface_index(name).ok_or_else(|| {
        fail(
            Error::ENODEV,
            format!("udp endpoint {text:?}: no interface named {name:?}"),
        )
    })
}

/// `if_nametoindex`, through SIOCGIFINDEX on a throwaway socket.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn interface_index(name: &str) -> Option<u32> {
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .ok()?;
    rustix::net::netdevice::name_to_index(&fd, name)
        .ok()
        .filter(|i| *i != 0)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn interface_index(_name: &str) -> Option<u32> {
    None
}

/// The index of the interface that has IPv6 address `ip`, from
/// `/proc/net/if_inet6` (libzmq has no such lookup and answers ENODEV:
/// it takes IPv6 multicast interfaces by name only).
fn index_of_address(text: &str, ip: &Ipv6Addr) -> Result<u32> {
    let hex: String = ip.octets().iter().map(|b| format!("{b:02x}")).collect();
    let table = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    let found = table.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next()? == hex)
            .then(|| u32::from_str_radix(fields.next()?, 16).ok())
            .flatten()
    });
    found.filter(|i| *i != 0).ok_or_else(|| {
        fail(
            Error::ENODEV,
            format!(
                "udp endpoint {text:?}: no interface has the address {ip} \
                 (an interface name works too)"
            ),
        )
    })
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

/// The address frame of a DGRAM message received from `from`, followed by
/// a NUL byte as libzmq's `sockaddr_to_msg` makes it: `IP:PORT` for IPv4
/// (libzmq's, also for an IPv4 sender reaching a dual-stack socket as
/// `::ffff:IP`), `[IP]:PORT` (`[IP%SCOPE]:PORT` for a link-local sender)
/// for IPv6, which libzmq 4.3's DGRAM cannot receive (it asserts the
/// sender is AF_INET).
pub(crate) fn address_frame(from: SocketAddr) -> Bytes {
    let text = match from {
        SocketAddr::V4(a) => format!("{}:{}\0", a.ip(), a.port()),
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(ip) => format!("{ip}:{}\0", a.port()),
            None => format!("{a}\0"),
        },
    };
    Bytes::from(text.into_bytes())
}

/// The destination a DGRAM address frame names: `IP:PORT`, `[IP]:PORT`,
/// `[IP%SCOPE]:PORT` (a numeric scope) or a bare `IP:PORT` for IPv6, a
/// trailing NUL allowed, so a received address frame can be sent back as
/// it is. `None` if it is none of these with a non-zero port; libzmq
/// drops such a message.
pub(crate) fn parse_address_frame(frame: &[u8]) -> Option<SocketAddr> {
    let frame = frame.strip_suffix(b"\0").unwrap_or(frame);
    let text = std::str::from_utf8(frame).ok()?;
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Some(SocketAddr::V4(SocketAddrV4::new(ip, port)));
    }
    let inner = match host.strip_prefix('[') {
        Some(inner) => inner.strip_suffix(']')?,
        None => host,
    };
    let (ip, scope) = match inner.split_once('%') {
        Some((ip, scope)) => (ip, scope.parse().ok()?),
        None => (inner, 0),
    };
    Some(SocketAddr::V6(SocketAddrV6::new(
        ip.parse().ok()?,
        port,
        0,
        scope,
    )))
}

/// `to` as a socket of the other family can send to it: an IPv4 address
/// from an IPv6 (dual-stack) socket as `::ffff:IP`, a `::ffff:IP` from an
/// IPv4 socket as IP. `None` for IPv6 from an IPv4 socket.
pub(crate) fn for_family(to: SocketAddr, ipv6_socket: bool) -> Option<SocketAddr> {
    match to {
        SocketAddr::V4(a) if ipv6_socket => Some(SocketAddr::V6(SocketAddrV6::new(
            a.ip().to_ipv6_mapped(),
            a.port(),
            0,
            0,
        ))),
        SocketAddr::V6(a) if !ipv6_socket => a
            .ip()
            .to_ipv4_mapped()
            .map(|ip| SocketAddr::V4(SocketAddrV4::new(ip, a.port()))),
        to => Some(to),
    }
}

/// What a udp socket does: RADIO sends, DISH receives, DGRAM does both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Directions {
    pub send: bool,
    pub recv: bool,
}

/// How a udp socket's datagrams are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// RADIO / DISH: `[group length, group, body]`, to a fixed target.
    Groups { target: SocketAddr },
    /// DGRAM: the body alone; messages are `[address, body]`.
    Raw,
}

/// Opens the non-blocking socket for `address`, set up as libzmq's
/// `udp_engine_t::plug` does: a sender to a multicast group sets loop,
/// hops and its interface; a receiver sets SO_REUSEADDR, binds, and joins
/// a multicast group on the given interface. An IPv6 socket is dual stack
/// (IPV6_V6ONLY off, Linux's default, which libzmq relies on).
pub(crate) fn open(
    address: &Resolved,
    dirs: Directions,
    multicast_hops: i32,
    multicast_loop: bool,
) -> io::Result<std::net::UdpSocket> {
    let v6 = address.target.is_ipv6();
    let family = if v6 {
        AddressFamily::INET6
    } else {
        AddressFamily::INET
    };
    let fd = rustix::net::socket_with(
        family,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    if v6 {
        sockopt::set_ipv6_v6only(&fd, false)?;
    }
    if dirs.send && address.multicast {
        let hops = u32::try_from(multicast_hops).ok().filter(|h| *h > 0);
        match address.target.ip() {
            IpAddr::V4(group) => {
                sockopt::set_ip_multicast_loop(&fd, multicast_loop)?;
                if let Some(hops) = hops {
                    sockopt::set_ip_multicast_ttl(&fd, hops)?;
                }
                match address.interface {
                    McastIf::V4(ip) if !ip.is_unspecified() => {
                        sockopt::set_ip_multicast_if(&fd, &ip)?;
                    }
                    McastIf::Index(index) => sockopt::set_ip_multicast_if_with_ifindex(
                        &fd,
                        &group,
                        &Ipv4Addr::UNSPECIFIED,
                        index,
                    )?,
                    _ => {}
                }
            }
            IpAddr::V6(_) => {
                sockopt::set_ipv6_multicast_loop(&fd, multicast_loop)?;
                if let Some(hops) = hops {
                    sockopt::set_ipv6_multicast_hops(&fd, hops)?;
                }
                if let McastIf::Index(index) = address.interface {
                    sockopt::set_ipv6_multicast_if(&fd, index)?;
                }
            }
        }
    }
    if dirs.recv {
        sockopt::set_socket_reuseaddr(&fd, true)?;
        rustix::net::bind(&fd, &address.bind)?;
        if address.multicast {
            match (address.target.ip(), address.interface) {
                (IpAddr::V4(group), McastIf::Index(index)) => {
                    sockopt::set_ip_add_membership_with_ifindex(
                        &fd,
                        &group,
                        &Ipv4Addr::UNSPECIFIED,
                        index,
                    )?
                }
                (IpAddr::V4(group), McastIf::V4(ip)) => {
                    sockopt::set_ip_add_membership(&fd, &group, &ip)?
                }
                (IpAddr::V4(group), McastIf::Any) => {
                    sockopt::set_ip_add_membership(&fd, &group, &Ipv4Addr::UNSPECIFIED)?
                }
                (IpAddr::V6(group), McastIf::Index(index)) => {
                    sockopt::set_ipv6_add_membership(&fd, &group, index)?
                }
                (IpAddr::V6(group), _) => sockopt::set_ipv6_add_membership(&fd, &group, 0)?,
            }
        }
    }
    Ok(std::net::UdpSocket::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str, role: Role, ipv6: bool) -> Resolved {
        resolve(&parse(text, role).unwrap(), ipv6).unwrap()
    }

    fn sa(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn reads_libzmq_forms() {
        let a = resolved("127.0.0.1:5555", Role::Connect, false);
        assert_eq!(a.target, sa("127.0.0.1:5555"));
        assert!(!a.multicast);
        let b = resolved("*:5555", Role::Bind, false);
        assert_eq!(b.bind, sa("0.0.0.0:5555"));
        let c = resolved("127.0.0.1:*", Role::Bind, false);
        assert_eq!(c.bind, sa("127.0.0.1:0"));
        let m = resolved("239.0.0.1:5555", Role::Bind, false);
        assert!(m.multicast);
        assert_eq!(m.bind, sa("0.0.0.0:5555"));
        assert_eq!(m.interface, McastIf::Any);
        let i = resolved("127.0.0.1;239.0.0.1:5555", Role::Connect, false);
        assert_eq!(i.interface, McastIf::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(i.target, sa("239.0.0.1:5555"));
        let l = resolved("localhost:5555", Role::Connect, false);
        assert_eq!(l.target, sa("127.0.0.1:5555"));
        // An IPv4 literal stays IPv4 with the ipv6 option set.
        let v4 = resolved("127.0.0.1:5555", Role::Bind, true);
        assert_eq!(v4.bind, sa("127.0.0.1:5555"));
    }

    #[test]
    fn reads_ipv6_forms_with_the_ipv6_option() {
        let a = resolved("[::1]:5555", Role::Connect, true);
        assert_eq!(a.target, sa("[::1]:5555"));
        assert_eq!(a.bind, sa("[::]:5555"));
        assert!(!a.multicast);
        // Bare, as libzmq's last-colon split allows.
        assert_eq!(resolved("::1:5555", Role::Connect, true).target, a.target);
        let b = resolved("[::1]:*", Role::Bind, true);
        assert_eq!(b.bind, sa("[::1]:0"));
        // `*` is `[::]` (dual stack) with the option, 0.0.0.0 without.
        assert_eq!(resolved("*:*", Role::Bind, true).bind, sa("[::]:0"));
        assert_eq!(resolved("*:*", Role::Bind, false).bind, sa("0.0.0.0:0"));
        let m = resolved("[ff02::1]:5555", Role::Bind, true);
        assert!(m.multicast);
        assert_eq!(m.bind, sa("[::]:5555"));
        assert_eq!(m.interface, McastIf::Any);
        // An interface by name, by address (::1 is lo's), or `*`.
        let lo = resolved("lo;[ff02::1]:5555", Role::Bind, true);
        assert_eq!(lo.interface, McastIf::Index(1));
        assert_eq!(lo.target, sa("[ff02::1]:5555"));
        let by_addr = resolved("[::1];[ff01::1]:5555", Role::Connect, true);
        assert_eq!(by_addr.interface, McastIf::Index(1));
        let bare = resolved("::1;ff01::1:5555", Role::Connect, true);
        assert_eq!(bare.interface, McastIf::Index(1));
        assert_eq!(
            resolved("*;[ff02::1]:5555", Role::Bind, true).interface,
            McastIf::Any
        );
        // An IPv4 group on an interface by name: ip_mreqn's index.
        assert_eq!(
            resolved("lo;239.0.0.1:5555", Role::Bind, false).interface,
            McastIf::Index(1)
        );
        // Zones: an index or a name.
        let z = resolved("[fe80::1%1]:5555", Role::Connect, true);
        assert_eq!(
            z.target,
            SocketAddr::V6(SocketAddrV6::new("fe80::1".parse().unwrap(), 5555, 0, 1))
        );
        assert_eq!(
            resolved("[fe80::1%lo]:5555", Role::Connect, true).target,
            z.target
        );
        let l = resolved("localhost:5555", Role::Connect, true);
        assert_eq!(l.target.port(), 5555);
        assert!(l.target.ip().is_loopback());
    }

    #[test]
    fn ipv6_without_the_option_is_refused_as_libzmq() {
        // libzmq's resolver asks for AF_INET only: EINVAL for a
        // destination, ENODEV for a bind address.
        for (text, role, want) in [
            ("[::1]:5555", Role::Connect, Error::EINVAL),
            ("[ff02::1]:5555", Role::Connect, Error::EINVAL),
            ("lo;[ff02::1]:5555", Role::Connect, Error::EINVAL),
            ("[::1]:5555", Role::Bind, Error::ENODEV),
            ("[::]:*", Role::Bind, Error::ENODEV),
            ("lo;[ff02::1]:5555", Role::Bind, Error::ENODEV),
        ] {
            let parsed = parse(text, role).unwrap();
            let e = resolve(&parsed, false).unwrap_err();
            assert_eq!(e, want, "{text}");
            assert!(
                crate::error::last_error_detail().is_some_and(|d| d.contains("ipv6 option")),
                "{text}"
            );
        }
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
            ("localhost:5555", Role::Bind),
            ("127.0.0.1:70000", Role::Bind),
            (":5555", Role::Connect),
            ("[::1:5555", Role::Connect),
            ("::1]:5555", Role::Connect),
            ("[::1]", Role::Connect),
            ("[::g]:5555", Role::Connect),
            ("[1.2.3.4]:5555", Role::Connect),
            ("[fe80::1%]:5555", Role::Connect),
            ("[::1];[::2]:5555", Role::Bind),
            ("[ff02::2];[ff02::1]:5555", Role::Bind),
            ("[::1%1];[ff02::1]:5555", Role::Bind),
            ("127.0.0.1;[ff02::1]:5555", Role::Bind),
            ("[::1];239.0.0.1:5555", Role::Bind),
            (";239.0.0.1:5555", Role::Bind),
            ("lo;localhost:5555", Role::Connect),
            ("lo;*:5555", Role::Bind),
        ] {
            assert_eq!(parse(text, role).err(), Some(Error::EINVAL), "{text}");
        }
        // Syntax that holds up, refused on resolving.
        for (text, role, want) in [
            ("nosuchif0;239.0.0.1:5555", Role::Bind, Error::ENODEV),
            ("nosuchif0;[ff02::1]:5555", Role::Connect, Error::ENODEV),
            ("[::2];[ff02::1]:5555", Role::Connect, Error::ENODEV),
            ("[fe80::1%nosuchif0]:5555", Role::Connect, Error::EINVAL),
            ("[fe80::1%0]:5555", Role::Connect, Error::EINVAL),
        ] {
            let parsed = parse(text, role).unwrap();
            assert_eq!(resolve(&parsed, true).err(), Some(want), "{text}");
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
        let a = sa("127.0.0.1:5556");
        assert_eq!(&address_frame(a)[..], b"127.0.0.1:5556\0");
        assert_eq!(parse_address_frame(b"127.0.0.1:5556\0"), Some(a));
        assert_eq!(parse_address_frame(b"127.0.0.1:5556"), Some(a));
        assert_eq!(parse_address_frame(b"127.0.0.1:0"), None);
        assert_eq!(parse_address_frame(b"localhost:5556"), None);
        assert_eq!(parse_address_frame(b"127.0.0.1"), None);
    }

    #[test]
    fn ipv6_address_frames() {
        let a = sa("[::1]:5556");
        assert_eq!(&address_frame(a)[..], b"[::1]:5556\0");
        assert_eq!(parse_address_frame(b"[::1]:5556\0"), Some(a));
        assert_eq!(parse_address_frame(b"::1:5556"), Some(a));
        assert_eq!(parse_address_frame(b"[::1]:0"), None);
        assert_eq!(parse_address_frame(b"[::1:5556"), None);
        assert_eq!(parse_address_frame(b"[::1]"), None);
        assert_eq!(parse_address_frame(b"[fe80::1%lo]:5556"), None);
        let scoped = SocketAddr::V6(SocketAddrV6::new("fe80::1".parse().unwrap(), 5556, 0, 4));
        assert_eq!(&address_frame(scoped)[..], b"[fe80::1%4]:5556\0");
        assert_eq!(parse_address_frame(&address_frame(scoped)), Some(scoped));
        // An IPv4 sender reaching a dual-stack socket: the IPv4 frame.
        let mapped = sa("[::ffff:127.0.0.1]:5556");
        assert_eq!(&address_frame(mapped)[..], b"127.0.0.1:5556\0");
        assert_eq!(for_family(sa("127.0.0.1:5556"), true), Some(mapped));
        assert_eq!(for_family(mapped, false), Some(sa("127.0.0.1:5556")));
        assert_eq!(for_family(a, false), None);
        assert_eq!(for_family(a, true), Some(a));
    }
}
