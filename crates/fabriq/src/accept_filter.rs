//! Accept filters of listeners, libzmq's deprecated but still tested
//! `ZMQ_TCP_ACCEPT_FILTER` (peer address masks) and `ZMQ_IPC_FILTER_UID`,
//! `_GID`, `_PID` (peer credentials, `SO_PEERCRED`). With no filter set a
//! listener accepts every connection; with some, a connection that matches
//! none is closed as soon as it is accepted, before any handshake, as
//! libzmq's `tcp_listener_t::accept` and `ipc_listener_t::filter` do.

use std::ffi::CStr;
use std::net::IpAddr;
use std::os::fd::AsFd;

use crate::error::{err, Error, Result};

/// A listener's accept filters, copied from the socket's options when it
/// binds (filters set later apply to later binds, as in libzmq).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AcceptFilters {
    /// Peer address masks of tcp listeners.
    pub tcp: Vec<AddressMask>,
    /// Peer user ids of ipc listeners.
    pub ipc_uids: Vec<u32>,
    /// Peer group ids of ipc listeners (the peer's primary group, or a
    /// group listing the peer's user as a member).
    pub ipc_gids: Vec<u32>,
    /// Peer process ids of ipc listeners.
    pub ipc_pids: Vec<i32>,
}

impl AcceptFilters {
    /// Whether an ipc listener checks credentials at all.
    pub(crate) fn has_ipc(&self) -> bool {
        !(self.ipc_uids.is_empty() && self.ipc_gids.is_empty() && self.ipc_pids.is_empty())
    }

    /// Whether a tcp peer at `peer` may stay connected.
    pub(crate) fn tcp_allows(&self, peer: IpAddr) -> bool {
        self.tcp.is_empty() || self.tcp.iter().any(|m| m.matches(peer))
    }

    /// Whether the ipc peer on `stream` may stay connected (libzmq's
    /// `ipc_listener_t::filter`): its uid, gid or pid is listed, or its
    /// user is a member of a listed group. A peer whose credentials cannot
    /// be read is refused.
    pub(crate) fn ipc_allows(&self, stream: &impl AsFd) -> bool {
        if !self.has_ipc() {
            return true;
        }
        let Ok(cred) = rustix::net::sockopt::socket_peercred(stream.as_fd()) else {
            return false;
        };
        let (uid, gid, pid) = (
            cred.uid.as_raw(),
            cred.gid.as_raw(),
            cred.pid.as_raw_nonzero().get(),
        );
        if self.ipc_uids.contains(&uid)
            || self.ipc_gids.contains(&gid)
            || self.ipc_pids.contains(&pid)
        {
            return true;
        }
        self.ipc_gids.iter().any(|&g| user_in_group(uid, g))
    }
}

/// Whether the user `uid` is listed as a member of group `gid` (the
/// group database's member list, as libzmq reads it).
#[allow(unsafe_code)]
fn user_in_group(uid: u32, gid: u32) -> bool {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: zeroed `passwd`/`group` are valid out-parameters; the
    // reentrant calls write into them and `buf` only, within its length,
    // and the strings they point to live in `buf`, which outlives them.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        if libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found) != 0
            || found.is_null()
            || pw.pw_name.is_null()
        {
            return false;
        }
        let name = CStr::from_ptr(pw.pw_name).to_bytes().to_vec();
        let mut gbuf = vec![0u8; 64 * 1024];
        let mut gr: libc::group = std::mem::zeroed();
        let mut gfound: *mut libc::group = std::ptr::null_mut();
        if libc::getgrgid_r(
            gid,
            &mut gr,
            gbuf.as_mut_ptr().cast(),
            gbuf.len(),
            &mut gfound,
        ) != 0
            || gfound.is_null()
            || gr.gr_mem.is_null()
        {
            return false;
        }
        let mut member = gr.gr_mem;
        while !(*member).is_null() {
            if CStr::from_ptr(*member).to_bytes() == name.as_slice() {
                return true;
            }
            member = member.add(1);
        }
        false
    }
}

/// `ADDRESS[/BITS]`: peers whose address shares the first `BITS` bits
/// with `ADDRESS` (all of them without `/BITS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddressMask {
    address: IpAddr,
    bits: u32,
}

impl AddressMask {
    /// Parses a mask as libzmq's `tcp_address_mask_t::resolve` does: a
    /// numeric address (IPv6 only with `ipv6`), then optionally `/` and a
    /// prefix length of at most the address's width.
    pub(crate) fn parse(text: &str, ipv6: bool) -> Result<AddressMask> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        let Ok(address) = addr.parse::<IpAddr>() else {
            return err(
                Error::EINVAL,
                format!("accept filter {text:?}: {addr:?} is not a numeric IP address"),
            );
        };
        if address.is_ipv6() && !ipv6 {
            return err(
                Error::EINVAL,
                format!("accept filter {text:?}: an IPv6 address needs the ipv6 option"),
            );
        }
        let width = if address.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => width,
            Some(b) => match b.parse::<u32>() {
                Ok(n) if n <= width && !b.starts_with('+') => n,
                _ => {
                    return err(
                        Error::EINVAL,
                        format!("accept filter {text:?}: the mask must be 0 to {width} bits"),
                    )
                }
            },
        };
        Ok(AddressMask { address, bits })
    }

    /// Whether `peer` falls under the mask (an IPv4 peer seen as an
    /// IPv4-mapped IPv6 address counts as IPv4).
    pub(crate) fn matches(&self, peer: IpAddr) -> bool {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        let (a, b, width) = match (self.address, peer) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) as u128, u32::from(b) as u128, 32),
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
            _ => return false,
        };
        if self.bits == 0 {
            return true;
        }
        let shift = width - self.bits;
        (a >> shift) == (b >> shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_as_libzmq_does() {
        for bad in [
            "foo",
            "0.0.0.0foo",
            "0.0.0.0/foo",
            "0.0.0.0/",
            "0.0.0.0/-1",
            "0.0.0.0/33",
            "::1/64",
        ] {
            assert_eq!(AddressMask::parse(bad, false), Err(Error::EINVAL), "{bad}");
        }
        let m = AddressMask::parse("127.0.0.1/32", false).unwrap();
        assert!(m.matches("127.0.0.1".parse().unwrap()));
        assert!(!m.matches("127.0.0.2".parse().unwrap()));
        assert!(m.matches("::ffff:127.0.0.1".parse().unwrap()));
        let any = AddressMask::parse("0.0.0.0/0", false).unwrap();
        assert!(any.matches("10.1.2.3".parse().unwrap()));
        let net = AddressMask::parse("10.1.0.0/16", false).unwrap();
        assert!(net.matches("10.1.200.3".parse().unwrap()));
        assert!(!net.matches("10.2.0.1".parse().unwrap()));
        let v6 = AddressMask::parse("[fe80::]/10", true).unwrap();
        assert!(v6.matches("fe80::1".parse().unwrap()));
        assert!(!v6.matches("::1".parse().unwrap()));
    }
}
