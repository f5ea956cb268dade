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

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// The size of the shared object: one page.
const LEN: usize = 4096;

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
            .field("value", &self.load())
            .field("writable", &self.writable)
            .finish()
    }
}

impl SharedCounter {
    /// A new counter at zero, writable, for peers to open.
    pub fn create() -> io::Result<SharedCounter> {
        // SAFETY: memfd_create takes a NUL-terminated name and flags; the
        // result is checked and owned at once.
        let fd = unsafe { libc::memfd_create(c"fabriq-ofi-spinners".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by memfd_create and is owned by no
        // one else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        File::from(fd.try_clone()?).set_len(LEN as u64)?;
        let word = map(fd.as_raw_fd(), true)?;
        Ok(SharedCounter {
            word,
            fd: Some(fd),
            writable: true,
        })
    }

    /// Maps, read-only, the counter that process `pid` created and holds
    /// as descriptor `fd`. Refuses anything but a regular file of the
    /// counter's size (a lying peer cannot make us block on a FIFO or map
    /// a device).
    pub fn open(pid: u32, fd: RawFd) -> io::Result<SharedCounter> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let path = format!("/proc/{pid}/fd/{fd}");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)?;
        let meta = file.metadata()?;
        let ft = meta.file_type();
        if !ft.is_file() || ft.is_fifo() || meta.len() != LEN as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{path} is not a fabriq counter"),
            ));
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

    fn word(&self) -> &AtomicU32 {
        // SAFETY: `word` points into a live shared mapping of LEN bytes,
        // page aligned, so aligned for AtomicU32; other processes touch it
        // only atomically too.
        unsafe { self.word.as_ref() }
    }

    /// The current value, after a sequentially consistent fence (see the
    /// module documentation: the caller's earlier send is ordered before
    /// this load).
    pub fn load(&self) -> u32 {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.word().load(Ordering::SeqCst)
    }

    /// Adds one. Only the owner may change the counter.
    pub fn increment(&self) {
        if self.writable {
            self.word().fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Subtracts one (never below zero). Only the owner may change it.
    pub fn decrement(&self) {
        if self.writable {
            let _ = self
                .word()
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1));
        }
    }
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
        assert_eq!(peer.load(), 0);
        owner.increment();
        owner.increment();
        assert_eq!(peer.load(), 2);
        peer.decrement(); // read-only: no effect
        assert_eq!(owner.load(), 2);
        owner.decrement();
        owner.decrement();
        owner.decrement(); // never below zero
        assert_eq!(peer.load(), 0);
        drop(owner);
        assert_eq!(peer.load(), 0, "the memory lives while mapped");
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
                owner.increment();
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
        assert_eq!(peer.load(), 3);
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

    fn tempfile_of(len: u64) -> File {
        let path = std::env::temp_dir().join(format!("fabriq-ofi-shared-{}", std::process::id()));
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
