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
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use fabriq_ofi::{Count, FiAddr, Page, PagePool, PagedConfig, PagedEndpoint, SharedCounter};
use mio::Token;

use super::conn::Limits;
use super::rx::{Claim, Inbox, PageBuf};
use super::tx::{PageFill, HEADER_ROOM};
use super::wake::{self, Doorbell, Ringer};
use crate::options::FabricOptions;
use crate::pipe::PullWait;
use crate::transport::Demux;

mod completions;
mod conns;
mod open;
mod rendezvous;
mod send;
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
/// Completions one completion-queue read asks for.
const CQ_BATCH: usize = 256;
/// Completions one reap files at most, under the node's lock: a thread
/// that wants the lock (a socket's, sending or receiving) waits for at
/// most this many, never for a flood to end. Two reads of [`CQ_BATCH`];
/// a node keeps at most [`POSTED`] receives posted.
const REAP_MAX: usize = 2 * CQ_BATCH;

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
    /// The peer's count of spinners, once it passed it to our doorbell
    /// ([`Node::drain_bell`] sets it, once); the engine holds the same
    /// cell and reads it without the node's lock.
    counts: Arc<OnceLock<SharedCounter>>,
}

struct NodeState {
    ep: PagedEndpoint,
    /// Rendezvous reads posted and not completed.
    reads: usize,
    domain: fabriq_ofi::Domain,
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
    /// The last reap stopped at [`REAP_MAX`]: the queue may hold more.
    more: bool,
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
    /// With a doorbell and a count of sleepers: the bell our sockets'
    /// threads sleep on in a receive ([`BellWait`]), which only they
    /// watch; peers ring it instead of the doorbell while they read
    /// sleepers in [`Node::spinners`] (`Count::Sleepers`).
    pub(crate) app_bell: Option<Arc<Doorbell>>,
    /// With CQ wait descriptors: a doorbell of our own, not announced to
    /// peers, that a socket's thread rings to hand the I/O thread news it
    /// reaped and did not pull ([`CqWait`]).
    pub(crate) nudge: Option<Arc<Doorbell>>,
    /// With CQ wait descriptors: a duplicate of the CQ's, for a socket's
    /// thread blocked in a receive to sleep on ([`CqWait`]).
    cq_fd: Option<std::os::fd::OwnedFd>,
    /// With a doorbell: how many of our sockets spin on this node now
    /// (peers read it and skip the ring while it is above zero), and how
    /// many sleep on [`Node::app_bell`] (peers ring that bell instead).
    pub(crate) spinners: Option<Arc<SharedCounter>>,
    /// Buffers rendezvous reads land in, reused. Outside the lock: a
    /// buffer is mapped and registered (pinned, on hardware providers)
    /// before the node is locked to post the read.
    reads_pool: fabriq_ofi::ReadPool,
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

