//! [`PagedEndpoint`]: the safe data path. An RDM endpoint with its own
//! transmit and receive CQs and address vector, which takes ownership of a
//! [`Page`] when it is posted and gives it back in the [`Event`] of its
//! completion. Safe code therefore cannot free, reuse or even read a buffer
//! the provider may still be using.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::os::fd::RawFd;

use crate::av::{AddressVector, FiAddr};
use crate::cq::{Completion, CompletionQueue, CqFormat, Wait};
use crate::domain::Domain;
use crate::endpoint::{CqBind, Endpoint};
use crate::error::{CompletionError, Error, Result};
use crate::info::{Info, MrMode};
use crate::mr::ReadBuffer;
use crate::pool::Page;

/// Sizes of a [`PagedEndpoint`].
#[derive(Debug, Clone, Copy)]
pub struct PagedConfig {
    /// Most sends in flight (the send window / credits).
    pub max_sends: usize,
    /// Most receives posted.
    pub max_recvs: usize,
    /// Ask for wait fds on the CQs (falls back to polling without).
    pub wait: Wait,
    /// Address vector size hint.
    pub av_size: usize,
}

impl Default for PagedConfig {
    fn default() -> Self {
        PagedConfig {
            max_sends: 64,
            max_recvs: 64,
            wait: Wait::FdOrPoll,
            av_size: 64,
        }
    }
}

/// What a completion gave back.
#[derive(Debug)]
pub enum Event {
    /// A send completed: the page is yours again.
    Sent {
        /// The page that was sent.
        page: Page,
        /// The peer it went to.
        dest: FiAddr,
        /// The tag the send was posted with.
        tag: u64,
    },
    /// A receive completed: `page.len()` is the message length.
    Received {
        /// The page holding the message.
        page: Page,
        /// Remote CQ data, if the sender attached some.
        data: Option<u64>,
        /// The sender as our address vector knows it, when the provider
        /// reports sources ([`PagedEndpoint::has_source`]); `None` without
        /// `FI_SOURCE`, or for a sender that is not in the address vector
        /// (`FI_ADDR_NOTAVAIL`).
        src: Option<FiAddr>,
    },
    /// A send failed (error completion).
    SendFailed {
        /// The page that was to be sent.
        page: Page,
        /// The peer it was for.
        dest: FiAddr,
        /// The tag the send was posted with.
        tag: u64,
        /// The error entry.
        error: CompletionError,
    },
    /// An RMA read completed: the bytes read, in registered memory.
    ReadDone {
        /// What was read (no copy).
        data: bytes::Bytes,
        /// The tag the read was posted with.
        tag: u64,
    },
    /// An RMA read failed.
    ReadFailed {
        /// The tag the read was posted with.
        tag: u64,
        /// The error entry.
        error: CompletionError,
    },
    /// A receive failed, e.g. truncated (`FI_ETRUNC`).
    RecvFailed {
        /// The page that was posted.
        page: Page,
        /// The error entry.
        error: CompletionError,
    },
}

/// A post that was refused; the page comes back.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct PostError {
    /// Why (e.g. [`Error::Again`]: read completions and retry).
    pub error: Error,
    /// The page that was not posted.
    pub page: Page,
}

/// A send of a page and a tail that was refused; both come back.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct PiecesPostError {
    /// Why (e.g. [`Error::Again`]: read completions and retry).
    pub error: Error,
    /// The page that was not posted.
    pub page: Page,
    /// The tail that was not posted.
    pub tail: bytes::Bytes,
}

/// A read that was refused; the buffer comes back.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ReadPostError {
    /// Why (e.g. [`Error::Again`]: read completions and retry).
    pub error: Error,
    /// The buffer that was not posted.
    pub buffer: Box<ReadBuffer>,
}

/// `struct fi_context2` storage: 4 pointers the provider may write while
/// the operation is in flight (FI_CONTEXT / FI_CONTEXT2 mode).
#[repr(C, align(8))]
struct Ctx(UnsafeCell<[usize; 4]>);

enum Slot {
    Free,
    /// A page, and the bytes sent after it in the same message, if any
    /// (kept alive until the completion).
    Send(Page, Option<bytes::Bytes>, FiAddr, u64),
    Recv(Page),
    Read(ReadBuffer, u64),
}

