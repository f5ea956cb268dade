//! The fabric connection's core (flow, inbox, outbox, page reader) as two
//! peers joined by an in-memory page channel: no libfabric, no threads,
//! simulated time. Pages are delivered in any order the test chooses;
//! hostile pages are injected beside the honest ones.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::{Multipart, Part};

use super::conn::{Flow, Limits};
use super::rx::{Claim, Inbox};
use super::seal::Sealer;
use super::tx::{Filled, MemPage, Outbox, Source, TAIL_MIN};
use super::wire::{self, PageItem, PageReader, PeerFabric, Rdv};
use crate::pipe::Item;

/// A page in flight: its CQ data, its source address, the page.
type Wire = VecDeque<(u64, Option<u64>, MemPage)>;

/// One side of the connection.
struct Side {
    addr: u64,
    token: u64,
    page: usize,
    flow: Flow<Bytes>,
    inbox: Inbox<MemPage>,
    outbox: Outbox<MemPage>,
    reader: PageReader,
    received: VecDeque<Bytes>,
    consumed: u32,
    /// Messages the application queued to send.
    queue: VecDeque<Item>,
    /// Messages delivered to the application.
    delivered: Vec<Multipart>,
    /// Free pages (the pool).
    pages: usize,
    /// Why the connection ended, if it did.
    failed: Option<String>,
    /// Lend frames larger than a page.
    rma: bool,
    /// Pages sent with a tail.
    tails_sent: usize,
}

struct SideSource<'a> {
    flow: &'a mut Flow<Bytes>,
    queue: &'a mut VecDeque<Item>,
    pages: &'a mut usize,
    page: usize,
    rma: bool,
    now: Instant,
}

impl Source<MemPage> for SideSource<'_> {
    fn page(&mut self) -> Option<MemPage> {
        if *self.pages == 0 {
            return None;
        }
        *self.pages -= 1;
        Some(MemPage::new(self.page))
    }
    fn next(&mut self) -> Option<Item> {
        if self.flow.lending_full() {
            return None;
        }
        self.queue.pop_front()
    }
    fn lend(&mut self, part: &Part, more: bool) -> Option<Rdv> {
        if !self.rma || !self.flow.may_lend(part.len()) {
            return None;
        }
        let bytes = part.to_bytes();
        let len = bytes.len();
        let id = self.flow.lend(bytes, len, self.now);
        Some(Rdv {
            id,
            len: len as u64,
            addr: 0,
            key: u64::from(id),
            more,
        })
    }
}

impl Side {
    fn new(addr: u64, token: u64, page: usize, buffered: bool, sealer: Option<Sealer>) -> Side {
        let sealed = sealer.is_some();
        Side {
            addr,
            token,
            page,
            flow: Flow::new(8, Limits::default()),
            inbox: Inbox::new(token, sealed),
            outbox: Outbox::new(page, sealer, buffered, None),
            reader: PageReader::new(None, false),
            received: VecDeque::new(),
            consumed: 0,
            queue: VecDeque::new(),
            delivered: Vec::new(),
            pages: 64,
            failed: None,
            rma: false,
            tails_sent: 0,
        }
    }

    fn fabric(&self) -> PeerFabric {
        PeerFabric {
            address: self.addr.to_be_bytes().to_vec(),
            token: self.token,
            window: self.flow_window(),
            page: self.page,
            doorbell: None,
            read_max: self.rma.then_some(1 << 20),
            encrypt: false,
        }
    }

    fn flow_window(&self) -> u32 {
        8
    }

    /// Sends what the queue holds, as credits allow.
    fn send(&mut self, wire: &mut Wire, now: Instant) {
        let mut src = SideSource {
            flow: &mut self.flow,
            queue: &mut self.queue,
            pages: &mut self.pages,
            page: self.page,
            rma: self.rma,
            now,
        };
        loop {
            if let Some((mut page, tail)) = self.outbox.take_ready() {
                if !src.flow.may_send() {
                    self.outbox.put_back(page, tail);
                    return;
                }
                if let Some(tail) = tail {
                    self.tails_sent += 1;
                    // The peer receives the page and its tail as one.
                    page.buf.truncate(page.len);
                    page.buf.extend_from_slice(&tail);
                    page.len = page.buf.len();
                }
                wire.push_back((src.flow.stamp(), Some(self.addr), page));
                src.flow.sent();
            }
            match self.outbox.fill(&mut src, now) {
                Filled::Page => continue,
                Filled::Drained | Filled::NoPage => return,
            }
        }
    }

