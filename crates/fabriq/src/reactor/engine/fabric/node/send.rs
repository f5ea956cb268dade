//! Sending: pages from the pool, shared among the connections so that
//! none starves, the sends themselves, ringing a peer's doorbell and
//! passing it our count of spinners.

use std::os::fd::AsFd;

use super::*;

impl Node {
    /// Whether the pool has fewer free pages than the receives the node
    /// keeps posted (then received frames are copied out of their pages).
    pub(crate) fn pool_low(&self) -> bool {
        let s = self.lock();
        s.pool.available() < s.posted
    }

    /// A free page to fill for connection `key`, if the pool has one and
    /// `key` may take it; if not, `key` is readied when a sent page
    /// returns to the pool, and wants one until it gets one or says it
    /// needs none ([`Node::page_not_needed`]).
    ///
    /// While another connection wants a page and has less than its share
    /// of the send pages in flight, one that has its share waits too.
    /// Without that the pool went to whoever asked first, and the loop
    /// drives readied connections in token order: a PUB to sixteen
    /// subscribers over ofi+tcp at 64 KiB (credits for 64 pages each, 384
    /// send pages in all) gave the first connections every returning page
    /// and the last ones none, for good. Only the starved are served
    /// first: capping every connection at its share while any other
    /// wanted a page (they all do, in a busy fan-out) made pipelines
    /// shallow, and PUB/SUB over shm to 16 subscribers at 64 KiB lost
    /// three quarters of its throughput.
    pub(crate) fn page(&self, key: u32) -> Option<Page> {
        let mut s = self.lock();
        let s = &mut *s;
        let Some(c) = s.conns.get(&key) else {
            return s.pool.get();
        };
        let token = c.token;
        let share = s.send_share();
        let page = if c.in_flight >= share && s.starved_other_than(key, share) {
            None
        } else {
            s.pool.get()
        };
        match page {
            Some(_) => s.wanting.retain(|k| *k != key),
            None => {
                if !s.wanting.contains(&key) {
                    s.wanting.push(key);
                }
                if !s.page_waiters.contains(&token) {
                    s.page_waiters.push(token);
                }
            }
        }
        page
    }

    /// `key` waited for a page ([`Node::page`]) and has nothing to put in
    /// one any more: it stops holding the others to their share.
    pub(crate) fn page_not_needed(&self, key: u32) {
        self.lock().wanting.retain(|k| *k != key);
    }

    /// Sends `page`, and `tail` after it in the same message, to `dest`
    /// stamped with `data`; gives both back when the provider cannot take
    /// them now.
    pub(crate) fn send(
        &self,
        key: u32,
        page: Page,
        tail: Option<Bytes>,
        dest: FiAddr,
        data: u64,
    ) -> Result<(), (Page, Option<Bytes>)> {
        let mut s = self.lock();
        let posted = match tail {
            None => {
                s.ep.send(page, dest, Some(data), u64::from(key))
                    .map_err(|e| (e.error, e.page, None))
            }
            Some(tail) => {
                s.ep.send_pieces(page, tail, dest, Some(data), u64::from(key))
                    .map_err(|e| (e.error, e.page, Some(e.tail)))
            }
        };
        match posted {
            Ok(()) => {
                if let Some(c) = s.conns.get_mut(&key) {
                    c.in_flight += 1;
                }
                Ok(())
            }
            Err((error, page, tail)) => {
                if !matches!(error, fabriq_ofi::Error::Again { .. }) {
                    if let Some(c) = s.conns.get_mut(&key) {
                        c.failed = Some(error.to_string());
                    }
                }
                // Progress, so the next try may go through.
                s.reap_pending();
                Err((page, tail))
            }
        }
    }

    /// Whether a page and a body after it go as one send, the body read in
    /// place ([`fabriq_ofi::PagedEndpoint::sends_pieces`]).
    pub(crate) fn sends_pieces(&self) -> bool {
        self.lock().ep.sends_pieces()
    }

    /// Pages of `key` sent and not completed.
    pub(crate) fn in_flight(&self, key: u32) -> usize {
        self.lock().conns.get(&key).map_or(0, |c| c.in_flight)
    }

    /// Rings the doorbell named `name` (a peer's, from its READY).
    pub(crate) fn ring(&self, name: &str) -> bool {
        self.ringer.ring(name)
    }

    /// Passes a read-only descriptor of our count of spinners, if we keep
    /// one, to the doorbell named `doorbell` (a peer's, from its READY),
    /// for the connection the peer knows by `token` (the token it gave
    /// it): one datagram ([`Ringer::send_counts`]). If it cannot go, the
    /// peer rings every time, as it did before it had the count.
    pub(crate) fn send_counts(&self, doorbell: &str, token: u64) {
        let Some(counts) = &self.spinners else {
            return;
        };
        let sent = counts
            .read_only_fd()
            .and_then(|fd| self.ringer.send_counts(doorbell, token, fd.as_fd()));
        if let Err(e) = sent {
            tracing::debug!("cannot pass our spinner count to the peer ({e}): it rings every time");
        }
    }
}

impl NodeState {
    /// Whether a connection other than `key` wants a page and has fewer
    /// than `share` in flight.
    fn starved_other_than(&self, key: u32, share: usize) -> bool {
        self.wanting
            .iter()
            .any(|k| *k != key && self.conns.get(k).is_some_and(|c| c.in_flight < share))
    }

    /// The send pages (the pool less the receives kept posted) divided
    /// among the connections: what one may keep in flight while another
    /// waits for a page.
    pub(super) fn send_share(&self) -> usize {
        let sendable = self.pool.count().saturating_sub(self.posted);
        (sendable / self.conns.len().max(1)).max(1)
    }
}
