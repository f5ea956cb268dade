//! The fabric engine: a connection whose ZMTP control channel is a TCP
//! stream and whose messages move through a libfabric RDM endpoint in
//! registered pages (docs/fabric.md has the design and what is built).
//!
//! - [`Node`]: one I/O thread's fabric endpoint for one provider (and
//!   local address): the RDM endpoint, its registered page pool, and the
//!   fabric connections of that thread. It is a shared readiness source
//!   ([`Demux`]): the completion queues' wait descriptors are in the
//!   poller, and a completion's CQ data names the connection it is for.
//! - [`FabricEngine`]: one connection. The control channel is a
//!   [`StreamEngine`] that carries no messages: the ZMTP handshake (READY
//!   metadata carries the fabric address, the id to stamp pages with and
//!   the receive window), heartbeats, and credit returns (`CREDIT`
//!   commands). Messages and subscriptions are ZMTP frames written into
//!   pages; received pages are decoded in place, so message frames are
//!   `Bytes` slices of registered memory and a page returns to the pool
//!   when its last slice is dropped.
//!
//! Flow control: a sender has as many pages in flight to a peer as the
//! peer granted (its window); the receiver returns credits over the
//! control channel once it has taken half a window of pages. Completion
//! order is not send order on every provider (tcp;ofi_rxm completes large
//! messages late), so pages carry a sequence number and are reordered.
//!
//! With `fabric_encrypt` (both sides, CURVE required) each page begins
//! with a 24-byte seal (`reactor/seal.rs`): [`FabricEngine`] seals a page
//! when it ships, and the node opens it in place when the engine takes it
//! in sequence order, once the peer's `KEY` command gave the key. Such a
//! connection never lends frames for RMA reads: large frames stream
//! through sealed pages.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use fabriq_ofi::{FiAddr, Page, PagePool, PagedConfig, PagedEndpoint, SharedCounter};
use fabriq_zmtp::copies::{self, Site};
use fabriq_zmtp::frame::encode_header;
use fabriq_zmtp::{Command, Multipart, PeerInfo, ProtocolError};
use mio::Token;

use super::engine::{End, Engine, Input, Pulled, Reads, SocketWrites, StreamEngine};
use super::pages::{
    self, hex, Control, PageItem, PageReader, Rdv, CREDIT, FIN, KEY, PROP_ADDRESS, PROP_DOORBELL,
    PROP_ENCRYPT, PROP_ID, PROP_PAGE, PROP_RMA, PROP_SPINNERS, PROP_WINDOW, RDV_DONE, RING,
};
use super::seal::{self, Opener, Sealer};
use crate::options::{FabricOptions, Options};
use crate::pipe::{Item, Queue};
use crate::spin::Spin;
use crate::topics::Topics;
use crate::transport::{Demux, Poller};

/// Receives kept posted, at most (a quarter of the pool, if smaller).
const POSTED: usize = 128;
/// Pages a sender may have in flight to one peer (granted in READY), at
/// most (the receiver's posted receives, if fewer).
const WINDOW: u32 = 32;
/// How often a node without wait descriptors (shm on libfabric 1.17) is
/// polled while it has connections, as a backstop to the doorbell.
const POLL_EVERY: Duration = Duration::from_millis(1);
/// How soon a send the provider refused (EAGAIN) is tried again.
const RETRY: Duration = Duration::from_micros(200);
/// Room in each page beyond `fabric_page_size` for frame headers, so a
/// message body of exactly the page size (64 KiB by default, a common
/// size) fits one page and is received without a copy.
const HEADER_ROOM: usize = 64;
/// How long a receiver waits for the pages a FIN announced.
const FIN_WAIT: Duration = Duration::from_secs(5);
/// Free rendezvous buffers a node keeps for reuse, in bytes.
const READ_POOL_BYTES: usize = 64 << 20;
/// Frames a sender lends at most at once per connection.
const MAX_LENT: usize = 64;

/// A received page waiting to be taken in order.
#[derive(Debug)]
enum Arrived {
    /// A page of a connection that does not encrypt, frozen as received.
    Plain(Bytes),
    /// A sealed page: opened in place, in order, when it is taken.
    Sealed(Page),
}

impl From<Bytes> for Arrived {
    fn from(b: Bytes) -> Arrived {
        Arrived::Plain(b)
    }
}

/// What a node knows of one connection.
#[derive(Debug, Default)]
struct Conn {
    token: Option<Token>,
    /// Received pages by sequence number, until the engine takes them in
    /// order.
    arrived: BTreeMap<u32, Arrived>,
    /// The connection encrypts: its pages are sealed.
    sealed: bool,
    /// The opener for the peer's pages, once its KEY came (until then
    /// sealed pages wait in `arrived`, unread).
    opener: Option<Opener>,
    /// The sequence number the engine takes next (the pages before it
    /// were taken).
    next: u32,
    /// Pages the peer may still send: granted (in READY, then by CREDIT)
    /// and not arrived yet. A page beyond it is a peer ignoring its
    /// credits, and ends the connection.
    allowance: u32,
    /// Pages sent and not completed yet.
    in_flight: usize,
    /// A completion failed for this connection.
    failed: Option<String>,
    /// A rendezvous read that completed and was not taken yet.
    read: Option<Bytes>,
}

impl Conn {
    /// Checks a page with sequence number `seq` against what the peer was
    /// granted, and counts it. An honest peer's pages are each new and
    /// within its credits: it has sent `next ..= seq` at most, all within
    /// what it was granted, so `seq - next` is less than the pages it may
    /// still send plus those that arrived and wait to be taken.
    fn admit(&mut self, seq: u32) -> Result<(), String> {
        let ahead = seq.wrapping_sub(self.next);
        if ahead > u32::MAX / 2 || self.arrived.contains_key(&seq) {
            return Err(format!("the peer sent fabric page {seq} twice"));
        }
        if self.allowance == 0 || ahead as usize >= self.arrived.len() + self.allowance as usize {
            return Err(format!(
                "the peer sent fabric page {seq} beyond the credits it was granted"
            ));
        }
        self.allowance -= 1;
        Ok(())
    }
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
    conns: HashMap<u32, Conn>,
    next_id: u32,
    events: Vec<fabriq_ofi::Event>,
    /// Connections with news found outside [`Demux::take_ready`] (a send
    /// that reaped completions): handed out by the next one, which the
    /// loop runs before it sleeps.
    pending_ready: Vec<Token>,
}

/// One I/O thread's fabric endpoint for one provider. See the module
/// documentation.
pub(crate) struct Node {
    state: Mutex<NodeState>,
    /// The descriptors the loop sleeps on: the CQs' wait descriptors, or
    /// the doorbell's socket when the CQs have none.
    fds: Vec<RawFd>,
    /// The CQs have wait descriptors (else they are polled as a backstop).
    cq_waitable: bool,
    /// For CQs without wait descriptors (shm on 1.17): a datagram socket
    /// in the abstract namespace that peers on this host ring after they
    /// sent us pages, and its name for READY.
    doorbell: Option<(UnixDatagram, String)>,
    /// With a doorbell: how many of our sockets spin on this node now
    /// (peers read it and skip the ring while it is above zero).
    spinners: Option<Arc<SharedCounter>>,
    /// The socket this node rings its peers' doorbells with.
    ringer: OnceLock<Option<UnixDatagram>>,
    name: Vec<u8>,
    provider: String,
    page_size: usize,
    /// The pages each peer may have in flight to us.
    window: u32,
    /// The endpoint does RMA: frames larger than a page go by rendezvous.
    rma: bool,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({})", self.provider)
    }
}

impl Node {
    /// The key of the node for `provider` on `local` with `fabric`'s
    /// page geometry, among an I/O thread's local sources.
    fn key(provider: Option<&str>, local: &str, fabric: &FabricOptions) -> String {
        format!(
            "ofi:{}:{local}:{}x{}",
            provider.unwrap_or(""),
            fabric.page_count,
            fabric.page_size
        )
    }

