//! How threads wait on a node: the I/O thread through [`Demux`] (the
//! completion queue's wait descriptor, or the doorbell), and a socket's
//! thread blocked in a receive through [`BellWait`] (the doorbell) or
//! [`CqWait`] (the completion queue's descriptor).

use super::*;

impl Node {
    /// What a socket's thread blocked in a receive sleeps on: a bell (see
    /// [`BellWait`]: the application bell, counted as a sleeper, when
    /// `alone` and the node has one, else the doorbell), or the completion
    /// queue's wait descriptor (see [`CqWait`]); None with neither.
    ///
    /// `alone`: the socket has one message in flight at a time (REQ,
    /// REP), so nothing is gained by waking the I/O thread as well. A
    /// stream's receiver sleeps on the doorbell with the I/O thread, which
    /// reaps and starts rendezvous reads while the socket's thread takes
    /// messages: with the stream's thread alone on the application bell,
    /// 64 KiB PUSH/PULL over shm ran 9% slower (5 alternating pairs).
    pub(crate) fn pull_wait(self: &Arc<Node>, alone: bool) -> Option<Arc<dyn PullWait>> {
        if let Some(bell) = self.doorbell.clone() {
            let app = match alone {
                true => self.app_bell.clone().zip(self.spinners.clone()),
                false => None,
            };
            return Some(Arc::new(BellWait {
                node: self.clone(),
                bell,
                app,
            }));
        }
        let nudge = self.nudge.clone()?;
        self.cq_fd.as_ref()?;
        Some(Arc::new(CqWait {
            node: self.clone(),
            nudge,
        }))
    }
}

impl Node {
    /// Drains `bell` (the doorbell, or the nudge socket, which nobody is
    /// told of) of every datagram ([`Doorbell::drain`]), filing each
    /// count of spinners a peer passed for one of our connections;
    /// true when there was a datagram.
    pub(crate) fn drain_bell(&self, bell: &Doorbell) -> bool {
        bell.drain(|token, fd| self.file_counts(token, fd))
    }

    /// Files the count `fd` a peer passed with `token` for the connection
    /// whose token that is, if there is one and it has none yet; else
    /// `fd` is closed. It is mapped outside the node's lock, and only
    /// if it is a counter ([`SharedCounter::from_fd`]: a regular file of
    /// one page whose size is sealed); a connection given none, or one
    /// refused, has its peer rung every time.
    fn file_counts(&self, token: u64, fd: std::os::fd::OwnedFd) {
        let cell = {
            let s = self.lock();
            s.conns
                .values()
                .find(|c| c.inbox.token() == token)
                .map(|c| c.counts.clone())
        };
        let Some(cell) = cell.filter(|c| c.get().is_none()) else {
            return;
        };
        match SharedCounter::from_fd(fd) {
            Ok(counts) => {
                let _ = cell.set(counts);
            }
            Err(e) => tracing::debug!("a peer's spinner count refused: {e}"),
        }
    }
}

/// A node's bell as a socket's thread sleeps on it in a receive
/// ([`PullWait`]), on providers without wait descriptors (shm).
///
/// With an application bell (the node's [`Node::app_bell`] and its count
/// of sleepers), the thread sleeps on that bell, which only socket
/// threads watch: before it sleeps it counts itself a sleeper and reaps
/// once more (`may_sleep`), so a peer that read the count before it rose,
/// and rang the doorbell, has its page found now; while it is counted,
/// peers ring the application bell, and the I/O thread is not woken for
/// those pages; when it wakes, whatever woke it, it stops counting itself
/// and reaps once more (`woke`, then `take`), so a page whose sender read
/// the count just before it fell is not left unannounced in the queue.
/// This is the store-buffering pattern of `fabriq_ofi::shared`, on both
/// edges of the sleep (`tests::the_sleeper_protocol_loses_no_page`).
///
/// Without one (no shared count: peers ring only the doorbell), the thread
/// sleeps on the doorbell itself, which the I/O thread watches too.
///
/// Either way, `take` reaps what the completion queue holds into the
/// node's pending list (the pull that follows takes its own connection's
/// news out of it, [`Node::progress`]), and `settle` rings our own
/// doorbell when news is left there: the I/O thread is then woken and
/// hands it out ([`Demux::take_ready`] empties the list). When the pull
/// found the engine busy, the session holding it is not left to chance:
/// its connection's news is still listed, and the ring wakes the loop for
/// it.
#[derive(Debug)]
pub(crate) struct BellWait {
    node: Arc<Node>,
    /// The node's doorbell.
    bell: Arc<Doorbell>,
    /// The node's application bell and the count of its sleepers.
    app: Option<(Arc<Doorbell>, Arc<SharedCounter>)>,
}

