//! One I/O thread's fabric endpoint for one provider: the RDM endpoint,
//! its registered page pool and posted receives, its completion queue
//! (one for sends and receives), and the table of the thread's fabric
//! connections that completions are filed under. It is a shared
//! readiness source ([`Demux`]): the completion queue's wait descriptor
//! is in the poller.
//!
//! This is the one place that talks to libfabric for the fabric engine.
//! Each received page is offered to the connections' inboxes
//! ([`super::rx::Inbox::claim`]), those with the page's source address
//! first; a page nobody claims is dropped and counted.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use fabriq_ofi::{FiAddr, Page, PagePool, PagedConfig, PagedEndpoint, SharedCounter};
use mio::Token;

use super::conn::Limits;
use super::rx::{Claim, Inbox, PageBuf};
use super::tx::{PageFill, HEADER_ROOM};
use super::wake::{self, Doorbell, Ringer};
use crate::options::FabricOptions;
use crate::pipe::PullWait;
use crate::transport::Demux;

mod open;
mod wait;

/// Receives kept posted, at most (a quarter of the pool, if smaller).
pub(crate) const POSTED: usize = 128;
/// Pages a sender may have in flight to one peer, at most (the
/// receiver's posted receives, if fewer): half of them, so that a single
/// peer sending a page per message (unbuffered) is not held by credit
/// round trips, while one that stops being read never takes every posted
/// receive (then the provider would buffer a flood itself:
/// hostile_fabric.rs, `a_pull_that_reads_nothing_is_not_made_to_buffer_a_flood`,
/// failed at 128). Unbuffered 64 B PUSH/PULL over shm: 0.30-0.31 M msg/s
/// at 32, 0.49-0.50 M at 64 (two runs each, the machine busy).
pub(crate) const WINDOW: u32 = 64;
/// How often a node without wait descriptors (shm on libfabric 1.17) is
/// polled while it has connections, as a backstop to the doorbell.
const POLL_EVERY: Duration = Duration::from_millis(1);
/// Free rendezvous buffers a node keeps for reuse, in bytes.
const READ_POOL_BYTES: usize = 64 << 20;

impl PageBuf for Page {
    fn filled_mut(&mut self) -> &mut [u8] {
        let len = self.len();
        &mut self.buffer_mut()[..len]
    }
    fn freeze(self) -> Bytes {
        self.into_bytes()
    }
}

impl PageFill for Page {
    fn len(&self) -> usize {
        Page::len(self)
    }
    fn set_len(&mut self, len: usize) {
        Page::set_len(self, len)
    }
    fn buffer_mut(&mut self) -> &mut [u8] {
        Page::buffer_mut(self)
    }
}

/// What a node knows of one connection.
#[derive(Debug)]
struct NodeConn {
    token: Token,
    inbox: Inbox<Page>,
    /// The peer's address in the endpoint's address vector, once known.
    peer: Option<FiAddr>,
    /// Pages sent and not completed yet.
    in_flight: usize,
    /// A send or read failed for this connection.
    failed: Option<String>,
    /// A rendezvous read that completed and was not taken yet.
    read: Option<Bytes>,
}

struct NodeState {
    ep: PagedEndpoint,
    /// Rendezvous reads posted and not completed.
    reads: usize,
    domain: fabriq_ofi::Domain,
    /// Buffers rendezvous reads land in, reused.
    reads_pool: fabriq_ofi::ReadPool,
    /// Receives to keep posted.
    posted: usize,
    pool: PagePool,
    conns: HashMap<u32, NodeConn>,
    /// Connections by their peer's address, for filing received pages.
    by_peer: HashMap<FiAddr, Vec<u32>>,
    next_key: u32,
    events: Vec<fabriq_ofi::Event>,
    /// Connections with news found outside [`Demux::take_ready`] (a send
    /// that reaped completions): handed out by the next one, which the
    /// loop runs before it sleeps.
    pending_ready: Vec<Token>,
    /// Pages no connection claimed (forged, or for a connection gone).
    unclaimed: u64,
    /// Connections that found no page ([`Node::page`]): readied when a
    /// sent page returns to the pool (once: one that finds none again is
    /// listed again). (Without this a PUB's connection that found no page
    /// while its siblings held them all was never driven again: its pipe
    /// stayed full, the PUB dropped its messages, and that subscriber got
    /// nothing; four and sixteen subscribers over shm, 64 KiB.)
    page_waiters: Vec<Token>,
    /// Keys of the connections that want a page and have not had one
    /// since they asked, until they get one or need none ([`Node::page`]).
    wanting: Vec<u32>,
}

