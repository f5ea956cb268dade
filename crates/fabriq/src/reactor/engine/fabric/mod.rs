//! The fabric engine: a connection whose ZMTP control channel is a TCP
//! stream and whose messages move through a libfabric RDM endpoint in
//! registered pages (docs/fabric.md has the design, docs/security.md the
//! threat model).
//!
//! The connection's logic is sans-IO, with no libfabric and no clock in
//! it, in three parts this module only glues together:
//!
//! - [`conn::Flow`]: credits both ways, page stamps, the control
//!   commands (CREDIT, FIN, RDVDONE, RING), lent frames capped in number,
//!   bytes and time, rendezvous reads bounded, the drain after a FIN;
//! - [`rx::Inbox`]: which received pages are this connection's (the
//!   authenticated peer's source address, our random token, the credits
//!   granted), in order, sealed pages opened;
//! - [`tx::Outbox`]: messages encoded into pages with fabriq-zmtp's frame
//!   encoding, large frames lent, pages sealed.
//!
//! [`node::Node`] is the one part that calls libfabric: one I/O thread's
//! endpoint for one provider, its page pool and posted receives, and the
//! table of inboxes completions are filed into. [`wake`] holds the
//! doorbell and spinner count of providers without wait descriptors,
//! [`wire`] the formats, [`addr`] the check of a peer's data address
//! against its control connection, [`seal`] the page encryption;
//! `setup` starts a connection (its READY metadata, joining the node) and
//! learns the peer's fabric fields once the handshake is done.
//!
//! The control channel is a [`StreamEngine`] that carries no messages:
//! the ZMTP handshake (READY carries the fabric address, the token to
//! stamp pages with and the window), heartbeats, and the commands above.
//! Received pages are decoded in place, so message frames are `Bytes`
//! slices of registered memory and a page returns to the pool when its
//! last slice is dropped. Completion order is not send order on every
//! provider (tcp;ofi_rxm completes large messages late), so pages carry a
//! sequence number and are reordered.

pub(crate) mod addr;
mod again;
pub(crate) mod conn;
pub(crate) mod node;
pub(crate) mod rx;
pub(crate) mod seal;
mod setup;
#[cfg(all(test, not(loom)))]
mod tests;
pub(crate) mod tx;
pub(crate) mod wake;
pub(crate) mod wire;

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use fabriq_ofi::{FiAddr, Page, SharedCounter};
use fabriq_zmtp::{Command, Part, PeerInfo, ProtocolError};

use super::{End, Engine, Input, Pulled, Reads, StreamEngine};
use crate::options::FabricOptions;
use crate::pipe::{Item, PullWait, Queue};
use crate::spin::Spin;
use crate::topics::Topics;
use crate::transport::{Demux, Poller};
use conn::{Effect, Flow};
use node::Node;
use tx::{Filled, Outbox, Source};
use wire::{PageItem, PageReader, Rdv, KEY, RING};

