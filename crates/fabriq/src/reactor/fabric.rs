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

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use fabriq_ofi::{FiAddr, Page, PagePool, PagedConfig, PagedEndpoint};
use fabriq_zmtp::frame::{encode_header, FrameDecoder};
use fabriq_zmtp::{Command, Multipart, PeerInfo, Properties, ProtocolError};
use mio::Token;

use super::engine::{End, Engine, Input, Pulled, Reads, StreamEngine};
use crate::pipe::{Item, Queue};
use crate::topics::Topics;
use crate::transport::{Demux, Poller};

/// Bytes per registered page.
const PAGE_SIZE: usize = 64 * 1024;
/// Pages per node: posted receives, pages being filled and sent, and
/// received pages the application still holds slices of.
const POOL_PAGES: usize = 512;
/// Receives kept posted.
const POSTED: usize = 128;
/// Pages a sender may have in flight to one peer (granted in READY).
const WINDOW: u32 = 32;
/// How often a node without wait descriptors (shm on libfabric 1.17) is
/// polled while it has connections.
const POLL_EVERY: Duration = Duration::from_millis(1);
/// How soon a send the provider refused (EAGAIN) is tried again.
const RETRY: Duration = Duration::from_micros(200);

/// READY metadata of a fabric connection.
const PROP_ADDRESS: &str = "X-Fabriq-Ofi-Address";
const PROP_ID: &str = "X-Fabriq-Ofi-Id";
const PROP_WINDOW: &str = "X-Fabriq-Ofi-Window";
/// The control-channel command that returns credits (body: u32, big
/// endian).
const CREDIT: &[u8] = b"CREDIT";
/// The control-channel command a closing peer sends last: how many pages
/// it sent (u32, big endian), so the receiver takes them all before it
/// ends the connection.
const FIN: &[u8] = b"FIN";
/// How long a receiver waits for the pages a FIN announced.
const FIN_WAIT: Duration = Duration::from_secs(5);

/// What a node knows of one connection.
#[derive(Debug, Default)]
struct Conn {
    token: Option<Token>,
    /// The peer's address in the address vector, once known.
    remote: Option<FiAddr>,
    /// Received pages by sequence number, until the engine takes them in
    /// order.
    arrived: BTreeMap<u32, Bytes>,
    /// Pages sent and not completed yet.
    in_flight: usize,
    /// A completion failed for this connection.
    failed: Option<String>,
}

struct NodeState {
    ep: PagedEndpoint,
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
    fds: Vec<RawFd>,
    name: Vec<u8>,
    provider: String,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({})", self.provider)
    }
}

