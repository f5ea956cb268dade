//! The control side of one fabric connection, as a state machine with no
//! libfabric and no clock in it (time is passed in): credits both ways,
//! the pages' stamps, the commands the peer sends on the control
//! connection, frames lent for rendezvous reads and the reads we make,
//! and the FIN that ends a connection after its last pages.
//!
//! Method grammar, as in quinn-proto: `handle_*` take input (the peer's
//! READY, its commands, timers), `poll_*` give output (commands to send,
//! the next deadline), the rest are getters and small mutators. The
//! engine (`mod.rs`) moves pages and commands between this, the
//! receiving side ([`super::rx::Inbox`], kept by the node) and the
//! sending side ([`super::tx::Outbox`]).
//!
//! # Credits
//!
//! The receiver grants pages by `CREDIT` commands only, the first once
//! its handshake (and ZAP) completed: nothing a peer sends before it has
//! been authenticated is accepted. READY announces only the window, the
//! most credits the receiver will ever let the sender hold (a CREDIT
//! beyond it ends the connection).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::ProtocolError;

use super::wire::{self, Control, PeerFabric, Rdv, CREDIT, FIN, RDV_DONE};

/// How long a receiver waits for the pages a FIN announced.
pub const FIN_WAIT: Duration = Duration::from_secs(5);

/// The bounds on what a connection lends and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Frames lent at once, at most.
    pub lent_frames: usize,
    /// Bytes lent at once, at most (a frame larger than this is streamed
    /// through pages instead).
    pub lent_bytes: usize,
    /// Bytes lent at once before more lending waits for the peer to read
    /// (a frame is lent whatever its size, up to `lent_bytes`, when the
    /// lent bytes are under the window). Without it a fast sender lends
    /// 64 frames of 1 MiB at once, and over ofi+shm its new memory and
    /// page faults made 1 MiB PUSH/PULL about 25% slower than a window
    /// of 8-16 MiB (measured in docs/performance.md's Fabric section).
    pub lend_window: usize,
    /// How long the peer may take to read a lent frame; a frame still
    /// lent after it ends the connection (and the memory is let go).
    pub lend_for: Duration,
    /// The largest frame we read from a peer's memory in one rendezvous
    /// (announced in READY; the peer streams larger frames through
    /// pages).
    pub read_max: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            lent_frames: 64,
            lent_bytes: 256 << 20,
            lend_window: 16 << 20,
            lend_for: Duration::from_secs(30),
            read_max: 256 << 20,
        }
    }
}

/// A frame lent to the peer.
#[derive(Debug)]
struct Loan<L> {
    frame: L,
    len: usize,
    due: Instant,
}

/// What a command from the peer asks of the engine.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing more.
    None,
    /// The peer sent pages and we have no wait descriptor: read the
    /// completion queue now.
    Ring,
}

/// The control side of one fabric connection. `L` is a lent frame (the
/// registered memory, let go when the peer is done with it or the
/// connection ends).
#[derive(Debug)]
pub struct Flow<L> {
    limits: Limits,
    /// The peer, once its READY came.
    peer: Option<PeerFabric>,
    /// Pages we may still send.
    credits: u32,
    /// Pages sent: the next page's sequence number.
    send_seq: u64,
    /// The window announced in our READY: no grant goes beyond it.
    window: u32,
    /// Pages the peer may hold in flight since the last grant.
    granted: u32,
    /// Pages taken since the last grant.
    consumed: u32,
    /// Frames lent to the peer, by id, until it read them.
    lent: HashMap<u32, Loan<L>>,
    lent_bytes: usize,
    next_lent: u32,
    /// The rendezvous read in progress: the frame's id at the peer and
    /// whether more frames of its message follow.
    reading: Option<(u32, bool)>,
    /// The pages the peer said it sent, in its FIN.
    peer_fin: Option<u64>,
    /// The control connection ended after a FIN: until when the pages
    /// it announced are waited for.
    drain_until: Option<Instant>,
    /// Commands to send on the control connection.
    out: VecDeque<(&'static [u8], Bytes)>,
}

impl<L> Flow<L> {
    /// A connection that will grant at most `window` pages.
    pub fn new(window: u32, limits: Limits) -> Flow<L> {
        Flow {
            limits,
            peer: None,
            credits: 0,
            send_seq: 0,
            window,
            granted: 0,
            consumed: 0,
            lent: HashMap::new(),
            lent_bytes: 0,
            next_lent: 0,
            reading: None,
            peer_fin: None,
            drain_until: None,
            out: VecDeque::new(),
        }
    }

