//! Waking the main loop: a socket pair whose read end sits in every
//! `fabriq::poll` next to the fabriq socket. The stdin reader writes to it
//! when a line is ready, the Ctrl-C handler when the user interrupts.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The receiving end, polled by the main loop.
#[derive(Debug)]
pub struct Wake {
    rx: UnixStream,
    tx: UnixStream,
}

/// A handle that wakes the main loop from another thread.
#[derive(Debug)]
pub struct Waker(UnixStream);

impl Wake {
    /// A new wake-up channel.
    pub fn new() -> io::Result<Wake> {
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Wake { rx, tx })
    }

    /// A waker for another thread.
    pub fn waker(&self) -> io::Result<Waker> {
        Ok(Waker(self.tx.try_clone()?))
    }

    /// The descriptor to poll for POLLIN.
    pub fn fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// Reads away pending wake-ups.
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.rx).read(&mut buf), Ok(n) if n > 0) {}
    }
}

impl Waker {
    /// Wakes the loop. A full buffer means a wake-up is pending anyway.
    pub fn wake(&self) {
        let _ = (&self.0).write(&[1]);
    }
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Makes Ctrl-C end the run cleanly (with the summary): the first one
/// sets the flag and wakes the loop, a second one exits at once.
pub fn install_interrupt_handler(waker: Waker) {
    let result = ctrlc::set_handler(move || {
        if INTERRUPTED.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        waker.wake();
    });
    if let Err(e) = result {
        eprintln!("fabriq: warning: cannot handle Ctrl-C ({e}); it will end the run abruptly");
    }
}
