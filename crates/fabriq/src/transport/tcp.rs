//! `tcp://HOST:PORT`: address checks, binding (with ephemeral ports), name
//! resolution at each connect, the canonical endpoint text, and the socket
//! options that apply to TCP streams.

use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use bytes::BytesMut;
use mio::event::Source;
use mio::{Interest, Registry, Token};
use rustix::net::sockopt;

use super::{Address, Listener, Poller, Role, Stream, Transport};
use crate::accept_filter::AcceptFilters;
use crate::error::{err, fail, Error, Result};
use crate::options::Options;

/// The `tcp://` transport.
pub(crate) struct Tcp;

/// Splits a checked address into host (as written, brackets kept) and
/// port (`None` for `*` or `0`).
fn split(address: &str) -> (&str, Option<u16>) {
    let (host, port) = address.rsplit_once(':').unwrap_or((address, "0"));
    let port = match port {
        "*" | "0" => None,
        p => p.parse().ok(),
    };
    (host, port)
}

impl Transport for Tcp {
    fn parse(&self, text: &str, address: &Address, role: Role) -> Result<()> {
        parse(text, &address.address, role)
    }

    fn bind(&self, address: &Address, opts: &Options) -> Result<(Box<dyn Listener>, String)> {
        let (listener, text) = bind_text(&address.address, opts)?;
        if opts.accept_filters.tcp.is_empty() {
            return Ok((Box::new(listener), text));
        }
        let filtered = FilteredListener {
            listener,
            filters: opts.accept_filters.clone(),
        };
        Ok((Box::new(filtered), text))
    }

    fn check_connect(&self, address: &Address, opts: &Options) -> Result<()> {
        check_connect(&address.address, opts)
    }

    fn connect(&self, address: &Address, opts: &Options) -> io::Result<Box<dyn Stream>> {
        if !opts.socks_proxy.is_empty() {
            let proxy = connect(&opts.socks_proxy, opts)?;
            return Ok(Box::new(super::socks::Socks5::start(
                proxy,
                &address.address,
            )?));
        }
        Ok(Box::new(connect(&address.address, opts)?))
    }
}

/// Binds `address` (`HOST:PORT`, checked); the listener and its
/// `tcp://` text.
pub(crate) fn bind_text(address: &str, opts: &Options) -> Result<(mio::net::TcpListener, String)> {
    if opts.use_fd >= 0 {
        let fd = super::use_fd::take_listener(opts.use_fd, &[libc::AF_INET, libc::AF_INET6])?;
        let l = std::net::TcpListener::from(fd);
        let io = |e: io::Error| fail(Error::from_io(&e), e.to_string());
        l.set_nonblocking(true).map_err(io)?;
        let local = l.local_addr().map_err(io)?;
        return Ok((mio::net::TcpListener::from_std(l), tcp_text(local)));
    }
    let (host, port) = split(address);
    bind(host, port, opts)
}

/// Splits a connect address into its source (`SRC;` before the
/// destination, libzmq's source-address form) and destination.
fn source_and_destination(address: &str) -> (Option<&str>, &str) {
    match address.split_once(';') {
        Some((src, dst)) => (Some(src), dst),
        None => (None, address),
    }
}

/// See [`Transport::check_connect`].
pub(crate) fn check_connect(address: &str, _opts: &Options) -> Result<()> {
    {
        let (_, address) = source_and_destination(address);
        let (host, port) = split(address);
        // An address literal is checked now; a host name is looked up at
        // every attempt. An IPv6 literal without the ipv6 option is
        // accepted, as libzmq's connect defers resolution: the attempts
        // then fail until the option is set.
        if host.parse::<IpAddr>().is_ok() || host.starts_with('[') {
            resolve(host, port.unwrap_or(0), true)?;
        }
        Ok(())
    }
}

/// Starts a non-blocking connect to `address` (`HOST:PORT`, checked),
/// resolving a host name now.
pub(crate) fn connect(address: &str, opts: &Options) -> io::Result<mio::net::TcpStream> {
    let not_found = |_| {
        io::Error::new(
            io::ErrorKind::NotFound,
            crate::error::last_error_detail().unwrap_or_default(),
        )
    };
    let (source, address) = source_and_destination(address);
    let (host, port) = split(address);
    let addr = resolve(host, port.unwrap_or(0), opts.ipv6).map_err(not_found)?;
    let s = match source {
        None => mio::net::TcpStream::connect(addr)?,
        Some(source) => {
            let (host, port) = split(source);
            let src = resolve_bind(host, port.unwrap_or(0), opts.ipv6).map_err(not_found)?;
            connect_from(src, addr)?
        }
    };
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// A non-blocking connect from the local address `src` (`SO_REUSEADDR`
/// set first, as libzmq's tcp_connecter does, so that one source port
/// can connect to several destinations).
fn connect_from(src: SocketAddr, dst: SocketAddr) -> io::Result<mio::net::TcpStream> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("source {src} and destination {dst} are of different address families"),
        ));
    }
    let family = if dst.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let fd = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &src)?;
    match rustix::net::connect(&fd, &dst) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(mio::net::TcpStream::from_std(std::net::TcpStream::from(fd)))
}