    /// The handshake completed with a peer that sent these fabric
    /// fields: grants it its first `share` pages (at most our window).
    /// Returns the grant, which the caller records in the connection's
    /// [`super::rx::Inbox`] before the CREDIT can reach the peer.
    pub fn handle_handshake(&mut self, peer: PeerFabric, share: u32) -> u32 {
        self.peer = Some(peer);
        let give = share.min(self.window);
        if give > 0 {
            self.granted = give;
            self.consumed = 0;
            self.out
                .push_back((CREDIT, Bytes::copy_from_slice(&give.to_be_bytes())));
        }
        give
    }

    /// Applies a command the peer sent on the control connection; the
    /// error ends the connection.
    pub fn handle_command(&mut self, control: Control) -> Result<Effect, String> {
        let window = self.peer.as_ref().map_or(0, |p| p.window);
        match control {
            Control::Ring => return Ok(Effect::Ring),
            Control::Credit(n) => {
                let credits = self.credits.saturating_add(n);
                if credits > window {
                    return Err(format!(
                        "the peer returned {n} credits, more than its window of {window} pages allows"
                    ));
                }
                self.credits = credits;
            }
            Control::RdvDone(id) => {
                // An id no longer lent (its loan ran out) is ignored.
                if let Some(loan) = self.lent.remove(&id) {
                    self.lent_bytes -= loan.len;
                }
            }
            Control::Fin(n) => self.peer_fin = Some(n),
        }
        Ok(Effect::None)
    }

    // --- sending pages ---

    /// Whether a page may be sent now (the peer granted one).
    pub fn may_send(&self) -> bool {
        self.credits > 0 && self.peer.is_some()
    }

    /// The CQ data of the next page: the peer's token plus its sequence
    /// number. Call [`Flow::sent`] once the provider took the page.
    pub fn stamp(&self) -> u64 {
        let token = self.peer.as_ref().map_or(0, |p| p.token);
        token.wrapping_add(self.send_seq)
    }

    /// The page stamped last went.
    pub fn sent(&mut self) {
        debug_assert!(self.credits > 0);
        self.credits -= 1;
        self.send_seq += 1;
    }

    /// Queues our FIN: the last command, after our last page.
    pub fn close(&mut self) {
        self.out
            .push_back((FIN, Bytes::copy_from_slice(&self.send_seq.to_be_bytes())));
    }

    // --- receiving pages ---

    /// `pages` more pages were taken from the connection's inbox.
    pub fn consumed(&mut self, pages: u32) {
        self.consumed = self.consumed.saturating_add(pages);
    }

    /// Pages were consumed since the last grant ([`Flow::poll_grant`]
    /// grants nothing without).
    pub fn has_consumed(&self) -> bool {
        self.consumed > 0
    }

    /// Tops the peer's credits up to `share` (at most our window) once
    /// it holds half of that or less (or at all, with `force`). Returns
    /// the grant, which the caller records in the inbox first.
    ///
    /// The peer may send `granted - consumed` more pages. With many
    /// peers each gets a smaller share, so together they stay within the
    /// receives the node keeps posted.
    pub fn poll_grant(&mut self, share: u32, force: bool) -> Option<u32> {
        self.peer.as_ref()?;
        let held = self.granted.saturating_sub(self.consumed);
        let share = share.min(self.window);
        if self.consumed == 0 || held >= share || (!force && held > share / 2) {
            return None;
        }
        let give = share - held;
        self.granted = share;
        self.consumed = 0;
        self.out
            .push_back((CREDIT, Bytes::copy_from_slice(&give.to_be_bytes())));
        Some(give)
    }

    // --- rendezvous: lending ---

