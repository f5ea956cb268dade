//! A socket's mailbox: the parts of a socket that other threads touch.
//!
//! A socket lives in one application thread at a time. The I/O thread,
//! inproc peers and monitors reach it only through its [`Mailbox`]: new
//! pipes are posted here, and the socket's wake-up signal is raised so the
//! socket takes them in at its next call.

use std::sync::{Arc, Mutex};

use fabriq_zmtp::SocketType;

use crate::monitor::MonitorSlot;
use crate::pipe::PipeEnd;
use crate::signal::Signal;
use crate::spin::Spin;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Mailbox {
    pub id: u64,
    pub socket_type: SocketType,
    pub signal: Arc<Signal>,
    /// Pipes handed to the socket and not yet taken in.
    pipes: Mutex<Vec<PipeEnd>>,
    pub monitor: MonitorSlot,
    /// The socket's spells of spinning, for its fabric engines.
    pub spin: Arc<Spin>,
}

impl Mailbox {
    pub(crate) fn new(id: u64, socket_type: SocketType, signal: Arc<Signal>) -> Mailbox {
        Mailbox {
            id,
            socket_type,
            signal,
            pipes: Mutex::new(Vec::new()),
            monitor: MonitorSlot::default(),
            spin: Arc::default(),
        }
    }

    /// Hands a new pipe to the socket and wakes it.
    pub(crate) fn attach(&self, pipe: PipeEnd) {
        self.pipes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pipe);
        self.signal.raise();
    }

    /// The pipes posted since the last call.
    pub(crate) fn take_pipes(&self) -> Vec<PipeEnd> {
        std::mem::take(&mut *self.pipes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
