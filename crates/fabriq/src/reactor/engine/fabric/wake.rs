//! Waking a receiver whose completion queues have no wait descriptor
//! (shm on libfabric 1.17): a doorbell, a datagram socket in the
//! abstract namespace that senders on the same host ring after they sent
//! pages, and a shared count of the receiver's sockets that spin on the
//! node (while it is above zero nobody needs to ring).
//!
//! The doorbell is named only in READY, which goes to a peer after its
//! handshake (and ZAP) completed; its name is random (128 bits), so it
//! cannot be guessed. The count is named nowhere: once a connection's
//! handshake, ZAP and the check of the peer's data address are done, the
//! node sends one datagram to the peer's doorbell that carries a
//! read-only descriptor of its count (`SCM_RIGHTS`) and the token the
//! peer gave the connection ([`Ringer::send_counts`]), and the peer files
//! the count for that connection when it drains its doorbell
//! ([`Doorbell::drain`]). No pid, descriptor number or host goes on the
//! wire. A peer that has no count from us (the datagram could not be
//! sent, or was refused) rings every time.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::OnceLock;

use fabriq_ofi::{Count, SharedCounter};
use rustix::io::{Errno, IoSlice, IoSliceMut};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix,
};

/// What a datagram that passes a count of spinners starts with; the
/// token follows (8 bytes, little-endian), and nothing else.
pub(crate) const COUNTS_MAGIC: &[u8; 8] = b"FQCOUNTS";
/// What every doorbell's name starts with (then 128 random bits): the
/// only names we ring or pass our count to.
const NAME_PREFIX: &str = "fabriq-ofi-";

/// Whether `name` is a doorbell's of our form ([`NAME_PREFIX`]): a peer
/// cannot make us send to any other socket of the namespace.
fn is_doorbell_name(name: &str) -> bool {
    name.starts_with(NAME_PREFIX)
}

/// The descriptors a drained datagram has room for (at least); the
/// kernel closes any more (`MSG_CTRUNC`).
const FDS_MAX: usize = 4;

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

/// 128 random bits as 32 hex digits.
pub(crate) fn random_name() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(io::Error::other)?;
    Ok(super::wire::hex(&bytes))
}

/// The payload of a datagram that passes our count of spinners to a
/// peer: [`COUNTS_MAGIC`], then the peer's token for the connection.
fn counts_payload(token: u64) -> [u8; 16] {
    let mut payload = [0u8; 16];
    payload[..8].copy_from_slice(COUNTS_MAGIC);
    payload[8..].copy_from_slice(&token.to_le_bytes());
    payload
}