    /// Opens the provider's first RDM endpoint on `local` (an address to
    /// bind to, for providers that have addresses), registers its pages
    /// and posts its receives.
    pub(crate) fn open(
        provider: Option<&str>,
        local: Option<&str>,
        fabric: &FabricOptions,
    ) -> Result<Node, String> {
        // `ofi://`: the first provider offered, named, so that an
        // address-based one is bound like `ofi+NAME://` would be.
        let first;
        let provider = match provider {
            Some(p) => Some(p),
            None => {
                let infos = fabriq_ofi::getinfo(&crate::transport::ofi::hints(None))
                    .map_err(|e| e.to_string())?;
                let info = infos.first().ok_or("fi_getinfo offered no endpoint")?;
                first = info.provider().split(';').next().unwrap_or("").to_string();
                Some(first.as_str())
            }
        };
        let mut hints = crate::transport::ofi::hints(provider);
        if let Some(ip) = local.filter(|ip| !ip.is_empty()) {
            // Providers with IP addresses bind where the control
            // connection is, so the fabric traffic takes the same path.
            if matches!(
                provider,
                Some("tcp") | Some("sockets") | Some("net") | Some("udp")
            ) {
                hints = hints.node(ip).source(true);
            }
        }
        // RMA (for rendezvous) where the provider has it; messages only
        // otherwise.
        let with_rma = hints
            .clone()
            .caps(fabriq_ofi::Caps::MSG | fabriq_ofi::Caps::RMA);
        let (info, rma) = match fabriq_ofi::getinfo(&with_rma)
            .ok()
            .and_then(|i| i.into_iter().next())
        {
            Some(info) => (info, true),
            None => {
                let info = fabriq_ofi::getinfo(&hints)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .next()
                    .ok_or("fi_getinfo offered no endpoint")?;
                (info, false)
            }
        };
        let page_size = usize::try_from(fabric.page_size).unwrap_or(0) + HEADER_ROOM;
        let pages = usize::try_from(fabric.page_count).unwrap_or(0);
        let max = info.max_msg_size();
        if max > 0 && page_size > max {
            return Err(format!(
                "fabric_page_size {} is more than provider {} sends in one message ({max})",
                fabric.page_size,
                info.provider()
            ));
        }
        let posted = POSTED.min(pages / 4).max(1);
        let window = WINDOW.min(posted as u32);
        let domain = fabriq_ofi::Domain::open_info(&info).map_err(|e| e.to_string())?;
        let config = PagedConfig {
            max_sends: pages,
            max_recvs: posted,
            ..PagedConfig::default()
        };
        let ep = PagedEndpoint::open(&domain, &info, config).map_err(|e| e.to_string())?;
        let pool = PagePool::new(&domain, pages, page_size)
            .map_err(|e| format!("cannot register {pages} pages of {page_size} bytes: {e}"))?;
        let name = ep.name().map_err(|e| e.to_string())?;
        let mut fds: Vec<RawFd> = ep.wait_fds().into_iter().flatten().collect();
        if !wait_fds_wake(&info.provider()) {
            // Its descriptors exist but never become readable: treat it
            // like a provider without them (doorbell and polling).
            fds.clear();
        }
        let cq_waitable = !fds.is_empty();
        let doorbell = if cq_waitable {
            None
        } else {
            match open_doorbell() {
                Ok((socket, name)) => {
                    fds.push(socket.as_raw_fd());
                    Some((socket, name))
                }
                Err(e) => {
                    tracing::debug!(
                        "no doorbell socket ({e}): peers ring over the control connection"
                    );
                    None
                }
            }
        };
        let spinners = doorbell
            .as_ref()
            .and_then(|_| match SharedCounter::create() {
                Ok(c) => Some(Arc::new(c)),
                Err(e) => {
                    tracing::debug!("no spinner count ({e}): peers ring every time");
                    None
                }
            });
        let mut state = NodeState {
            ep,
            reads: 0,
            domain: domain.clone(),
            reads_pool: fabriq_ofi::ReadPool::new(
                &domain,
                READ_POOL_BYTES,
                fabriq_ofi::ReadPool::DEFAULT_MAX_LEN,
            ),
            posted,
            pool,
            conns: HashMap::new(),
            next_id: 1,
            events: Vec::new(),
            pending_ready: Vec::new(),
        };
        state.post_receives();
        Ok(Node {
            state: Mutex::new(state),
            fds,
            cq_waitable,
            doorbell,
            spinners,
            ringer: OnceLock::new(),
            name,
            provider: info.provider(),
            page_size,
            window,
            rma,
        })
    }

    fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection id; pages stamped with it are `token`'s (and
    /// sealed if `sealed`).
    fn add(&self, token: Token, sealed: bool) -> u32 {
        let mut s = self.lock();
        let id = s.next_id;
        s.next_id = s.next_id.wrapping_add(1).max(1);
        s.conns.insert(
            id,
            Conn {
                token: Some(token),
                sealed,
                ..Conn::default()
            },
        );
        id
    }

    /// Takes the key the peer of `id` seals its pages with (its `KEY`
    /// command). Only one, and only on a connection that encrypts.
    fn set_key(&self, id: u32, key: &[u8]) -> Result<(), String> {
        let mut s = self.lock();
        let c = s.conns.get_mut(&id).ok_or("no such connection")?;
        if !c.sealed {
            return Err("the peer sent a page key (it encrypts the fabric data path, fabric_encrypt) and this socket does not: refused".into());
        }
        if c.opener.is_some() {
            return Err("the peer sent a second page key".into());
        }
        c.opener = Some(Opener::new(key)?);
        Ok(())
    }

    fn remove(&self, id: u32) {
        self.lock().conns.remove(&id);
    }

    /// Lets `id`'s peer send `pages` more pages (what we grant it in
    /// READY and in each CREDIT, recorded before the peer can see it).
    fn grant(&self, id: u32, pages: u32) {
        if let Some(c) = self.lock().conns.get_mut(&id) {
            c.allowance = c.allowance.saturating_add(pages);
        }
    }

    fn insert_peer(&self, address: &[u8]) -> Result<FiAddr, String> {
        self.lock()
            .ep
            .insert_peer(address)
            .map_err(|e| e.to_string())
    }

    /// Whether the pool has fewer free pages than the receives the node
    /// keeps posted (then received frames are copied out of their pages,
    /// [`PageReader::set_copy_out`]).
    fn pool_low(&self) -> bool {
        let s = self.lock();
        s.pool.available() < s.posted
    }

    /// A free page to fill, if the pool has one.
    fn page(&self) -> Option<Page> {
        self.lock().pool.get()
    }

    /// Sends `page` to `dest` stamped with `data`; gives the page back
    /// when the provider cannot take it now.
    fn send(&self, id: u32, page: Page, dest: FiAddr, data: u64) -> Result<(), Page> {
        let mut s = self.lock();
        match s.ep.send(page, dest, Some(data), u64::from(id)) {
            Ok(()) => {
                if let Some(c) = s.conns.get_mut(&id) {
                    c.in_flight += 1;
                }
                Ok(())
            }
            Err(refused) => {
                if !matches!(refused.error, fabriq_ofi::Error::Again { .. }) {
                    if let Some(c) = s.conns.get_mut(&id) {
                        c.failed = Some(refused.error.to_string());
                    }
                }
                // Progress, so the next try may go through.
                let mut ready = std::mem::take(&mut s.pending_ready);
                s.reap(&mut ready);
                s.pending_ready = ready;
                Err(refused.page)
            }
        }
    }

    /// Moves `id`'s pages from `next` on, in order, to `out`.
    fn take_in_order(&self, id: u32, next: &mut u32, out: &mut VecDeque<Bytes>) -> Option<String> {
        let mut s = self.lock();
        let c = s.conns.get_mut(&id)?;
        while let Some(page) = c.arrived.remove(next) {
            let bytes = match page {
                Arrived::Plain(bytes) => bytes,
                Arrived::Sealed(mut page) => {
                    // No key yet: the page waits (the KEY command and the
                    // pages take different paths).
                    let Some(opener) = c.opener.as_mut() else {
                        c.arrived.insert(*next, Arrived::Sealed(page));
                        break;
                    };
                    let len = page.len();
                    if let Err(why) = opener.open(&mut page.buffer_mut()[..len]) {
                        // Nothing of it is delivered; the page goes back
                        // to the pool and the connection ends.
                        c.failed = Some(why);
                        break;
                    }
                    // The frames start after the seal: still a slice of
                    // the registered page, uncopied.
                    page.into_bytes().slice(seal::OVERHEAD..)
                }
            };
            out.push_back(bytes);
            *next = next.wrapping_add(1);
        }
        c.next = *next;
        c.failed.clone()
    }