impl PullWait for BellWait {
    fn fd(&self) -> BorrowedFd<'_> {
        match &self.app {
            Some((app, _)) => app.fd(),
            None => self.bell.fd(),
        }
    }

    fn may_sleep(&self) -> bool {
        let Some((_, count)) = &self.app else {
            return true;
        };
        count.increment(Count::Sleepers);
        // The look after the count rose (the count is a sequentially
        // consistent read-modify-write; see `fabriq_ofi::shared`).
        if !self.node.lock().reap_pending() {
            return true;
        }
        count.decrement(Count::Sleepers);
        false
    }

    fn woke(&self) -> bool {
        let Some((_, count)) = &self.app else {
            return false;
        };
        count.decrement(Count::Sleepers);
        // The look that follows (`take`) must not read the queue before
        // peers can see the lowered count.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        true
    }

    fn take(&self) -> bool {
        match &self.app {
            Some((app, _)) => {
                app.drain_rings();
            }
            None => {
                if !self.node.drain_bell(&self.bell) {
                    // The I/O thread drained it first: it reaps and hands
                    // out.
                    return false;
                }
            }
        }
        self.node.lock().reap_pending();
        true
    }

    fn settle(&self) {
        let left = self.node.lock().has_news();
        if left && !self.node.ring(&self.bell.name) {
            tracing::debug!("cannot ring our own doorbell: news waits for the next poll");
        }
    }
}

/// A node's completion queue descriptor as a socket's thread sleeps on it
/// ([`PullWait`]), on providers that have one (tcp).
///
/// Before it sleeps, the thread asks `fi_trywait` ([`PullWait::may_sleep`]):
/// completions already queued would not make the descriptor readable. When
/// woken, `take` reads the queue (driving the provider) into the node's
/// pending list, as [`BellWait`] does, and the pull that follows takes
/// its own connection's news out of it ([`Node::claim_pending`]); `settle`
/// rings the node's own nudge socket, which only the I/O thread watches,
/// when news is left there. The I/O thread, woken by the same descriptor,
/// may reap first: it then hands the news out as usual, and this thread's
/// look finds it in the pipe.
#[derive(Debug)]
pub(crate) struct CqWait {
    node: Arc<Node>,
    nudge: Arc<Doorbell>,
}

impl PullWait for CqWait {
    fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.node
            .cq_fd
            .as_ref()
            .expect("a CqWait is made only with the descriptor")
            .as_fd()
    }

    fn may_sleep(&self) -> bool {
        // (News of other connections left pending is the I/O thread's,
        // rung for by `settle`: not a reason to stay up.)
        self.node.lock().ep.try_wait().unwrap_or(false)
    }

    fn take(&self) -> bool {
        self.node.lock().reap_pending();
        true
    }

    fn settle(&self) {
        let left = self.node.lock().has_news();
        if left && !self.node.ring(&self.nudge.name) {
            tracing::debug!("cannot ring our own nudge socket: news waits for the next poll");
        }
    }
}

impl Demux for Node {
    fn fds(&self) -> Vec<RawFd> {
        self.fds.clone()
    }

