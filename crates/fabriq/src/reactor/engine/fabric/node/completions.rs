//! Completions: reading the completion queue, keeping receives posted,
//! and filing each received page, finished send and rendezvous read under
//! its connection.

use super::*;

impl Node {
    /// Moves `key`'s pages that are next in order to `out`. Returns why
    /// the connection must end, if it must.
    pub(crate) fn take_in_order(&self, key: u32, out: &mut VecDeque<Bytes>) -> Option<String> {
        self.lock().take_in_order(key, out)
    }

    /// Pages of `key` taken in order so far.
    pub(crate) fn taken(&self, key: u32) -> u64 {
        self.lock().conns.get(&key).map_or(0, |c| c.inbox.taken())
    }

    /// Pages no connection claimed since the node opened.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn unclaimed(&self) -> u64 {
        self.lock().unclaimed
    }

    /// Reads the completion queue on the caller's thread (a spinning
    /// socket). Returns whether other connections than `key` have news,
    /// which the I/O thread must then hand out.
    pub(crate) fn progress(&self, key: u32) -> bool {
        self.lock().progress(key)
    }

    /// [`Node::progress`] and then [`Node::take_in_order`] for `key`,
    /// under one hold of the lock (a spinning receive does both at every
    /// look). Returns whether others have news, and why the connection
    /// must end, if it must.
    pub(crate) fn progress_and_take(
        &self,
        key: u32,
        out: &mut VecDeque<Bytes>,
    ) -> (bool, Option<String>) {
        let mut s = self.lock();
        let others = s.progress(key);
        (others, s.take_in_order(key, out))
    }

    /// As [`Node::progress`] without reading the completion queue: takes
    /// `key`'s news out of what a socket's thread reaped ([`CqWait`]).
    /// Returns whether other connections than `key` have news.
    pub(crate) fn claim_pending(&self, key: u32) -> bool {
        let mut s = self.lock();
        if s.pending_ready.is_empty() {
            return s.more;
        }
        let mine = s.conns.get(&key).map(|c| c.token);
        s.pending_ready.retain(|t| Some(*t) != mine);
        s.has_news()
    }
}

impl NodeState {
    /// Whether received completions carry their source address
    /// (FI_SOURCE): then a page is offered only to the connections
    /// authenticated for that address.
    pub(super) fn ep_reports_sources(&self) -> bool {
        self.ep.has_source()
    }

    /// Keeps `posted` receives posted, as far as the pool allows.
    pub(super) fn post_receives(&mut self) {
        while self.ep.recvs_posted() < self.posted {
            let Some(page) = self.pool.get() else { return };
            if let Err(refused) = self.ep.post_recv(page) {
                tracing::debug!("cannot post a fabric receive: {}", refused.error);
                return;
            }
        }
    }

    /// See [`Node::progress`].
    fn progress(&mut self, key: u32) -> bool {
        let mut ready = std::mem::take(&mut self.pending_ready);
        self.reap(&mut ready);
        let mine = self.conns.get(&key).map(|c| c.token);
        ready.retain(|t| Some(*t) != mine);
        self.pending_ready = ready;
        self.has_news()
    }

    /// News for the I/O thread: connections readied and not handed out,
    /// or completions left in the queue by a reap that stopped at
    /// [`REAP_MAX`].
    pub(super) fn has_news(&self) -> bool {
        !self.pending_ready.is_empty() || self.more
    }

    /// See [`Node::take_in_order`].
    fn take_in_order(&mut self, key: u32, out: &mut VecDeque<Bytes>) -> Option<String> {
        let c = self.conns.get_mut(&key)?;
        if let Some(why) = c.failed.clone() {
            return Some(why);
        }
        c.inbox.take_in_order(out)
    }

    /// Reaps into `pending_ready` (a path that is not handing out news).
    /// True when the queue held any completion.
    pub(super) fn reap_pending(&mut self) -> bool {
        let mut ready = std::mem::take(&mut self.pending_ready);
        let filed = self.reap(&mut ready);
        self.pending_ready = ready;
        filed > 0
    }

