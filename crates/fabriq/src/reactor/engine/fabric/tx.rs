//! The sending side of one fabric connection, with no libfabric and no
//! clock in it: messages and subscriptions encoded into pages by
//! fabriq-zmtp's frame encoding (a message that fits the page being
//! filled is written straight into it, or, where the provider can send a
//! page and bytes after it as one message, its long last body is sent
//! uncopied after the page: [`TAIL_MIN`]; what does not fit waits in an
//! [`Encoder`] and is copied on page by page), frames larger than a page
//! lent for a rendezvous read instead, and each page sealed as it ships
//! when the connection encrypts.
//!
//! The engine supplies pages, queued items and lending through
//! [`Source`]; the tests supply plain memory.

use std::time::{Duration, Instant};

use bytes::BufMut;
use fabriq_zmtp::frame::{encode_header, header_len, Frame};
use fabriq_zmtp::{Command, Encoder, Multipart, Part};

use super::seal::{self, Sealer};
use super::wire::Rdv;
use crate::pipe::Item;

/// Room in each page beyond the page size the peer fills, for frame
/// headers, so a message body of exactly the page size (64 KiB by
/// default, a common size) fits one page and is received without a copy.
pub(crate) const HEADER_ROOM: usize = 64;

/// Bodies at least this long wait in the encoder by reference (copied
/// once, into pages); shorter ones are copied into its batch.
const BY_REF: usize = 1024;

/// Where the provider can send a page and bytes after it as one message
/// ([`Outbox::set_tails`]), a message's last body at least this long is
/// not copied into the page: the page ends with its header and the body
/// goes as the page's tail, read in place by the provider (over shm, one
/// copy by the kernel straight into the peer's page). Shorter bodies are
/// copied, so that several share a page and a send.
pub(crate) const TAIL_MIN: usize = 16 * 1024;

/// A page being filled, as the sending side needs it.
pub(crate) trait PageFill {
    /// Bytes filled.
    fn len(&self) -> usize;
    /// Sets the bytes filled.
    fn set_len(&mut self, len: usize);
    /// The whole page.
    fn buffer_mut(&mut self) -> &mut [u8];
}

/// What the outbox takes from its engine while it fills pages.
pub(crate) trait Source<P> {
    /// A free page, if the pool has one.
    fn page(&mut self) -> Option<P>;
    /// The next queued item, if any (and if more may be sent now).
    fn next(&mut self) -> Option<Item>;
    /// Lends `part` for the peer to read: the RDV to send in its place,
    /// or `None` to stream it through pages.
    fn lend(&mut self, part: &Part, more: bool) -> Option<Rdv>;
}

/// What [`Outbox::fill`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filled {
    /// Nothing is left to put in pages (or a flush interval lets the
    /// page wait).
    Drained,
    /// A page is ready: [`Outbox::take_ready`].
    Page,
    /// The pool has no free page: pages come back as sends complete and
    /// as the application drops received messages.
    NoPage,
}

/// The sending side of one connection. See the module documentation.
#[derive(Debug)]
pub(crate) struct Outbox<P> {
    /// Encoded bytes that did not fit the page being filled, in order.
    enc: Encoder,
    /// A message that fits a page of its own but not what was left of the
    /// last one: it goes first into the next page, whole (not through the
    /// encoder, which would copy it twice).
    held: Option<Multipart>,
    filling: Option<P>,
    /// The body that ends the page being filled, sent after it uncopied.
    tail: Option<bytes::Bytes>,
    /// A filled (and sealed) page, and its tail, waiting for a credit or
    /// the provider.
    ready: Option<(P, Option<bytes::Bytes>)>,
    /// Large bodies may go as tails ([`Outbox::set_tails`]).
    tails: bool,
    /// How much of a page to fill: the peer's page size (at most ours).
    limit: usize,
    /// Bytes reserved at the start of each page for its seal.
    seal_room: usize,
    sealer: Option<Sealer>,
    /// Coalesce messages into pages (else each message goes at once).
    buffered: bool,
    /// With `buffered`: how long a partly filled page may wait for more.
    flush_wait: Option<Duration>,
    flush_at: Option<Instant>,
    failed: Option<String>,
}

impl<P: PageFill> Outbox<P> {
    /// An outbox that fills `limit` bytes of each page; seals with
    /// `sealer` when the connection encrypts; coalesces when `buffered`,
    /// holding a partly filled page up to `flush_wait`.
    pub(crate) fn new(
        limit: usize,
        sealer: Option<Sealer>,
        buffered: bool,
        flush_wait: Option<Duration>,
    ) -> Outbox<P> {
        let seal_room = if sealer.is_some() { seal::OVERHEAD } else { 0 };
        Outbox {
            enc: Encoder::new(BY_REF),
            held: None,
            filling: None,
            tail: None,
            ready: None,
            tails: false,
            limit: limit.max(seal_room + 64),
            seal_room,
            sealer,
            buffered,
            flush_wait,
            flush_at: None,
            failed: None,
        }
    }