    fn take_ready(&self, out: &mut Vec<Token>) {
        // Edge-triggered: drain every ring.
        if let Some(bell) = self.doorbell.as_ref().or(self.nudge.as_ref()) {
            let _ = self.drain_bell(bell);
        }
        let mut s = self.lock();
        out.append(&mut s.pending_ready);
        s.reap(out);
    }

    fn may_sleep(&self) -> bool {
        let s = self.lock();
        !s.has_news() && s.ep.try_wait().unwrap_or(true)
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
        if s.more {
            // A reap stopped at its limit: read the rest before sleeping.
            return Some(Duration::ZERO);
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Over tcp (CQ wait descriptors), a socket's thread blocked in a
    /// receive sleeps on the CQ's descriptor: woken by a page, it reads
    /// the queue itself and its pull takes the news (no hand-off: the
    /// nudge socket stays quiet); when its pull found the engine busy, the
    /// news is handed to the I/O thread (the nudge rings and `take_ready`
    /// hands the connection out).
    #[test]
    fn a_blocked_receive_on_tcp_reads_the_queue_itself_and_hands_back_what_it_did_not_pull() {
        let fabric = FabricOptions::default();
        let local = Some("127.0.0.1");
        let receiver = Arc::new(Node::open(Some("tcp"), local, &fabric).expect("tcp"));
        let sender = Node::open(Some("tcp"), local, &fabric).expect("tcp");
        assert!(receiver.cq_waitable && receiver.doorbell.is_none());
        let (key, token) = receiver.add(Token(7), false).unwrap();
        receiver.authenticate(key, &sender.name).unwrap();
        receiver.grant(key, 8);
        let (skey, _) = sender.add(Token(1), false).unwrap();
        let dest = sender.authenticate(skey, &receiver.name).unwrap();
        let wait = receiver.pull_wait(true).expect("tcp has a CQ descriptor");
        let nudge = receiver.nudge.clone().expect("a nudge socket");
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let readable = |fd: BorrowedFd<'_>| {
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let ten_ms = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            rustix::event::poll(&mut fds, Some(&ten_ms)).unwrap() == 1
        };
        let mut taken = VecDeque::new();
        for (seq, order) in ["pulled", "engine busy"].into_iter().enumerate() {
            let mut page = sender.page(skey).unwrap();
            page.fill(&[0, 1, b'x']).unwrap();
            while let Err((back, _)) = sender.send(skey, page, None, dest, token + seq as u64) {
                assert!(
                    std::time::Instant::now() < until,
                    "{order}: the send never went"
                );
                // (Refused until the connection is up: both sides
                // progress. The page is not sent yet, so the receiver's
                // progress cannot take it.)
                sender.progress(skey);
                receiver.progress(key);
                std::thread::yield_now();
                page = back;
            }
            // Asleep on the descriptor (or told not to sleep: the page is
            // queued already) until the page is there; the sender's side
            // progresses meanwhile.
            while wait.may_sleep() && !readable(wait.fd()) {
                assert!(
                    std::time::Instant::now() < until,
                    "{order}: the descriptor never woke"
                );
                sender.progress(skey);
            }
            assert!(wait.take(), "{order}");
            while !receiver.lock().pending_ready.contains(&Token(7)) {
                assert!(std::time::Instant::now() < until, "{order}: no news");
                sender.progress(skey);
                receiver.lock().reap_pending();
            }
            if order == "pulled" {
                assert!(!receiver.claim_pending(key), "{order}: nobody else's");
            }
            wait.settle();
            let handed_back = receiver.drain_bell(&nudge);
            assert_eq!(handed_back, order == "engine busy", "{order}");
            if handed_back {
                let mut out = Vec::new();
                receiver.take_ready(&mut out);
                assert!(
                    out.contains(&Token(7)),
                    "{order}: the I/O thread hands it out"
                );
            }
            assert_eq!(receiver.take_in_order(key, &mut taken), None, "{order}");
            assert_eq!(taken.len(), seq + 1, "{order}: the page was taken");
        }
    }
}