    /// Registers `bytes` for the peer to read.
    fn lend(&self, bytes: Bytes) -> Result<fabriq_ofi::Lent, String> {
        let domain = self.lock().domain.clone();
        fabriq_ofi::Lent::new(&domain, bytes).map_err(|e| e.to_string())
    }

    /// Starts reading `len` bytes the peer `src` lent, for connection
    /// `id`; the data comes back through [`Node::take_read`].
    fn read(&self, id: u32, src: FiAddr, len: usize, addr: u64, key: u64) -> Result<(), String> {
        let mut s = self.lock();
        let buf = s.reads_pool.get(len).map_err(|e| e.to_string())?;
        let mut buf = Some(buf);
        // EAGAIN: progress, then again (a bounded number of times).
        for _ in 0..1000 {
            match s
                .ep
                .read(buf.take().expect("buffer"), src, addr, key, u64::from(id))
            {
                Ok(()) => {
                    s.reads += 1;
                    // Providers that copy at once (shm's CMA) complete it
                    // here.
                    let mut ready = std::mem::take(&mut s.pending_ready);
                    s.reap(&mut ready);
                    s.pending_ready = ready;
                    return Ok(());
                }
                Err(refused) if matches!(refused.error, fabriq_ofi::Error::Again { .. }) => {
                    buf = Some(*refused.buffer);
                    let mut ready = std::mem::take(&mut s.pending_ready);
                    s.reap(&mut ready);
                    s.pending_ready = ready;
                }
                Err(refused) => return Err(refused.error.to_string()),
            }
        }
        Err("fi_read: the provider stayed busy".into())
    }

    /// The window of one connection: an equal share of the receives kept
    /// posted (at least one page, at most [`WINDOW`]).
    fn share(&self) -> u32 {
        let s = self.lock();
        let conns = s.conns.len().max(1) as u32;
        (s.posted as u32 / conns).clamp(1, self.window)
    }

    /// The rendezvous read of `id` that completed, if any.
    fn take_read(&self, id: u32) -> Option<Bytes> {
        self.lock().conns.get_mut(&id)?.read.take()
    }

    fn in_flight(&self, id: u32) -> usize {
        self.lock().conns.get(&id).map_or(0, |c| c.in_flight)
    }

    /// Reads the completion queues on the caller's thread (a spinning
    /// socket). Returns whether other connections than `id` have news,
    /// which the I/O thread must then hand out.
    fn progress(&self, id: u32) -> bool {
        let mut s = self.lock();
        let mut ready = std::mem::take(&mut s.pending_ready);
        s.reap(&mut ready);
        let mine = s.conns.get(&id).and_then(|c| c.token);
        ready.retain(|t| Some(*t) != mine);
        let others = !ready.is_empty();
        s.pending_ready = ready;
        others
    }
}

impl NodeState {
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

    /// Reads the completion queues (which also drives progress on
    /// manual-progress providers) and files each completion under its
    /// connection; the connections with news go to `ready`.
    fn reap(&mut self, ready: &mut Vec<Token>) {
        let mut events = std::mem::take(&mut self.events);
        loop {
            events.clear();
            match self.ep.poll(&mut events, 256) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("fabric completion queue: {e}");
                    break;
                }
            }
            for event in events.drain(..) {
                self.file(event, ready);
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

    fn file(&mut self, event: fabriq_ofi::Event, ready: &mut Vec<Token>) {
        use fabriq_ofi::Event::*;
        match event {
            Received { page, data, .. } => {
                let Some(data) = data else {
                    tracing::debug!("a fabric page without CQ data: dropped");
                    return;
                };
                let (id, seq) = ((data >> 32) as u32, data as u32);
                if let Some(c) = self.conns.get_mut(&id) {
                    if c.failed.is_none() {
                        if let Err(why) = c.admit(seq) {
                            // The page goes back to the pool; the engine
                            // ends the connection at its next turn.
                            c.failed = Some(why);
                        } else if c.sealed {
                            c.arrived.insert(seq, Arrived::Sealed(page));
                        } else {
                            c.arrived.insert(seq, Arrived::Plain(page.into_bytes()));
                        }
                    }
                    ready.extend(c.token);
                }
            }
            // A send's tag is the id of the connection it was for.
            Sent { page, tag, .. } => {
                drop(page);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.in_flight = c.in_flight.saturating_sub(1);
                    ready.extend(c.token);
                }
            }
            SendFailed {
                page, tag, error, ..
            } => {
                drop(page);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.in_flight = c.in_flight.saturating_sub(1);
                    c.failed = Some(error.to_string());
                    ready.extend(c.token);
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
                    ready.extend(c.token);
                }
            }
            ReadFailed { tag, error } => {
                self.reads = self.reads.saturating_sub(1);
                if let Some(c) = self.conns.get_mut(&(tag as u32)) {
                    c.failed = Some(format!("a rendezvous read failed: {error}"));
                    ready.extend(c.token);
                }
            }
        }
    }
}

impl Demux for Node {
    fn fds(&self) -> Vec<RawFd> {
        self.fds.clone()
    }