/// An RDM endpoint that owns its posted pages. See the crate docs for the
/// ownership rule.
pub struct PagedEndpoint {
    // Declared first: dropped (closed) first, so the provider has let go of
    // every posted page and context before `slots` and `ctxs` are freed.
    ep: Endpoint,
    /// One queue for send and receive completions: each read drives a
    /// manual-progress provider once (tcp: an `epoll_wait` per read), and
    /// a look costs one read, not two.
    cq: CompletionQueue,
    av: AddressVector,
    /// One per operation; the provider only ever sees `ctxs[i].0.get()`.
    /// Never borrowed mutably as a whole (each entry is an UnsafeCell).
    ctxs: Box<[Ctx]>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    sends: usize,
    recvs: usize,
    config: PagedConfig,
    scratch: Vec<Completion>,
    /// Receive completions are read with their source (`FI_SOURCE`).
    source: bool,
    /// Sends may gather a page and unregistered bytes
    /// ([`PagedEndpoint::sends_pieces`]).
    pieces: bool,
    /// Peers removed with [`PagedEndpoint::remove_peer`]: their AV entries
    /// stay taken, and their messages have no source.
    retired: std::collections::HashSet<FiAddr>,
}

/// The AV entry an endpoint with sources gives to itself, so that no peer
/// has it: shm (1.17) reports a sender missing from the AV, or removed
/// from it, as entry 0, which would otherwise be a real peer.
const OWN_SLOT: FiAddr = FiAddr(0);

/// Inserts the endpoint's own address as the first AV entry. False (no
/// sources then) when the provider gave it another index.
fn reserve_own_slot(ep: &Endpoint, av: &AddressVector) -> Result<bool> {
    let own = av.insert(&ep.name()?)?;
    if own != OWN_SLOT {
        tracing::debug!(?own, "own address not at AV entry 0: sources not reported");
    }
    Ok(own == OWN_SLOT)
}

impl Drop for PagedEndpoint {
    fn drop(&mut self) {
        // Closing first: then the provider has let go of every posted page
        // and context, and the fields are freed after this body. If the
        // close fails it may not have: the pages, buffers and contexts are
        // leaked rather than handed back or freed.
        if let Err(error) = self.ep.close() {
            let slots = std::mem::take(&mut self.slots);
            let ctxs = std::mem::take(&mut self.ctxs);
            let posted = slots.iter().filter(|s| !matches!(s, Slot::Free)).count();
            crate::close::leaked("posted pages of an endpoint", posted, &error);
            std::mem::forget(slots);
            std::mem::forget(ctxs);
        }
    }
}

impl PagedEndpoint {
    /// Opens the CQs (data format), the AV and the endpoint, binds them and
    /// enables the endpoint.
    ///
    /// Refuses ([`Error::Unsupported`]) a provider whose `info` does not
    /// promise a thread-safe domain and 8 bytes of remote CQ data.
    pub fn open(domain: &Domain, info: &Info, config: PagedConfig) -> Result<Self> {
        info.check_required(true)?;
        let tx_size = config.max_sends.max(1);
        let rx_size = config.max_recvs.max(1);
        let cq =
            CompletionQueue::open(domain, (tx_size + rx_size) * 2, CqFormat::Data, config.wait)?;
        let av = AddressVector::open(domain, config.av_size)?;
        let mut ep = Endpoint::open(domain, info)?;
        ep.bind_cq(&cq, CqBind::Both)?;
        ep.bind_av(&av)?;
        ep.enable()?;
        let source = info.has_source() && reserve_own_slot(&ep, &av)?;
        let pieces = info.tx_iov_limit() >= 2 && !info.mr_mode().contains(MrMode::LOCAL);
        let n = tx_size + rx_size;
        Ok(PagedEndpoint {
            ep,
            cq,
            av,
            ctxs: (0..n).map(|_| Ctx(UnsafeCell::new([0; 4]))).collect(),
            slots: (0..n).map(|_| Slot::Free).collect(),
            free: (0..n).rev().collect(),
            sends: 0,
            recvs: 0,
            config,
            scratch: Vec::with_capacity(crate::cq::READ_BATCH),
            source,
            pieces,
            retired: std::collections::HashSet::new(),
        })
    }