    /// Takes in pages from `wire`, in the order given, and delivers what
    /// they hold; reads lent frames from `lender`.
    fn receive(&mut self, wire: &mut Wire, lender: &HashMap<u64, Bytes>) {
        while let Some((data, src, page)) = wire.pop_front() {
            if let Claim::NotMine(_) = self.inbox.claim(data, src, page) {
                // Dropped, as the node drops what nobody claims.
            }
        }
        if let Some(why) = self.inbox.take_in_order(&mut self.received) {
            self.failed.get_or_insert(why);
            return;
        }
        loop {
            if let Some((id, _)) = self.flow.reading() {
                let data = lender.get(&u64::from(id)).cloned().expect("a lent frame");
                let more = self.flow.read_done().unwrap();
                if let Some(msg) = self.reader.push_part(data, more) {
                    self.delivered.push(msg);
                }
                continue;
            }
            match self.reader.next(&mut self.received, &mut self.consumed) {
                Ok(None) => break,
                Ok(Some(PageItem::Msg(m))) => self.delivered.push(m),
                Ok(Some(PageItem::Rdv(rdv))) => {
                    if let Err(e) = self.flow.handle_rdv(&rdv, None) {
                        self.failed.get_or_insert(e.to_string());
                        return;
                    }
                }
                Ok(Some(_)) => {}
                Err(e) => {
                    self.failed.get_or_insert(e.to_string());
                    return;
                }
            }
        }
        let taken = std::mem::take(&mut self.consumed);
        self.flow.consumed(taken);
        if let Some(give) = self.flow.poll_grant(8, false) {
            self.inbox.grant(give);
        }
    }

    /// Applies the commands the other side queued.
    fn commands_from(&mut self, other: &mut Side) {
        while let Some((name, body)) = other.flow.poll_command() {
            let control = wire::parse_control(name, &body).expect("a known command");
            if let Err(why) = self.flow.handle_command(control) {
                self.failed.get_or_insert(why);
            }
        }
    }
}

/// Two sides, handshaken: each granted the other its first credits.
fn pair(page: usize, buffered: bool) -> (Side, Side) {
    let mut a = Side::new(1, 0x1111_2222_3333_4444, page, buffered, None);
    let mut b = Side::new(2, 0x5555_6666_7777_8888, page, buffered, None);
    handshake(&mut a, &mut b);
    (a, b)
}

fn handshake(a: &mut Side, b: &mut Side) {
    let (fa, fb) = (a.fabric(), b.fabric());
    let g = a.flow.handle_handshake(fb, 8);
    a.inbox.authenticate(Some(b.addr));
    a.inbox.grant(g);
    let g = b.flow.handle_handshake(fa, 8);
    b.inbox.authenticate(Some(a.addr));
    b.inbox.grant(g);
    a.commands_from(b);
    b.commands_from(a);
}

fn msg(i: usize, len: usize) -> Multipart {
    let mut body = vec![(i % 251) as u8; len];
    if len >= 8 {
        body[..8].copy_from_slice(&(i as u64).to_be_bytes());
    }
    [Part::from(Bytes::from(body))].into_iter().collect()
}

/// Runs both directions until nothing moves: `a` sends to `b`, pages
/// cross `shuffle`d, credits come back.
fn run(a: &mut Side, b: &mut Side, now: Instant, shuffle: bool) {
    for _ in 0..10_000 {
        let mut wire = Wire::new();
        a.send(&mut wire, now);
        let moved = !wire.is_empty();
        if shuffle {
            // Completion order is not send order (tcp;ofi_rxm): reversed.
            wire = wire.into_iter().rev().collect();
        }
        b.receive(&mut wire, &HashMap::new());
        // The sends completed: the pages are back in the pool.
        a.pages = 64;
        a.commands_from(b);
        b.commands_from(a);
        if !moved && a.queue.is_empty() {
            return;
        }
    }
    panic!("the pair did not settle");
}

/// Messages of every size from empty to several pages cross in order,
/// whole, whatever order the pages complete in, buffered or not.
#[test]
fn messages_of_every_size_cross_whole_and_in_order() {
    for buffered in [true, false] {
        for shuffle in [false, true] {
            let (mut a, mut b) = pair(256, buffered);
            let sizes: Vec<usize> = (0..300).map(|i| (i * 37) % 900).collect();
            for (i, len) in sizes.iter().enumerate() {
                a.queue.push_back(Item::Msg(msg(i, *len)));
            }
            run(&mut a, &mut b, Instant::now(), shuffle);
            assert_eq!(b.failed, None);
            assert_eq!(b.delivered.len(), sizes.len(), "buffered {buffered}");
            for (i, (m, len)) in b.delivered.iter().zip(&sizes).enumerate() {
                assert_eq!(m, &msg(i, *len), "message {i} of {len} bytes");
            }
        }
    }
}

