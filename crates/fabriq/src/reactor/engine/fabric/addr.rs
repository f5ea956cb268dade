//! Whether the fabric address a peer announced in its READY agrees with
//! the control connection it came over: a peer must not aim our pages
//! (and the provider's own connections, for tcp;ofi_rxm) at a third
//! host, and ZAP's IP rules, which see the control connection, must
//! cover the data path too.
//!
//! | address form | rule |
//! |---|---|
//! | `sockaddr_in` / `sockaddr_in6` (tcp, sockets, udp, verbs over IPoIB) | the same IP as the control connection's peer |
//! | shm (its address is a name on this host) | the control connection runs within this host: its two ends have the same IP, or the peer's is loopback |
//! | anything else (psm2, opx, efa, verbs' IB forms) | not checked: these addresses name no IP; see docs/security.md |

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// The IP in a `sockaddr_in` or `sockaddr_in6` as libfabric's
/// `FI_SOCKADDR_IN*` formats hold them (host byte order family, network
/// byte order address), if `address` is one.
fn sockaddr_ip(address: &[u8]) -> Option<IpAddr> {
    let family = u16::from_ne_bytes(address.get(..2)?.try_into().ok()?);
    match (family, address.len()) {
        (AF_INET, 16) => {
            let ip: [u8; 4] = address[4..8].try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(ip)))
        }
        (AF_INET6, 28) => {
            let ip: [u8; 16] = address[8..24].try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(ip)))
        }
        _ => None,
    }
}

/// An IP with IPv4-mapped IPv6 addresses read as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Checks `announced` (the peer's fabric address) for `provider` against
/// the control connection's ends, `control_peer` and `control_local` (IPs
/// as text; empty when unknown). The error names the mismatch.
pub(crate) fn check(
    provider: &str,
    announced: &[u8],
    control_peer: &str,
    control_local: &str,
) -> Result<(), String> {
    let peer: Option<IpAddr> = control_peer.parse().ok().map(canonical);
    let local: Option<IpAddr> = control_local.parse().ok().map(canonical);
    let base = provider.split(';').next().unwrap_or("");
    if base == "shm" {
        return match (peer, local) {
            (Some(p), Some(l)) if p == l || p.is_loopback() => Ok(()),
            _ => Err(format!(
                "the peer announced a shared-memory fabric address over a control connection from {control_peer}, which is not this host: refused"
            )),
        };
    }
    let Some(data) = sockaddr_ip(announced).map(canonical) else {
        // A form that names no IP: not checked (docs/security.md).
        return Ok(());
    };
    match peer {
        Some(p) if p == data => Ok(()),
        // Unspecified (a provider bound to every interface): the data
        // goes to the control connection's host all the same only if
        // that is where the provider resolves it, which we cannot know.
        _ => Err(format!(
            "the peer announced fabric address {data} but its control connection comes from {control_peer}: refused"
        )),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut a = AF_INET.to_ne_bytes().to_vec();
        a.extend_from_slice(&port.to_be_bytes());
        a.extend_from_slice(&ip);
        a.extend_from_slice(&[0; 8]);
        a
    }

    fn sockaddr_in6(ip: Ipv6Addr, port: u16) -> Vec<u8> {
        let mut a = AF_INET6.to_ne_bytes().to_vec();
        a.extend_from_slice(&port.to_be_bytes());
        a.extend_from_slice(&[0; 4]);
        a.extend_from_slice(&ip.octets());
        a.extend_from_slice(&[0; 4]);
        a
    }

    #[test]
    fn an_ip_fabric_address_must_be_the_control_peers() {
        let tcp = "tcp;ofi_rxm";
        let own = sockaddr_in([127, 0, 0, 1], 4000);
        assert!(check(tcp, &own, "127.0.0.1", "127.0.0.1").is_ok());
        assert!(check(tcp, &own, "::ffff:127.0.0.1", "").is_ok());
        let third = sockaddr_in([10, 9, 8, 7], 4000);
        let err = check(tcp, &third, "127.0.0.1", "127.0.0.1").unwrap_err();
        assert!(err.contains("10.9.8.7"), "{err}");
        assert!(check(tcp, &own, "", "").is_err(), "unknown control peer");
        let v6 = sockaddr_in6(Ipv6Addr::LOCALHOST, 4000);
        assert!(check(tcp, &v6, "::1", "::1").is_ok());
        assert!(check(tcp, &v6, "127.0.0.1", "127.0.0.1").is_err());
    }

    #[test]
    fn a_shared_memory_address_needs_a_control_connection_within_the_host() {
        let name = b"fi_shm://1234".to_vec();
        assert!(check("shm", &name, "127.0.0.1", "127.0.0.1").is_ok());
        assert!(check("shm", &name, "10.0.0.2", "10.0.0.2").is_ok());
        assert!(check("shm", &name, "10.0.0.2", "10.0.0.1").is_err());
        assert!(check("shm", &name, "", "").is_err());
    }

    #[test]
    fn other_forms_are_not_checked() {
        assert!(check("psm2", &[7; 24], "10.0.0.2", "10.0.0.1").is_ok());
    }
}