    /// Reads the completion queue (which also drives progress on
    /// manual-progress providers) and files each completion under its
    /// connection; the connections with news go to `ready`. Returns how
    /// many completions were filed: at most [`REAP_MAX`], so the node's
    /// lock is never held for longer than that many completions however
    /// fast pages keep coming (a flood, a stranger's included); when it
    /// stops there, `more` says the queue may hold the rest, and the I/O
    /// thread does not sleep until it has read them.
    pub(super) fn reap(&mut self, ready: &mut Vec<Token>) -> usize {
        self.reap_at_most(ready, REAP_MAX)
    }

    /// [`NodeState::reap`] with a limit of `max` completions.
    pub(super) fn reap_at_most(&mut self, ready: &mut Vec<Token>, max: usize) -> usize {
        let mut events = std::mem::take(&mut self.events);
        let mut filed = 0;
        self.more = false;
        loop {
            let Some(room) = max.checked_sub(filed).filter(|r| *r > 0) else {
                self.more = true;
                break;
            };
            events.clear();
            let polled = self.ep.poll(&mut events, room.min(CQ_BATCH));
            // Every completion read is in `events`, an error or not: file
            // them all (a send's page, a read's buffer) before stopping.
            let any = !events.is_empty();
            filed += events.len();
            for event in events.drain(..) {
                self.file(event, ready);
            }
            match polled {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("fabric completion queue: {e}");
                    if !any {
                        break;
                    }
                }
            }
            // Post again before the next read drives the provider: what
            // arrives while no receive is posted, tcp;ofi_rxm keeps in a
            // 16 KiB buffer of its own, from pools it never shrinks, so a
            // peer flooding past its credits grew the node by 118 MB per
            // 20,000 pages (hostile_fabric.rs, many lying connections).
            self.post_receives();
        }
        self.events = events;
        self.post_receives();
        filed
    }

    /// Offers a received page to the connections: those of its source
    /// address first (or all, without one).
    fn claim(&mut self, data: u64, src: Option<FiAddr>, page: Page, ready: &mut Vec<Token>) {
        let mut page = page;
        let keys: Vec<u32> = match src {
            Some(addr) => self.by_peer.get(&addr).cloned().unwrap_or_default(),
            None => self.conns.keys().copied().collect(),
        };
        for key in keys {
            let Some(c) = self.conns.get_mut(&key) else {
                continue;
            };
            match c.inbox.claim(data, src.map(|a| a.0), page) {
                Claim::NotMine(back) => page = back,
                Claim::Taken | Claim::Refused => {
                    ready.push(c.token);
                    return;
                }
            }
        }
        self.unclaimed += 1;
        tracing::debug!("a fabric page no connection claims: dropped");
    }

    fn file(&mut self, event: fabriq_ofi::Event, ready: &mut Vec<Token>) {
        use fabriq_ofi::Event::*;
        match event {
            Received { page, data, src } => {
                let Some(data) = data else {
                    self.unclaimed += 1;
                    tracing::debug!("a fabric page without CQ data: dropped");
                    return;
                };
                // The provider names every source it knows: a page without
                // one comes from an address no handshake authenticated, or
                // from this endpoint itself. Only connections to ourselves
                // (by token) may take it.
                let src = match src {
                    None if self.ep_reports_sources() => self.ep.own_entry(),
                    src => src,
                };
                self.claim(data, src, page, ready);
            }
            // A send's tag is the key of the connection it was for.
            Sent { page, tag, .. } => {
                drop(page);
                ready.append(&mut self.page_waiters);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.in_flight = c.in_flight.saturating_sub(1);
                    ready.push(c.token);
                }
            }
            SendFailed {
                page, tag, error, ..
            } => {
                drop(page);
                ready.append(&mut self.page_waiters);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.in_flight = c.in_flight.saturating_sub(1);
                    c.failed = Some(error.to_string());
                    ready.push(c.token);
                }
            }
            RecvFailed { page, error } => {
                drop(page);
                tracing::warn!("a fabric receive failed: {error}");
            }
            ReadDone { data, tag } => {
                self.reads = self.reads.saturating_sub(1);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.read = Some(data);
                    ready.push(c.token);
                }
            }
            ReadFailed { tag, error } => {
                self.reads = self.reads.saturating_sub(1);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.failed = Some(format!("a rendezvous read failed: {error}"));
                    ready.push(c.token);
                }
            }
        }
    }
}