/// A receiver that takes nothing holds its sender to the window granted:
/// no page beyond it leaves, and what was sent arrives once credits come.
#[test]
fn a_receiver_that_takes_nothing_holds_the_sender_to_its_window() {
    let (mut a, mut b) = pair(256, false);
    for i in 0..100 {
        a.queue.push_back(Item::Msg(msg(i, 100)));
    }
    let mut wire = Wire::new();
    a.send(&mut wire, Instant::now());
    assert_eq!(wire.len(), 8, "the window: 8 pages, one message each");
    let mut wire2 = Wire::new();
    a.send(&mut wire2, Instant::now());
    assert!(wire2.is_empty(), "nothing more without credits");
    b.receive(&mut wire, &HashMap::new());
    a.commands_from(&mut b);
    run(&mut a, &mut b, Instant::now(), false);
    assert_eq!(b.delivered.len(), 100);
}

/// Hostile pages beside the honest stream: another address with the right
/// token, a guessed token, pages before the handshake. None is taken and
/// none ends the connection; the honest stream is intact.
#[test]
fn forged_pages_are_not_taken_and_end_nothing() {
    let mut a = Side::new(1, 0x1111_2222_3333_4444, 256, false, None);
    let mut b = Side::new(2, 0x5555_6666_7777_8888, 256, false, None);
    // Before the handshake: b claims nothing, whatever the stamp.
    let forged = |bytes: &[u8]| {
        let mut p = MemPage::new(256);
        p.buf[..bytes.len()].copy_from_slice(bytes);
        p.len = bytes.len();
        p
    };
    let evil = [0x00, 4, b'e', b'v', b'i', b'l'];
    assert!(matches!(
        b.inbox.claim(b.token, Some(a.addr), forged(&evil)),
        Claim::NotMine(_)
    ));
    handshake(&mut a, &mut b);
    for i in 0..20 {
        a.queue.push_back(Item::Msg(msg(i, 50)));
    }
    let mut wire = Wire::new();
    a.send(&mut wire, Instant::now());
    // A third party at address 9 who learned the token: not taken.
    wire.push_front((b.token, Some(9), forged(&evil)));
    // Guessed tokens from the peer's own address: not taken.
    for guess in [0, 1, u64::MAX, b.token ^ (1 << 63)] {
        wire.push_front((guess, Some(a.addr), forged(&evil)));
    }
    b.receive(&mut wire, &HashMap::new());
    a.commands_from(&mut b);
    run(&mut a, &mut b, Instant::now(), false);
    assert_eq!(b.failed, None);
    assert_eq!(b.delivered.len(), 20);
    assert!(b.delivered.iter().all(|m| m[0] != b"evil"[..]));
}

/// The authenticated peer breaking the protocol ends the connection: a
/// page beyond its credits, or one sent again.
#[test]
fn the_peer_breaking_the_protocol_ends_the_connection() {
    let (a, mut b) = pair(256, false);
    let page = |len: usize| {
        let mut p = MemPage::new(256);
        p.buf[..3].copy_from_slice(&[0, 1, b'x']);
        p.len = len;
        p
    };
    let mut wire: Wire = (0..9)
        .map(|seq| (b.token + seq, Some(a.addr), page(3)))
        .collect();
    b.receive(&mut wire, &HashMap::new());
    assert!(b.failed.as_deref().unwrap().contains("beyond the credits"));

    let (a, mut b) = pair(256, false);
    let mut wire: Wire = [0, 0]
        .into_iter()
        .map(|seq| (b.token + seq, Some(a.addr), page(3)))
        .collect();
    b.receive(&mut wire, &HashMap::new());
    assert!(b.failed.as_deref().unwrap().contains("twice"));
}