    /// A reap files a bounded number of completions under the node's lock
    /// (a thread waiting for the lock waits for that many, never for a
    /// flood to end) and, when it stops at its limit, the I/O thread is
    /// told not to sleep until it has read the rest.
    #[test]
    fn a_reap_stops_at_its_limit_and_the_loop_comes_back_for_the_rest() {
        const PAGES: u64 = 24;
        let node = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let (key, _) = node.add(Token(1), false).unwrap();
        let sender = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let dest = sender.lock().ep.insert_peer(&node.name).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        // The first page waits for shm to map the peer (our progress).
        let mut page = sender.page(0).unwrap();
        page.fill(&[0, 1, b'x']).unwrap();
        while let Err((back, _)) = sender.send(0, page, None, dest, 0) {
            assert!(
                std::time::Instant::now() < until,
                "the first send never went"
            );
            node.progress(key);
            page = back;
        }
        while node.unclaimed() < 1 {
            assert!(
                std::time::Instant::now() < until,
                "the first page never came"
            );
            node.progress(key);
        }
        // Then a burst, nobody's pages (dropped and counted), none read yet.
        for _ in 1..PAGES {
            let mut page = sender.page(0).unwrap();
            page.fill(&[0, 1, b'x']).unwrap();
            while let Err((back, _)) = sender.send(0, page, None, dest, 0) {
                assert!(std::time::Instant::now() < until, "a send never went");
                sender.progress(0);
                page = back;
            }
        }
        let mut ready = Vec::new();
        loop {
            assert!(
                std::time::Instant::now() < until,
                "no reap reached its limit"
            );
            let filed = node.lock().reap_at_most(&mut ready, 4);
            assert!(
                filed <= 4,
                "a reap filed {filed} completions, past its limit"
            );
            if filed == 4 {
                break;
            }
            assert!(!node.lock().more, "a reap that stopped short says so");
        }
        assert!(node.lock().more);
        assert_eq!(node.poll_interval(), Some(Duration::ZERO), "no sleep yet");
        assert!(!node.may_sleep());
        assert!(node.lock().has_news(), "a socket's thread hands it back");
        while node.unclaimed() < PAGES {
            assert!(std::time::Instant::now() < until, "the rest never came");
            node.take_ready(&mut ready);
        }
        node.take_ready(&mut ready);
        assert!(!node.lock().more, "the queue read to the end");
        assert_ne!(node.poll_interval(), Some(Duration::ZERO));
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

    /// A socket's thread blocked in a receive sleeps on the node's
    /// application bell ([`BellWait`]), counted as a sleeper; a peer that
    /// reads the count rings that bell, not the doorbell, so the I/O thread
    /// sleeps on. Four orders, with real nodes over shm and the count seen
    /// through a peer's read-only mapping:
    /// - asleep when the page comes, and its pull takes it: nothing is
    ///   handed to the I/O thread (one wake-up);
    /// - asleep, and its pull finds the engine busy: the news is handed
    ///   back (our doorbell rings and `take_ready` hands it out);
    /// - woken by something else after the peer read the count and before
    ///   the ring: the look after waking reaps the page, although its ring
    ///   went to a bell nobody watches any more;
    /// - the count fell before the peer read it: the peer rings the
    ///   doorbell and the I/O thread takes the page.
    #[test]
    fn a_sleeping_receive_is_rung_on_its_own_bell_and_loses_no_page() {
        let fabric = FabricOptions::default();
        let receiver = Arc::new(Node::open(Some("shm"), None, &fabric).expect("shm"));
        let sender = Node::open(Some("shm"), None, &fabric).expect("shm");
        let (key, token) = receiver.add(Token(7), false).unwrap();
        receiver.authenticate(key, &sender.name).unwrap();
        receiver.grant(key, 8);
        let (skey, stoken) = sender.add(Token(1), false).unwrap();
        let dest = sender.authenticate(skey, &receiver.name).unwrap();
        let doorbell = receiver.doorbell.clone().unwrap();
        let app = receiver.app_bell.clone().expect("an application bell");
        // The receiver passes its counts to the sender's doorbell, for the
        // sender's connection, as an engine does once it learned its peer.
        receiver.send_counts(&sender.doorbell.as_ref().unwrap().name, stoken);
        assert!(sender.drain_bell(sender.doorbell.as_ref().unwrap()));
        let cell = sender.peer_counts(skey);
        let counts = cell.get().expect("the sender maps the receiver's counts");
        let wait = receiver.pull_wait(true).expect("shm has a doorbell");
        assert_eq!(wait.fd().as_raw_fd(), app.fd().as_raw_fd());
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let readable = |fd: BorrowedFd<'_>, wait_s: i64| {
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let limit = rustix::event::Timespec {
                tv_sec: wait_s,
                tv_nsec: 0,
            };
            rustix::event::poll(&mut fds, Some(&limit)).unwrap() == 1
        };
        let mut taken = VecDeque::new();
        let orders = ["pulled", "engine busy", "woken otherwise", "count fell"];
        for (seq, order) in orders.into_iter().enumerate() {
            assert!(wait.may_sleep(), "{order}: nothing queued, it sleeps");
            assert_eq!(counts.load(Count::Sleepers), 1, "{order}: counted");
            if order == "count fell" {
                assert!(wait.woke(), "{order}");
                assert!(wait.take(), "{order}");
                wait.settle();
            }
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
            let ring = wake::ring_for(Some(counts));
            let mut out = Vec::new();
            if order == "count fell" {
                assert_eq!(ring, wake::Ring::Doorbell, "{order}");
                assert!(sender.ring(&doorbell.name), "{order}");
                assert!(readable(doorbell.fd(), 10), "{order}: the I/O thread wakes");
                while !out.contains(&Token(7)) {
                    assert!(std::time::Instant::now() < until, "{order}: no news");
                    receiver.take_ready(&mut out);
                }
            } else {
                assert_eq!(ring, wake::Ring::AppBell, "{order}");
                assert!(sender.ring(&app.name), "{order}");
                if order != "woken otherwise" {
                    assert!(readable(wait.fd(), 10), "{order}: the ring never came");
                }
                assert!(
                    !readable(doorbell.fd(), 0),
                    "{order}: the I/O thread sleeps on"
                );
                assert!(wait.woke(), "{order}: a look after any wake-up");
                assert_eq!(counts.load(Count::Sleepers), 0, "{order}: uncounted");
                assert!(wait.take(), "{order}");
                // (The page may need more than one look at the queue.)
                while !receiver.lock().pending_ready.contains(&Token(7)) {
                    assert!(std::time::Instant::now() < until, "{order}: no news");
                    receiver.lock().reap_pending();
                }
                if order != "engine busy" {
                    // The receive's pull takes its own news.
                    assert!(!receiver.claim_pending(key), "{order}: nobody else's");
                }
                wait.settle();
                let handed_back = receiver.drain_bell(&doorbell);
                assert_eq!(handed_back, order == "engine busy", "{order}");
                if handed_back {
                    receiver.take_ready(&mut out);
                    assert!(
                        out.contains(&Token(7)),
                        "{order}: the I/O thread hands it out"
                    );
                }
            }
            assert_eq!(receiver.take_in_order(key, &mut taken), None, "{order}");
            assert_eq!(taken.len(), seq + 1, "{order}: the page was taken");
        }
    }