    /// Whether a frame of `len` bytes may be lent now: the peer reads by
    /// RMA, the frame is within what it reads, and our caps on lent
    /// frames and bytes leave room for it.
    pub fn may_lend(&self, len: usize) -> bool {
        let Some(peer) = self.peer.as_ref() else {
            return false;
        };
        let Some(read_max) = peer.read_max else {
            return false;
        };
        len as u64 <= read_max
            && self.lent.len() < self.limits.lent_frames
            && self
                .lent_bytes
                .checked_add(len)
                .is_some_and(|b| b <= self.limits.lent_bytes)
    }

    /// Whether the caps on lent frames or the lending window are reached
    /// (more lending waits for the peer to read).
    pub fn lending_full(&self) -> bool {
        self.lent.len() >= self.limits.lent_frames || self.lent_bytes >= self.limits.lend_window
    }

    /// Lends `frame` of `len` bytes until `now` plus the loan time;
    /// returns its id for the RDV frame.
    pub fn lend(&mut self, frame: L, len: usize, now: Instant) -> u32 {
        let id = self.next_lent;
        self.next_lent = self.next_lent.wrapping_add(1);
        self.lent_bytes += len;
        let due = now + self.limits.lend_for;
        self.lent.insert(id, Loan { frame, len, due });
        id
    }

    /// Bytes lent and not read yet.
    pub fn lent_bytes(&self) -> usize {
        self.lent_bytes
    }

    /// Frames lent and not read yet.
    #[cfg(any(all(test, not(loom)), feature = "fuzzing"))]
    pub fn lent_frames(&self) -> usize {
        self.lent.len()
    }

    // --- rendezvous: reading ---

    /// Checks a rendezvous frame the peer sent against what we announced
    /// and the socket's MAXMSGSIZE (`max_data`), and notes the read.
    /// Returns the length to read. The error ends the connection.
    pub fn handle_rdv(&mut self, rdv: &Rdv, max_data: Option<u64>) -> Result<usize, ProtocolError> {
        let bad = wire::bad_rdv;
        if self.peer.is_none() || self.reading.is_some() || rdv.len == 0 {
            return Err(bad());
        }
        let cap = max_data.map_or(self.limits.read_max, |m| m.min(self.limits.read_max));
        if rdv.len > cap {
            return Err(bad());
        }
        let len = usize::try_from(rdv.len).map_err(|_| bad())?;
        self.reading = Some((rdv.id, rdv.more));
        Ok(len)
    }

    /// The rendezvous read in progress, if any (frames after it wait).
    pub fn reading(&self) -> Option<(u32, bool)> {
        self.reading
    }

    /// The read in progress completed: tells the peer it may let the
    /// frame go. Returns whether more frames of the message follow.
    pub fn read_done(&mut self) -> Option<bool> {
        let (id, more) = self.reading.take()?;
        self.out
            .push_back((RDV_DONE, Bytes::copy_from_slice(&id.to_be_bytes())));
        Some(more)
    }

    // --- ending ---

    /// The control connection ended: whether to keep taking the pages
    /// the peer's FIN announced until they are in (or `now` plus
    /// [`FIN_WAIT`]).
    pub fn handle_control_end(&mut self, now: Instant) -> bool {
        if self.peer_fin.is_none() || self.peer.is_none() {
            return false;
        }
        self.drain_until = Some(now + FIN_WAIT);
        true
    }

    /// Whether the connection only drains the pages of a FIN.
    pub fn draining(&self) -> bool {
        self.drain_until.is_some()
    }

    /// Whether every page the peer's FIN announced has been taken.
    pub fn fin_complete(&self, taken: u64) -> bool {
        self.peer_fin.map_or(true, |n| taken >= n)
    }

    /// The next deadline: a loan running out, or the end of a drain.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let loans = self.lent.values().map(|l| l.due).min();
        [loans, self.drain_until].into_iter().flatten().min()
    }

