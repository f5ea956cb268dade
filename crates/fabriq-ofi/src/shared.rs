//! A counter in memory shared between the processes of one host.
//!
//! A fabric node whose completion queue has no wait descriptor (shm) is
//! woken by its peers through a doorbell, one system call per ring on the
//! sender and a wake-up of the receiver's I/O thread. While one of the
//! receiver's sockets spins on the completion queue, neither is needed: the
//! spinner reaps the pages itself. The receiver keeps the number of such
//! spinners in a [`SharedCounter`]; a sender that reads it above zero
//! skips the ring.
//!
//! The memory is a `memfd` (no name in any file system, freed when the
//! last mapping and descriptor go). The owner creates it read-write and
//! hands a peer on the same host a **read-only** descriptor of it
//! ([`SharedCounter::read_only_fd`]), passed over a unix socket; the peer
//! checks and maps it read-only ([`SharedCounter::from_fd`]). A peer that
//! has none simply rings every time.
//!
//! # The ordering protocol
//!
//! The receiver's spinner lowers the counter (a sequentially consistent
//! read-modify-write) and then reaps the completion queue once more before
//! it sleeps; the sender makes its send visible, issues a sequentially
//! consistent fence, then loads the counter and rings if it reads zero.
//! This is the store-buffering pattern: either the sender sees the
//! spinner, whose last reap then finds the send, or the spinner is gone and
//! the sender rings.
//!
//! # Sleepers
//!
//! The page holds a second count ([`Count::Sleepers`]): the receiver's
//! socket threads asleep in a receive on the node's own application bell.
//! A sender that reads it above zero rings that bell instead of the one
//! the I/O thread watches, so one thread wakes for a page, not two. The
//! ordering is the same pattern: the sleeper raises the count and reaps
//! once more before it sleeps, and lowers it and reaps once more when it
//! wakes, whatever woke it.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// The size of the shared object: one page.
const LEN: usize = 4096;

/// The counts a [`SharedCounter`] holds, each a 32-bit word of its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Socket threads spinning on the node's completion queue: a sender
    /// that reads this above zero does not ring at all.
    Spinners = 0,
    /// Socket threads asleep in a receive on the node's application bell:
    /// a sender that reads this above zero rings that bell, not the I/O
    /// thread's.
    Sleepers = 1,
}

/// See the module documentation.
pub struct SharedCounter {
    word: NonNull<AtomicU32>,
    /// The owner's descriptor (read-only copies of it go to peers,
    /// [`SharedCounter::read_only_fd`]); a peer closes its descriptor once
    /// the memory is mapped.
    fd: Option<OwnedFd>,
    writable: bool,
}

// SAFETY: the mapping is only ever accessed through `&AtomicU32`, which is
// Sync; the pointer stays valid until Drop unmaps it.
unsafe impl Send for SharedCounter {}
// SAFETY: as above.
unsafe impl Sync for SharedCounter {}

impl std::fmt::Debug for SharedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCounter")
            .field("spinners", &self.load(Count::Spinners))
            .field("sleepers", &self.load(Count::Sleepers))
            .field("writable", &self.writable)
            .finish()
    }
}

