//! A rogue's doorbell: a datagram socket bound to an abstract name of
//! the form fabriq's doorbells have (`fabriq-ofi-` and 32 hex digits), as
//! a rogue names it in READY (`X-Fabriq-Ofi-Doorbell`). fabriq rings it
//! after sending pages (one-byte datagrams) and passes its count of
//! spinners to it once (a datagram that carries a descriptor, see
//! [`counts_payload`]); a rogue may pass fabriq a count of its own the
//! same way ([`RogueBell::send_counts`]).

use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

use rustix::io::{IoSlice, IoSliceMut};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix,
};

use super::{hex, random_u64, ROGUE_TOKEN};

/// What a datagram that passes a count starts with, as fabriq sends it
/// (`reactor/engine/fabric/wake.rs`, `COUNTS_MAGIC`).
pub const COUNTS_MAGIC: &[u8; 8] = b"FQCOUNTS";

/// The payload of a datagram that passes a count for the connection the
/// receiver knows by `token` (the token it announced in its READY): the
/// magic, then the token, little-endian.
pub fn counts_payload(token: u64) -> Vec<u8> {
    let mut payload = COUNTS_MAGIC.to_vec();
    payload.extend_from_slice(&token.to_le_bytes());
    payload
}

/// [`ROGUE_TOKEN`] as a number: what fabriq names a rogue's connection
/// by when it passes the rogue its count.
pub fn rogue_token() -> u64 {
    u64::from_str_radix(std::str::from_utf8(ROGUE_TOKEN).unwrap(), 16).unwrap()
}

/// A doorbell of the rogue's own. See the module documentation.
pub struct RogueBell {
    socket: UnixDatagram,
    /// The abstract name, for READY.
    pub name: String,
    /// Datagrams received and not taken yet: the payload and the
    /// descriptors that came with it.
    received: Vec<(Vec<u8>, Vec<OwnedFd>)>,
}

impl RogueBell {
    /// Binds a doorbell to a random name of fabriq's form.
    pub fn bind() -> RogueBell {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&random_u64().to_ne_bytes());
        bytes.extend_from_slice(&random_u64().to_ne_bytes());
        let name = format!("fabriq-ofi-{}", hex(&bytes));
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let socket = UnixDatagram::bind_addr(&addr).expect("an abstract name of our own");
        RogueBell {
            socket,
            name,
            received: Vec::new(),
        }
    }

    /// Reads the datagrams there are, and those that come within `wait`.
    fn read(&mut self, wait: Duration) {
        let until = Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.socket.set_nonblocking(true).unwrap();
            } else {
                self.socket.set_nonblocking(false).unwrap();
                self.socket.set_read_timeout(Some(left)).unwrap();
            }
            let mut buf = [0u8; 256];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let Ok(msg) = rustix::net::recvmsg(
                &self.socket,
                &mut [IoSliceMut::new(&mut buf)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            ) else {
                return;
            };
            let fds: Vec<OwnedFd> = control
                .drain()
                .filter_map(|m| match m {
                    RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                    _ => None,
                })
                .flatten()
                .collect();
            self.received.push((buf[..msg.bytes].to_vec(), fds));
        }
    }

    /// The first datagram with descriptors that comes within `wait` (the
    /// rings before it are kept for [`RogueBell::rings`]): its payload and
    /// its descriptors.
    pub fn counts(&mut self, wait: Duration) -> Option<(Vec<u8>, Vec<OwnedFd>)> {
        let until = Instant::now() + wait;
        loop {
            if let Some(i) = self.received.iter().position(|(_, fds)| !fds.is_empty()) {
                return Some(self.received.remove(i));
            }
            if Instant::now() >= until {
                return None;
            }
            self.read(Duration::from_millis(10));
        }
    }

    /// Takes the rings (datagrams without descriptors) received so far.
    pub fn rings(&mut self) -> usize {
        self.read(Duration::ZERO);
        let before = self.received.len();
        self.received.retain(|(_, fds)| !fds.is_empty());
        before - self.received.len()
    }

    /// Passes `fd` to the doorbell named `doorbell` as a count for the
    /// connection the owner knows by `token`, as fabriq does.
    pub fn send_counts(&self, doorbell: &str, token: u64, fd: BorrowedFd<'_>) {
        let addr = SocketAddrUnix::new_abstract_name(doorbell.as_bytes()).unwrap();
        let payload = counts_payload(token);
        let fds = [fd];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg_addr(
            &self.socket,
            &addr,
            &[IoSlice::new(&payload)],
            &mut control,
            SendFlags::empty(),
        )
        .expect("the victim's doorbell takes a datagram");
    }
}