    fn take_ready(&self, out: &mut Vec<Token>) {
        if let Some((socket, _)) = &self.doorbell {
            // Edge-triggered: drain every ring.
            let mut buf = [0u8; 64];
            while socket.recv(&mut buf).is_ok() {}
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

impl Node {
    /// Rings the doorbell named `name` (a peer's, from its READY).
    /// Returns false if that cannot be done (then the control connection
    /// carries the ring).
    fn ring(&self, name: &str) -> bool {
        let Some(ringer) = self.ringer.get_or_init(|| {
            let s = UnixDatagram::unbound().ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        }) else {
            return false;
        };
        let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
            return false;
        };
        match ringer.send_to_addr(&[1], &addr) {
            Ok(_) => true,
            // A full doorbell has rings unread: its owner will wake.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            Err(_) => false,
        }
    }
}

/// Whether a provider's CQ wait descriptors are woken by arriving data.
/// psm2's are not: it makes no progress while the application sleeps in
/// epoll (ofiwg/libfabric#4600, closed "won't fix"); psm3 and opx share
/// its progress model. `provider` is as `fi_info` names it (`a;b` for a
/// layered one: every layer counts).
fn wait_fds_wake(provider: &str) -> bool {
    !provider
        .split(';')
        .any(|p| matches!(p, "psm2" | "psm3" | "opx"))
}

/// This host's tag: the first 8 characters of its boot id.
fn host_tag() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    boot.trim().get(..8).unwrap_or("0").to_string()
}

/// Maps a peer's count of spinners from its READY value `HOST:PID:FD`, if
/// it is on this host and lets us (else the peer is rung every time).
fn open_spinners(at: &str) -> Option<SharedCounter> {
    let mut parts = at.split(':');
    let (host, pid, fd) = (parts.next()?, parts.next()?, parts.next()?);
    if host != host_tag() || parts.next().is_some() {
        return None;
    }
    let (pid, fd) = (pid.parse().ok()?, fd.parse().ok()?);
    SharedCounter::open(pid, fd)
        .map_err(|e| tracing::debug!("cannot map the peer's spinner count {at}: {e}"))
        .ok()
}

/// A nonblocking datagram socket bound to a unique abstract name.
fn open_doorbell() -> io::Result<(UnixDatagram, String)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // The boot id makes the name unique across hosts too: a peer on
    // another host (psm2, opx) cannot reach it and rings over the control
    // connection, rather than ringing a same-named socket of its own host.
    let name = format!(
        "fabriq-ofi-{}-{}-{}",
        host_tag(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let socket = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
    socket.set_nonblocking(true)?;
    Ok((socket, name))
}

/// The peer's side of the fabric, learned from its READY.
#[derive(Debug, Clone, Copy)]
struct Remote {
    addr: FiAddr,
    /// The id the peer's node files our pages under.
    id: u32,
}

/// One fabric connection. See the module documentation.
pub(crate) struct FabricEngine {
    control: StreamEngine,
    node: Arc<Node>,
    /// Our id: the peer stamps its pages with it.
    id: u32,
    remote: Option<Remote>,
    /// Pages we may still send.
    credits: u32,
    /// The window the peer granted in its READY: the most credits it
    /// ever lets us hold (a CREDIT beyond it ends the connection).
    peer_window: u32,
    send_seq: u32,
    /// How this connection sends (the socket's options when it started).
    fabric: FabricOptions,
    /// Whether the socket's thread sends itself (it spins, sends
    /// unbuffered, or is REQ/REP, which have one message at a time to
    /// send and nothing to coalesce).
    eager: bool,
    /// Whether the socket spins (its receives read the CQ themselves).
    spins: bool,
    /// A spinning socket's spells and the node's count of spinners, which
    /// `pull` raises once per spell (nodes with a doorbell only).
    spell: Option<(Arc<Spin>, Arc<SharedCounter>)>,
    /// The spell last counted.
    counted_spell: u64,
    /// The peer's count of spinners, mapped read-only (same host only):
    /// no ring while it is above zero.
    peer_spinners: Option<SharedCounter>,
    /// The bytes of the frames that did not fit the page being filled, in
    /// order: small encoded headers and the message bodies themselves
    /// (copied once, into pages).
    chunks: VecDeque<Bytes>,
    chunk_bytes: usize,
    /// Scratch for encoding frame headers and commands.
    scratch: BytesMut,
    /// The page being filled.
    filling: Option<Page>,
    /// Buffered mode with a flush interval: when the page being filled
    /// goes even if it is not full.
    flush_at: Option<Instant>,
    /// A page that could not be sent yet (no credit, or the provider said
    /// EAGAIN).
    unsent_page: Option<Page>,
    /// The peer's page size, and whether it wants its doorbell rung (by
    /// this name; empty: over the control connection).
    peer_page: usize,
    peer_doorbell: Option<String>,
    /// Pages sent since the last ring of the peer's doorbell.
    unrung: bool,
    /// Both nodes do RMA (and the connection does not encrypt): frames
    /// larger than a page are lent, not copied.
    rendezvous: bool,
    /// `fabric_encrypt`: seals our pages (each then begins with
    /// `seal_room` bytes for the seal).
    sealer: Option<Sealer>,
    /// Our sending key, until it went to the peer in a KEY command.
    page_key: Option<zeroize::Zeroizing<[u8; seal::KEY_LEN]>>,
    /// Bytes reserved at the start of each page: [`seal::OVERHEAD`] when
    /// sealing, else 0.
    seal_room: usize,
    /// Frames lent to the peer, by id, until it says it read them.
    lent: HashMap<u32, fabriq_ofi::Lent>,
    lent_bytes: usize,
    next_lent: u32,
    /// The rendezvous frame being read: its id at the sender and whether
    /// more frames of its message follow.
    reading: Option<(u32, bool)>,
    recv_seq: u32,
    /// Pages taken in order and not yet decoded (the front one partly).
    received: VecDeque<Bytes>,
    /// Cuts `received` into frames and messages.
    pages: PageReader,
    /// The socket's MAXMSGSIZE, for frames read by rendezvous.
    max_data: Option<u64>,
    /// Pages decoded since credits were last returned.
    consumed: u32,
    /// Pages the peer was allowed to send us since then (its window when
    /// credits were last returned).
    granted: u32,
    /// The window we granted in READY: no later grant goes beyond it, so
    /// the peer can hold its credits to it.
    announced: u32,
    /// SUB and XSUB send subscriptions, which the session's topic list
    /// must see: they are never written from the socket's thread.
    subscriber: bool,
    failed: Option<String>,
    /// When to try a refused send again (the provider said EAGAIN while
    /// nothing of ours was in flight to bring a completion).
    retry_at: Option<Instant>,
    /// The pages the peer said it sent, in its FIN.
    peer_fin: Option<u32>,
    /// The control connection ended after a FIN: how it ended, and until
    /// when the pages before the FIN are waited for.
    draining: Option<(End, Instant)>,
}

impl std::fmt::Debug for FabricEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FabricEngine({:?}, id {})", self.node, self.id)
    }
}

/// What [`FabricEngine::fill`] did.
enum Filled {
    /// Nothing is left to put in pages.
    Drained,
    /// A page is ready to send.
    Page,
    /// The pool has no free page: pages come back as sends complete and
    /// as the application drops received messages.
    NoPage,
}

impl FabricEngine {
    /// The READY metadata that tells the peer how to reach us, granting
    /// it `window` pages.
    fn metadata(node: &Node, id: u32, window: u32, encrypt: bool) -> Vec<(String, Bytes)> {
        let mut props = vec![
            (PROP_ADDRESS.into(), Bytes::from(hex(&node.name))),
            (PROP_ID.into(), Bytes::from(id.to_string())),
            (PROP_WINDOW.into(), Bytes::from(window.to_string())),
            (PROP_PAGE.into(), Bytes::from(node.page_size.to_string())),
        ];
        if encrypt {
            props.push((PROP_ENCRYPT.into(), Bytes::from_static(b"1")));
        }
        if node.rma {
            props.push((PROP_RMA.into(), Bytes::from_static(b"1")));
        }
        if !node.cq_waitable {
            // The doorbell's name, or (without one) an empty value: ring
            // over the control connection.
            let name = node.doorbell.as_ref().map_or("", |(_, n)| n.as_str());
            props.push((PROP_DOORBELL.into(), Bytes::from(name.to_string())));
            if let Some(fd) = node.spinners.as_ref().and_then(|c| c.fd()) {
                let at = format!("{}:{}:{fd}", host_tag(), std::process::id());
                props.push((PROP_SPINNERS.into(), Bytes::from(at)));
            }
        }
        props
    }

    /// An engine for a connected control stream, with its node (made for
    /// this I/O thread on first use) joined to the poller.
    #[allow(clippy::too_many_arguments)] // what a connection starts from
    pub(crate) fn start(
        stream: Box<dyn crate::transport::Stream>,
        mut config: fabriq_zmtp::Config,
        provider: Option<&str>,
        opts: &Options,
        spin: &Arc<Spin>,
        token: Token,
        poller: &mut Poller<'_>,
        now: Instant,
    ) -> Result<FabricEngine, String> {
        let local = stream.local_address();
        let fabric = opts.fabric;
        if fabric.encrypt && opts.security.mechanism != crate::Mechanism::ZMQ_CURVE {
            // Bind and connect refuse this already (transport/ofi.rs);
            // never send a page key over a control connection in clear.
            return Err("fabric_encrypt needs CURVE on the control connection".into());
        }
        let key = Node::key(provider, &local, &fabric);
        let node: Arc<Node> = poller.local(&key, || Node::open(provider, Some(&local), &fabric))?;
        let demux: Arc<dyn Demux> = node.clone();
        poller.join(&demux).map_err(|e| e.to_string())?;
        let id = node.add(token, fabric.encrypt);
        let granted = node.share();
        node.grant(id, granted);
        let (sealer, page_key) = match fabric.encrypt {
            true => {
                let (sealer, key) = Sealer::generate();
                (Some(sealer), Some(key))
            }
            false => (None, None),
        };
        for (name, value) in Self::metadata(&node, id, granted, fabric.encrypt) {
            config
                .metadata
                .push(&name, value)
                .map_err(|e| e.to_string())?;
        }
        let publisher = config.socket_type.is_publisher();
        let lock_step = matches!(
            config.socket_type,
            fabriq_zmtp::SocketType::Req | fabriq_zmtp::SocketType::Rep
        );
        let subscriber = matches!(
            config.socket_type,
            fabriq_zmtp::SocketType::Sub | fabriq_zmtp::SocketType::XSub
        );
        let max_data = config.max_msg_size;
        let conn = fabriq_zmtp::Connection::new(config, now).map_err(|e| e.to_string())?;
        let mut control = StreamEngine::new(stream, conn, SocketWrites::Never);
        control.keep_commands(true);
        let spell = match (&node.spinners, opts.spin_us > 0) {
            (Some(c), true) => Some((spin.clone(), c.clone())),
            _ => None,
        };
        Ok(FabricEngine {
            control,
            node,
            id,
            remote: None,
            credits: 0,
            peer_window: 0,
            send_seq: 0,
            fabric,
            eager: opts.spin_us > 0 || !fabric.buffered || lock_step,
            spins: opts.spin_us > 0,
            spell,
            counted_spell: 0,
            peer_spinners: None,
            chunks: VecDeque::new(),
            chunk_bytes: 0,
            scratch: BytesMut::new(),
            filling: None,
            flush_at: None,
            unsent_page: None,
            peer_page: 0,
            peer_doorbell: None,
            unrung: false,
            rendezvous: false,
            seal_room: if sealer.is_some() { seal::OVERHEAD } else { 0 },
            sealer,
            page_key,
            lent: HashMap::new(),
            lent_bytes: 0,
            next_lent: 0,
            reading: None,
            recv_seq: 0,
            received: VecDeque::new(),
            pages: PageReader::new(max_data, publisher),
            max_data,
            consumed: 0,
            granted,
            announced: granted,
            subscriber,
            failed: None,
            retry_at: None,
            peer_fin: None,
            draining: None,
        })
    }

