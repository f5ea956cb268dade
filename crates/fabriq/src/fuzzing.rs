//! Entry points for the fuzz targets (`fuzz/` and `crates/fabriq-fuzz`),
//! built only with the `fuzzing` feature and hidden from the docs: the
//! parsers of what a peer or a user hands to fabriq that are not reachable
//! through the public API without I/O. Nothing here is a stable API.
//!
//! * the fabric engine's page stream, control commands, rendezvous frame
//!   and READY fields (the same code `reactor/fabric.rs` runs, in
//!   `reactor/pages.rs`);
//! * endpoint strings, as `bind` and `connect` check them before any I/O.

pub use crate::reactor::wire::{
    parse_control, parse_peer, Control, PageItem, PageReader, PeerFabric, Rdv,
};

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