/// One I/O thread's fabric endpoint for one provider. See the module
/// documentation.
pub(crate) struct Node {
    state: Mutex<NodeState>,
    /// The descriptors the loop sleeps on: the CQs' wait descriptors, or
    /// the doorbell's socket when the CQs have none.
    fds: Vec<RawFd>,
    /// The CQs have wait descriptors (else they are polled as a backstop).
    pub(crate) cq_waitable: bool,
    /// For CQs without wait descriptors (shm on 1.17): a datagram socket
    /// in the abstract namespace that peers on this host ring after they
    /// sent us pages, and its name for READY.
    pub(crate) doorbell: Option<Arc<Doorbell>>,
    /// With CQ wait descriptors: a doorbell of our own, not announced to
    /// peers, that a socket's thread rings to hand the I/O thread news it
    /// reaped and did not pull ([`CqWait`]).
    pub(crate) nudge: Option<Arc<Doorbell>>,
    /// With CQ wait descriptors: a duplicate of the CQ's, for a socket's
    /// thread blocked in a receive to sleep on ([`CqWait`]).
    cq_fd: Option<std::os::fd::OwnedFd>,
    /// With a doorbell: how many of our sockets spin on this node now
    /// (peers read it and skip the ring while it is above zero).
    pub(crate) spinners: Option<Arc<SharedCounter>>,
    /// Rings peers' doorbells.
    ringer: Ringer,
    pub(crate) name: Vec<u8>,
    pub(crate) provider: String,
    /// Bytes per page (the page size option plus [`HEADER_ROOM`]).
    pub(crate) page_size: usize,
    /// The pages each peer may have in flight to us.
    window: u32,
    /// The endpoint does RMA: frames larger than a page go by rendezvous.
    pub(crate) rma: bool,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({})", self.provider)
    }
}

impl Node {
    /// The key of the node for `provider` on `local` with `fabric`'s
    /// page geometry, among an I/O thread's local sources.
    pub(crate) fn key(provider: Option<&str>, local: &str, fabric: &FabricOptions) -> String {
        format!(
            "ofi:{}:{local}:{}x{}",
            provider.unwrap_or(""),
            fabric.page_count,
            fabric.page_size
        )
    }

    fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection, filed under a local key, with a fresh random
    /// token the peer is to stamp its pages with (and sealed pages if
    /// `sealed`). Returns the key and the token.
    pub(crate) fn add(&self, token: Token, sealed: bool) -> Result<(u32, u64), String> {
        let stamp = random_token().map_err(|e| format!("no randomness for a token: {e}"))?;
        let mut s = self.lock();
        let key = s.next_key;
        s.next_key = s.next_key.wrapping_add(1).max(1);
        s.conns.insert(
            key,
            NodeConn {
                token,
                inbox: Inbox::new(stamp, sealed),
                peer: None,
                in_flight: 0,
                failed: None,
                read: None,
            },
        );
        Ok((key, stamp))
    }

    /// The handshake of `key` completed with a peer at fabric `address`:
    /// the address goes into the address vector, and the connection
    /// claims that peer's pages from now on. Returns the peer's handle.
    pub(crate) fn authenticate(&self, key: u32, address: &[u8]) -> Result<FiAddr, String> {
        let mut s = self.lock();
        let addr = s.ep.insert_peer(address).map_err(|e| e.to_string())?;
        // A connection to this very endpoint (two sockets of one context)
        // cannot be told apart by source: its pages arrive without one,
        // like a stranger's, and are claimed by token and sequence alone.
        let source = (s.ep_reports_sources() && s.ep.own_entry() != Some(addr)).then_some(addr.0);
        let c = s.conns.get_mut(&key).ok_or("no such connection")?;
        c.peer = Some(addr);
        c.inbox.authenticate(source);
        s.by_peer.entry(addr).or_default().push(key);
        Ok(addr)
    }

    /// Takes the key the peer of `key` seals its pages with.
    pub(crate) fn set_key(&self, key: u32, page_key: &[u8]) -> Result<(), String> {
        let mut s = self.lock();
        let c = s.conns.get_mut(&key).ok_or("no such connection")?;
        c.inbox.set_key(page_key)
    }