impl SharedCounter {
    /// A new counter at zero, writable, for peers to map
    /// ([`SharedCounter::read_only_fd`]). The memfd is
    /// sealed at its size (`F_SEAL_SHRINK | F_SEAL_GROW`, then
    /// `F_SEAL_SEAL`): no one holding a descriptor of it, the owner
    /// included, can truncate it under a peer's mapping (which would kill
    /// the peer with `SIGBUS` at its next load).
    pub fn create() -> io::Result<SharedCounter> {
        // SAFETY: memfd_create takes a NUL-terminated name and flags; the
        // result is checked and owned at once.
        let fd = unsafe {
            libc::memfd_create(
                c"fabriq-ofi-spinners".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by memfd_create and is owned by no
        // one else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        File::from(fd.try_clone()?).set_len(LEN as u64)?;
        // SAFETY: fcntl on a descriptor we own, with an int argument.
        let sealed = unsafe {
            libc::fcntl(
                fd.as_raw_fd(),
                libc::F_ADD_SEALS,
                libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
            )
        };
        if sealed != 0 {
            return Err(io::Error::last_os_error());
        }
        let word = map(fd.as_raw_fd(), true)?;
        Ok(SharedCounter {
            word,
            fd: Some(fd),
            writable: true,
        })
    }

    /// A read-only descriptor of our counter, for a peer to map
    /// ([`SharedCounter::from_fd`]): the memfd opened again, through
    /// `/proc/self/fd`, with `O_RDONLY`. Only the owner has one. The peer
    /// can neither write through it nor map it writable through it; it
    /// can still open the file again read-write through its own
    /// `/proc/self/fd` (a memfd's mode lets anyone), and write the counts
    /// so, but the seals keep even that from changing the file's size.
    pub fn read_only_fd(&self) -> io::Result<OwnedFd> {
        let fd = self.fd.as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "only the counter's owner has its descriptor",
            )
        })?;
        open_path(&format!("/proc/self/fd/{}", fd.as_raw_fd()), libc::O_RDONLY)
    }

    /// Maps, read-only, the counter a peer passed us as `fd` (whatever
    /// the peer says it is). Refuses anything but a regular file of the
    /// counter's size whose size is sealed (`F_SEAL_SHRINK` and
    /// `F_SEAL_GROW`): a lying peer cannot make us map a device, a FIFO
    /// or a file it can truncate under us (`SIGBUS` at our next load).
    /// Nothing here opens the file or reads from it, so nothing blocks.
    /// `fd` is closed either way (once mapped, the memory needs no
    /// descriptor).
    pub fn from_fd(fd: OwnedFd) -> io::Result<SharedCounter> {
        let refuse = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a fabriq counter: {why}"),
            )
        };
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is an open descriptor we own; st is writable.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(refuse("not a regular file"));
        }
        if st.st_size != LEN as libc::off_t {
            return Err(refuse(&format!("{} bytes, not {LEN}", st.st_size)));
        }
        // SAFETY: fcntl on a descriptor we own, no argument.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        let needed = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        if seals < 0 || seals & needed != needed {
            return Err(refuse("its size is not sealed"));
        }
        let word = map(fd.as_raw_fd(), false)?;
        Ok(SharedCounter {
            word,
            fd: None,
            writable: false,
        })
    }

    fn word(&self, count: Count) -> &AtomicU32 {
        // SAFETY: `word` points at the start of a live shared mapping of
        // LEN bytes, page aligned; every `Count` is a word index well
        // within it (4 * index + 4 <= LEN), so the pointer stays in the
        // mapping and aligned for AtomicU32. Other processes touch the
        // words only atomically too.
        unsafe { &*self.word.as_ptr().add(count as usize) }
    }

    /// The current value of `count`, after a sequentially consistent
    /// fence (see the module documentation: the caller's earlier send is
    /// ordered before this load).
    pub fn load(&self, count: Count) -> u32 {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.word(count).load(Ordering::SeqCst)
    }

    /// Adds one to `count`. Only the owner may change the counts.
    pub fn increment(&self, count: Count) {
        if self.writable {
            self.word(count).fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Subtracts one from `count` (never below zero). Only the owner may
    /// change the counts.
    pub fn decrement(&self, count: Count) {
        if self.writable {
            let _ = self
                .word(count)
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1));
        }
    }
}

/// `open(2)` of `path` with `flags` (and `O_CLOEXEC`).
fn open_path(path: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = std::ffi::CString::new(path).map_err(io::Error::other)?;
    // SAFETY: a NUL-terminated path and flags; no mode (no O_CREAT). The
    // result is checked and owned at once.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn map(fd: RawFd, writable: bool) -> io::Result<NonNull<AtomicU32>> {
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: a shared mapping of LEN bytes of a regular file we hold
    // open; no address hint. Checked for MAP_FAILED below.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), LEN, prot, libc::MAP_SHARED, fd, 0) };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned NULL"))
}

