//! How threads wait on a node: the I/O thread through [`Demux`] (the
//! completion queue's wait descriptor, or the doorbell), and a socket's
//! thread blocked in a receive through [`BellWait`].

use super::*;

impl Node {
    /// What a socket's thread blocked in a receive sleeps on: the doorbell
    /// (see [`BellWait`]); None without one.
    pub(crate) fn bell_wait(self: &Arc<Node>) -> Option<Arc<dyn PullWait>> {
        let bell = self.doorbell.clone()?;
        Some(Arc::new(BellWait {
            node: self.clone(),
            bell,
        }))
    }
}

/// A node's doorbell as a socket's thread sleeps on it ([`PullWait`]).
///
/// A ring that thread takes is one the I/O thread's edge-triggered
/// registration may never report, so `take` reaps what the completion
/// queue holds into the node's pending list (the pull that follows takes
/// its own connection's news out of it, [`Node::progress`]), and `settle`
/// rings our own doorbell when news is left there: the I/O thread is then
/// woken and hands it out ([`Demux::take_ready`] empties the list). When the
/// pull found the engine busy, the session holding it is not left to
/// chance: its connection's news is still listed, and the ring wakes the
/// loop for it.
#[derive(Debug)]
pub(crate) struct BellWait {
    node: Arc<Node>,
    bell: Arc<Doorbell>,
}

impl PullWait for BellWait {
    fn fd(&self) -> BorrowedFd<'_> {
        self.bell.fd()
    }

    fn take(&self) -> bool {
        if !self.bell.drain() {
            // The I/O thread drained it first: it reaps and hands out.
            return false;
        }
        self.node.lock().reap_pending();
        true
    }

    fn settle(&self) {
        let left = !self.node.lock().pending_ready.is_empty();
        if left && !self.node.ring(&self.bell.name) {
            tracing::debug!("cannot ring our own doorbell: news waits for the next poll");
        }
    }
}

impl Demux for Node {
    fn fds(&self) -> Vec<RawFd> {
        self.fds.clone()
    }

    fn take_ready(&self, out: &mut Vec<Token>) {
        // Edge-triggered: drain every ring.
        if let Some(bell) = &self.doorbell {
            let _ = bell.drain();
        }
        let mut s = self.lock();
        out.append(&mut s.pending_ready);
        s.reap(out);
    }

    fn may_sleep(&self) -> bool {
        let s = self.lock();
        s.pending_ready.is_empty() && s.ep.try_wait().unwrap_or(true)
    }

    fn poll_interval(&self) -> Option<Duration> {
        let s = self.lock();
        // Received pages return to the pool when the application drops
        // their last slice, on its own thread, and nothing wakes us for
        // that: while fewer receives are posted than should be (the
        // application holds many pages), poll, so they are posted again
        // as pages come back. (Without this, a receiver whose pool ran dry
        // never posted again: unbuffered 64 B messages, one page each,
        // 1000 in the pipe, stalled the stream.)
        let starved = s.ep.recvs_posted() < s.posted;
        if self.cq_waitable {
            return starved.then_some(POLL_EVERY);
        }
        // While a read is in flight nothing rings us for its completion:
        // keep polling.
        Some(if s.reads > 0 {
            Duration::ZERO
        } else {
            POLL_EVERY
        })
    }
}