    /// Sets how much of a page to fill (the peer's page size, learned
    /// from its READY).
    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(self.seal_room + 64);
    }

    /// Lets large bodies go uncopied, as the tails of pages (see
    /// [`TAIL_MIN`]): for providers that send a page and unregistered
    /// bytes as one message. Never with a sealer (a page is sealed whole,
    /// in place).
    pub(crate) fn set_tails(&mut self, on: bool) {
        self.tails = on && self.sealer.is_none();
    }

    /// Whether `part` goes by rendezvous when the peer can read it.
    pub(crate) fn lends(&self, len: usize) -> bool {
        len > self.limit.saturating_sub(HEADER_ROOM)
    }

    /// Queues a subscription (or its cancellation) toward the peer.
    pub(crate) fn push_command(&mut self, cmd: &Command) {
        // After a held message, in order.
        if let Some(parts) = self.held.take() {
            for (i, part) in parts.iter().enumerate() {
                self.enc.push_frame(part, i + 1 < parts.len());
            }
        }
        self.enc.push_command(cmd);
    }

    /// The page ready to send, if any, and the bytes to send after it in
    /// the same message.
    pub(crate) fn take_ready(&mut self) -> Option<(P, Option<bytes::Bytes>)> {
        self.ready.take()
    }

    /// Puts back a page (and its tail) the provider or the credits did
    /// not take.
    pub(crate) fn put_back(&mut self, page: P, tail: Option<bytes::Bytes>) {
        debug_assert!(self.ready.is_none());
        self.ready = Some((page, tail));
    }

    /// Bytes accepted and not sent yet.
    pub(crate) fn unsent(&self) -> usize {
        self.enc.len()
            + self
                .held
                .as_ref()
                .map_or(0, |m| m.iter().map(|p| header_len(p.len()) + p.len()).sum())
            + self
                .filling
                .as_ref()
                .map_or(0, |p| p.len().saturating_sub(self.seal_room))
            + self
                .ready
                .as_ref()
                .map_or(0, |(p, t)| p.len() + t.as_ref().map_or(0, |t| t.len()))
    }

    /// Whether nothing at all waits (no encoded bytes, no page being
    /// filled or ready, no flush timer).
    pub(crate) fn is_idle(&self) -> bool {
        self.enc.is_empty()
            && self.held.is_none()
            && self.ready.is_none()
            && self.flush_at.is_none()
            && self
                .filling
                .as_ref()
                .map_or(true, |p| p.len() <= self.seal_room)
    }

    /// When a partly filled page goes, with a flush interval.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.flush_at
    }

    /// Why the connection must end (a page could not be sealed).
    pub(crate) fn failed(&mut self) -> Option<String> {
        self.failed.take()
    }

    /// Fills the page being filled from the bytes left over and then from
    /// `src`'s items, until a page is ready ([`Filled::Page`]) or nothing
    /// is left. Call only while no page is ready.
    pub(crate) fn fill(&mut self, src: &mut impl Source<P>, now: Instant) -> Filled {
        if self.ready.is_some() {
            return Filled::Page;
        }
        loop {
            if self.failed.is_some() {
                return Filled::Drained;
            }
            if self.filling.is_none() {
                let mut first = self.held.take().map(Item::Msg);
                if first.is_none() && self.enc.is_empty() {
                    // (A pop, not a look at the length: an empty pop asks
                    // the pipe to wake us when the socket sends.)
                    let Some(item) = src.next() else {
                        return Filled::Drained;
                    };
                    first = Some(item);
                }
                let Some(mut page) = src.page() else {
                    // No page yet: all of it goes to the encoder.
                    if let Some(item) = first {
                        self.stage(item, src);
                    }
                    return Filled::NoPage;
                };
                // Room for the seal, written when the page ships.
                page.set_len(self.seal_room);
                self.filling = Some(page);
                // Staged with the page there, a message that fits goes
                // straight into it (one copy, not two).
                if let Some(item) = first {
                    if self.stage(item, src) != Staged::In {
                        return self.ship();
                    }
                    continue;
                }
            }
            let limit = self.limit;
            let page = self.filling.as_mut().expect("a page being filled");
            let mut len = page.len();
            if !self.enc.is_empty() {
                let mut dst = &mut page.buffer_mut()[len..limit];
                len += self.enc.copy_into(&mut dst, usize::MAX);
                page.set_len(len);
                if len == limit {
                    return self.ship();
                }
            }
            if len > self.seal_room && !self.buffered {
                // Unbuffered: each message is sent as soon as it is in.
                return self.ship();
            }
            let Some(item) = src.next() else {
                // Nothing queued: a partly filled page goes now, unless a
                // flush interval lets it wait for more.
                if len == self.seal_room {
                    return Filled::Drained;
                }
                if let Some(wait) = self.flush_wait.filter(|_| self.buffered) {
                    if now < *self.flush_at.get_or_insert(now + wait) {
                        return Filled::Drained;
                    }
                }
                return self.ship();
            };
            if self.stage(item, src) != Staged::In {
                // The page ends with a tail, or the item fits a page of its
                // own but not what is left of this one: this one goes, so
                // the item does not straddle two (the receiver then
                // delivers it from the page, uncopied).
                return self.ship();
            }
        }
    }

    /// Moves the page being filled to `ready`, sealed.
    fn ship(&mut self) -> Filled {
        self.flush_at = None;
        match self.filling.take() {
            Some(mut page) if page.len() > self.seal_room => {
                debug_assert!(self.tail.is_none() || self.sealer.is_none());
                if let Some(sealer) = self.sealer.as_mut() {
                    // Pages are sealed in the order they are sent (one
                    // ready page at a time), the order the peer opens
                    // them in.
                    let len = page.len();
                    if let Err(why) = sealer.seal(&mut page.buffer_mut()[..len]) {
                        self.failed = Some(why);
                        return Filled::Drained;
                    }
                }
                self.ready = Some((page, self.tail.take()));
                Filled::Page
            }
            other => {
                self.filling = other;
                Filled::Drained
            }
        }
    }

    /// Encodes `item`: straight into the page being filled when all of it
    /// fits (its last body as the page's tail when that is long enough),
    /// else into the encoder. See [`Staged`].
    fn stage(&mut self, item: Item, src: &mut impl Source<P>) -> Staged {
        let parts: Multipart = match item {
            Item::Msg(parts) => parts,
            Item::Subscribe(t) => {
                self.enc.push_command(&Command::Subscribe(t));
                return Staged::In;
            }
            Item::Cancel(t) => {
                self.enc.push_command(&Command::Cancel(t));
                return Staged::In;
            }
        };
        let size: usize = parts.iter().map(|p| header_len(p.len()) + p.len()).sum();
        let room = self.limit.saturating_sub(self.seal_room);
        let page_len = self.filling.as_ref().map(PageFill::len);
        // The common case: the whole message fits the page being filled.
        if let (Some(len), true) = (page_len, self.enc.is_empty()) {
            if len + size <= self.limit {
                let page = self.filling.as_mut().expect("a page being filled");
                let last = parts.len().saturating_sub(1);
                let tail = parts
                    .iter()
                    .last()
                    .filter(|p| self.tails && p.len() >= TAIL_MIN)
                    .map(Part::to_bytes);
                let tail_len = tail.as_ref().map_or(0, bytes::Bytes::len);
                let mut dst = &mut page.buffer_mut()[len..len + size - tail_len];
                for (i, part) in parts.iter().enumerate() {
                    encode_header(&mut dst, part.len(), i < last, false);
                    if i < last || tail.is_none() {
                        dst.put_slice(part);
                    }
                }
                fabriq_zmtp::copies::count(fabriq_zmtp::copies::Site::Page, size - tail_len);
                page.set_len(len + size - tail_len);
                if tail.is_some() {
                    self.tail = tail;
                    return Staged::Ends;
                }
                return Staged::In;
            }
        }
        let straddles =
            page_len.is_some_and(|len| len > self.seal_room) && self.enc.is_empty() && size <= room;
        let last = parts.len().saturating_sub(1);
        let lends = parts.iter().any(|p| self.lends(p.len()));
        if straddles && !lends {
            // It fits a page of its own but not what is left of this one:
            // this one goes, and the message starts the next, whole (the
            // receiver then delivers it from the page, uncopied).
            self.held = Some(parts);
            return Staged::Held;
        }
        for (i, part) in parts.iter().enumerate() {
            let more = i < last;
            if lends && self.lends(part.len()) {
                // A frame larger than a page is lent to the peer, which
                // reads it straight into its final buffer.
                if let Some(rdv) = src.lend(part, more) {
                    self.enc.push_wire(&Frame {
                        more: false,
                        command: true,
                        data: rdv.encode().freeze(),
                    });
                    continue;
                }
            }
            self.enc.push_frame(part, more);
        }
        Staged::In
    }
}

/// What [`Outbox::stage`] did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Staged {
    /// In the page being filled or in the encoder: go on filling.
    In,
    /// In the page, its last body as the page's tail: the page is done.
    Ends,
    /// It fits an empty page but not this one: it is held for the next
    /// page, and this one ships.
    Held,
}

/// A page of plain memory, for tests.
#[cfg(all(test, not(loom)))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemPage {
    pub buf: Vec<u8>,
    pub len: usize,
}

#[cfg(all(test, not(loom)))]
impl MemPage {
    /// An empty page of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> MemPage {
        MemPage {
            buf: vec![0; capacity],
            len: 0,
        }
    }
}

#[cfg(all(test, not(loom)))]
impl PageFill for MemPage {
    fn len(&self) -> usize {
        self.len
    }
    fn set_len(&mut self, len: usize) {
        self.len = len;
    }
    fn buffer_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

#[cfg(all(test, not(loom)))]
impl super::rx::PageBuf for MemPage {
    fn filled_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
    fn freeze(mut self) -> bytes::Bytes {
        self.buf.truncate(self.len);
        bytes::Bytes::from(self.buf)
    }
}
