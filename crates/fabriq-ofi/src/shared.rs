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
//! last mapping and descriptor go). The owner creates it read-write; a peer
//! on the same host maps it **read-only** through `/proc/PID/fd/FD`, which
//! the kernel allows to a process of the same user (the check of
//! `ptrace(2)`'s `PTRACE_MODE_READ`). A peer that cannot open it simply
//! rings every time.
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
    /// The owner's descriptor (what peers open through `/proc`); a peer
    /// closes its descriptor once the memory is mapped.
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
    /// A new counter at zero, writable, for peers to open. The memfd is
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

    /// Maps, read-only, the counter that process `pid` created and holds
    /// as descriptor `fd`. Refuses anything but a regular file of the
    /// counter's size whose size is sealed: a lying peer cannot make us
    /// block on a FIFO, open a device, or map a file it can truncate
    /// under us (`SIGBUS`).
    ///
    /// The path is first opened with `O_PATH`, which opens nothing (no
    /// FIFO or device open, no blocking), and checked (`fstat`); only a
    /// regular file of the right size is then opened read-only through
    /// `/proc/self/fd`, and its seals checked before it is mapped.
    pub fn open(pid: u32, fd: RawFd) -> io::Result<SharedCounter> {
        let path = format!("/proc/{pid}/fd/{fd}");
        let refuse = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{path} is not a fabriq counter: {why}"),
            )
        };
        let handle = open_path(&path, libc::O_PATH)?;
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: handle is an open (O_PATH) descriptor; st is writable.
        if unsafe { libc::fstat(handle.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(refuse("not a regular file"));
        }
        if st.st_size != LEN as libc::off_t {
            return Err(refuse(&format!("{} bytes, not {LEN}", st.st_size)));
        }
        // The same file, now opened for reading (regular: no blocking).
        let file = open_path(
            &format!("/proc/self/fd/{}", handle.as_raw_fd()),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
        )?;
        drop(handle);
        // SAFETY: fcntl on a descriptor we own, no argument.
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        let needed = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        if seals < 0 || seals & needed != needed {
            return Err(refuse("its size is not sealed"));
        }
        let word = map(file.as_raw_fd(), false)?;
        Ok(SharedCounter {
            word,
            fd: None,
            writable: false,
        })
    }

    /// The descriptor peers open through `/proc/PID/fd/FD` (the owner's
    /// only).
    pub fn fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
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
        // SAFETY: mapped in create()/open() with length LEN, unmapped once;
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
        let peer = SharedCounter::open(std::process::id(), owner.fd().unwrap()).expect("open");
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
    }

    /// Another process's counter, through /proc: the test binary runs
    /// this test again as the owner (`FABRIQ_OFI_OWNER` set), which prints
    /// its descriptor and holds the counter until its stdin closes.
    #[test]
    fn a_counter_is_read_from_another_process() {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        if std::env::var_os("FABRIQ_OFI_OWNER").is_some() {
            let owner = SharedCounter::create().unwrap();
            for _ in 0..3 {
                owner.increment(Count::Spinners);
            }
            println!("counter fd {}", owner.fd().unwrap());
            let _ = std::io::Read::read(&mut std::io::stdin(), &mut [0u8; 1]);
            return;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "shared::tests::a_counter_is_read_from_another_process",
                "--nocapture",
            ])
            .env("FABRIQ_OFI_OWNER", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the test binary runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let fd: RawFd = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("counter fd ").map(|f| f.parse().unwrap()))
            .expect("the owner prints its descriptor");
        let peer = SharedCounter::open(child.id(), fd).expect("same user: /proc lets us");
        assert_eq!(peer.load(Count::Spinners), 3);
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn descriptors_that_are_not_counters_are_refused() {
        // stdin of this process: a pipe, /dev/null or a tty, never a
        // regular file of one page.
        assert!(SharedCounter::open(std::process::id(), 0).is_err());
        assert!(SharedCounter::open(u32::MAX, 3).is_err(), "no such process");
        let file = tempfile_of(100);
        assert!(SharedCounter::open(std::process::id(), file.as_raw_fd()).is_err());
    }

    /// Runs `SharedCounter::open` on our own descriptor `fd` on another
    /// thread, failing the test if it blocks for 10 s.
    fn open_bounded(fd: RawFd) -> io::Result<SharedCounter> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(SharedCounter::open(std::process::id(), fd));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("SharedCounter::open blocked")
    }

    fn memfd(len: u64) -> File {
        // SAFETY: a NUL-terminated name, checked result, owned at once.
        let fd = unsafe { libc::memfd_create(c"fabriq-ofi-test".as_ptr(), libc::MFD_CLOEXEC) };
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
        let unsealed = memfd(LEN as u64);
        let err = open_bounded(unsealed.as_raw_fd()).expect_err("an unsealed memfd was mapped");
        assert!(err.to_string().contains("not sealed"), "{err}");
        let wrong = tempfile_of(LEN as u64);
        assert!(
            open_bounded(wrong.as_raw_fd()).is_err(),
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
        // Held open read-write (without blocking), as a peer would.
        let held = open_path(fifo.to_str().unwrap(), libc::O_RDWR | libc::O_NONBLOCK).unwrap();
        let err = open_bounded(held.as_raw_fd()).expect_err("a FIFO was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let d = File::open(&dir).unwrap();
        let err = open_bounded(d.as_raw_fd()).expect_err("a directory was mapped");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        for len in [0, 100, LEN as u64 + 1, 1 << 20] {
            let f = memfd(len);
            let err = open_bounded(f.as_raw_fd()).expect_err("a file of the wrong size");
            assert!(err.to_string().contains("bytes, not"), "{len}: {err}");
        }
        drop(held);
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn our_counter_cannot_be_truncated_under_a_peer() {
        let owner = SharedCounter::create().unwrap();
        let peer = open_bounded(owner.fd().unwrap()).expect("our own counter opens");
        owner.increment(Count::Spinners);
        // Whoever holds the descriptor (the owner, or a process that opened
        // it through /proc read-write) cannot change its size.
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