    /// Reads the peer's fabric address, id, window and page size from its
    /// READY.
    fn learn_peer(&mut self) -> Result<(), String> {
        let props = &self
            .control
            .peer()
            .ok_or("no peer after the handshake")?
            .properties;
        let peer = pages::parse_peer(props)?;
        let encrypt = self.sealer.is_some();
        if peer.encrypt != encrypt {
            let (peer_does, we_do) = match encrypt {
                true => ("does not", "does"),
                false => ("does", "does not"),
            };
            return Err(format!(
                "the peer {peer_does} encrypt the fabric data path (fabric_encrypt) and this socket {we_do}: refused before any page was sent"
            ));
        }
        let addr = self.node.insert_peer(&peer.address)?;
        self.remote = Some(Remote { addr, id: peer.id });
        self.credits = peer.window;
        self.peer_window = peer.window;
        self.peer_page = peer.page.min(self.node.page_size);
        self.peer_spinners = match (&peer.doorbell, &peer.spinners) {
            (Some(_), Some(at)) => open_spinners(at),
            _ => None,
        };
        self.peer_doorbell = peer.doorbell;
        // Sealed pages only: a lent frame would be read in clear.
        self.rendezvous = self.node.rma && peer.rma && !encrypt;
        if let Some(key) = self.page_key.take() {
            // Our key goes before any page can (`remote` is set only now),
            // inside CURVE's boxes; the Bytes zeroize it when dropped.
            self.control
                .send_command(KEY, Bytes::from_owner(key))
                .map_err(|e| format!("cannot send the page key: {e}"))?;
        }
        Ok(())
    }

    /// Returns credits for the pages decoded since the last return.
    ///
    /// The peer may send `granted - consumed` more pages. It is topped up
    /// to this connection's share of the node's posted receives (see
    /// [`Node::share`]) once that has fallen to half the share: with many
    /// peers each gets a smaller window, so together they stay within the
    /// receives posted (once the windows granted before a peer joined
    /// have been used).
    fn return_credits(&mut self, force: bool) {
        let held = self.granted.saturating_sub(self.consumed);
        let share = self.node.share().min(self.announced);
        if self.consumed == 0 || held >= share || (!force && held > share / 2) {
            return;
        }
        let give = share - held;
        let body = Bytes::copy_from_slice(&give.to_be_bytes());
        // Counted before the peer can see it (it answers with pages).
        self.node.grant(self.id, give);
        if self.control.send_command(CREDIT, body).is_ok() {
            self.granted = share;
            self.consumed = 0;
        }
    }

    /// Applies the CREDIT and FIN commands the peer sent on the control
    /// channel. Returns whether it rang the doorbell.
    fn take_commands(&mut self) -> bool {
        let mut rung = false;
        for (name, body) in self.control.take_commands() {
            if name == KEY {
                if let Err(why) = self.node.set_key(self.id, &body) {
                    self.failed = Some(why);
                }
                continue;
            }
            match pages::parse_control(&name, &body) {
                Some(Control::Ring) => rung = true,
                Some(Control::Credit(n)) => {
                    let credits = self.credits.saturating_add(n);
                    if credits > self.peer_window {
                        self.failed = Some(format!(
                            "the peer returned {n} credits, more than its window of {} pages allows",
                            self.peer_window
                        ));
                    }
                    self.credits = credits.min(self.peer_window);
                }
                Some(Control::RdvDone(n)) => {
                    if let Some(lent) = self.lent.remove(&n) {
                        self.lent_bytes -= lent.len();
                    }
                }
                Some(Control::Fin(n)) => self.peer_fin = Some(n),
                None => {}
            }
        }
        rung
    }

    /// Whether every page the peer's FIN announced has been taken.
    fn drained(&self) -> bool {
        self.peer_fin
            .map_or(true, |n| self.recv_seq.wrapping_sub(n) < u32::MAX / 2)
            && self.received.is_empty()
            && !self.pages.straddling()
    }

    /// Decodes received pages into `inbound` until it is full.
    ///
    /// A conflating queue gets only the newest message of what one call
    /// decoded, as the stream engine conflates per read: pushing each one
    /// would wake the socket at the first and let it take them one by one
    /// while the rest are still being decoded.
    fn deliver(&mut self, inbound: &Queue) -> Result<usize, ProtocolError> {
        let mut newest = None;
        let result = self.deliver_into(inbound, &mut newest);
        if let Some(msg) = newest {
            inbound.push(Item::Msg(msg));
        }
        result
    }

    fn deliver_into(
        &mut self,
        inbound: &Queue,
        newest: &mut Option<Multipart>,
    ) -> Result<usize, ProtocolError> {
        let conflate = inbound.is_conflate();
        let mut delivered = 0;
        if !self.received.is_empty() {
            self.pages.set_copy_out(self.node.pool_low());
        }
        loop {
            if !inbound.has_room() {
                return Ok(delivered);
            }
            if let Some((lent_id, more)) = self.reading {
                // Frames after a rendezvous wait for its read.
                let Some(data) = self.node.take_read(self.id) else {
                    return Ok(delivered);
                };
                self.reading = None;
                let body = Bytes::copy_from_slice(&lent_id.to_be_bytes());
                let _ = self.control.send_command(RDV_DONE, body);
                if let Some(msg) = self.pages.push_part(data, more) {
                    if conflate {
                        *newest = Some(msg);
                    } else {
                        inbound.push(Item::Msg(msg));
                    }
                    delivered += 1;
                }
                continue;
            }
            let item = self.pages.next(&mut self.received, &mut self.consumed)?;
            let item = match item {
                None => return Ok(delivered),
                Some(PageItem::Rdv(rdv)) => {
                    self.start_read(rdv)?;
                    continue;
                }
                Some(PageItem::Msg(msg)) if conflate => {
                    *newest = Some(msg);
                    delivered += 1;
                    continue;
                }
                Some(PageItem::Msg(msg)) => Item::Msg(msg),
                Some(PageItem::Subscribe(t)) => Item::Subscribe(t),
                Some(PageItem::Cancel(t)) => Item::Cancel(t),
            };
            inbound.push(item);
            delivered += 1;
        }
    }

    /// Starts the read a rendezvous frame asks for.
    fn start_read(&mut self, rdv: Rdv) -> Result<(), ProtocolError> {
        let bad = pages::bad_rdv;
        let Rdv {
            id,
            len,
            addr,
            key,
            more,
        } = rdv;
        let remote = self.remote.ok_or_else(bad)?;
        let len = usize::try_from(len).map_err(|_| bad())?;
        if !self.rendezvous || self.decoder_refuses(len) {
            return Err(bad());
        }
        if let Err(why) = self.node.read(self.id, remote.addr, len, addr, key) {
            self.failed = Some(format!("rendezvous read of {len} bytes: {why}"));
        }
        // The read may need the sender's progress (shm's CMA reads are
        // served by the peer): ring it like pages would.
        self.unrung = true;
        self.ring();
        self.reading = Some((id, more));
        Ok(())
    }