    /// True when received pages come with their sender
    /// ([`Event::Received`]'s `src`): the provider offered `FI_SOURCE` and
    /// the endpoint was opened with it (see [`getinfo`](crate::getinfo)).
    pub fn has_source(&self) -> bool {
        self.source
    }

    /// The AV entry of this endpoint's own address when it reports
    /// sources: messages it sends to itself are received without a source
    /// (`src` is `None`), as are a stranger's, since shm reports both as
    /// that entry. `None` without sources.
    pub fn own_entry(&self) -> Option<FiAddr> {
        self.source.then_some(OWN_SLOT)
    }

    /// Retires a peer, e.g. when its connection closed: its messages no
    /// longer carry a source (`src` is `None`) and sends to it are refused.
    ///
    /// The AV entry is not given back (`fi_av_remove`): tcp;ofi_rxm and
    /// shm (1.17) hand a removed entry to the next peer inserted and keep
    /// reporting the removed peer's messages under it, i.e. as coming from
    /// that new peer. An entry stays taken until the endpoint closes; the
    /// same address inserted again is the same peer and gets its entry
    /// back.
    pub fn remove_peer(&mut self, addr: FiAddr) -> Result<()> {
        if addr == FiAddr::UNSPEC || (self.source && addr == OWN_SLOT) {
            return Err(Error::Invalid(format!("{addr:?} is not a peer")));
        }
        self.retired.insert(addr);
        Ok(())
    }

    /// Our raw address, for the peer's [`PagedEndpoint::insert_peer`].
    pub fn name(&self) -> Result<Vec<u8>> {
        self.ep.name()
    }

    /// Inserts a peer's raw address into our AV.
    pub fn insert_peer(&mut self, addr: &[u8]) -> Result<FiAddr> {
        let at = self.av.insert(addr)?;
        // The provider found the address already there: a retired peer
        // is back.
        self.retired.remove(&at);
        Ok(at)
    }

    /// The underlying endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// Sends in flight.
    pub fn sends_in_flight(&self) -> usize {
        self.sends
    }

    /// Receives posted.
    pub fn recvs_posted(&self) -> usize {
        self.recvs
    }

    fn ctx_ptr(&self, i: usize) -> *mut c_void {
        self.ctxs[i].0.get().cast()
    }

    /// Maps a context pointer from a completion back to its slot index.
    fn slot_of(&self, context: usize) -> Option<usize> {
        let base = self.ctxs.as_ptr() as usize;
        let size = std::mem::size_of::<Ctx>();
        let off = context.checked_sub(base)?;
        (off % size == 0 && off / size < self.ctxs.len()).then_some(off / size)
    }

    fn check_page(&self, page: &Page) -> Result<()> {
        if std::sync::Arc::ptr_eq(page.domain(), &self.ep.domain) {
            Ok(())
        } else {
            Err(Error::Invalid(
                "page is registered in another domain".into(),
            ))
        }
    }

    /// Posts `page` (its whole capacity) as a receive buffer. The page
    /// comes back in [`Event::Received`] or [`Event::RecvFailed`].
    pub fn post_recv(&mut self, page: Page) -> Result<(), PostError> {
        if let Err(error) = self.check_page(&page) {
            return Err(PostError { error, page });
        }
        if self.recvs >= self.config.max_recvs {
            return Err(PostError {
                error: Error::Invalid(format!("{} receives already posted", self.recvs)),
                page,
            });
        }
        let Some(i) = self.free.pop() else {
            return Err(PostError {
                error: Error::Invalid("no free operation slot".into()),
                page,
            });
        };
        let (ptr, cap, desc) = (page.ptr(), page.capacity(), page.desc());
        // The page moves into the slot before the post: from here on only
        // the provider touches its bytes, until the completion hands it back.
        self.slots[i] = Slot::Recv(page);
        // SAFETY: ptr..ptr+cap is the page's registered memory (desc), owned
        // by slots[i] until its completion is read or the endpoint closes
        // (Drop order); ctxs[i] is a 32-byte context with the same lifetime,
        // used by no other operation (slot i was free).
        let posted = unsafe {
            self.ep
                .post_recv_raw(ptr, cap, desc, FiAddr::UNSPEC, self.ctx_ptr(i))
        };
        match posted {
            Ok(()) => {
                self.recvs += 1;
                Ok(())
            }
            Err(error) => Err(PostError {
                error,
                page: self.take(i).expect("slot just filled"),
            }),
        }
    }