/// Checks a `HOST:PORT` address for binding or connecting.
pub(crate) fn parse(text: &str, rest: &str, role: Role) -> Result<()> {
    if let Some((source, rest)) = rest.split_once(';') {
        if role != Role::Connect {
            return err(
                Error::EINVAL,
                format!("endpoint {text:?}: a source address (SRC;DST) is for connects only"),
            );
        }
        // The source is an address to bind, port `*` or 0 for any.
        parse(text, source, Role::Bind)?;
        return parse(text, rest, role);
    }
    let Some((host, port)) = rest.rsplit_once(':') else {
        return err(
            Error::EINVAL,
            format!("tcp endpoint {text:?} has no port; write tcp://HOST:PORT"),
        );
    };
    // A bare IPv6 address without brackets ("::1") would split wrongly
    // when binding; a connect takes it when what is left of the last
    // colon is an IPv6 address (`tcp://::1:5555`), as libzmq does.
    let bare_v6 = role == Role::Connect && host.parse::<Ipv6Addr>().is_ok();
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) && !bare_v6 {
        return err(
            Error::EINVAL,
            format!("tcp endpoint {text:?}: IPv6 addresses must be in brackets, tcp://[::1]:PORT"),
        );
    }
    if host.is_empty() {
        return err(Error::EINVAL, format!("tcp endpoint {text:?} has no host"));
    }
    let wildcard_port = match port {
        "*" | "0" => true,
        p => match p.parse::<u16>() {
            Ok(_) => false,
            Err(_) => {
                return err(
                    Error::EINVAL,
                    format!("tcp endpoint {text:?}: port {p:?} is not a number from 0 to 65535"),
                )
            }
        },
    };
    if role == Role::Connect {
        // libzmq's quick check of a connect address (socket_base.cpp):
        // letters, digits and `.-:%;[]_*` only, so a name with spaces is
        // refused now rather than at every attempt.
        let allowed = |c: char| c.is_ascii_alphanumeric() || ".-:%;[]_*".contains(c);
        if !host.chars().all(allowed) {
            return err(
                Error::EINVAL,
                format!("tcp endpoint {text:?}: {host:?} is not a host name or address"),
            );
        }
        if host == "*" {
            return err(
                Error::EINVAL,
                format!("cannot connect to the wildcard host in {text:?}"),
            );
        }
        if wildcard_port {
            return err(
                Error::EINVAL,
                format!("cannot connect to a wildcard or zero port in {text:?}"),
            );
        }
    }
    Ok(())
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
            fail(
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
            fail(
                Error::EINVAL,
                format!("host {host:?} has no usable address"),
            )
        })
}

/// The canonical text of a bound TCP address, as LAST_ENDPOINT shows it.
pub(crate) fn tcp_text(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("tcp://{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("tcp://[{}]:{}", a.ip(), a.port()),
    }
}

/// Binds a listener on `host:port` (`port` `None`: any free port) and
/// returns it with the endpoint text LAST_ENDPOINT reports.
fn bind(host: &str, port: Option<u16>, opts: &Options) -> Result<(mio::net::TcpListener, String)> {
    let addr = resolve_bind(host, port.unwrap_or(0), opts.ipv6)?;
    let std_listener = std::net::TcpListener::bind(addr)
        .map_err(|e| fail(Error::from_io(&e), format!("cannot bind tcp {addr}: {e}")))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| fail(Error::from_io(&e), e.to_string()))?;
    let local = std_listener
        .local_addr()
        .map_err(|e| fail(Error::from_io(&e), e.to_string()))?;
    Ok((
        mio::net::TcpListener::from_std(std_listener),
        tcp_text(local),
    ))
}