/// One fabric connection. See the module documentation.
pub(crate) struct FabricEngine {
    control: StreamEngine,
    /// Our IP on the control connection.
    local: String,
    node: Arc<Node>,
    /// Our connection's key at the node.
    key: u32,
    /// The peer's handle in the node's address vector, once handshaken.
    remote: Option<FiAddr>,
    flow: Flow<fabriq_ofi::Lent>,
    outbox: Outbox<Page>,
    /// How this connection sends (the socket's options when it started).
    fabric: FabricOptions,
    /// Whether the socket's thread sends itself: `make.rs` said
    /// [`SocketWrites::WhenIdle`] (REQ/REP, which have one message at a
    /// time to send and nothing to coalesce; a socket that spins or sends
    /// unbuffered: `make::fabric_writes`).
    eager: bool,
    /// Whether the socket spins (its receives read the CQ themselves).
    spins: bool,
    /// A spinning socket's spells and the node's count of spinners, which
    /// `pull` raises once per spell (nodes with a doorbell only).
    spell: Option<(Arc<Spin>, Arc<SharedCounter>)>,
    /// The spell last counted.
    counted_spell: u64,
    /// The peer's count of spinners, mapped read-only once the peer
    /// passed it to our doorbell (same host only; the node fills the
    /// cell, [`Node::drain_bell`]): no ring while it is above zero. Read
    /// without a lock.
    peer_counts: Arc<std::sync::OnceLock<SharedCounter>>,
    /// The peer's doorbell, if it wants one rung (empty: over the
    /// control connection).
    peer_doorbell: Option<String>,
    /// The peer's application bell (named after its doorbell), rung
    /// instead while the peer counts sleepers.
    peer_app_bell: Option<String>,
    /// Pages sent since the last ring of the peer's doorbell.
    unrung: bool,
    /// Both nodes do RMA (and the connection does not encrypt): frames
    /// larger than a page are lent, not copied.
    rendezvous: bool,
    /// Our sending key, until it went to the peer in a KEY command.
    page_key: Option<zeroize::Zeroizing<[u8; seal::KEY_LEN]>>,
    /// Pages taken in order and not yet decoded (the front one partly).
    received: VecDeque<Bytes>,
    /// Cuts `received` into frames and messages.
    pages: PageReader,
    /// The socket's MAXMSGSIZE, for frames read by rendezvous.
    max_data: Option<u64>,
    /// Pages decoded, counted by `pages` as they are finished.
    consumed: u32,
    /// Items decoded and held back by a delivery (empty between calls).
    decoded: Vec<Item>,
    /// SUB and XSUB send subscriptions, which the session's topic list
    /// must see: they are never written from the socket's thread.
    subscriber: bool,
    /// REQ or REP: each receive waits for one message, then the socket
    /// sends. A blocked receive sleeps on the CQ's wait descriptor (tcp)
    /// only then (see [`Engine::pull_wait`]).
    alternates: bool,
    failed: Option<String>,
    /// When to try a refused send or read again (the provider said
    /// EAGAIN), as `again` decides.
    retry_at: Option<Instant>,
    /// The current episode of refusals ([`again::Again`]).
    again: again::Again,
    /// A rendezvous read the provider refused for now: length, address,
    /// key.
    pending_read: Option<(usize, u64, u64)>,
    /// The control connection ended after a FIN: how it ended.
    drain_end: Option<End>,
    /// The node has this connection waiting for a page ([`Node::page`]).
    awaits_page: bool,
}

impl std::fmt::Debug for FabricEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FabricEngine({:?}, key {})", self.node, self.key)
    }
}

/// What [`Outbox::fill`] takes from the engine: pages from the node,
/// items from the socket's queue, lending through the node.
struct EngineSource<'a> {
    node: &'a Node,
    /// Our connection's key at the node.
    key: u32,
    flow: &'a mut Flow<fabriq_ofi::Lent>,
    outbound: Option<&'a Queue>,
    /// `outbound`'s reader side, locked at the first pop of a fill and
    /// held until the fill ends (one lock a fill, not one an item).
    reader: Option<crate::pipe::Reader<'a>>,
    subs: Option<&'a mut Topics>,
    rendezvous: bool,
    now: Instant,
    /// The node has us waiting for a page.
    awaits_page: &'a mut bool,
}

impl Source<Page> for EngineSource<'_> {
    fn page(&mut self) -> Option<Page> {
        let page = self.node.page(self.key);
        *self.awaits_page = page.is_none();
        page
    }

    fn next(&mut self) -> Option<Item> {
        // While the caps on lent frames are reached, more waits for the
        // peer to read (a RDVDONE).
        if self.flow.lending_full() {
            return None;
        }
        let reader = match &mut self.reader {
            Some(reader) => reader,
            None => self.reader.insert(self.outbound?.reader()),
        };
        let item = reader.pop()?;
        super::record_subscription(&item, self.subs.as_deref_mut());
        Some(item)
    }

    fn lend(&mut self, part: &Part, more: bool) -> Option<Rdv> {
        if !self.rendezvous || !self.flow.may_lend(part.len()) {
            return None;
        }
        let lent = match self.node.lend(part.to_bytes()) {
            Ok(lent) => lent,
            Err(why) => {
                tracing::debug!("cannot lend {} bytes ({why}): streamed", part.len());
                return None;
            }
        };
        let (len, addr, key) = (lent.len(), lent.rma_addr(), lent.key());
        let id = self.flow.lend(lent, len, self.now);
        Some(Rdv {
            id,
            len: len as u64,
            addr,
            key,
            more,
        })
    }
}