    /// Forgets a connection.
    pub(crate) fn remove(&self, key: u32) {
        let mut s = self.lock();
        let Some(c) = s.conns.remove(&key) else {
            return;
        };
        s.page_waiters.retain(|t| *t != c.token);
        s.wanting.retain(|k| *k != key);
        if let Some(addr) = c.peer {
            if let Some(keys) = s.by_peer.get_mut(&addr) {
                keys.retain(|k| *k != key);
                if keys.is_empty() {
                    s.by_peer.remove(&addr);
                    // No connection speaks for that address any more: its
                    // pages arrive without a source from now on (and are
                    // dropped) until a handshake inserts it again. Our own
                    // entry stays.
                    if s.ep.own_entry() != Some(addr) {
                        if let Err(e) = s.ep.remove_peer(addr) {
                            tracing::debug!("cannot retire a fabric peer: {e}");
                        }
                    }
                }
            }
        }
    }

    /// Lets `key`'s peer send `pages` more pages (what we grant it in
    /// each CREDIT, recorded before the peer can see it).
    pub(crate) fn grant(&self, key: u32, pages: u32) {
        if let Some(c) = self.lock().conns.get_mut(&key) {
            c.inbox.grant(pages);
        }
    }

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

    /// Moves `key`'s pages that are next in order to `out`. Returns why
    /// the connection must end, if it must.
    pub(crate) fn take_in_order(&self, key: u32, out: &mut VecDeque<Bytes>) -> Option<String> {
        self.lock().take_in_order(key, out)
    }

    /// Registers `bytes` for the peer to read.
    pub(crate) fn lend(&self, bytes: Bytes) -> Result<fabriq_ofi::Lent, String> {
        let domain = self.lock().domain.clone();
        fabriq_ofi::Lent::new(&domain, bytes).map_err(|e| e.to_string())
    }

    /// Posts a read of `len` bytes the peer `src` lent, for connection
    /// `key`; the data comes back through [`Node::take_read`]. Returns
    /// false when the provider is busy (try again later).
    pub(crate) fn read(
        &self,
        key: u32,
        src: FiAddr,
        len: usize,
        addr: u64,
        rkey: u64,
    ) -> Result<bool, String> {
        let mut s = self.lock();
        let buf = s.reads_pool.get(len).map_err(|e| e.to_string())?;
        match s.ep.read(buf, src, addr, rkey, u64::from(key)) {
            Ok(()) => {
                s.reads += 1;
                // Providers that copy at once (shm's CMA) complete it here.
                s.reap_pending();
                Ok(true)
            }
            Err(refused) if matches!(refused.error, fabriq_ofi::Error::Again { .. }) => {
                s.reap_pending();
                Ok(false)
            }
            Err(refused) => Err(refused.error.to_string()),
        }
    }

    /// The window of one connection: an equal share of the receives kept
    /// posted (at least one page, at most [`WINDOW`]).
    pub(crate) fn share(&self) -> u32 {
        let s = self.lock();
        let conns = s.conns.len().max(1) as u32;
        (s.posted as u32 / conns).clamp(1, self.window)
    }

    /// The most pages one peer may ever hold in flight to us.
    pub(crate) fn window(&self) -> u32 {
        self.window
    }

    /// The rendezvous read of `key` that completed, if any.
    pub(crate) fn take_read(&self, key: u32) -> Option<Bytes> {
        self.lock().conns.get_mut(&key)?.read.take()
    }

    /// Pages of `key` taken in order so far.
    pub(crate) fn taken(&self, key: u32) -> u64 {
        self.lock().conns.get(&key).map_or(0, |c| c.inbox.taken())
    }

    /// Pages of `key` sent and not completed.
    pub(crate) fn in_flight(&self, key: u32) -> usize {
        self.lock().conns.get(&key).map_or(0, |c| c.in_flight)
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
            return false;
        }
        let mine = s.conns.get(&key).map(|c| c.token);
        s.pending_ready.retain(|t| Some(*t) != mine);
        !s.pending_ready.is_empty()
    }

    /// Rings the doorbell named `name` (a peer's, from its READY).
    pub(crate) fn ring(&self, name: &str) -> bool {
        self.ringer.ring(name)
    }
}

/// A random nonzero 64-bit token.
fn random_token() -> std::io::Result<u64> {
    loop {
        let mut b = [0u8; 8];
        getrandom::getrandom(&mut b).map_err(std::io::Error::other)?;
        let t = u64::from_ne_bytes(b);
        if t != 0 {
            return Ok(t);
        }
    }
}

