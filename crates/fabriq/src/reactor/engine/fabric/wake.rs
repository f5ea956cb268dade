//! Waking a receiver whose completion queues have no wait descriptor
//! (shm on libfabric 1.17): a doorbell, a datagram socket in the
//! abstract namespace that senders on the same host ring after they sent
//! pages, and a shared count of the receiver's sockets that spin on the
//! node (while it is above zero nobody needs to ring).
//!
//! Both are named only in READY, which goes to a peer after its
//! handshake (and ZAP) completed. The doorbell's name is random (128
//! bits), so it cannot be guessed; the host is named by a hash of the
//! boot id, not the boot id itself.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::OnceLock;

use fabriq_ofi::{Count, SharedCounter};

/// Whether a provider's CQ wait descriptors are woken by arriving data.
/// psm2's are not: it makes no progress while the application sleeps in
/// epoll (ofiwg/libfabric#4600, closed "won't fix"); psm3 and opx share
/// its progress model. `provider` is as `fi_info` names it (`a;b` for a
/// layered one: every layer counts).
pub(crate) fn wait_fds_wake(provider: &str) -> bool {
    !provider
        .split(';')
        .any(|p| matches!(p, "psm2" | "psm3" | "opx"))
}

/// This host's tag: a hash of its boot id (16 hex digits), the same for
/// every process of the host.
pub(crate) fn host_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        ("fabriq-host", boot.trim()).hash(&mut h);
        format!("{:016x}", h.finish())
    })
}

/// 128 random bits as 32 hex digits.
pub(crate) fn random_name() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(io::Error::other)?;
    Ok(super::wire::hex(&bytes))
}

/// Where our count of spinners is, for READY: `HOST:PID:FD`.
pub(crate) fn spinners_at(counter: &SharedCounter) -> Option<String> {
    let fd = counter.fd()?;
    Some(format!("{}:{}:{fd}", host_tag(), std::process::id()))
}

/// Maps a peer's count of spinners from its READY value `HOST:PID:FD`, if
/// it is on this host and lets us (else the peer is rung every time).
pub(crate) fn open_spinners(at: &str) -> Option<SharedCounter> {
    let mut parts = at.split(':');
    let (host, pid, fd) = (parts.next()?, parts.next()?, parts.next()?);
    if host != host_tag() || parts.next().is_some() {
        return None;
    }
    let (pid, fd) = (pid.parse().ok()?, fd.parse().ok()?);
    SharedCounter::open(pid, fd)
        .map_err(|e| tracing::debug!("cannot map the peer's spinner count {at}: {e}"))
        .ok()
}

/// What a sender does after sending pages to a peer on this host that
/// has a doorbell, by the peer's counts ([`ring_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ring {
    /// A socket of the peer spins on its node and reaps the pages: no
    /// ring.
    Skip,
    /// A socket's thread of the peer sleeps in a receive on its node's
    /// application bell: ring that, and the I/O thread sleeps on.
    AppBell,
    /// Ring the doorbell, which the peer's I/O thread watches.
    Doorbell,
}

/// The ring a peer whose counts are `counts` (mapped from its READY; None
/// when it has none or we cannot map them) needs after we sent it pages.
/// Each count is loaded after a sequentially consistent fence, so the
/// sends made before are ordered before the loads (the sender's half of
/// the pattern in `fabriq_ofi::shared`).
pub(crate) fn ring_for(counts: Option<&SharedCounter>) -> Ring {
    let Some(counts) = counts else {
        return Ring::Doorbell;
    };
    if counts.load(Count::Spinners) > 0 {
        Ring::Skip
    } else if counts.load(Count::Sleepers) > 0 {
        Ring::AppBell
    } else {
        Ring::Doorbell
    }
}

/// The name of the application bell of the node whose doorbell is named
/// `doorbell` (see [`Doorbell::open_app`]). Peers derive it from the
/// doorbell's name in READY: no field of its own on the wire, and a peer
/// that does not know it rings the doorbell as before.
pub(crate) fn app_bell_name(doorbell: &str) -> String {
    format!("{doorbell}.app")
}