impl Node {
    /// Opens the provider's first RDM endpoint on `local` (an address to
    /// bind to, for providers that have addresses) and posts its receives.
    pub(crate) fn open(provider: Option<&str>, local: Option<&str>) -> Result<Node, String> {
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
        let info = fabriq_ofi::getinfo(&hints)
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("fi_getinfo offered no endpoint")?;
        let domain = fabriq_ofi::Domain::open_info(&info).map_err(|e| e.to_string())?;
        let config = PagedConfig {
            max_sends: POOL_PAGES,
            max_recvs: POSTED,
            ..PagedConfig::default()
        };
        let ep = PagedEndpoint::open(&domain, &info, config).map_err(|e| e.to_string())?;
        let pool = PagePool::new(&domain, POOL_PAGES, PAGE_SIZE).map_err(|e| e.to_string())?;
        let name = ep.name().map_err(|e| e.to_string())?;
        let fds: Vec<RawFd> = ep.wait_fds().into_iter().flatten().collect();
        let mut state = NodeState {
            ep,
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
            name,
            provider: info.provider(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection id; pages stamped with it are `token`'s.
    fn add(&self, token: Token) -> u32 {
        let mut s = self.lock();
        let id = s.next_id;
        s.next_id = s.next_id.wrapping_add(1).max(1);
        s.conns.insert(
            id,
            Conn {
                token: Some(token),
                ..Conn::default()
            },
        );
        id
    }

    fn set_remote(&self, id: u32, addr: FiAddr) {
        if let Some(c) = self.lock().conns.get_mut(&id) {
            c.remote = Some(addr);
        }
    }

    fn remove(&self, id: u32) {
        self.lock().conns.remove(&id);
    }

    fn insert_peer(&self, address: &[u8]) -> Result<FiAddr, String> {
        self.lock()
            .ep
            .insert_peer(address)
            .map_err(|e| e.to_string())
    }

    /// A free page to fill, if the pool has one.
    fn page(&self) -> Option<Page> {
        self.lock().pool.get()
    }

    /// Sends `page` to `dest` stamped with `data`; gives the page back
    /// when the provider cannot take it now.
    fn send(&self, id: u32, page: Page, dest: FiAddr, data: u64) -> Result<(), Page> {
        let mut s = self.lock();
        match s.ep.send(page, dest, Some(data)) {
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
            out.push_back(page);
            *next = next.wrapping_add(1);
        }
        c.failed.clone()
    }

    fn in_flight(&self, id: u32) -> usize {
        self.lock().conns.get(&id).map_or(0, |c| c.in_flight)
    }
}

impl NodeState {
    /// Keeps [`POSTED`] receives posted, as far as the pool allows.
    fn post_receives(&mut self) {
        while self.ep.recvs_posted() < POSTED {
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
        }
        self.events = events;
        self.post_receives();
    }

    fn file(&mut self, event: fabriq_ofi::Event, ready: &mut Vec<Token>) {
        use fabriq_ofi::Event::*;
        match event {
            Received { page, data } => {
                let Some(data) = data else {
                    tracing::debug!("a fabric page without CQ data: dropped");
                    return;
                };
                let (id, seq) = ((data >> 32) as u32, data as u32);
                if let Some(c) = self.conns.get_mut(&id) {
                    c.arrived.insert(seq, page.into_bytes());
                    ready.extend(c.token);
                }
            }
            Sent { page, dest } => {
                drop(page);
                if let Some(c) = self.sender(dest) {
                    c.in_flight -= 1;
                    ready.extend(c.token);
                }
            }
            SendFailed { page, error } => {
                // The page was sent to the connection whose peer it names
                // (an error entry does not say: the first with pages in
                // flight is failed, which is exact with one connection per
                // peer address).
                drop(page);
                if let Some(c) = self.conns.values_mut().find(|c| c.in_flight > 0) {
                    c.in_flight -= 1;
                    c.failed = Some(error.to_string());
                    ready.extend(c.token);
                }
            }
            RecvFailed { page, error } => {
                drop(page);
                tracing::warn!("a fabric receive failed: {error}");
            }
        }
    }
}

impl NodeState {
    /// The connection a send to `dest` was for.
    fn sender(&mut self, dest: FiAddr) -> Option<&mut Conn> {
        self.conns
            .values_mut()
            .find(|c| c.remote == Some(dest) && c.in_flight > 0)
    }
}

impl Demux for Node {
    fn fds(&self) -> Vec<RawFd> {
        self.fds.clone()
    }

    fn take_ready(&self, out: &mut Vec<Token>) {
        let mut s = self.lock();
        out.append(&mut s.pending_ready);
        s.reap(out);
    }

    fn may_sleep(&self) -> bool {
        let s = self.lock();
        s.pending_ready.is_empty() && s.ep.try_wait().unwrap_or(true)
    }

    fn poll_interval(&self) -> Option<Duration> {
        self.fds.is_empty().then_some(POLL_EVERY)
    }
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
    send_seq: u32,
    /// Encoded frames not yet in a page.
    staged: BytesMut,
    /// A page that could not be sent yet (no credit, or the provider said
    /// EAGAIN).
    unsent_page: Option<Page>,
    recv_seq: u32,
    /// Pages taken in order and not yet decoded (the front one partly).
    received: VecDeque<Bytes>,
    /// The bytes of a frame that straddles pages.
    straddle: BytesMut,
    decoder: FrameDecoder,
    /// Frames of the message being assembled.
    parts: Multipart,
    /// Pages decoded since credits were last returned.
    consumed: u32,
    publisher: bool,
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

impl FabricEngine {
    /// The READY metadata that tells the peer how to reach us.
    fn metadata(node: &Node, id: u32) -> Vec<(String, Bytes)> {
        vec![
            (PROP_ADDRESS.into(), Bytes::from(hex(&node.name))),
            (PROP_ID.into(), Bytes::from(id.to_string())),
            (PROP_WINDOW.into(), Bytes::from(WINDOW.to_string())),
        ]
    }

    /// An engine for a connected control stream, with its node (made for
    /// this I/O thread on first use) joined to the poller.
    pub(crate) fn start(
        stream: Box<dyn crate::transport::Stream>,
        mut config: fabriq_zmtp::Config,
        provider: Option<&str>,
        token: Token,
        poller: &mut Poller<'_>,
        now: Instant,
    ) -> Result<FabricEngine, String> {
        let local = stream.local_address();
        let key = format!("ofi:{}:{local}", provider.unwrap_or(""));
        let node: Arc<Node> = poller.local(&key, || Node::open(provider, Some(&local)))?;
        let demux: Arc<dyn Demux> = node.clone();
        poller.join(&demux).map_err(|e| e.to_string())?;
        let id = node.add(token);
        for (name, value) in Self::metadata(&node, id) {
            config
                .metadata
                .push(&name, value)
                .map_err(|e| e.to_string())?;
        }
        let publisher = config.socket_type.is_publisher();
        let max_data = config.max_msg_size;
        let conn = fabriq_zmtp::Connection::new(config, now).map_err(|e| e.to_string())?;
        let mut control = StreamEngine::new(stream, conn, false);
        control.keep_commands(true);
        Ok(FabricEngine {
            control,
            node,
            id,
            remote: None,
            credits: 0,
            send_seq: 0,
            staged: BytesMut::new(),
            unsent_page: None,
            recv_seq: 0,
            received: VecDeque::new(),
            straddle: BytesMut::new(),
            decoder: FrameDecoder::new(max_data, 64 * 1024),
            parts: Multipart::new(),
            consumed: 0,
            publisher,
            failed: None,
            retry_at: None,
            peer_fin: None,
            draining: None,
        })
    }

    /// Reads the peer's fabric address, id and window from its READY.
    fn learn_peer(&mut self) -> Result<(), String> {
        let props: &Properties = &self
            .control
            .peer()
            .ok_or("no peer after the handshake")?
            .properties;
        let text = |name: &str| -> Result<String, String> {
            let v = props
                .get(name)
                .ok_or_else(|| format!("the peer sent no {name}: not a fabriq fabric peer"))?;
            Ok(String::from_utf8_lossy(v).into_owned())
        };
        let address = unhex(&text(PROP_ADDRESS)?).ok_or("a malformed fabric address")?;
        let id: u32 = text(PROP_ID)?
            .parse()
            .map_err(|_| "a malformed fabric id")?;
        let window: u32 = text(PROP_WINDOW)?
            .parse()
            .map_err(|_| "a malformed fabric window")?;
        let addr = self.node.insert_peer(&address)?;
        self.node.set_remote(self.id, addr);
        self.remote = Some(Remote { addr, id });
        self.credits = window;
        Ok(())
    }

    /// Returns credits for the pages decoded since the last return.
    fn return_credits(&mut self, force: bool) {
        if self.consumed == 0 || (!force && self.consumed < WINDOW / 2) {
            return;
        }
        let body = Bytes::copy_from_slice(&self.consumed.to_be_bytes());
        if self.control.send_command(CREDIT, body).is_ok() {
            self.consumed = 0;
        }
    }

    /// Applies the CREDIT and FIN commands the peer sent on the control
    /// channel.
    fn take_commands(&mut self) {
        for (name, body) in self.control.take_commands() {
            let Ok(n) = <[u8; 4]>::try_from(body.as_ref()).map(u32::from_be_bytes) else {
                continue;
            };
            match name.as_ref() {
                CREDIT => self.credits = self.credits.saturating_add(n),
                FIN => self.peer_fin = Some(n),
                _ => {}
            }
        }
    }

    /// Whether every page the peer's FIN announced has been taken.
    fn drained(&self) -> bool {
        self.peer_fin
            .map_or(true, |n| self.recv_seq.wrapping_sub(n) < u32::MAX / 2)
            && self.received.is_empty()
            && self.straddle.is_empty()
    }

    /// Decodes received pages into `inbound` until it is full.
    fn deliver(&mut self, inbound: &Queue) -> Result<usize, ProtocolError> {
        let mut delivered = 0;
        loop {
            if !inbound.has_room() {
                return Ok(delivered);
            }
            let frame = if self.straddle.is_empty() {
                let Some(front) = self.received.front_mut() else {
                    return Ok(delivered);
                };
                match self.decoder.decode_bytes(front)? {
                    Some(f) => {
                        if front.is_empty() {
                            self.received.pop_front();
                            self.consumed += 1;
                        }
                        f
                    }
                    None => {
                        // A frame straddles pages: gather it.
                        let rest = self.received.pop_front().expect("front");
                        self.straddle.extend_from_slice(&rest);
                        self.consumed += 1;
                        continue;
                    }
                }
            } else {
                match self.decoder.decode(&mut self.straddle)? {
                    Some(f) => f,
                    None => {
                        let Some(next) = self.received.pop_front() else {
                            return Ok(delivered);
                        };
                        self.straddle.extend_from_slice(&next);
                        self.consumed += 1;
                        continue;
                    }
                }
            };
            if frame.command {
                let item = match Command::decode(&frame.data)? {
                    Command::Subscribe(t) if self.publisher => Item::Subscribe(t),
                    Command::Cancel(t) if self.publisher => Item::Cancel(t),
                    _ => continue,
                };
                inbound.push(item);
                delivered += 1;
                continue;
            }
            self.parts.push(frame.data);
            if !frame.more {
                inbound.push(Item::Msg(std::mem::take(&mut self.parts)));
                delivered += 1;
            }
        }
    }

    /// Encodes what `outbound` holds into staged frames, pages and sends,
    /// as credits allow.
    fn flow_out(&mut self, outbound: Option<&Queue>, mut subs: Option<&mut Topics>) {
        let Some(remote) = self.remote else { return };
        loop {
            // First the page that is waiting.
            if let Some(page) = self.unsent_page.take() {
                if self.credits == 0 {
                    self.unsent_page = Some(page);
                    return;
                }
                let data = (u64::from(remote.id) << 32) | u64::from(self.send_seq);
                match self.node.send(self.id, page, remote.addr, data) {
                    Ok(()) => {
                        self.credits -= 1;
                        self.send_seq = self.send_seq.wrapping_add(1);
                    }
                    Err(page) => {
                        self.unsent_page = Some(page);
                        self.retry_at = Some(Instant::now() + RETRY);
                        return;
                    }
                }
            }
            // Stage what the pipe holds, a page's worth at a time.
            while self.staged.len() < PAGE_SIZE {
                let Some(q) = outbound else { break };
                let Some(item) = q.pop() else { break };
                self.stage(item, subs.as_deref_mut());
            }
            if self.staged.is_empty() {
                return;
            }
            let Some(mut page) = self.node.page() else {
                // The pool is dry: pages come back as sends complete.
                return;
            };
            let n = self.staged.len().min(page.capacity());
            page.buffer_mut()[..n].copy_from_slice(&self.staged[..n]);
            page.set_len(n);
            let _ = self.staged.split_to(n);
            self.unsent_page = Some(page);
        }
    }

    fn stage(&mut self, item: Item, subs: Option<&mut Topics>) {
        let command = |cmd: Command, staged: &mut BytesMut| {
            let mut body = BytesMut::with_capacity(cmd.encoded_len());
            cmd.encode(&mut body);
            encode_header(staged, body.len(), false, true);
            staged.extend_from_slice(&body);
        };
        match item {
            Item::Msg(parts) => {
                let last = parts.len().saturating_sub(1);
                for (i, part) in parts.iter().enumerate() {
                    encode_header(&mut self.staged, part.len(), i < last, false);
                    self.staged.extend_from_slice(part);
                }
            }
            Item::Subscribe(t) => {
                if let Some(s) = subs {
                    s.add(&t);
                }
                command(Command::Subscribe(t), &mut self.staged);
            }
            Item::Cancel(t) => {
                if let Some(s) = subs {
                    s.remove(&t);
                }
                command(Command::Cancel(t), &mut self.staged);
            }
        }
    }
}

impl Engine for FabricEngine {
    fn ready(&mut self, readable: bool, writable: bool) {
        self.control.ready(readable, writable);
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
            self.take_commands();
            input
        };
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
            + self.staged.len()
            + self.unsent_page.as_ref().map_or(0, Page::len)
            + self.node.in_flight(self.id)
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
        self.stage(Item::Subscribe(Bytes::copy_from_slice(topic)), None);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.control.poll_timeout(),
            self.retry_at,
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

    fn pull(&mut self, _inbound: &Queue, _now: Instant) -> Pulled {
        Pulled::default()
    }

    fn output_ready(&mut self, _outbound: &Queue) -> bool {
        false
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