impl FabricEngine {
    /// Moves the commands the connection core queued to the control
    /// connection.
    fn send_commands(&mut self) {
        while let Some((name, body)) = self.flow.poll_command() {
            if let Err(e) = self.control.send_command(name, body.clone()) {
                tracing::debug!("cannot send a fabric command: {e}");
                self.flow.unpoll_command((name, body));
                return;
            }
        }
    }

    /// Returns credits for the pages decoded since the last return.
    fn return_credits(&mut self, force: bool) {
        let taken = std::mem::take(&mut self.consumed);
        self.flow.consumed(taken);
        // (Nothing to return without pages consumed: no need to ask the
        // node, under its lock, for our share.)
        if !self.flow.has_consumed() {
            self.send_commands();
            return;
        }
        if let Some(give) = self.flow.poll_grant(self.node.share(), force) {
            // Counted before the peer can see it (it answers with pages).
            self.node.grant(self.key, give);
        }
        self.send_commands();
    }

    /// Applies the commands the peer sent on the control channel. Returns
    /// whether it rang the doorbell.
    fn take_commands(&mut self) -> bool {
        let mut rung = false;
        for (name, body) in self.control.take_commands() {
            if name == KEY {
                if let Err(why) = self.node.set_key(self.key, &body) {
                    self.failed.get_or_insert(why);
                }
                continue;
            }
            let Some(control) = wire::parse_control(&name, &body) else {
                continue;
            };
            match self.flow.handle_command(control) {
                Ok(Effect::Ring) => rung = true,
                Ok(Effect::None) => {}
                Err(why) => {
                    self.failed.get_or_insert(why);
                }
            }
        }
        rung
    }

    /// Whether every page the peer's FIN announced has been taken.
    fn drained(&self) -> bool {
        self.received.is_empty()
            && !self.pages.straddling()
            && self.flow.fin_complete(self.taken_pages())
    }

    /// Pages taken from the node in order so far.
    fn taken_pages(&self) -> u64 {
        self.node.taken(self.key)
    }

    /// Decodes received pages into `inbound` until it is full.
    fn deliver(&mut self, inbound: &Queue, now: Instant) -> Result<usize, ProtocolError> {
        let mut batch = std::mem::take(&mut self.decoded);
        let mut out = super::Delivery::new(inbound, &mut batch);
        let result = self.deliver_into(&mut out, now);
        let n = out.finish();
        self.decoded = batch;
        result.map(|()| n)
    }