    /// Whether a frame of `len` bytes is over the socket's MAXMSGSIZE.
    fn decoder_refuses(&self, len: usize) -> bool {
        self.max_data.is_some_and(|max| len as u64 > max)
    }

    /// Sends what `outbound` holds, in pages, as credits and the provider
    /// allow. Returns whether a page went.
    fn flow_out(&mut self, outbound: Option<&Queue>, mut subs: Option<&mut Topics>) -> bool {
        let Some(remote) = self.remote else {
            return false;
        };
        let mut sent = false;
        loop {
            // First the page that is waiting.
            if let Some(page) = self.unsent_page.take() {
                if self.credits == 0 {
                    self.unsent_page = Some(page);
                    break;
                }
                let data = (u64::from(remote.id) << 32) | u64::from(self.send_seq);
                match self.node.send(self.id, page, remote.addr, data) {
                    Ok(()) => {
                        self.credits -= 1;
                        self.send_seq = self.send_seq.wrapping_add(1);
                        sent = true;
                    }
                    Err(page) => {
                        self.unsent_page = Some(page);
                        self.retry_at = Some(Instant::now() + RETRY);
                        break;
                    }
                }
            }
            match self.fill(outbound, subs.as_deref_mut()) {
                Filled::Page => continue,
                Filled::Drained | Filled::NoPage => break,
            }
        }
        if sent {
            self.unrung = true;
        }
        self.ring();
        sent
    }

    /// Rings the peer's doorbell if it has one and we sent it something
    /// since the last ring: one ring for the pages of a turn; the peer has
    /// no wait descriptor to be woken by them.
    fn ring(&mut self) {
        if self.unrung && self.peer_spinners.as_ref().is_some_and(|c| c.load() > 0) {
            // A socket of the peer spins on its node and reaps our pages.
            self.unrung = false;
            return;
        }
        if let Some(name) = self.peer_doorbell.as_deref().filter(|_| self.unrung) {
            if (!name.is_empty() && self.node.ring(name))
                || self.control.send_command(RING, Bytes::new()).is_ok()
            {
                self.unrung = false;
            }
        }
    }

    /// Fills the current page from the chunks left over and then from
    /// `outbound`, until a page is ready to send ([`Filled::Page`]: it is
    /// in `unsent_page`) or nothing is left.
    fn fill(&mut self, outbound: Option<&Queue>, mut subs: Option<&mut Topics>) -> Filled {
        let limit = self.peer_page;
        loop {
            if self.filling.is_none() {
                // (A pop, not a look at the length: an empty pop asks the
                // pipe to wake us when the socket sends.)
                let item = match self.chunks.is_empty() {
                    true => match outbound.and_then(Queue::pop) {
                        Some(item) => Some(item),
                        None => return Filled::Drained,
                    },
                    false => None,
                };
                self.filling = self.node.page();
                if let Some(page) = self.filling.as_mut() {
                    // Room for the seal, written when the page ships.
                    page.set_len(self.seal_room);
                }
                if let Some(item) = item {
                    // Into the new page, or into chunks if there is none
                    // (an empty page never asks to be shipped first).
                    let _ = self.stage(item, subs.as_deref_mut());
                }
                if self.filling.is_none() {
                    return Filled::NoPage;
                }
                continue;
            }
            let page = self.filling.as_mut().expect("filling");
            let mut len = page.len();
            // The bytes left over from a message that did not fit.
            while let Some(chunk) = self.chunks.front_mut() {
                let n = chunk.len().min(limit - len);
                page.buffer_mut()[len..len + n].copy_from_slice(&chunk[..n]);
                copies::count(Site::Page, n);
                len += n;
                self.chunk_bytes -= n;
                if n == chunk.len() {
                    self.chunks.pop_front();
                } else {
                    chunk.advance(n);
                }
                if len == limit {
                    break;
                }
            }
            page.set_len(len);
            if len == limit {
                return self.ship();
            }
            if len > self.seal_room && !self.fabric.buffered {
                // Unbuffered: each message is sent as soon as it is in.
                return self.ship();
            }
            // The next item: straight into the page when it fits (and
            // while the peer has not read too many lent frames yet).
            let lent_full = self.lent.len() >= MAX_LENT;
            let Some(item) = outbound.filter(|_| !lent_full).and_then(Queue::pop) else {
                // Nothing queued: a partly filled page goes now, unless a
                // flush interval lets it wait for more.
                if len == self.seal_room {
                    return Filled::Drained;
                }
                if self.fabric.buffered && self.fabric.flush_us > 0 {
                    let now = Instant::now();
                    let wait = Duration::from_micros(self.fabric.flush_us as u64);
                    if now < *self.flush_at.get_or_insert(now + wait) {
                        return Filled::Drained;
                    }
                }
                return self.ship();
            };
            if self.stage(item, subs.as_deref_mut()) {
                // It fits a page of its own but not what is left of this
                // one: this one goes, so the item does not straddle two
                // (the receiver then delivers it from the page, uncopied).
                return self.ship();
            }
        }
    }

    /// Moves the page being filled to `unsent_page`.
    fn ship(&mut self) -> Filled {
        self.flush_at = None;
        match self.filling.take() {
            Some(mut page) if page.len() > self.seal_room => {
                debug_assert!(self.unsent_page.is_none());
                if let Some(sealer) = self.sealer.as_mut() {
                    // Pages are sealed in the order they are sent (one
                    // unsent page at a time), the order the peer opens
                    // them in.
                    let len = page.len();
                    if let Err(why) = sealer.seal(&mut page.buffer_mut()[..len]) {
                        self.failed = Some(why);
                        return Filled::Drained;
                    }
                }
                self.unsent_page = Some(page);
                Filled::Page
            }
            other => {
                self.filling = other;
                Filled::Drained
            }
        }
    }

    /// Encodes `item`: into the page being filled when it fits, else into
    /// chunks that [`FabricEngine::fill`] copies on. Returns true when the
    /// item went to chunks but would fit an empty page.
    fn stage(&mut self, item: Item, subs: Option<&mut Topics>) -> bool {
        let scratch = &mut self.scratch;
        scratch.clear();
        let parts: Multipart = match item {
            Item::Msg(parts) => parts,
            Item::Subscribe(t) => {
                if let Some(s) = subs {
                    s.add(&t);
                }
                encode_command(scratch, Command::Subscribe(t));
                Multipart::new()
            }
            Item::Cancel(t) => {
                if let Some(s) = subs {
                    s.remove(&t);
                }
                encode_command(scratch, Command::Cancel(t));
                Multipart::new()
            }
        };
        let size: usize = scratch.len()
            + parts
                .iter()
                .map(|p| p.len() + if p.len() > 255 { 9 } else { 2 })
                .sum::<usize>();
        // The common case: the whole item fits the page being filled.
        if let Some(page) = self.filling.as_mut().filter(|_| self.chunks.is_empty()) {
            let len = page.len();
            if len + size <= self.peer_page {
                let last = parts.len().saturating_sub(1);
                let mut at = len;
                let mut put = |bytes: &[u8], page: &mut Page| {
                    page.buffer_mut()[at..at + bytes.len()].copy_from_slice(bytes);
                    at += bytes.len();
                };
                put(scratch, page);
                for (i, part) in parts.iter().enumerate() {
                    scratch.clear();
                    encode_header(scratch, part.len(), i < last, false);
                    put(scratch, page);
                    put(part, page);
                    copies::count(Site::Page, part.len());
                }
                page.set_len(at);
                return false;
            }
        }
        let straddles = self
            .filling
            .as_ref()
            .is_some_and(|p| p.len() > self.seal_room)
            && self.chunks.is_empty()
            && size <= self.peer_page - self.seal_room;
        // Frames larger than a page are lent to the peer, which reads them
        // straight into their final buffer (only messages have parts; a
        // subscription's command is in scratch).
        if self.rendezvous && parts.iter().any(|p| self.lends(p)) {
            self.lend_parts(parts);
            return false;
        }
        // Otherwise the item's bytes wait in chunks, the bodies uncopied.
        if !self.scratch.is_empty() {
            let command = self.scratch.split().freeze();
            self.push_chunk(command);
        }
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.into_iter().enumerate() {
            encode_header(&mut self.scratch, part.len(), i < last, false);
            let header = self.scratch.split().freeze();
            self.push_chunk(header);
            self.push_chunk(part.into_bytes());
        }
        straddles
    }