/// Frames larger than a page are lent, read once, and let go at RDVDONE;
/// a lender's caps hold further frames back until the reads are done, and
/// a frame the peer does not read in time ends the connection.
#[test]
fn large_frames_are_lent_within_caps_and_time() {
    let mut a = Side::new(1, 0x1111, 1024, true, None);
    let mut b = Side::new(2, 0x2222, 1024, true, None);
    a.rma = true;
    b.rma = true;
    handshake(&mut a, &mut b);
    let big = 1024 + 1;
    let t0 = Instant::now();
    for i in 0..70 {
        a.queue.push_back(Item::Msg(msg(i, big)));
    }
    let mut wire = Wire::new();
    a.send(&mut wire, t0);
    assert_eq!(a.flow.lent_frames(), 64, "the default cap on lent frames");
    assert_eq!(a.queue.len(), 6, "the rest waits for RDVDONEs");
    // The reader gets the lent bytes from a's loans.
    let loans: HashMap<u64, Bytes> = (0..64u64)
        .map(|id| (id, msg(id as usize, big)[0].to_bytes()))
        .collect();
    b.receive(&mut wire, &loans);
    assert_eq!(b.failed, None);
    assert_eq!(b.delivered.len(), 64);
    a.commands_from(&mut b);
    assert_eq!(a.flow.lent_frames(), 0, "every frame let go");
    // The remaining six are lent; nobody reads them: after the loan
    // time the connection ends.
    a.send(&mut Wire::new(), t0);
    assert_eq!(a.flow.lent_frames(), 6);
    let due = a.flow.poll_timeout().unwrap();
    assert_eq!(due, t0 + Limits::default().lend_for);
    assert!(a
        .flow
        .handle_timeout(due - Duration::from_millis(1))
        .is_ok());
    assert!(a.flow.handle_timeout(due).is_err());
    assert_eq!(a.flow.lent_bytes(), 0);
}

/// Sealed pages cross whole and in order once the keys are exchanged.
#[test]
fn sealed_pages_cross_once_the_keys_are_in() {
    let (sealer, key) = Sealer::generate();
    let mut a = Side::new(1, 0x1111, 256, true, Some(sealer));
    let mut b = Side::new(2, 0x2222, 256, true, None);
    b.inbox = Inbox::new(b.token, true);
    handshake(&mut a, &mut b);
    for i in 0..50 {
        a.queue.push_back(Item::Msg(msg(i, 40 + i)));
    }
    let mut wire = Wire::new();
    a.send(&mut wire, Instant::now());
    b.receive(&mut wire, &HashMap::new());
    assert!(b.delivered.is_empty(), "no key yet: the pages wait");
    b.inbox.set_key(&key[..]).unwrap();
    b.receive(&mut Wire::new(), &HashMap::new());
    a.commands_from(&mut b);
    run(&mut a, &mut b, Instant::now(), false);
    assert_eq!(b.failed, None);
    assert_eq!(b.delivered.len(), 50);
    assert_eq!(b.delivered[49], msg(49, 89));
}

/// Where the provider sends a page and a body after it as one message,
/// long last bodies go uncopied as page tails: the messages cross whole
/// and in order, single-part and multipart, mixed with short ones that
/// share pages; a sealed connection never sends tails (it seals pages in
/// place).
#[test]
fn long_bodies_go_as_page_tails_and_cross_whole() {
    let page = 128 * 1024;
    let multi = |i: usize, lens: &[usize]| -> Multipart {
        lens.iter()
            .map(|&len| Part::from(msg(i, len).iter().next().unwrap().to_bytes()))
            .collect()
    };
    let shapes: Vec<Vec<usize>> = vec![
        vec![100],
        vec![TAIL_MIN],
        vec![TAIL_MIN - 1],
        vec![30, 70_000],
        vec![100],
        vec![64 * 1024],
        vec![70_000, 10],
        vec![5, 6, 100_000],
        vec![0],
    ];
    let tails = shapes
        .iter()
        .filter(|lens| *lens.last().unwrap() >= TAIL_MIN)
        .count();
    for sealed in [false, true] {
        let (mut a, mut b) = if sealed {
            let (sealer, key) = Sealer::generate();
            let mut a = Side::new(1, 0x1111, page, true, Some(sealer));
            let mut b = Side::new(2, 0x2222, page, true, None);
            b.inbox = Inbox::new(b.token, true);
            b.inbox.set_key(&key[..]).unwrap();
            handshake(&mut a, &mut b);
            (a, b)
        } else {
            pair(page, true)
        };
        a.outbox.set_tails(true);
        for round in 0..3 {
            for (i, lens) in shapes.iter().enumerate() {
                a.queue.push_back(Item::Msg(multi(round * 100 + i, lens)));
            }
        }
        run(&mut a, &mut b, Instant::now(), false);
        assert_eq!(b.failed, None, "sealed {sealed}");
        assert_eq!(b.delivered.len(), 3 * shapes.len(), "sealed {sealed}");
        for round in 0..3 {
            for (i, lens) in shapes.iter().enumerate() {
                assert_eq!(
                    b.delivered[round * shapes.len() + i],
                    multi(round * 100 + i, lens),
                    "sealed {sealed}: message {i} of round {round}"
                );
            }
        }
        let want = if sealed { 0 } else { 3 * tails };
        assert_eq!(
            a.tails_sent, want,
            "sealed {sealed}: pages sent with a tail"
        );
    }
}