    fn deliver_into(
        &mut self,
        out: &mut super::Delivery<'_>,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        if !self.received.is_empty() {
            self.pages.set_copy_out(self.node.pool_low());
        }
        loop {
            if !out.has_room() {
                return Ok(());
            }
            if self.flow.reading().is_some() {
                // Frames after a rendezvous wait for its read.
                self.post_pending_read(now);
                let Some(data) = self.node.take_read(self.key) else {
                    return Ok(());
                };
                let more = self.flow.read_done().unwrap_or(false);
                self.send_commands();
                if let Some(msg) = self.pages.push_part(data, more) {
                    out.push(Item::Msg(msg));
                }
                continue;
            }
            let item = match self.pages.next(&mut self.received, &mut self.consumed)? {
                None => return Ok(()),
                Some(PageItem::Rdv(rdv)) => {
                    self.start_read(rdv, now)?;
                    continue;
                }
                Some(PageItem::Msg(msg)) => Item::Msg(msg),
                Some(PageItem::Subscribe(t)) => Item::Subscribe(t),
                Some(PageItem::Cancel(t)) => Item::Cancel(t),
            };
            out.push(item);
        }
    }

    /// Starts the read a rendezvous frame asks for, bounded by what we
    /// announced and the socket's MAXMSGSIZE.
    fn start_read(&mut self, rdv: Rdv, now: Instant) -> Result<(), ProtocolError> {
        if !self.rendezvous || self.remote.is_none() {
            return Err(wire::bad_rdv());
        }
        let len = self.flow.handle_rdv(&rdv, self.max_data)?;
        self.pending_read = Some((len, rdv.addr, rdv.key));
        self.post_pending_read(now);
        // The read may need the sender's progress (shm's CMA reads are
        // served by the peer): ring it like pages would.
        self.unrung = true;
        self.ring();
        Ok(())
    }

    /// Posts the rendezvous read waiting to be posted, if the provider
    /// takes it now (else it is tried again when [`again::Again`] says).
    fn post_pending_read(&mut self, now: Instant) {
        let (Some((len, addr, rkey)), Some(remote)) = (self.pending_read, self.remote) else {
            return;
        };
        match self.node.read(self.key, remote, len, addr, rkey) {
            Ok(true) => {
                self.pending_read = None;
                self.again.accepted();
            }
            Ok(false) => {
                let at = self.again.refused(now);
                self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
            }
            Err(why) => {
                self.pending_read = None;
                self.failed
                    .get_or_insert(format!("rendezvous read of {len} bytes: {why}"));
            }
        }
    }

    /// Sends what `outbound` holds, in pages, as credits and the provider
    /// allow. Returns whether a page went.
    fn flow_out(
        &mut self,
        outbound: Option<&Queue>,
        subs: Option<&mut Topics>,
        now: Instant,
    ) -> bool {
        let Some(remote) = self.remote else {
            return false;
        };
        let mut src = EngineSource {
            node: &self.node,
            key: self.key,
            flow: &mut self.flow,
            outbound,
            reader: None,
            subs,
            rendezvous: self.rendezvous,
            now,
            awaits_page: &mut self.awaits_page,
        };
        let mut sent = false;
        loop {
            // First the page that is waiting.
            if let Some((page, tail)) = self.outbox.take_ready() {
                if !src.flow.may_send() {
                    self.outbox.put_back(page, tail);
                    break;
                }
                match self
                    .node
                    .send(self.key, page, tail, remote, src.flow.stamp())
                {
                    Ok(()) => {
                        src.flow.sent();
                        self.again.accepted();
                        sent = true;
                    }
                    Err((page, tail)) => {
                        self.outbox.put_back(page, tail);
                        self.retry_at = Some(self.again.refused(now));
                        break;
                    }
                }
            }
            match self.outbox.fill(&mut src, now) {
                Filled::Page => continue,
                Filled::Drained => {
                    if std::mem::take(src.awaits_page) {
                        // Nothing left to fill: do not hold the others to
                        // their share for a page we would not use.
                        self.node.page_not_needed(self.key);
                    }
                    break;
                }
                Filled::NoPage => break,
            }
        }
        // (Lets go of the socket's queue.)
        drop(src);
        if let Some(why) = self.outbox.failed() {
            self.failed.get_or_insert(why);
        }
        if sent {
            self.unrung = true;
        }
        self.ring();
        sent
    }

    /// Rings the peer's doorbell if it has one and we sent it something
    /// since the last ring: one ring for the pages of a turn; the peer has
    /// no wait descriptor to be woken by them. While a socket of the peer
    /// sleeps in a receive on its node's application bell (its count of
    /// sleepers is above zero), that bell is rung instead, and only that
    /// thread wakes (see `node::wait::BellWait`).
    fn ring(&mut self) {
        if !self.unrung {
            return;
        }
        let ring = wake::ring_for(self.peer_counts.get());
        if ring == wake::Ring::Skip {
            // A socket of the peer spins on its node and reaps our pages.
            self.unrung = false;
            return;
        }
        if let Some(name) = self.peer_doorbell.as_deref() {
            let app = self
                .peer_app_bell
                .as_deref()
                .filter(|_| ring == wake::Ring::AppBell);
            if app.is_some_and(|app| self.node.ring(app))
                || (!name.is_empty() && self.node.ring(name))
                || self.control.send_command(RING, Bytes::new()).is_ok()
            {
                self.unrung = false;
            }
        }
    }

    /// Takes the pages that are next in order from the node; the error
    /// ends the connection.
    fn take_pages(&mut self) -> Result<(), String> {
        match self.node.take_in_order(self.key, &mut self.received) {
            Some(why) => Err(why),
            None => Ok(()),
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
        let ended = |why: String| (Input::Ended(End::Io(io::Error::other(why))), 0);
        if let Some(why) = self.failed.take() {
            return ended(why);
        }
        // After the control connection ended behind a FIN, only the pages
        // the FIN announced are still taken.
        let input = if self.flow.draining() {
            Input::Idle
        } else {
            let (input, _) = self.control.read(None, reads, now);
            if self.take_commands() {
                // The peer sent pages and we have no wait descriptor: read
                // the completion queue now rather than after this turn
                // (news for other connections is handed out before the
                // loop sleeps).
                self.node.progress(self.key);
            }
            input
        };
        if let Some(why) = self.failed.take() {
            // A CREDIT beyond the window, a bad key (take_commands).
            return ended(why);
        }
        let input = match input {
            Input::Ended(end) if self.flow.handle_control_end(now) => {
                self.drain_end = Some(end);
                Input::Idle
            }
            other => other,
        };
        match input {
            Input::Handshake => {
                if let Err(why) = self.learn_peer() {
                    return ended(format!("fabric handshake: {why}"));
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
        if let Err(why) = self.take_pages() {
            return ended(why);
        }
        let Some(q) = inbound else {
            return (Input::Idle, 0);
        };
        match self.deliver(q, now) {
            Ok(n) => {
                if self.flow.draining() && self.drained() {
                    let end = self.drain_end.take().unwrap_or(End::Eof);
                    return (Input::Ended(end), n);
                }
                if let Some(why) = self.failed.take() {
                    return ended(why);
                }
                self.return_credits(false);
                let full = !q.has_room() && !self.received.is_empty();
                (if full { Input::Full } else { Input::Idle }, n)
            }
            Err(e) => (Input::Ended(End::Protocol(e)), 0),
        }
    }

    fn write(
        &mut self,
        outbound: Option<&Queue>,
        subs: Option<&mut Topics>,
        now: Instant,
    ) -> io::Result<()> {
        if self.flow.draining() {
            // The peer is gone: only its last pages are still taken.
            return Ok(());
        }
        self.flow_out(outbound, subs, now);
        self.send_commands();
        self.control.write(None, None, now)
    }

    fn unsent(&self) -> usize {
        self.control.unsent()
            + self.outbox.unsent()
            + self.node.in_flight(self.key)
            + self.flow.lent_bytes()
    }

    fn is_active(&self) -> bool {
        // A failure found on the socket's thread (a flush) ends the
        // connection at the session's next read.
        self.control.is_active() && self.remote.is_some() && self.failed.is_none()
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
        self.outbox
            .push_command(&Command::Subscribe(Bytes::copy_from_slice(topic)));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.control.poll_timeout(),
            self.retry_at,
            self.outbox.poll_timeout(),
            self.flow.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        if self.retry_at.is_some_and(|t| t <= now) {
            // The session writes after the timers: the send is retried.
            self.retry_at = None;
            self.post_pending_read(now);
        }
        // (A due flush is acted on by that write, in `Outbox::fill`.)
        if let Err(why) = self.flow.handle_timeout(now) {
            self.failed.get_or_insert(why);
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
            self.flow.close();
            self.send_commands();
            let _ = self.control.write(None, None, Instant::now());
        }
        self.control.deregister(poller);
        // Lent memory is let go only now that the peer is told nothing
        // more (its reads after this fail: the registration is closed).
        drop(self.flow.release_all());
        self.node.remove(self.key);
        let demux: Arc<dyn Demux> = self.node.clone();
        poller.leave(&demux);
    }

    /// The socket's thread reads the completion queue itself (a socket
    /// that spins, or any receive that found its pipes empty).
    fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled {
        if !self.is_active() || self.flow.draining() || inbound.is_conflate() {
            return Pulled::default();
        }
        let hand_over = Pulled {
            delivered: 0,
            hand_over: true,
        };
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
        let (others, failed) = if self.spins || !self.node.cq_waitable {
            self.node.progress_and_take(self.key, &mut self.received)
        } else {
            let others = self.alternates
                // What a blocked receive reaped (`node::CqWait`) is ours.
                && self.node.claim_pending(self.key);
            (others, self.take_pages().err())
        };
        if let Some(why) = failed {
            self.failed = Some(why);
            return hand_over;
        }
        let delivered = match self.deliver(inbound, now) {
            Ok(n) => n,
            Err(e) => {
                self.failed = Some(format!("fabric page: {e}"));
                return hand_over;
            }
        };
        if self.failed.is_some() {
            return hand_over;
        }
        self.return_credits(false);
        let mut more = others;
        if self.control.unsent() > 0 {
            // Credits to return: written here when the stream takes them.
            more |= self.control.write(None, None, now).is_err() || self.control.unsent() > 0;
        }
        more |= !self.received.is_empty() && !inbound.has_room();
        Pulled {
            delivered,
            hand_over: more,
        }
    }

    /// A blocked receive sleeps on a bell of the node (shm: no CQ wait
    /// descriptor; peers ring it after they sent pages) or, for REQ and
    /// REP, on the CQ's wait descriptor (tcp), and reads the completions
    /// itself when woken. On shm, REQ and REP sleep on the node's
    /// application bell, counted as sleepers, and peers ring that bell
    /// instead of the doorbell: one wake-up per hop (the I/O thread woken
    /// as well cost a third of the round trip: docs/performance.md,
    /// Fabric); other sockets sleep on the doorbell with the I/O thread.
    /// On tcp, the I/O thread watches the same descriptor; reading it costs system calls
    /// (`epoll_wait`, `recv`), and a stream's receiver that woke with the
    /// I/O thread for every page doubled them: unbuffered 64 B PUSH/PULL
    /// over ofi+tcp ran at 0.65x, its receiver making 1.41 system calls a
    /// message instead of 0.63. REQ/REP, one message per wait, halved its
    /// round trip (docs/performance.md, Fabric).
    fn pull_wait(&self, inbound: &Queue) -> Option<Arc<dyn PullWait>> {
        if !self.is_active() || self.flow.draining() || inbound.is_conflate() {
            return None;
        }
        if self.node.cq_waitable && !self.alternates {
            return None;
        }
        self.node.pull_wait(self.alternates)
    }

    fn can_flush(&self) -> bool {
        !self.subscriber
    }

    /// Fills and sends pages from a full pipe on the socket's thread, as
    /// far as credits and free pages allow (a partly filled page waits for
    /// the flush interval as usual; the link wakes the session for its
    /// timer). True when messages left the pipe.
    fn flush(&mut self, outbound: &Queue, now: Instant) -> bool {
        if self.subscriber || !self.is_active() || self.flow.draining() {
            return false;
        }
        let before = outbound.len();
        self.flow_out(Some(outbound), None, now);
        self.send_commands();
        if self.failed.is_some() || self.control.write(None, None, now).is_err() {
            return false;
        }
        outbound.len() < before
    }

    /// Sends on the socket's thread when the engine is eager (see
    /// `eager`; other buffered sockets leave it to the I/O thread, which
    /// coalesces what accumulated meanwhile).
    fn output_ready(&mut self, outbound: &Queue, now: Instant) -> bool {
        if !self.eager || self.subscriber || !self.is_active() || self.flow.draining() {
            return false;
        }
        self.flow_out(Some(outbound), None, now);
        self.send_commands();
        if self.failed.is_some() || self.control.write(None, None, now).is_err() {
            return false;
        }
        // Anything left (no credit, no page, a flush timer, a control
        // write that would block) is the session's to finish.
        outbound.len() == 0 && self.outbox.is_idle() && self.control.unsent() == 0
    }
}