/// A node's doorbell: a nonblocking datagram socket bound to a random
/// abstract name. The I/O thread watches it, and so does a socket's
/// thread blocked in a receive ([`PullWait`]).
#[derive(Debug)]
pub(crate) struct Doorbell {
    socket: UnixDatagram,
    /// The abstract name, for READY.
    pub(crate) name: String,
}

impl Doorbell {
    /// Binds a new doorbell to a random name.
    pub(crate) fn open() -> io::Result<Doorbell> {
        Doorbell::bind(format!("fabriq-ofi-{}", random_name()?))
    }

    /// Binds the application bell of the node whose doorbell is
    /// `doorbell`, at [`app_bell_name`] of its name: the bell a socket's
    /// thread asleep in a receive watches, which peers ring instead of
    /// the doorbell while the node counts such sleepers
    /// (`fabriq_ofi::Count::Sleepers`), so a page wakes that thread and
    /// not the I/O thread as well.
    pub(crate) fn open_app(doorbell: &Doorbell) -> io::Result<Doorbell> {
        Doorbell::bind(app_bell_name(&doorbell.name))
    }

    fn bind(name: String) -> io::Result<Doorbell> {
        let socket = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
        socket.set_nonblocking(true)?;
        Ok(Doorbell { socket, name })
    }

    /// Takes every ring out (the loop's registration is edge-triggered);
    /// true when there was one.
    pub(crate) fn drain(&self) -> bool {
        let mut buf = [0u8; 64];
        let mut rung = false;
        while self.socket.recv(&mut buf).is_ok() {
            rung = true;
        }
        rung
    }

    /// The descriptor the I/O thread and a receiving socket's thread
    /// poll.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Rings peers' doorbells, from one unbound socket made on first use.
#[derive(Debug, Default)]
pub(crate) struct Ringer {
    socket: OnceLock<Option<UnixDatagram>>,
}

impl Ringer {
    /// Rings the doorbell named `name` (a peer's, from its READY).
    /// Returns false if that cannot be done (then the control connection
    /// carries the ring).
    pub(crate) fn ring(&self, name: &str) -> bool {
        // Only doorbells of ours: a peer cannot make us send to any
        // other socket of the namespace.
        if !name.starts_with("fabriq-ofi-") {
            return false;
        }
        let Some(socket) = self.socket.get_or_init(|| {
            let s = UnixDatagram::unbound().ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        }) else {
            return false;
        };
        let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
            return false;
        };
        match socket.send_to_addr(&[1], &addr) {
            Ok(_) => true,
            // A full doorbell has rings unread: its owner will wake.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            Err(_) => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn providers_whose_wait_descriptors_never_wake_are_polled() {
        assert!(wait_fds_wake("tcp;ofi_rxm"));
        assert!(wait_fds_wake("shm"));
        assert!(!wait_fds_wake("psm2"));
        assert!(!wait_fds_wake("opx"));
        assert!(!wait_fds_wake("psm3;ofi_rxd"));
    }

    /// Doorbell names are random, and only names of that form are rung.
    #[test]
    fn doorbells_have_unguessable_names_and_only_ours_are_rung() {
        let a = Doorbell::open().unwrap();
        let b = Doorbell::open().unwrap();
        let (name_a, name_b) = (a.name.clone(), b.name.clone());
        assert_ne!(name_a, name_b);
        assert_eq!(name_a.len(), "fabriq-ofi-".len() + 32);
        let ringer = Ringer::default();
        assert!(ringer.ring(&name_a));
        let mut buf = [0u8; 4];
        assert_eq!(a.socket.recv(&mut buf).unwrap(), 1);
        // Another socket of the namespace is never rung.
        let name = format!("not-a-doorbell-{}", random_name().unwrap());
        let other =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        other.set_nonblocking(true).unwrap();
        assert!(!ringer.ring(&name));
        assert!(other.recv(&mut buf).is_err());
    }

    #[test]
    fn the_host_tag_is_not_the_boot_id() {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let tag = host_tag();
        assert_eq!(tag.len(), 16);
        assert!(!boot.contains(tag));
        assert_eq!(tag, host_tag());
    }
}