impl Drop for SharedCounter {
    fn drop(&mut self) {
        // SAFETY: mapped in create()/from_fd() with length LEN, unmapped once;
        // no reference into it outlives self.
        unsafe {
            libc::munmap(self.word.as_ptr().cast(), LEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_sees_the_owners_count_and_cannot_change_it() {
        let owner = SharedCounter::create().expect("memfd");
        let peer = SharedCounter::from_fd(owner.read_only_fd().unwrap()).expect("mapped");
        assert_eq!(peer.load(Count::Spinners), 0);
        owner.increment(Count::Spinners);
        owner.increment(Count::Spinners);
        owner.increment(Count::Sleepers);
        assert_eq!(peer.load(Count::Spinners), 2);
        assert_eq!(peer.load(Count::Sleepers), 1, "the counts are apart");
        peer.decrement(Count::Spinners); // read-only: no effect
        peer.decrement(Count::Sleepers);
        assert_eq!(owner.load(Count::Spinners), 2);
        assert_eq!(owner.load(Count::Sleepers), 1);
        owner.decrement(Count::Spinners);
        owner.decrement(Count::Spinners);
        owner.decrement(Count::Spinners); // never below zero
        owner.decrement(Count::Sleepers);
        owner.decrement(Count::Sleepers);
        assert_eq!(peer.load(Count::Spinners), 0);
        assert_eq!(peer.load(Count::Sleepers), 0);
        drop(owner);
        assert_eq!(
            peer.load(Count::Spinners),
            0,
            "the memory lives while mapped"
        );
        assert!(
            peer.read_only_fd().is_err(),
            "a peer has no descriptor to hand on"
        );
    }

    /// Another process maps our counter from a read-only descriptor it
    /// inherited: the test binary runs this test again as the peer
    /// (`FABRIQ_OFI_PEER` set to the descriptor's number), which maps it,
    /// prints the count it reads and whether it could truncate it.
    #[test]
    fn a_counter_is_read_from_another_process() {
        use std::process::Command;
        if let Some(fd) = std::env::var_os("FABRIQ_OFI_PEER") {
            let fd: RawFd = fd.to_str().unwrap().parse().unwrap();
            // SAFETY: the parent left this descriptor open for us alone.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let truncated = File::from(fd.try_clone().unwrap()).set_len(0).is_ok();
            let peer = SharedCounter::from_fd(fd).expect("the inherited counter maps");
            println!(
                "peer read {} truncated {truncated}",
                peer.load(Count::Spinners)
            );
            return;
        }
        let owner = SharedCounter::create().unwrap();
        for _ in 0..3 {
            owner.increment(Count::Spinners);
        }
        let fd = owner.read_only_fd().unwrap();
        // Inherited by the child (and by any other child spawned by a test
        // meanwhile: harmless, it is read-only).
        // SAFETY: fcntl on a descriptor we own, with an int argument.
        assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) }, 0);
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "shared::tests::a_counter_is_read_from_another_process",
                "--nocapture",
            ])
            .env("FABRIQ_OFI_PEER", fd.as_raw_fd().to_string())
            .output()
            .expect("the test binary runs");
        drop(fd);
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("peer read 3 truncated false"), "{text}");
    }

    #[test]
    fn descriptors_that_are_not_counters_are_refused() {
        let socket = std::os::unix::net::UnixDatagram::unbound().unwrap();
        let err = SharedCounter::from_fd(socket.into()).expect_err("a socket was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let device = File::open("/dev/null").unwrap();
        let err = SharedCounter::from_fd(device.into()).expect_err("a device was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = SharedCounter::from_fd(tempfile_of(100).into()).expect_err("a short file");
        assert!(err.to_string().contains("bytes, not"), "{err}");
    }

    /// Runs `SharedCounter::from_fd` on `fd` on another thread, failing
    /// the test if it blocks for 10 s.
    fn from_fd_bounded(fd: impl Into<OwnedFd>) -> io::Result<SharedCounter> {
        let fd = fd.into();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(SharedCounter::from_fd(fd));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("SharedCounter::from_fd blocked")
    }

    fn memfd(len: u64) -> File {
        // SAFETY: a NUL-terminated name, checked result, owned at once.
        let fd = unsafe {
            libc::memfd_create(
                c"fabriq-ofi-test".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        assert!(fd >= 0, "{}", io::Error::last_os_error());
        // SAFETY: just created, owned by no one else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.set_len(len).unwrap();
        file
    }

    #[test]
    fn an_unsealed_memfd_of_the_right_size_is_refused() {
        // A peer that could shrink the file under our mapping would kill us
        // with SIGBUS at the next load.
        let err = from_fd_bounded(memfd(LEN as u64)).expect_err("an unsealed memfd was mapped");
        assert!(err.to_string().contains("not sealed"), "{err}");
        assert!(
            from_fd_bounded(tempfile_of(LEN as u64)).is_err(),
            "a plain file of the right size was mapped"
        );
    }

    #[test]
    fn a_fifo_a_directory_or_a_file_of_the_wrong_size_is_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!(
            "fabriq-ofi-fifo-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Held open read-write (without blocking), as a peer would pass it.
        let held = open_path(fifo.to_str().unwrap(), libc::O_RDWR | libc::O_NONBLOCK).unwrap();
        let err = from_fd_bounded(held).expect_err("a FIFO was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = from_fd_bounded(File::open(&dir).unwrap()).expect_err("a directory was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        for len in [0, 100, LEN as u64 + 1, 1 << 20] {
            let err = from_fd_bounded(sealed(memfd(len))).expect_err("a file of the wrong size");
            assert!(err.to_string().contains("bytes, not"), "{len}: {err}");
        }
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }

    /// `file` (a memfd of ours) sealed at its size.
    fn sealed(file: File) -> File {
        // SAFETY: fcntl on a descriptor we own, with an int argument.
        let sealed = unsafe {
            libc::fcntl(
                file.as_raw_fd(),
                libc::F_ADD_SEALS,
                libc::F_SEAL_SHRINK | libc::F_SEAL_GROW,
            )
        };
        assert_eq!(sealed, 0, "{}", io::Error::last_os_error());
        file
    }

    #[test]
    fn our_counter_cannot_be_truncated_under_a_peer() {
        let owner = SharedCounter::create().unwrap();
        let peer = from_fd_bounded(owner.read_only_fd().unwrap()).expect("our own counter maps");
        owner.increment(Count::Spinners);
        // Whoever holds the descriptor (the owner, or a peer that opened
        // it again read-write through /proc/self/fd) cannot change its
        // size.
        let file = File::from(owner.fd.as_ref().unwrap().try_clone().unwrap());
        assert!(file.set_len(0).is_err(), "the counter was truncated");
        assert!(file.set_len(2 * LEN as u64).is_err(), "the counter grew");
        // SAFETY: fcntl on a descriptor we own, with an int argument.
        let unseal =
            unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_WRITE) };
        assert_ne!(unseal, 0, "seals can still be added");
        assert_eq!(
            peer.load(Count::Spinners),
            1,
            "the peer's mapping is intact"
        );
    }

    /// What a peer receives cannot be written through: the descriptor is
    /// read-only (no truncation, no writable mapping), and the counter
    /// made from it is mapped read-only. Opened again read-write through
    /// /proc/self/fd, the seals still keep its size.
    #[test]
    fn a_counter_received_read_only_cannot_be_written() {
        let owner = SharedCounter::create().unwrap();
        let fd = owner.read_only_fd().unwrap();
        // SAFETY: fcntl on a descriptor we own, no argument.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_ACCMODE, libc::O_RDONLY);
        let file = File::from(fd.try_clone().unwrap());
        assert!(file.set_len(0).is_err(), "truncated through a read-only fd");
        assert!(file.set_len(2 * LEN as u64).is_err());
        // SAFETY: a shared writable mapping asked of a read-only
        // descriptor; refused (checked), else unmapped at once.
        let writable = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if writable != libc::MAP_FAILED {
            // SAFETY: just mapped, LEN bytes.
            unsafe { libc::munmap(writable, LEN) };
            panic!("a read-only descriptor was mapped writable");
        }
        let again = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .expect("a memfd opens again read-write");
        assert!(again.set_len(0).is_err(), "the seals keep its size");
        assert!(again.set_len(2 * LEN as u64).is_err());
        let peer = SharedCounter::from_fd(fd).unwrap();
        assert!(!peer.writable);
        // SAFETY: asks to make the peer's mapping writable; it must refuse
        // (the mapping came from a read-only descriptor).
        let upgraded = unsafe {
            libc::mprotect(
                peer.word.as_ptr().cast(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        assert_ne!(upgraded, 0, "the peer's mapping was made writable");
        assert_eq!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES)
        );
        owner.increment(Count::Spinners);
        assert_eq!(peer.load(Count::Spinners), 1);
    }

    fn tempfile_of(len: u64) -> File {
        let path = std::env::temp_dir().join(format!(
            "fabriq-ofi-shared-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.set_len(len).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
