//! Entry points for the fuzz targets (`fuzz/` and `crates/fabriq-fuzz`),
//! built only with the `fuzzing` feature and hidden from the docs: the
//! parsers of what a peer or a user hands to fabriq that are not reachable
//! through the public API without I/O. Nothing here is a stable API.
//!
//! * the fabric engine's page stream, control commands, rendezvous frame
//!   and READY fields (the same code the engine runs, in
//!   `reactor/engine/fabric/wire.rs`), and the check of a peer's data
//!   address against its control connection (`.../fabric/addr.rs`);
//! * the control side of a fabric connection, [`Flow`] (credits, lent
//!   frames, rendezvous reads, FIN: `.../fabric/conn.rs`), which has no
//!   I/O and takes time as an argument;
//! * endpoint strings, as `bind` and `connect` check them before any I/O.

pub use crate::reactor::conn::{Effect, Flow, Limits, FIN_WAIT};
pub use crate::reactor::wire::{
    parse_control, parse_peer, ready_fields, Control, PageItem, PageReader, PeerFabric, Rdv,
    MAX_ADDRESS, MAX_NAME, MAX_WINDOW,
};

/// Checks a peer's fabric address `announced` for `provider` against our
/// own address `own` and the control connection's ends (IPs as text), as
/// the fabric engine does before it inserts the address or grants a page.
pub fn check_fabric_address(
    provider: &str,
    own: &[u8],
    announced: &[u8],
    control_peer: &str,
    control_local: &str,
) -> Result<(), String> {
    crate::reactor::addr::check(provider, own, announced, control_peer, control_local)
}

/// Parses `text` as an endpoint to bind (`bind`) or to connect, as
/// [`Socket::bind`](crate::Socket::bind) and
/// [`Socket::connect`](crate::Socket::connect) do before any I/O. On
/// success, the scheme and the address after `://`.
pub fn parse_endpoint(text: &str, bind: bool) -> crate::error::Result<(String, String)> {
    use crate::endpoint::{Endpoint, Role};
    let role = if bind { Role::Bind } else { Role::Connect };
    Ok(match Endpoint::parse(text, role)? {
        Endpoint::Inproc(name) => ("inproc".to_string(), name),
        Endpoint::Io(address) => (address.scheme, address.address),
        Endpoint::Udp(address) => ("udp".to_string(), address.text),
    })
}