    /// Whether `part` goes by rendezvous.
    fn lends(&self, part: &[u8]) -> bool {
        part.len() > self.peer_page.saturating_sub(HEADER_ROOM)
    }

    /// Lends the large parts of a message, staging an RDV frame for each
    /// and the other frames as they are, in order. A part that cannot be
    /// registered is streamed instead.
    fn lend_parts(&mut self, parts: Multipart) {
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.into_iter().enumerate() {
            let more = i < last;
            if self.lends(&part) {
                match self.node.lend(part.to_bytes()) {
                    Ok(lent) => {
                        let id = self.next_lent;
                        self.next_lent = self.next_lent.wrapping_add(1);
                        let body = Rdv {
                            id,
                            len: lent.len() as u64,
                            addr: lent.rma_addr(),
                            key: lent.key(),
                            more,
                        }
                        .encode();
                        encode_header(&mut self.scratch, body.len(), false, true);
                        let header = self.scratch.split().freeze();
                        self.push_chunk(header);
                        self.push_chunk(body.freeze());
                        self.lent_bytes += lent.len();
                        self.lent.insert(id, lent);
                        continue;
                    }
                    Err(why) => {
                        tracing::debug!("cannot lend {} bytes ({why}): streamed", part.len());
                    }
                }
            }
            encode_header(&mut self.scratch, part.len(), more, false);
            let header = self.scratch.split().freeze();
            self.push_chunk(header);
            self.push_chunk(part.into_bytes());
        }
    }

    fn push_chunk(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.chunk_bytes += chunk.len();
            self.chunks.push_back(chunk);
        }
    }
}

impl Engine for FabricEngine {
    fn ready(&mut self, readable: bool, writable: bool) {
        self.control.ready(readable, writable);
    }

    fn hung_up(&mut self) {
        self.control.hung_up();
    }

    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, now: Instant) -> (Input, usize) {
        if let Some(why) = self.failed.take() {
            return (Input::Ended(End::Io(io::Error::other(why))), 0);
        }
        // After the control connection ended behind a FIN, only the pages
        // the FIN announced are still taken.
        let input = if self.draining.is_some() {
            Input::Idle
        } else {
            let (input, _) = self.control.read(None, reads, now);
            if self.take_commands() {
                // The peer sent pages and we have no wait descriptor: read
                // the completion queue now rather than after this turn
                // (news for other connections is handed out before the
                // loop sleeps).
                self.node.progress(self.id);
            }
            input
        };
        if let Some(why) = self.failed.take() {
            // A CREDIT beyond the window (take_commands).
            return (Input::Ended(End::Io(io::Error::other(why))), 0);
        }
        let input = match input {
            Input::Ended(end) if self.peer_fin.is_some() && self.remote.is_some() => {
                self.draining = Some((end, now + FIN_WAIT));
                Input::Idle
            }
            other => other,
        };
        match input {
            Input::Handshake => {
                if let Err(why) = self.learn_peer() {
                    let why = format!("fabric handshake: {why}");
                    return (Input::Ended(End::Io(io::Error::other(why))), 0);
                }
                return (Input::Handshake, 0);
            }
            Input::Ended(end) => return (Input::Ended(end), 0),
            // The security handshake runs on the control channel: the
            // session's ZAP client answers through `auth_reply`.
            Input::Auth(request) => return (Input::Auth(request), 0),
            Input::Idle | Input::Full | Input::More => {}
        }
        if self.remote.is_none() {
            return (input, 0);
        }
        if let Some(why) = self
            .node
            .take_in_order(self.id, &mut self.recv_seq, &mut self.received)
        {
            return (Input::Ended(End::Io(io::Error::other(why))), 0);
        }
        let Some(q) = inbound else {
            return (Input::Idle, 0);
        };
        match self.deliver(q) {
            Ok(n) => {
                if self.draining.is_some() && self.drained() {
                    let (end, _) = self.draining.take().expect("draining");
                    return (Input::Ended(end), n);
                }
                self.return_credits(false);
                let full = !q.has_room() && !self.received.is_empty();
                (if full { Input::Full } else { Input::Idle }, n)
            }
            Err(e) => (Input::Ended(End::Protocol(e)), 0),
        }
    }

    fn write(&mut self, outbound: Option<&Queue>, subs: Option<&mut Topics>) -> io::Result<()> {
        if self.draining.is_some() {
            // The peer is gone: only its last pages are still taken.
            return Ok(());
        }
        self.flow_out(outbound, subs);
        self.control.write(None, None)
    }

    fn unsent(&self) -> usize {
        self.control.unsent()
            + self.chunk_bytes
            + self
                .filling
                .as_ref()
                .map_or(0, |p| p.len().saturating_sub(self.seal_room))
            + self.unsent_page.as_ref().map_or(0, Page::len)
            + self.node.in_flight(self.id)
            + self.lent_bytes
    }

    fn is_active(&self) -> bool {
        self.control.is_active() && self.remote.is_some()
    }

    fn handshaken(&self) -> bool {
        self.control.handshaken()
    }

    fn peer(&self) -> Option<&PeerInfo> {
        self.control.peer()
    }

    fn peer_address(&self) -> String {
        self.control.peer_address()
    }

    fn subscribe(&mut self, topic: &[u8]) {
        let _ = self.stage(Item::Subscribe(Bytes::copy_from_slice(topic)), None);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.control.poll_timeout(),
            self.retry_at,
            self.flush_at,
            self.draining.as_ref().map(|(_, until)| *until),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        if self.retry_at.is_some_and(|t| t <= now) {
            // The session writes after the timers: the send is retried.
            self.retry_at = None;
        }
        // (A due flush_at is acted on by that write, in `fill`.)
        if self
            .draining
            .as_ref()
            .is_some_and(|(_, until)| *until <= now)
        {
            // The pages the FIN announced did not all come.
            self.draining = None;
            self.failed = Some("the pages before the peer's FIN did not arrive".into());
        }
        if self.control.poll_timeout().is_some_and(|t| t <= now) {
            self.control.handle_timeout(now)?;
        }
        Ok(())
    }

    fn end_of_input(&mut self) -> Option<ProtocolError> {
        self.control.end_of_input()
    }

    fn auth_reply(&mut self, reply: fabriq_zmtp::AuthReply) -> Result<(), fabriq_zmtp::UsageError> {
        self.control.auth_reply(reply)
    }

    fn monitor_value(&self) -> u32 {
        self.control.monitor_value()
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        // Last on the control connection: how many pages we sent, so the
        // peer takes them all before it ends (best effort: a stream that
        // would block loses it, and the peer then ends at once).
        if self.control.is_active() && self.remote.is_some() {
            let body = Bytes::copy_from_slice(&self.send_seq.to_be_bytes());
            if self.control.send_command(FIN, body).is_ok() {
                let _ = self.control.write(None, None);
            }
        }
        self.control.deregister(poller);
        self.node.remove(self.id);
        let demux: Arc<dyn Demux> = self.node.clone();
        poller.leave(&demux);
    }

    /// The socket's thread reads the completion queue itself (a socket
    /// that spins, or any receive that found its pipes empty).
    fn pull(&mut self, inbound: &Queue, _now: Instant) -> Pulled {
        if !self.is_active() || self.draining.is_some() || inbound.is_conflate() {
            return Pulled::default();
        }
        // Reading the CQ costs system calls on providers with wait
        // descriptors (tcp;ofi_rxm polls its sockets): there the socket's
        // thread does it only when it spins; the I/O thread is woken by
        // the descriptors anyway. Without them (shm) it is a memory read.
        if let Some((spin, counter)) = &self.spell {
            if let Some(spell) = spin.spell().filter(|s| *s != self.counted_spell) {
                spin.count(counter);
                self.counted_spell = spell;
            }
        }
        let others = (self.spins || !self.node.cq_waitable) && self.node.progress(self.id);
        let mut hand_over = others;
        if let Some(why) = self
            .node
            .take_in_order(self.id, &mut self.recv_seq, &mut self.received)
        {
            self.failed = Some(why);
            return Pulled {
                delivered: 0,
                hand_over: true,
            };
        }
        let delivered = match self.deliver(inbound) {
            Ok(n) => n,
            Err(e) => {
                self.failed = Some(format!("fabric page: {e}"));
                return Pulled {
                    delivered: 0,
                    hand_over: true,
                };
            }
        };
        self.return_credits(false);
        if self.control.unsent() > 0 {
            // Credits to return: written here when the stream takes them.
            hand_over |= self.control.write(None, None).is_err() || self.control.unsent() > 0;
        }
        hand_over |= !self.received.is_empty() && !inbound.has_room();
        Pulled {
            delivered,
            hand_over,
        }
    }

    /// Sends on the socket's thread when the engine is eager (see
    /// `eager`; other buffered sockets leave it to the I/O thread, which
    /// coalesces what accumulated meanwhile).
    fn output_ready(&mut self, outbound: &Queue) -> bool {
        if !self.eager || self.subscriber || !self.is_active() || self.draining.is_some() {
            return false;
        }
        self.flow_out(Some(outbound), None);
        if self.control.write(None, None).is_err() {
            return false;
        }
        // Anything left (no credit, no page, a flush timer, a control
        // write that would block) is the session's to finish.
        outbound.len() == 0
            && self.chunks.is_empty()
            && self.unsent_page.is_none()
            && self.flush_at.is_none()
            && self.control.unsent() == 0
    }
}