    /// Runs the timers. The error ends the connection: a lent frame the
    /// peer did not read in time (let go now), or pages a FIN announced
    /// that did not come.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), String> {
        if self.drain_until.is_some_and(|t| t <= now) {
            self.drain_until = None;
            return Err("the pages before the peer's FIN did not arrive".into());
        }
        let overdue = self.lent.values().filter(|l| l.due <= now).count();
        if overdue > 0 {
            self.lent.retain(|_, l| l.due > now);
            self.lent_bytes = self.lent.values().map(|l| l.len).sum();
            return Err(format!(
                "the peer did not read {overdue} lent frame(s) within {:?}",
                self.limits.lend_for
            ));
        }
        Ok(())
    }

    /// The next command to send on the control connection.
    pub fn poll_command(&mut self) -> Option<(&'static [u8], Bytes)> {
        self.out.pop_front()
    }

    /// Puts back a command the control connection did not take.
    pub fn unpoll_command(&mut self, command: (&'static [u8], Bytes)) {
        self.out.push_front(command);
    }

    /// Lets go of every lent frame (the connection ends).
    pub fn release_all(&mut self) -> Vec<L> {
        self.lent_bytes = 0;
        self.lent.drain().map(|(_, l)| l.frame).collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn peer(window: u32, read_max: Option<u64>) -> PeerFabric {
        PeerFabric {
            address: vec![1, 2, 3],
            token: 0xfeed_f00d_dead_beef,
            window,
            page: 4096,
            doorbell: None,
            read_max,
            encrypt: false,
        }
    }

    fn credit(flow: &mut Flow<()>) -> Option<u32> {
        match flow.poll_command() {
            Some((name, body)) if name == CREDIT => {
                Some(u32::from_be_bytes(body[..].try_into().unwrap()))
            }
            _ => None,
        }
    }

    /// No credit before the handshake, the first grant right after it.
    #[test]
    fn credits_are_granted_only_after_the_handshake() {
        let mut flow: Flow<()> = Flow::new(8, Limits::default());
        assert_eq!(flow.poll_grant(8, true), None);
        assert!(flow.poll_command().is_none());
        assert!(!flow.may_send());
        assert_eq!(flow.handle_handshake(peer(4, None), 6), 6);
        assert_eq!(credit(&mut flow), Some(6));
        // Consumed pages come back once half the share is used.
        flow.consumed(2);
        assert_eq!(flow.poll_grant(6, false), None);
        flow.consumed(2);
        assert_eq!(flow.poll_grant(6, false), Some(4));
        assert_eq!(credit(&mut flow), Some(4));
    }

    /// A sender spends one credit a page, stamps pages with the peer's
    /// token plus a sequence number, and a credit beyond the peer's
    /// window ends the connection.
    #[test]
    fn credits_are_spent_and_bounded_by_the_peer_window() {
        let mut flow: Flow<()> = Flow::new(8, Limits::default());
        flow.handle_handshake(peer(2, None), 8);
        flow.poll_command();
        assert!(!flow.may_send(), "credits come by CREDIT only");
        flow.handle_command(Control::Credit(2)).unwrap();
        assert_eq!(flow.stamp(), 0xfeed_f00d_dead_beef);
        flow.sent();
        assert_eq!(flow.stamp(), 0xfeed_f00d_dead_bef0);
        flow.sent();
        assert!(!flow.may_send());
        assert!(flow.handle_command(Control::Credit(3)).is_err());
    }

    /// Lent frames are capped in number and bytes, returned by RDVDONE,
    /// and a frame still lent when its time is up ends the connection.
    #[test]
    fn lent_frames_are_capped_in_bytes_count_and_time() {
        let limits = Limits {
            lent_frames: 2,
            lent_bytes: 1000,
            lend_window: 1000,
            lend_for: Duration::from_secs(1),
            read_max: 1 << 20,
        };
        let mut flow: Flow<()> = Flow::new(8, limits);
        assert!(!flow.may_lend(10), "no peer yet");
        flow.handle_handshake(peer(8, Some(600)), 8);
        assert!(!flow.may_lend(601), "over what the peer reads");
        assert!(!flow.may_lend(usize::MAX));
        let t0 = Instant::now();
        let a = flow.lend((), 600, t0);
        assert!(!flow.may_lend(401), "over the bytes cap");
        let _b = flow.lend((), 400, t0);
        assert!(!flow.may_lend(1), "over the frames cap");
        flow.handle_command(Control::RdvDone(a)).unwrap();
        assert_eq!(flow.lent_bytes(), 400);
        assert_eq!(flow.poll_timeout(), Some(t0 + Duration::from_secs(1)));
        assert!(flow.handle_timeout(t0).is_ok());
        let err = flow
            .handle_timeout(t0 + Duration::from_secs(1))
            .unwrap_err();
        assert!(err.contains("did not read 1 lent frame"));
        assert_eq!(flow.lent_frames(), 0);
        assert_eq!(flow.lent_bytes(), 0);
    }

    /// Lending waits once the lent bytes reach the window, and a frame
    /// larger than the window is still lent when nothing else is.
    #[test]
    fn lending_waits_at_the_window() {
        let limits = Limits {
            lent_frames: 8,
            lent_bytes: 10_000,
            lend_window: 1000,
            lend_for: Duration::from_secs(1),
            read_max: 1 << 20,
        };
        let mut flow: Flow<()> = Flow::new(8, limits);
        flow.handle_handshake(peer(8, Some(1 << 20)), 8);
        let t0 = Instant::now();
        assert!(!flow.lending_full());
        assert!(flow.may_lend(5000), "larger than the window, under the cap");
        let a = flow.lend((), 5000, t0);
        assert!(flow.lending_full(), "the window is reached");
        flow.handle_command(Control::RdvDone(a)).unwrap();
        assert!(!flow.lending_full());
        let b = flow.lend((), 600, t0);
        assert!(!flow.lending_full(), "600 of 1000");
        let _c = flow.lend((), 400, t0);
        assert!(flow.lending_full(), "1000 of 1000");
        flow.handle_command(Control::RdvDone(b)).unwrap();
        assert!(!flow.lending_full());
    }

    /// A rendezvous frame is read only after the handshake, one at a
    /// time, within MAXMSGSIZE and what we announced, never empty.
    #[test]
    fn rendezvous_lengths_are_bounded() {
        let limits = Limits {
            read_max: 1 << 20,
            ..Limits::default()
        };
        let rdv = |len: u64| Rdv {
            id: 1,
            len,
            addr: 0,
            key: 9,
            more: false,
        };
        let mut flow: Flow<()> = Flow::new(8, limits);
        assert!(
            flow.handle_rdv(&rdv(10), None).is_err(),
            "before the handshake"
        );
        flow.handle_handshake(peer(8, Some(1 << 20)), 8);
        assert_eq!(flow.poll_command().unwrap().0, CREDIT);
        for len in [0, (1 << 20) + 1, 1 << 63, u64::MAX] {
            assert!(flow.handle_rdv(&rdv(len), None).is_err(), "{len}");
        }
        assert!(
            flow.handle_rdv(&rdv(1000), Some(999)).is_err(),
            "MAXMSGSIZE"
        );
        assert_eq!(flow.handle_rdv(&rdv(1000), None).unwrap(), 1000);
        assert!(flow.handle_rdv(&rdv(10), None).is_err(), "one at a time");
        assert_eq!(flow.read_done(), Some(false));
        assert_eq!(flow.poll_command().unwrap().0, RDV_DONE);
    }

    /// After a FIN the connection drains the pages it announced, for at
    /// most FIN_WAIT.
    #[test]
    fn a_fin_drains_its_pages_then_times_out() {
        let mut flow: Flow<()> = Flow::new(8, Limits::default());
        let t0 = Instant::now();
        assert!(!flow.handle_control_end(t0), "no FIN: ends at once");
        flow.handle_handshake(peer(8, None), 8);
        flow.handle_command(Control::Fin(3)).unwrap();
        assert!(flow.handle_control_end(t0));
        assert!(flow.draining());
        assert!(!flow.fin_complete(2));
        assert!(flow.fin_complete(3));
        assert_eq!(flow.poll_timeout(), Some(t0 + FIN_WAIT));
        assert!(flow.handle_timeout(t0 + FIN_WAIT).is_err());
    }
}