/// The token a datagram's payload names, if it is exactly a
/// [`counts_payload`].
fn counts_token(payload: &[u8]) -> Option<u64> {
    let token = payload.strip_prefix(COUNTS_MAGIC)?;
    Some(u64::from_le_bytes(token.try_into().ok()?))
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

/// The ring a peer whose counts are `counts` (the count it passed to our
/// doorbell; None when it passed none, or none we could map) needs after
/// we sent it pages. Each count is loaded after a sequentially consistent fence, so the
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
        Doorbell::bind(format!("{NAME_PREFIX}{}", random_name()?))
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

    /// Takes every datagram out (the loop's registration is
    /// edge-triggered); true when there was one. Each is read with room
    /// for [`FDS_MAX`] descriptors, received close-on-exec: the first
    /// descriptor of a datagram whose payload is exactly [`COUNTS_MAGIC`]
    /// and a token goes to `counts` with the token (the node files it, if
    /// the token is one of its connections'); every other descriptor is
    /// closed at once. Anyone who knows the doorbell's name may send to
    /// it: nothing else is done with what it brings.
    pub(crate) fn drain(&self, mut counts: impl FnMut(u64, OwnedFd)) -> bool {
        let mut rung = false;
        loop {
            let mut buf = [0u8; 64];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS_MAX))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let msg = match rustix::net::recvmsg(
                &self.socket,
                &mut [IoSliceMut::new(&mut buf)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            ) {
                Ok(msg) => msg,
                Err(e) if e == Errno::INTR => continue,
                Err(_) => break,
            };
            rung = true;
            // The first descriptor; the others are closed when `fds` and
            // `control` drop (rustix closes what was not taken).
            let mut fds = control
                .drain()
                .filter_map(|m| match m {
                    RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                    _ => None,
                })
                .flatten();
            let Some(fd) = fds.next() else {
                continue;
            };
            drop(fds);
            // (A datagram longer than `buf` is cut, and so not exactly a
            // magic and a token.)
            match counts_token(&buf[..msg.bytes.min(buf.len())]) {
                Some(token) => counts(token, fd),
                None => drop(fd),
            }
        }
        rung
    }

    /// Takes every ring out, with plain `recv`: for the application bell,
    /// to which nothing but rings is sent. A descriptor passed to it is
    /// closed by the kernel (a `recv` has no room for one), so it is
    /// never ours.
    pub(crate) fn drain_rings(&self) -> bool {
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
    /// The socket, made on first use (None if it cannot be).
    fn socket(&self) -> Option<&UnixDatagram> {
        self.socket
            .get_or_init(|| {
                let s = UnixDatagram::unbound().ok()?;
                s.set_nonblocking(true).ok()?;
                Some(s)
            })
            .as_ref()
    }

    /// Rings the doorbell named `name` (a peer's, from its READY).
    /// Returns false if that cannot be done (then the control connection
    /// carries the ring).
    pub(crate) fn ring(&self, name: &str) -> bool {
        if !is_doorbell_name(name) {
            return false;
        }
        let Some(socket) = self.socket() else {
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

    /// Sends `counts` (a read-only descriptor of our count of spinners)
    /// to the doorbell named `name` (a peer's, from its READY, and only
    /// one of ours, as [`Ringer::ring`]), with `token` (the peer's token
    /// for the connection) so the peer files it for that connection. One
    /// datagram, never retried: if it cannot go (the doorbell is full or
    /// gone), the peer rings every time.
    pub(crate) fn send_counts(
        &self,
        name: &str,
        token: u64,
        counts: BorrowedFd<'_>,
    ) -> io::Result<()> {
        if !is_doorbell_name(name) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a fabriq doorbell",
            ));
        }
        let socket = self
            .socket()
            .ok_or_else(|| io::Error::other("no socket to ring from"))?;
        let addr = SocketAddrUnix::new_abstract_name(name.as_bytes())?;
        let payload = counts_payload(token);
        let fds = [counts];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other("no room for the descriptor"));
        }
        rustix::net::sendmsg_addr(
            socket,
            &addr,
            &[IoSlice::new(&payload)],
            &mut control,
            SendFlags::empty(),
        )?;
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
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
        assert_eq!(name_a.len(), NAME_PREFIX.len() + 32);
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

    /// A memfd of one page with a name of its own (so that the
    /// descriptors open to it can be counted while other tests run),
    /// sealed at its size if `sealed`; and that name.
    pub(crate) fn memfd(sealed: bool) -> (OwnedFd, String) {
        use rustix::fs::{MemfdFlags, SealFlags};
        let name = format!("fabriq-test-{}", random_name().unwrap());
        let fd = rustix::fs::memfd_create(
            name.as_str(),
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )
        .unwrap();
        rustix::fs::ftruncate(&fd, 4096).unwrap();
        if sealed {
            rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).unwrap();
        }
        (fd, name)
    }

    /// How many of this process's descriptors are open to the memfd
    /// named `name`.
    pub(crate) fn open_to(name: &str) -> usize {
        let target = format!("/memfd:{name} ");
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|link| link.to_string_lossy().starts_with(&target))
            .count()
    }

    /// Sends one datagram to the doorbell `to`, carrying `payload` and
    /// `fds` (in one `SCM_RIGHTS` message).
    pub(crate) fn send_with(to: &Doorbell, payload: &[u8], fds: &[BorrowedFd<'_>]) {
        let socket = UnixDatagram::unbound().unwrap();
        let addr = SocketAddrUnix::new_abstract_name(to.name.as_bytes()).unwrap();
        let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(fds.len()))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
        rustix::net::sendmsg_addr(
            &socket,
            &addr,
            &[IoSlice::new(payload)],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
    }

    /// A count passes through a doorbell with the token it was sent
    /// with, read-only; rings around it are rings. Only doorbells of ours
    /// are sent one.
    #[test]
    fn a_count_passes_through_a_doorbell_with_its_token() {
        let bell = Doorbell::open().unwrap();
        let owner = SharedCounter::create().unwrap();
        owner.increment(Count::Spinners);
        let ringer = Ringer::default();
        let token = 0x0123_4567_89ab_cdef;
        assert!(ringer.ring(&bell.name));
        let fd = owner.read_only_fd().unwrap();
        ringer.send_counts(&bell.name, token, fd.as_fd()).unwrap();
        assert!(ringer.ring(&bell.name));
        let mut got = Vec::new();
        assert!(bell.drain(|t, fd| got.push((t, fd))));
        assert_eq!(got.len(), 1, "one count");
        let (t, received) = got.pop().unwrap();
        assert_eq!(t, token);
        let counts = SharedCounter::from_fd(received).expect("a count that maps");
        assert_eq!(counts.load(Count::Spinners), 1);
        owner.increment(Count::Spinners);
        assert_eq!(counts.load(Count::Spinners), 2, "the owner's page itself");
        counts.increment(Count::Spinners);
        assert_eq!(owner.load(Count::Spinners), 2, "read-only at the peer");
        assert!(!bell.drain(|_, _| panic!("nothing more")));
        let name = format!("not-a-doorbell-{}", random_name().unwrap());
        assert!(ringer.send_counts(&name, token, fd.as_fd()).is_err());
    }

    /// Datagrams with descriptors and a payload that is not exactly the
    /// magic and a token (another payload, a plain ring, the magic alone,
    /// the magic and a token cut short or followed by more, a payload
    /// longer than the drain reads) bring nothing in: their descriptors
    /// are closed, and each counts as a ring.
    #[test]
    fn descriptors_without_the_magic_and_a_token_are_closed() {
        let bell = Doorbell::open().unwrap();
        let (fd, name) = memfd(true);
        let whole = counts_payload(7);
        let mut longer = whole.to_vec();
        longer.push(0);
        let mut long = whole.to_vec();
        long.resize(200, 0);
        let mut wrong = whole;
        wrong[0] ^= 1;
        let payloads: [&[u8]; 7] = [
            b"hello",
            &[1],
            COUNTS_MAGIC,
            &whole[..12],
            &longer,
            &wrong,
            &long,
        ];
        for payload in payloads {
            send_with(&bell, payload, &[fd.as_fd(), fd.as_fd()]);
        }
        assert!(bell.drain(|t, _| panic!("a count was taken for token {t}")));
        assert!(!bell.drain(|_, _| {}), "every datagram was taken");
        assert_eq!(open_to(&name), 1, "only our own descriptor is open");
    }

    /// A datagram with many descriptors (more than a drain has room for,
    /// in one message or two) gives its first one, with its token, and
    /// leaves no other open.
    #[test]
    fn a_datagram_with_many_descriptors_leaks_none() {
        let bell = Doorbell::open().unwrap();
        let (fd, name) = memfd(true);
        let many = vec![fd.as_fd(); 16];
        send_with(&bell, &counts_payload(9), &many);
        let mut got = Vec::new();
        assert!(bell.drain(|t, fd| got.push((t, fd))));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 9);
        assert_eq!(open_to(&name), 2, "ours and the one taken");
        drop(got);
        // Two SCM_RIGHTS messages in one datagram.
        let socket = UnixDatagram::unbound().unwrap();
        let addr = SocketAddrUnix::new_abstract_name(bell.name.as_bytes()).unwrap();
        let three = [fd.as_fd(); 3];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3), ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&three)));
        assert!(control.push(SendAncillaryMessage::ScmRights(&three)));
        let payload = counts_payload(10);
        rustix::net::sendmsg_addr(
            &socket,
            &addr,
            &[IoSlice::new(&payload)],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        let mut tokens = Vec::new();
        assert!(bell.drain(|t, _| tokens.push(t)));
        assert_eq!(tokens, [10]);
        assert_eq!(open_to(&name), 1, "only our own descriptor is open");
    }

    /// The application bell is drained with plain `recv`: a descriptor
    /// sent to it is closed by the kernel.
    #[test]
    fn the_application_bell_keeps_no_descriptor() {
        let bell = Doorbell::open().unwrap();
        let app = Doorbell::open_app(&bell).unwrap();
        let (fd, name) = memfd(true);
        send_with(&app, &counts_payload(3), &[fd.as_fd()]);
        assert!(app.drain_rings());
        assert_eq!(open_to(&name), 1, "only our own descriptor is open");
    }
}