impl NodeState {
    /// Whether received completions carry their source address
    /// (FI_SOURCE): then a page is offered only to the connections
    /// authenticated for that address.
    fn ep_reports_sources(&self) -> bool {
        self.ep.has_source()
    }

    /// Keeps `posted` receives posted, as far as the pool allows.
    fn post_receives(&mut self) {
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
        let others = !ready.is_empty();
        self.pending_ready = ready;
        others
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
    fn reap_pending(&mut self) {
        let mut ready = std::mem::take(&mut self.pending_ready);
        self.reap(&mut ready);
        self.pending_ready = ready;
    }

    /// Reads the completion queue (which also drives progress on
    /// manual-progress providers) and files each completion under its
    /// connection; the connections with news go to `ready`.
    fn reap(&mut self, ready: &mut Vec<Token>) {
        let mut events = std::mem::take(&mut self.events);
        loop {
            events.clear();
            let polled = self.ep.poll(&mut events, 256);
            // Every completion read is in `events`, an error or not: file
            // them all (a send's page, a read's buffer) before stopping.
            let any = !events.is_empty();
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
    }

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
    fn send_share(&self) -> usize {
        let sendable = self.pool.count().saturating_sub(self.posted);
        (sendable / self.conns.len().max(1)).max(1)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Windows shrink as connections join, so that together they fit the
    /// receives the node keeps posted.
    #[test]
    fn each_connection_gets_a_share_of_the_posted_receives() {
        let fabric = FabricOptions::default();
        let node = Node::open(Some("shm"), None, &fabric).expect("an shm node");
        assert_eq!(node.share(), WINDOW, "alone: the whole window");
        let keys: Vec<u32> = (0..8)
            .map(|t| node.add(Token(t), false).unwrap().0)
            .collect();
        assert_eq!(node.share(), (POSTED / 8) as u32);
        for t in 8..300 {
            node.add(Token(t), false).unwrap();
        }
        assert_eq!(node.share(), 1, "more peers than receives: one page each");
        for key in keys {
            node.remove(key);
        }
        let small = FabricOptions {
            page_count: 16,
            ..fabric
        };
        let node = Node::open(Some("shm"), None, &small).expect("a small node");
        node.add(Token(1), false).unwrap();
        assert_eq!(node.share(), 4, "a quarter of 16 pages posted");
    }

    /// Tokens are random and distinct per connection, never zero.
    #[test]
    fn each_connection_gets_a_random_token() {
        let node = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let tokens: std::collections::HashSet<u64> = (0..100)
            .map(|t| node.add(Token(t), false).unwrap().1)
            .collect();
        assert_eq!(tokens.len(), 100);
        assert!(!tokens.contains(&0));
        // Not a counter: no two consecutive tokens differ by one.
        assert!(tokens.iter().all(|t| !tokens.contains(&t.wrapping_add(1))));
    }

    /// A page sent to the node by an endpoint no connection authenticated
    /// is dropped and counted, whatever its CQ data says.
    #[test]
    fn pages_nobody_claims_are_dropped_and_counted() {
        let node = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let (key, token) = node.add(Token(1), false).unwrap();
        let sender = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let dest = sender.lock().ep.insert_peer(&node.name).unwrap();
        // Not authenticated yet: even the right token is not taken.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        for data in [token, token + 1, 1 << 32, 0] {
            let mut page = sender.page(0).unwrap();
            page.fill(&[0, 1, b'x']).unwrap();
            // (A send the provider refuses for now is tried again.)
            while let Err((back, _)) = sender.send(0, page, None, dest, data) {
                assert!(std::time::Instant::now() < until, "the sends never went");
                assert!(sender.lock().conns.is_empty());
                node.progress(key);
                page = back;
            }
        }
        while node.unclaimed() < 4 {
            assert!(std::time::Instant::now() < until, "the pages never came");
            sender.progress(0);
            node.progress(key);
        }
        let mut out = VecDeque::new();
        assert_eq!(node.take_in_order(key, &mut out), None);
        assert!(out.is_empty());
    }

    /// On shm a rendezvous read is done when `read` takes it: the reader
    /// copies by CMA (shm's fast RMA, which needs virtual addresses), so
    /// it needs no progress of the lender and the reading node has no read
    /// in flight to poll for. (With offsets shm served the read through
    /// the lender's progress, and the reader polled without sleeping
    /// until then: about 870 syscalls per 1 MiB message.)
    #[test]
    fn shm_reads_complete_without_the_lenders_progress() {
        let lender = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let reader = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        assert!(lender.rma && reader.rma, "shm does RMA");
        let frame = Bytes::from(vec![0x5a; 1 << 20]);
        let lent = lender.lend(frame.clone()).unwrap();
        let (key, _) = reader.add(Token(1), false).unwrap();
        let src = reader.authenticate(key, &lender.name).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !reader
            .read(key, src, frame.len(), lent.rma_addr(), lent.key())
            .unwrap()
        {
            // Refused until shm has mapped the peer, which takes the
            // lender's progress once; the read itself does not.
            assert!(std::time::Instant::now() < until, "the read never went");
            lender.progress(0);
        }
        let data = reader.take_read(key).expect("read done when read returned");
        assert_eq!(data, frame);
        assert_eq!(reader.lock().reads, 0);
        assert_ne!(reader.poll_interval(), Some(Duration::ZERO), "no busy poll");
        assert_ne!(lent.rma_addr(), 0, "shm lends by virtual address");
    }

    /// The three orders of a ring between the socket's thread (a blocked
    /// receive sleeping on the doorbell, [`BellWait`]) and the I/O thread
    /// (`take_ready`), for a page of one connection: the I/O thread drains
    /// first (the socket's thread takes nothing); the socket's thread takes
    /// the ring and its pull takes the news (no ring is handed on: one
    /// wake-up); it takes the ring and its pull finds the engine busy (the
    /// news is handed back: our own doorbell rings and `take_ready` hands
    /// out the connection).
    #[test]
    fn a_ring_taken_by_the_sockets_thread_is_handed_back_unless_pulled() {
        let fabric = FabricOptions::default();
        let receiver = Arc::new(Node::open(Some("shm"), None, &fabric).expect("shm"));
        let sender = Node::open(Some("shm"), None, &fabric).expect("shm");
        let (key, token) = receiver.add(Token(7), false).unwrap();
        receiver.authenticate(key, &sender.name).unwrap();
        receiver.grant(key, 8);
        let (skey, _) = sender.add(Token(1), false).unwrap();
        let dest = sender.authenticate(skey, &receiver.name).unwrap();
        let wait = receiver.pull_wait().expect("shm has a doorbell");
        let bell = receiver.doorbell.clone().unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let readable = |fd: BorrowedFd<'_>| {
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let ten_s = rustix::event::Timespec {
                tv_sec: 10,
                tv_nsec: 0,
            };
            rustix::event::poll(&mut fds, Some(&ten_s)).unwrap() == 1
        };
        let mut taken = VecDeque::new();
        for (seq, order) in ["io thread first", "pulled", "engine busy"]
            .into_iter()
            .enumerate()
        {
            let mut page = sender.page(skey).unwrap();
            page.fill(&[0, 1, b'x']).unwrap();
            while let Err((back, _)) = sender.send(skey, page, None, dest, token + seq as u64) {
                // (Refused until the receiver's progress mapped us.)
                assert!(
                    std::time::Instant::now() < until,
                    "{order}: the send never went"
                );
                sender.progress(skey);
                receiver.progress(key);
                page = back;
            }
            assert!(sender.ring(&bell.name), "{order}");
            assert!(readable(wait.fd()), "{order}: the ring never came");
            let mut out = Vec::new();
            if order == "io thread first" {
                receiver.take_ready(&mut out);
                assert!(!wait.take(), "{order}: the I/O thread drained it");
            } else {
                assert!(wait.take(), "{order}");
            }
            // (The page may need more than one look at the queue.)
            while !out.contains(&Token(7)) && !receiver.lock().pending_ready.contains(&Token(7)) {
                assert!(std::time::Instant::now() < until, "{order}: no news");
                if order == "io thread first" {
                    receiver.take_ready(&mut out);
                } else {
                    // What `take` did, again (not handing out).
                    receiver.lock().reap_pending();
                }
            }
            if order == "pulled" {
                // The receive's pull takes its own news.
                assert!(!receiver.progress(key), "{order}: nobody else's news");
            }
            if order != "io thread first" {
                wait.settle();
            }
            let handed_back = bell.drain();
            assert_eq!(handed_back, order == "engine busy", "{order}");
            if handed_back {
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

    /// A connection that found the pool empty is readied when a page
    /// another connection sent returns to it (a PUB's subscriber whose
    /// siblings held every page stalled before).
    #[test]
    fn a_connection_that_found_no_page_is_readied_when_one_returns() {
        let small = FabricOptions {
            page_count: 16,
            ..FabricOptions::default()
        };
        let sender = Node::open(Some("shm"), None, &small).expect("shm");
        let receiver = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let (a, _) = sender.add(Token(1), false).unwrap();
        let (b, _) = sender.add(Token(2), false).unwrap();
        let dest = sender.authenticate(a, &receiver.name).unwrap();
        // A takes every free page.
        let mut held = Vec::new();
        while let Some(page) = sender.page(a) {
            held.push(page);
        }
        assert!(!held.is_empty());
        assert!(sender.page(b).is_none(), "the pool is empty");
        let mut ready = Vec::new();
        sender.take_ready(&mut ready);
        assert!(!ready.contains(&Token(2)), "nothing returned yet");
        // A sends one; when it completes, B is readied.
        let mut page = held.pop().unwrap();
        page.fill(&[0, 1, b'x']).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while let Err((back, _)) = sender.send(a, page, None, dest, 1) {
            assert!(std::time::Instant::now() < until, "the send never went");
            receiver.progress(0);
            page = back;
        }
        loop {
            assert!(std::time::Instant::now() < until, "B was never readied");
            receiver.progress(0);
            sender.take_ready(&mut ready);
            if ready.contains(&Token(2)) {
                break;
            }
        }
        assert!(sender.page(b).is_some(), "the page B waited for");
    }

    /// While a connection waits for a page, one that has its share of the
    /// send pages in flight leaves a returning page to it, and takes pages
    /// freely again once nobody waits. (A PUB to sixteen subscribers over
    /// ofi+tcp at 64 KiB gave every returning page to the connections the
    /// loop drives first, and the last subscribers got nothing.)
    #[test]
    fn a_connection_with_its_share_in_flight_leaves_returning_pages_to_one_that_waits() {
        let small = FabricOptions {
            page_count: 16,
            ..FabricOptions::default()
        };
        let sender = Node::open(Some("shm"), None, &small).expect("shm");
        let receiver = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let (a, _) = sender.add(Token(1), false).unwrap();
        let (b, _) = sender.add(Token(2), false).unwrap();
        let dest = sender.authenticate(a, &receiver.name).unwrap();
        let share = sender.lock().send_share();
        assert_eq!(share, 6, "16 pages less 4 posted, between two connections");
        // A puts its share in flight (completions are not read meanwhile,
        // except by a send the provider refuses).
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while sender.lock().conns[&a].in_flight < share {
            let mut page = sender.page(a).expect("a free page");
            page.fill(&[0, 1, b'x']).unwrap();
            while let Err((back, _)) = sender.send(a, page, None, dest, 1) {
                assert!(std::time::Instant::now() < until, "the sends never went");
                receiver.progress(0);
                page = back;
            }
        }
        // A holds the rest of the pool; B finds none and waits.
        let mut held = Vec::new();
        while let Some(page) = sender.page(a) {
            held.push(page);
        }
        assert!(sender.page(b).is_none(), "the pool is empty");
        drop(held.pop());
        assert!(
            sender.page(a).is_none(),
            "A, with its share in flight, leaves the page to B"
        );
        let for_b = sender.page(b).expect("the page B waited for");
        drop(held.pop());
        let for_a = sender.page(a).expect("nobody waits: A takes it");
        // A connection that stops needing a page frees the others too.
        assert!(sender.page(b).is_none(), "the pool is empty again");
        drop(held.pop());
        assert!(sender.page(a).is_none(), "B waits again");
        sender.page_not_needed(b);
        assert!(sender.page(a).is_some(), "B no longer waits");
        drop((for_a, for_b));
    }

    #[test]
    fn the_largest_page_size_opens_and_an_unknown_provider_is_named() {
        // shm sends any size in one message (its max_msg_size), so the
        // largest page the option allows opens.
        let ok = FabricOptions {
            page_size: 64 << 20,
            page_count: 16,
            ..FabricOptions::default()
        };
        assert!(Node::open(Some("shm"), None, &ok).is_ok());
        let missing = Node::open(Some("no-such-provider"), None, &FabricOptions::default());
        let why = missing.expect_err("no such provider");
        assert!(
            why.contains("no-such-provider") || why.contains("No data"),
            "{why}"
        );
    }
}