/// Appends `cmd` as a command frame.
fn encode_command(dst: &mut BytesMut, cmd: Command) {
    let mut body = BytesMut::with_capacity(cmd.encoded_len());
    cmd.encode(&mut body);
    encode_header(dst, body.len(), false, true);
    dst.extend_from_slice(&body);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A receiving connection admits each page once and only within the
    /// credits granted, whatever order the pages complete in.
    #[test]
    fn pages_are_admitted_once_and_within_the_credits_granted() {
        let mut c = Conn {
            allowance: 4,
            ..Conn::default()
        };
        // Out of order (tcp;ofi_rxm completes late), all four granted.
        for seq in [1, 0, 3] {
            c.admit(seq).expect("within the window");
            c.arrived.insert(seq, Bytes::new().into());
        }
        assert!(c.admit(3).unwrap_err().contains("twice"), "a page again");
        assert!(
            c.admit(4).unwrap_err().contains("beyond"),
            "past the window"
        );
        c.admit(2).expect("the last one granted");
        c.arrived.insert(2, Bytes::new().into());
        assert!(c.admit(4).unwrap_err().contains("beyond"), "no credit left");
        // The engine takes 0..=3; a page before `next` is one seen before.
        c.arrived.clear();
        c.next = 4;
        assert!(c.admit(1).unwrap_err().contains("twice"));
        // Two credits back: pages 4 and 5, not 6.
        c.allowance += 2;
        assert!(c.admit(6).unwrap_err().contains("beyond"));
        c.admit(5).expect("granted");
        c.arrived.insert(5, Bytes::new().into());
        c.admit(4).expect("granted");
        // Sequence numbers wrap.
        let mut w = Conn {
            next: u32::MAX,
            allowance: 2,
            ..Conn::default()
        };
        w.admit(0).expect("after the wrap");
        w.arrived.insert(0, Bytes::new().into());
        w.admit(u32::MAX).expect("before the wrap");
    }

    /// Windows shrink as connections join, so that together they fit the
    /// receives the node keeps posted.
    #[test]
    fn each_connection_gets_a_share_of_the_posted_receives() {
        let fabric = FabricOptions::default();
        let node = Node::open(Some("shm"), None, &fabric).expect("an shm node");
        assert_eq!(node.share(), WINDOW, "alone: the whole window");
        let ids: Vec<u32> = (0..8).map(|t| node.add(Token(t), false)).collect();
        assert_eq!(node.share(), (POSTED / 8) as u32);
        for t in 8..300 {
            node.add(Token(t), false);
        }
        assert_eq!(node.share(), 1, "more peers than receives: one page each");
        for id in ids {
            node.remove(id);
        }
        let small = FabricOptions {
            page_count: 16,
            ..fabric
        };
        let node = Node::open(Some("shm"), None, &small).expect("a small node");
        node.add(Token(1), false);
        assert_eq!(node.share(), 4, "a quarter of 16 pages posted");
    }

    #[test]
    fn providers_whose_wait_descriptors_never_wake_are_polled() {
        for p in ["psm2", "psm3", "opx", "psm2;ofi_rxd"] {
            assert!(!wait_fds_wake(p), "{p}");
        }
        for p in ["tcp;ofi_rxm", "verbs;ofi_rxm", "efa", "shm", "sockets"] {
            assert!(wait_fds_wake(p), "{p}");
        }
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

#[cfg(all(test, not(loom)))]
mod sealed_tests {
    use super::*;

    /// A page of `conn`'s stream: `text` sealed by `sealer`, from the
    /// node's pool, as a sealed receive would leave it.
    fn sealed_page(node: &Node, sealer: &mut Sealer, text: &[u8]) -> Page {
        let mut page = node.page().expect("a free page");
        let len = seal::OVERHEAD + text.len();
        page.buffer_mut()[seal::OVERHEAD..len].copy_from_slice(text);
        sealer.seal(&mut page.buffer_mut()[..len]).unwrap();
        page.set_len(len);
        page
    }

    fn arrive(node: &Node, id: u32, seq: u32, page: Page) {
        let mut s = node.lock();
        let c = s.conns.get_mut(&id).expect("a connection");
        c.arrived.insert(seq, Arrived::Sealed(page));
    }

    /// Sealed pages wait for the key, are opened in order into frames
    /// that start after the seal, and a tampered or replayed page ends
    /// its own connection only.
    #[test]
    fn sealed_pages_wait_for_the_key_and_a_bad_one_ends_only_its_connection() {
        let node = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let (good, bad) = (node.add(Token(1), true), node.add(Token(2), true));
        let (mut good_sealer, good_key) = Sealer::generate();
        let (mut bad_sealer, bad_key) = Sealer::generate();
        let (mut good_next, mut bad_next) = (0, 0);
        let mut out = VecDeque::new();

        arrive(
            &node,
            good,
            0,
            sealed_page(&node, &mut good_sealer, b"first"),
        );
        assert_eq!(node.take_in_order(good, &mut good_next, &mut out), None);
        assert!(out.is_empty(), "no key yet: the page is not taken");
        node.set_key(good, &good_key[..]).unwrap();
        assert!(node.set_key(good, &good_key[..]).is_err(), "a second key");
        node.set_key(bad, &bad_key[..]).unwrap();
        assert_eq!(node.take_in_order(good, &mut good_next, &mut out), None);
        assert_eq!(out.pop_front().unwrap(), &b"first"[..]);

        // A flipped ciphertext byte: refused, nothing delivered.
        let mut page = sealed_page(&node, &mut bad_sealer, b"secret");
        page.buffer_mut()[seal::OVERHEAD + 2] ^= 1;
        arrive(&node, bad, 0, page);
        let why = node
            .take_in_order(bad, &mut bad_next, &mut out)
            .expect("refused");
        assert!(why.contains("authentication"), "{why}");
        assert!(out.is_empty() && bad_next == 0);

        // The other connection goes on; a replay of its page 1 as page 2
        // is refused.
        let page = sealed_page(&node, &mut good_sealer, b"second");
        let copy = page.as_slice().to_vec();
        arrive(&node, good, 1, page);
        assert_eq!(node.take_in_order(good, &mut good_next, &mut out), None);
        assert_eq!(out.pop_front().unwrap(), &b"second"[..]);
        let mut replay = node.page().unwrap();
        replay.fill(&copy).unwrap();
        arrive(&node, good, 2, replay);
        let why = node
            .take_in_order(good, &mut good_next, &mut out)
            .expect("replay");
        assert!(why.contains("replayed"), "{why}");

        // A connection that does not encrypt refuses a key.
        let plain = node.add(Token(3), false);
        let why = node.set_key(plain, &good_key[..]).unwrap_err();
        assert!(why.contains("does not"), "{why}");
    }
}