/// Applies the socket-level options to a connected TCP stream: keepalive
/// (`ZMQ_TCP_KEEPALIVE*`), buffer sizes and type of service. Values of -1
/// leave the OS defaults. Failures are logged, not fatal (as in libzmq,
/// where they are asserts on platforms that support them).
fn tune(stream: &impl AsFd, opts: &Options) {
    let fd = stream.as_fd();
    let mut results = Vec::new();
    if opts.tcp_keepalive >= 0 {
        results.push(sockopt::set_socket_keepalive(fd, opts.tcp_keepalive == 1));
    }
    if opts.tcp_keepalive == 1 {
        if opts.tcp_keepalive_idle > 0 {
            let idle = Duration::from_secs(opts.tcp_keepalive_idle as u64);
            results.push(sockopt::set_tcp_keepidle(fd, idle));
        }
        if opts.tcp_keepalive_intvl > 0 {
            let intvl = Duration::from_secs(opts.tcp_keepalive_intvl as u64);
            results.push(sockopt::set_tcp_keepintvl(fd, intvl));
        }
        if opts.tcp_keepalive_cnt > 0 {
            results.push(sockopt::set_tcp_keepcnt(fd, opts.tcp_keepalive_cnt as u32));
        }
    }
    if opts.sndbuf >= 0 {
        results.push(sockopt::set_socket_send_buffer_size(
            fd,
            opts.sndbuf as usize,
        ));
    }
    if opts.rcvbuf >= 0 {
        results.push(sockopt::set_socket_recv_buffer_size(
            fd,
            opts.rcvbuf as usize,
        ));
    }
    if opts.tos > 0 {
        results.push(sockopt::set_ip_tos(fd, opts.tos.min(255) as u8));
    }
    for r in results {
        if let Err(e) = r {
            tracing::warn!("cannot apply a tcp socket option: {e}");
        }
    }
}

impl Stream for mio::net::TcpStream {
    fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        super::read_fd(self.as_fd(), buf, max)
    }

    fn short_read_drains(&self) -> bool {
        true
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        super::write_fd(self.as_fd(), bufs)
    }

    fn connect_result(&mut self) -> io::Result<bool> {
        if let Some(e) = self.take_error()? {
            return Err(e);
        }
        match self.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn peer_address(&self) -> String {
        self.peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default()
    }

    fn local_address(&self) -> String {
        self.local_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default()
    }

    fn monitor_value(&self) -> u32 {
        self.as_raw_fd() as u32
    }

    fn tune(&self, opts: &Options) {
        tune(self, opts);
    }

    fn register(&mut self, poller: &mut Poller<'_>, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        Source::register(self, poller.registry, token, interest)
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        let _ = Source::deregister(self, poller.registry);
    }
}

impl Listener for mio::net::TcpListener {
    fn accept(&mut self) -> io::Result<Option<Box<dyn Stream>>> {
        match mio::net::TcpListener::accept(self) {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                Ok(Some(Box::new(s)))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        Source::register(self, registry, token, Interest::READABLE)
    }

    fn deregister(&mut self, registry: &Registry) {
        let _ = Source::deregister(self, registry);
    }

    fn monitor_value(&self) -> u32 {
        self.as_raw_fd() as u32
    }
}

/// A tcp listener with `ZMQ_TCP_ACCEPT_FILTER` masks: connections from
/// other addresses are closed as they are accepted.
#[derive(Debug)]
struct FilteredListener {
    listener: mio::net::TcpListener,
    filters: AcceptFilters,
}

impl Listener for FilteredListener {
    fn accept(&mut self) -> io::Result<Option<Box<dyn Stream>>> {
        loop {
            match mio::net::TcpListener::accept(&self.listener) {
                Ok((s, peer)) if self.filters.tcp_allows(peer.ip()) => {
                    let _ = s.set_nodelay(true);
                    return Ok(Some(Box::new(s)));
                }
                Ok((_, peer)) => tracing::debug!("tcp accept filter: {peer} refused"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        Source::register(&mut self.listener, registry, token, Interest::READABLE)
    }

    fn deregister(&mut self, registry: &Registry) {
        let _ = Source::deregister(&mut self.listener, registry);
    }

    fn monitor_value(&self) -> u32 {
        self.listener.as_raw_fd() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_forms() {
        for (text, role) in [
            ("127.0.0.1:5555", Role::Connect),
            ("*:*", Role::Bind),
            ("*:0", Role::Bind),
            ("[::1]:0", Role::Bind),
            ("localhost:5555", Role::Connect),
            ("::1:5555", Role::Connect),
            ("127.0.0.1:*;[::1]:5555", Role::Connect),
        ] {
            assert_eq!(parse(text, text, role), Ok(()), "{text}");
        }
        assert_eq!(split("[::1]:0"), ("[::1]", None));
        assert_eq!(split("127.0.0.1:5555"), ("127.0.0.1", Some(5555)));
    }

    #[test]
    fn refuses_bad_forms() {
        for (text, role) in [
            ("127.0.0.1", Role::Bind),
            (":5555", Role::Bind),
            ("host:99999", Role::Connect),
            ("host:*", Role::Connect),
            ("*:5555", Role::Connect),
            ("::1:5555", Role::Bind),
            ("fe80::x:5555", Role::Connect),
            ("a;b:1", Role::Connect),
            ("127.0.0.1:0;127.0.0.1:1", Role::Bind),
        ] {
            assert_eq!(parse(text, text, role), Err(Error::EINVAL), "{text}");
        }
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
