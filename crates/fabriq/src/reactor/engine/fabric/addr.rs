//! Whether the fabric address a peer announced in its READY agrees with
//! the control connection it came over: a peer must not aim our pages
//! (and the provider's own connections, for tcp;ofi_rxm) at a third
//! host, and ZAP's IP rules, which see the control connection, must
//! cover the data path too.
//!
//! | address form | rule |
//! |---|---|
//! | `sockaddr_in` / `sockaddr_in6` (tcp, sockets, udp, verbs over IPoIB) | the announced address has the form of our own (its family, at least its size) and the same IP as the control connection's peer |
//! | shm (its address is a name on this host) | the control connection runs within this host: its two ends have the same IP, or the peer's is loopback |
//! | anything else (psm2, opx, efa, verbs' IB forms) | not checked: these addresses name no IP; see docs/security.md |
//!
//! The form that counts is our own address's, not the announced one's:
//! the provider's address vector reads every address in its one format
//! (ours), as many bytes as that format has, whatever length the peer
//! sent (fabriq-ofi pads a short one with zeros). A `sockaddr_in` of a
//! third host with a byte more, or cut to its first 8 bytes, named no IP
//! to a check that went by the announced form, and the provider sent our
//! pages there all the same (hostile_data_plane.rs).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// The family and IP of a `sockaddr_in` or `sockaddr_in6` as libfabric's
/// `FI_SOCKADDR_IN*` formats hold them (host byte order family, network
/// byte order address), if `address` starts with one: its family, and at
/// least that family's size (what the address vector reads of it).
fn sockaddr_ip(address: &[u8]) -> Option<(u16, IpAddr)> {
    let family = u16::from_ne_bytes(address.get(..2)?.try_into().ok()?);
    match family {
        AF_INET if address.len() >= 16 => {
            let ip: [u8; 4] = address[4..8].try_into().ok()?;
            Some((family, IpAddr::V4(Ipv4Addr::from(ip))))
        }
        AF_INET6 if address.len() >= 28 => {
            let ip: [u8; 16] = address[8..24].try_into().ok()?;
            Some((family, IpAddr::V6(Ipv6Addr::from(ip))))
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
/// our own fabric address `own` and the control connection's ends,
/// `control_peer` and `control_local` (IPs as text; empty when unknown).
/// The error names the mismatch.
pub(crate) fn check(
    provider: &str,
    own: &[u8],
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
    let Some((family, _)) = sockaddr_ip(own) else {
        // Our addresses name no IP: not checked (docs/security.md).
        return Ok(());
    };
    let data = match sockaddr_ip(announced) {
        Some((f, ip)) if f == family => canonical(ip),
        _ => {
            let form = if family == AF_INET { "IPv4" } else { "IPv6" };
            return Err(format!(
                "the peer announced a fabric address of {} bytes that is not an {form} socket address, the form of this node's: refused",
                announced.len()
            ));
        }
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
        let ours = sockaddr_in([127, 0, 0, 1], 5000);
        let own = sockaddr_in([127, 0, 0, 1], 4000);
        assert!(check(tcp, &ours, &own, "127.0.0.1", "127.0.0.1").is_ok());
        assert!(check(tcp, &ours, &own, "::ffff:127.0.0.1", "").is_ok());
        let third = sockaddr_in([10, 9, 8, 7], 4000);
        let err = check(tcp, &ours, &third, "127.0.0.1", "127.0.0.1").unwrap_err();
        assert!(err.contains("10.9.8.7"), "{err}");
        assert!(
            check(tcp, &ours, &own, "", "").is_err(),
            "unknown control peer"
        );
        let ours6 = sockaddr_in6(Ipv6Addr::LOCALHOST, 5000);
        let v6 = sockaddr_in6(Ipv6Addr::LOCALHOST, 4000);
        assert!(check(tcp, &ours6, &v6, "::1", "::1").is_ok());
        assert!(check(tcp, &ours6, &v6, "127.0.0.1", "127.0.0.1").is_err());
    }

    /// The address vector reads an announced address in our form, as
    /// many bytes as ours has: a third host's `sockaddr_in` with bytes
    /// more, or cut short (zero-padded by fabriq-ofi), or of the other
    /// family, is refused, not let through as "names no IP".
    #[test]
    fn an_address_is_read_in_the_form_of_ours() {
        let tcp = "tcp;ofi_rxm";
        let ours = sockaddr_in([127, 0, 0, 1], 5000);
        let third = sockaddr_in([127, 0, 0, 2], 4000);
        let mut longer = third.clone();
        longer.push(0);
        let err = check(tcp, &ours, &longer, "127.0.0.1", "127.0.0.1").unwrap_err();
        assert!(err.contains("127.0.0.2"), "{err}");
        let mut same_ip_longer = sockaddr_in([127, 0, 0, 1], 4000);
        same_ip_longer.extend_from_slice(&[0; 12]);
        assert!(check(tcp, &ours, &same_ip_longer, "127.0.0.1", "").is_ok());
        for short in [&third[..8], &third[..15], &third[..2], &[][..]] {
            let err = check(tcp, &ours, short, "127.0.0.1", "127.0.0.1").unwrap_err();
            assert!(err.contains("not an IPv4 socket address"), "{err}");
        }
        // An AF_INET6 family in 16 bytes (the address vector would read a
        // sockaddr_in), and a sockaddr_in6 to an IPv4 node.
        let mut disguised = third.clone();
        disguised[..2].copy_from_slice(&AF_INET6.to_ne_bytes());
        assert!(check(tcp, &ours, &disguised, "127.0.0.1", "").is_err());
        let mapped = sockaddr_in6(Ipv4Addr::LOCALHOST.to_ipv6_mapped(), 4000);
        assert!(check(tcp, &ours, &mapped, "127.0.0.1", "").is_err());
        // ... and a sockaddr_in to an IPv6 node.
        let ours6 = sockaddr_in6(Ipv6Addr::LOCALHOST, 5000);
        let own4 = sockaddr_in([127, 0, 0, 1], 4000);
        assert!(check(tcp, &ours6, &own4, "127.0.0.1", "").is_err());
    }

    #[test]
    fn a_shared_memory_address_needs_a_control_connection_within_the_host() {
        let name = b"fi_shm://1234".to_vec();
        let ours = b"fi_shm://99".to_vec();
        assert!(check("shm", &ours, &name, "127.0.0.1", "127.0.0.1").is_ok());
        assert!(check("shm", &ours, &name, "10.0.0.2", "10.0.0.2").is_ok());
        assert!(check("shm", &ours, &name, "10.0.0.2", "10.0.0.1").is_err());
        assert!(check("shm", &ours, &name, "", "").is_err());
    }

    #[test]
    fn other_forms_are_not_checked() {
        let ours = [7; 24];
        assert!(check("psm2", &ours, &[7; 24], "10.0.0.2", "10.0.0.1").is_ok());
        // Whatever the announced bytes look like: the address vector reads
        // them in our form, which names no IP.
        let third = sockaddr_in([10, 9, 8, 7], 4000);
        assert!(check("psm2", &ours, &third, "10.0.0.2", "10.0.0.1").is_ok());
    }
}