    /// Sends the first `page.len()` bytes of `page` to `dest`, with remote
    /// CQ data if `data` is given. The page comes back in [`Event::Sent`]
    /// or [`Event::SendFailed`], with `tag` (the caller's own name for the
    /// send, e.g. which of several connections to one peer it was for).
    /// [`Error::Again`] means the provider's queue is full:
    /// [`PagedEndpoint::poll`] and retry.
    pub fn send(
        &mut self,
        page: Page,
        dest: FiAddr,
        data: Option<u64>,
        tag: u64,
    ) -> Result<(), PostError> {
        self.post_send(page, None, dest, data, tag)
            .map_err(|(error, page, _)| PostError { error, page })
    }

    /// True when [`PagedEndpoint::send_pieces`] may be used: the provider
    /// gathers two pieces per send (`tx_attr->iov_limit` >= 2) and does
    /// not need local buffers registered (no `FI_MR_LOCAL`).
    pub fn sends_pieces(&self) -> bool {
        self.pieces
    }

    /// Sends the filled part of `page` and then `tail` as one message (the
    /// peer receives them contiguous), as [`PagedEndpoint::send`] does a
    /// page. `tail` is read in place by the provider, not copied, and is
    /// held until the completion. Refused ([`Error::Invalid`]) unless
    /// [`PagedEndpoint::sends_pieces`].
    // The refusal hands back the page and the tail it owns; boxing it
    // would allocate on every EAGAIN of a busy provider.
    #[allow(clippy::result_large_err)]
    pub fn send_pieces(
        &mut self,
        page: Page,
        tail: bytes::Bytes,
        dest: FiAddr,
        data: Option<u64>,
        tag: u64,
    ) -> Result<(), PiecesPostError> {
        if !self.pieces {
            return Err(PiecesPostError {
                error: Error::Invalid(format!(
                    "{} cannot send unregistered pieces (FI_MR_LOCAL or iov_limit < 2)",
                    self.ep.info().provider()
                )),
                page,
                tail,
            });
        }
        self.post_send(page, Some(tail), dest, data, tag)
            .map_err(|(error, page, tail)| PiecesPostError {
                error,
                page,
                tail: tail.unwrap_or_default(),
            })
    }

    #[allow(clippy::result_large_err)] // as send_pieces
    fn post_send(
        &mut self,
        page: Page,
        tail: Option<bytes::Bytes>,
        dest: FiAddr,
        data: Option<u64>,
        tag: u64,
    ) -> Result<(), (Error, Page, Option<bytes::Bytes>)> {
        if let Err(error) = self.check_page(&page) {
            return Err((error, page, tail));
        }
        if self.retired.contains(&dest) {
            return Err((
                Error::Invalid(format!("peer {dest:?} was removed")),
                page,
                tail,
            ));
        }
        if self.sends >= self.config.max_sends {
            return Err((
                Error::Invalid(format!("send window full ({} in flight)", self.sends)),
                page,
                tail,
            ));
        }
        let Some(i) = self.free.pop() else {
            return Err((Error::Invalid("no free operation slot".into()), page, tail));
        };
        let (ptr, len, desc) = (page.ptr(), page.len(), page.desc());
        let piece = tail.as_ref().map(|t| (t.as_ptr(), t.len()));
        self.slots[i] = Slot::Send(page, tail, dest, tag);
        let ctx = self.ctx_ptr(i);
        // SAFETY: as in post_recv: registered memory owned by slots[i] until
        // completion or close; ctxs[i] unique to this operation. The tail's
        // bytes are owned by the same slot (a `Bytes` never moves its
        // bytes) and, with `pieces`, need no registration.
        let posted = unsafe {
            match piece {
                None => self.ep.send_raw(ptr, len, desc, dest, data, ctx),
                Some((tptr, tlen)) => self
                    .ep
                    .send2_raw(ptr, len, desc, tptr, tlen, dest, data, ctx),
            }
        };
        match posted {
            Ok(()) => {
                self.sends += 1;
                Ok(())
            }
            Err(error) => {
                let Slot::Send(page, tail, _, _) =
                    std::mem::replace(&mut self.slots[i], Slot::Free)
                else {
                    unreachable!("slot just filled with a send")
                };
                self.free.push(i);
                Err((error, page, tail))
            }
        }
    }