    /// A count passed to a node's doorbell is filed for the connection
    /// whose token it names, once; one that names no connection of the
    /// node, one that is not a sealed page, and one for a connection
    /// that has its count already are closed and filed nowhere.
    #[test]
    fn a_count_is_filed_only_for_the_connection_it_names() {
        use std::os::fd::AsFd;
        use wake::tests::{memfd, open_to, send_with};
        let node = Node::open(Some("shm"), None, &FabricOptions::default()).expect("shm");
        let bell = node.doorbell.clone().expect("shm has a doorbell");
        let (key, token) = node.add(Token(1), false).unwrap();
        let (other, _) = node.add(Token(2), false).unwrap();
        let payload = |t: u64| {
            let mut p = wake::COUNTS_MAGIC.to_vec();
            p.extend_from_slice(&t.to_le_bytes());
            p
        };
        let (sealed, name) = memfd(true);
        let (unsealed, unsealed_name) = memfd(false);
        for wrong in [token ^ 1, token.wrapping_add(1), 0] {
            send_with(&bell, &payload(wrong), &[sealed.as_fd()]);
        }
        send_with(&bell, &payload(token), &[unsealed.as_fd()]);
        assert!(node.drain_bell(&bell));
        assert!(node.peer_counts(key).get().is_none(), "nothing filed");
        assert!(node.peer_counts(other).get().is_none());
        assert_eq!(open_to(&name), 1, "only our own descriptor is open");
        assert_eq!(open_to(&unsealed_name), 1);
        // The right token: filed, mapped, the descriptor closed.
        send_with(&bell, &payload(token), &[sealed.as_fd()]);
        let (second, second_name) = memfd(true);
        send_with(&bell, &payload(token), &[second.as_fd()]);
        assert!(node.drain_bell(&bell));
        assert!(node.peer_counts(key).get().is_some(), "filed");
        assert!(node.peer_counts(other).get().is_none());
        assert_eq!(open_to(&name), 1, "mapped: no descriptor kept");
        assert_eq!(open_to(&second_name), 1, "the second count was closed");
    }

    /// The sleeper's protocol as steps (see [`crate::interleave`]): the
    /// peer sends, then reads the count and rings the application bell if
    /// it is up, else the doorbell; the socket's thread counts itself,
    /// looks, sleeps, uncounts when anything wakes it, and looks once
    /// more. Under every interleaving the page is reaped by a look or the
    /// I/O thread is rung; without the look after waking, a page whose
    /// ring went to the application bell as the thread woke for another
    /// reason is stranded (until the I/O thread's next poll on shm).
    #[test]
    fn the_sleeper_protocol_loses_no_page() {
        use crate::interleave::{first_losing, Step};
        #[derive(Clone, Copy, Default)]
        struct World {
            sleepers: u32,
            page_sent: bool,
            reaped: bool,
            doorbell: bool,
        }
        let losing = |look_after_waking: bool| {
            let peer: Vec<Step<World>> = vec![
                ("send", |w| w.page_sent = true),
                // Rings the application bell while counted: no use once
                // the thread stopped watching it.
                ("read the count, ring", |w| w.doorbell |= w.sleepers == 0),
            ];
            let mut sleeper: Vec<Step<World>> = vec![
                ("count", |w| w.sleepers += 1),
                ("look", |w| w.reaped |= w.page_sent),
                ("woken, uncount", |w| w.sleepers -= 1),
            ];
            if look_after_waking {
                sleeper.push(("look after waking", |w| w.reaped |= w.page_sent));
            }
            first_losing(&peer, &sleeper, World::default(), |w| {
                !w.reaped && !w.doorbell
            })
        };
        assert_eq!(losing(true), None);
        assert_eq!(
            losing(false).expect("the look after waking is needed"),
            [
                "count",
                "look",
                "send",
                "read the count, ring",
                "woken, uncount"
            ]
        );
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
