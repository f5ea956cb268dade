//! `tcp://`: binding (with ephemeral ports) and the canonical endpoint
//! text.

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