    /// Reads `buf.len()` bytes that the peer `src` lent (at `addr`, under
    /// `key`) into `buf` (`fi_read`). The data comes back in
    /// [`Event::ReadDone`] or [`Event::ReadFailed`], with `tag`. A read
    /// counts against the send window.
    pub fn read(
        &mut self,
        buf: ReadBuffer,
        src: FiAddr,
        addr: u64,
        key: u64,
        tag: u64,
    ) -> Result<(), ReadPostError> {
        if !std::sync::Arc::ptr_eq(buf.domain(), &self.ep.domain) {
            return Err(ReadPostError {
                error: Error::Invalid("buffer is registered in another domain".into()),
                buffer: Box::new(buf),
            });
        }
        if self.retired.contains(&src) {
            return Err(ReadPostError {
                error: Error::Invalid(format!("peer {src:?} was removed")),
                buffer: Box::new(buf),
            });
        }
        if buf.len() > buf.capacity() {
            return Err(ReadPostError {
                error: Error::Invalid(format!(
                    "a read of {} bytes into a buffer of {}",
                    buf.len(),
                    buf.capacity()
                )),
                buffer: Box::new(buf),
            });
        }
        if self.sends >= self.config.max_sends {
            return Err(ReadPostError {
                error: Error::Invalid(format!("send window full ({} in flight)", self.sends)),
                buffer: Box::new(buf),
            });
        }
        let Some(i) = self.free.pop() else {
            return Err(ReadPostError {
                error: Error::Invalid("no free operation slot".into()),
                buffer: Box::new(buf),
            });
        };
        let (ptr, len, desc) = (buf.ptr(), buf.len(), buf.desc());
        self.slots[i] = Slot::Read(buf, tag);
        // SAFETY: as in post_recv: registered memory owned by slots[i] until
        // completion or close; ctxs[i] unique to this operation.
        let posted = unsafe {
            self.ep
                .read_raw(ptr, len, desc, src, addr, key, self.ctx_ptr(i))
        };
        match posted {
            Ok(()) => {
                self.sends += 1;
                Ok(())
            }
            Err(error) => {
                let buffer = match std::mem::replace(&mut self.slots[i], Slot::Free) {
                    Slot::Read(b, _) => b,
                    _ => unreachable!("slot {i} was just filled with a read"),
                };
                self.free.push(i);
                Err(ReadPostError {
                    error,
                    buffer: Box::new(buffer),
                })
            }
        }
    }

    /// Empties slot `i`, returning its page.
    fn take(&mut self, i: usize) -> Option<Page> {
        let page = match std::mem::replace(&mut self.slots[i], Slot::Free) {
            Slot::Free | Slot::Read(..) => return None,
            Slot::Send(p, ..) | Slot::Recv(p) => p,
        };
        self.free.push(i);
        Some(page)
    }

    /// Reads the completion queue (which drives progress on
    /// manual-progress providers) until it is empty or `max` events were
    /// appended. Returns the number of events appended.
    ///
    /// Every completion read is filed as an event. A completion that
    /// cannot be (a context this endpoint did not post, or a failing CQ)
    /// does not stop the others: the queue is still read, and the first
    /// such error is returned **after** the events were appended. On
    /// `Err`, file the events in `events` all the same.
    pub fn poll(&mut self, events: &mut Vec<Event>, max: usize) -> Result<usize> {
        let before = events.len();
        let mut first = None;
        self.poll_cq(events, max, &mut first);
        match first {
            Some(error) => Err(error),
            None => Ok(events.len() - before),
        }
    }

    /// Keeps the first error in `first`, logs the others.
    fn note(first: &mut Option<Error>, error: Error) {
        if first.is_none() {
            *first = Some(error);
        } else {
            tracing::warn!(%error, "fabric completion");
        }
    }

