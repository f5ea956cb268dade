//! `tcp://`: binding (with ephemeral ports) and the canonical endpoint
//! text.

use std::os::fd::AsFd;
use std::time::Duration;

use rustix::net::sockopt;

use crate::endpoint::{resolve_bind, tcp_text};
use crate::error::{fail, Error, Result};
use crate::options::Options;

/// Binds a listener on `host:port` (`port` `None`: any free port) and
/// returns it with the endpoint text LAST_ENDPOINT reports.
pub(crate) fn bind(
    host: &str,
    port: Option<u16>,
    opts: &Options,
) -> Result<(mio::net::TcpListener, String)> {
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
pub(crate) fn tune(stream: &impl AsFd, opts: &Options) {
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