    fn poll_cq(&mut self, events: &mut Vec<Event>, max: usize, first: &mut Option<Error>) {
        let mut budget = max;
        while budget > 0 {
            let asked = budget.min(crate::cq::READ_BATCH);
            let mut batch = std::mem::take(&mut self.scratch);
            batch.clear();
            let res = if self.source {
                self.cq.read_with_source(&mut batch, budget)
            } else {
                self.cq.read(&mut batch, budget)
            };
            let n = batch.len();
            for c in batch.drain(..) {
                if let Err(error) = self.complete(c, events) {
                    Self::note(first, error);
                }
            }
            self.scratch = batch;
            match res {
                // Fewer than asked: the queue was empty after the read's
                // progress (another read would only drive it again: on
                // tcp, one more epoll_wait).
                Ok(got) if got < asked => return,
                Ok(_) => budget = budget.saturating_sub(n),
                Err(Error::Completion(err)) => {
                    if let Err(error) = self.fail(*err, events) {
                        Self::note(first, error);
                    }
                    budget -= 1;
                }
                Err(error) => {
                    Self::note(first, error);
                    return;
                }
            }
        }
    }

    fn unknown(context: usize) -> Error {
        Error::Invalid(format!("completion for unknown context {context:#x}"))
    }

    fn complete(&mut self, c: Completion, events: &mut Vec<Event>) -> Result<()> {
        let i = self
            .slot_of(c.context)
            .ok_or_else(|| Self::unknown(c.context))?;
        match std::mem::replace(&mut self.slots[i], Slot::Free) {
            Slot::Free => return Err(Self::unknown(c.context)),
            Slot::Send(page, _tail, dest, tag) => {
                self.sends -= 1;
                events.push(Event::Sent { page, dest, tag });
            }
            Slot::Recv(mut page) => {
                self.recvs -= 1;
                page.set_len(c.len);
                let data = c.has_data().then_some(c.data);
                events.push(Event::Received {
                    page,
                    data,
                    // Slot 0 is ourselves (reserve_own_slot): a message
                    // said to come from it comes from a stranger.
                    src: c
                        .src
                        .filter(|a| *a != OWN_SLOT && !self.retired.contains(a)),
                });
            }
            Slot::Read(buf, tag) => {
                self.sends -= 1;
                events.push(Event::ReadDone {
                    data: buf.into_bytes(),
                    tag,
                });
            }
        }
        self.free.push(i);
        Ok(())
    }

    fn fail(&mut self, error: CompletionError, events: &mut Vec<Event>) -> Result<()> {
        let i = self
            .slot_of(error.context)
            .ok_or_else(|| Error::Completion(Box::new(error.clone())))?;
        match std::mem::replace(&mut self.slots[i], Slot::Free) {
            Slot::Free => return Err(Error::Completion(Box::new(error))),
            Slot::Send(page, _tail, dest, tag) => {
                self.sends -= 1;
                events.push(Event::SendFailed {
                    page,
                    dest,
                    tag,
                    error,
                });
            }
            Slot::Recv(mut page) => {
                self.recvs -= 1;
                page.set_len(error.len);
                events.push(Event::RecvFailed { page, error });
            }
            Slot::Read(buf, tag) => {
                self.sends -= 1;
                drop(buf);
                events.push(Event::ReadFailed { tag, error });
            }
        }
        self.free.push(i);
        Ok(())
    }

    /// The wait fd of the completion queue (`None`: poll).
    pub fn wait_fd(&self) -> Option<RawFd> {
        self.cq.wait_fd()
    }

    /// A duplicate of [`PagedEndpoint::wait_fd`] (`F_DUPFD_CLOEXEC`), for
    /// a second thread to poll while another holds the endpoint. It
    /// reports what the original does (the same open file); it does not
    /// keep the queue open. `Ok(None)` without a wait fd.
    pub fn dup_wait_fd(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        let Some(fd) = self.cq.wait_fd() else {
            return Ok(None);
        };
        // SAFETY: the fd is the CQ's, open while `self` (which owns the CQ)
        // is, and only duplicated here.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        borrowed.try_clone_to_owned().map(Some)
    }

    /// `fi_trywait` on the CQ: `Ok(true)` when it has a wait fd and it is
    /// safe to sleep on it; `Ok(false)`: call [`PagedEndpoint::poll`]
    /// first (or there is no wait fd to sleep on).
    pub fn try_wait(&self) -> Result<bool> {
        self.cq.try_wait()
    }
}

impl std::fmt::Debug for PagedEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagedEndpoint")
            .field("provider", &self.ep.info().provider())
            .field("sends", &self.sends)
            .field("recvs", &self.recvs)
            .finish()
    }
}
