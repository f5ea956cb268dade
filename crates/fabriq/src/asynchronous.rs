//! The async API (feature `tokio`, on by default): the same sockets, driven
//! from tokio tasks.
//!
//! [`AsyncSocket`] wraps a [`Socket`] and adds `async fn send/recv`,
//! `send_multipart/recv_multipart`, `try_send/try_recv`, a [`Stream`] of
//! multipart messages and a [`Sink`] that sends them. It can be
//! [split](AsyncSocket::split) into a [`SendHalf`] and a [`RecvHalf`] for
//! two tasks, and [`AsyncSocket::monitor`] gives the socket's monitor events
//! as a [`MonitorStream`].
//!
//! There is no second engine. Every async operation is the socket's own
//! non-blocking (`DONTWAIT`) operation; when that says `EAGAIN`, the future
//! waits for the socket's wake-up descriptor ([`Socket::get_fd`], libzmq's
//! `ZMQ_FD`) to become readable through tokio's [`AsyncFd`], then tries
//! again. So the synchronous API still works on the same socket
//! ([`AsyncSocket::sync`]) and the two can be mixed freely.
//!
//! ```
//! use fabriq::asynchronous::AsyncSocket;
//! use futures_util::{SinkExt, StreamExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> fabriq::Result<()> {
//! let ctx = fabriq::Context::new();
//! let mut pull = AsyncSocket::new(ctx.socket(fabriq::PULL)?)?;
//! pull.bind("inproc://doc-async")?;
//! let mut push = AsyncSocket::new(ctx.socket(fabriq::PUSH)?)?;
//! push.connect("inproc://doc-async")?;
//!
//! push.send("hello", 0).await?;
//! assert_eq!(pull.recv().await?.as_str(), Some("hello"));
//!
//! // The Sink takes anything iterable as one multipart message; the Stream
//! // yields each message's frames.
//! // (`SinkExt::send` is spelled out: the inherent `send` sends a frame.)
//! SinkExt::send(&mut push, vec!["key", "value"]).await?;
//! let frames = pull.next().await.unwrap()?;
//! assert_eq!(frames.len(), 2);
//! assert_eq!(&frames[1][..], b"value");
//! # Ok(())
//! # }
//! ```
//!
//! # Cancellation safety
//!
//! Every future here does its work in a single, non-blocking step inside one
//! `poll`: either that step succeeds and the future returns `Ready`, or it
//! changes nothing and the future returns `Pending`. Dropping a pending
//! future (a `tokio::select!` branch that lost, a `timeout` that expired)
//! therefore loses nothing:
//!
//! | future | when dropped before it completes |
//! |---|---|
//! | [`RecvHalf::recv`], [`AsyncSocket::recv`] | no frame was taken; the next receive gets it |
//! | [`RecvHalf::recv_multipart`], [`AsyncSocket::recv_multipart`], `Stream::next` | no message (no frame of one) was taken |
//! | [`SendHalf::send`], [`AsyncSocket::send`] | the frame was not queued (with `SNDMORE`: not added to the message being built) |
//! | [`SendHalf::send_multipart`], [`AsyncSocket::send_multipart`] | no frame of the message was queued: a message goes whole or not at all |
//! | `Sink::send`, `feed`, `flush`, `close` (`SinkExt`) | an item the sink accepted stays buffered in the sink and goes, whole, at the next `send`, `flush` or `poll_ready`; an item the sink had not accepted yet is dropped unsent; dropping the half or the socket drops a buffered item unsent |
//! | [`MonitorStream`]'s `next` | no event was taken |
//!
//! A completed future cannot be "cancelled": once a receive returned
//! `Ready` its message is the caller's.

use std::fmt;
use std::future::poll_fn;
use std::ops::Deref;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use bytes::Bytes;
use futures_core::Stream;
use futures_sink::Sink;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::error::{err, fail, Error, Result};
use crate::flags::{DONTWAIT, SNDMORE};
use crate::message::Message;
use crate::monitor::SocketEvent;
use crate::signal::Signal;
use crate::socket::Socket;
use crate::socket_type::SocketType;

/// A multipart message as the async API receives it: its frames in order
/// (each frame's [`Message::get_more`] says whether another follows).
pub type Multipart = Vec<Message>;

/// The socket's wake-up eventfd as tokio registers it; holding the signal
/// keeps the descriptor open for as long as the registration lives.
struct WakeFd(Arc<Signal>);

impl AsRawFd for WakeFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.raw_fd()
    }
}

/// Which half of the socket waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Recv = 0,
    Send = 1,
}

impl Dir {
    fn other(self) -> Dir {
        match self {
            Dir::Recv => Dir::Send,
            Dir::Send => Dir::Recv,
        }
    }
}

/// The tasks waiting on the socket, one per direction. It is also the
/// waker tokio holds for the descriptor: a readable descriptor wakes both.
#[derive(Default)]
struct Waiters {
    slots: Mutex<[Option<Waker>; 2]>,
}

impl Waiters {
    fn slots(&self) -> MutexGuard<'_, [Option<Waker>; 2]> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake_all(&self) {
        let taken = std::mem::take(&mut *self.slots());
        for waker in taken.into_iter().flatten() {
            waker.wake();
        }
    }
}

impl Wake for Waiters {
    fn wake(self: Arc<Self>) {
        self.wake_all();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_all();
    }
}

/// What the halves of one socket share.
struct Shared {
    fd: AsyncFd<WakeFd>,
    socket: Mutex<Socket>,
    waiters: Arc<Waiters>,
    /// `waiters` as a [`Waker`], handed to tokio for the descriptor.
    fanout: Waker,
}

impl Shared {
    fn new(socket: Socket) -> Result<Shared> {
        if tokio::runtime::Handle::try_current().is_err() {
            return err(
                Error::EINVAL,
                "an AsyncSocket must be made inside a tokio runtime (with I/O enabled)",
            );
        }
        // tokio 1.53.3 deprecated this safe constructor for `unsafe fn
        // register_with_interest` (tokio#8587): with an arbitrary `T` the
        // descriptor could close, or change, while registered. `WakeFd`
        // rules both out without `unsafe` (which this crate does not
        // allow): it owns a handle on the signal, whose eventfd stays open
        // until the last handle goes, and always names that same eventfd.
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(WakeFd(socket.signal_handle()), Interest::READABLE)
            .map_err(|e| {
                fail(
                    Error::from_io(&e),
                    format!("cannot register the socket's descriptor with tokio: {e}"),
                )
            })?;
        let waiters = Arc::new(Waiters::default());
        Ok(Shared {
            fd,
            socket: Mutex::new(socket),
            fanout: Waker::from(waiters.clone()),
            waiters,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Socket> {
        self.socket.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One non-blocking attempt of `op`. With `waker`, an attempt that
    /// ends in `EAGAIN` leaves it to be woken for `dir`.
    ///
    /// Every operation clears the socket's signal before it looks (ZMQ_FD
    /// semantics). If this one took a pending wake-up off the descriptor,
    /// that wake-up may have been meant for the other direction (room to
    /// send, found by a receive), and tokio will never see it: so the
    /// other direction's waiter is woken to look again. The op and the
    /// registration happen under the socket's lock, so another half's
    /// attempt is wholly before (this look sees its effects) or wholly
    /// after (it finds this waker).
    fn attempt<T>(
        &self,
        dir: Dir,
        waker: Option<&Waker>,
        op: &mut dyn FnMut(&Socket) -> Result<T>,
    ) -> Result<T> {
        let mut other = None;
        let result = {
            let socket = self.lock();
            let before = socket.signal().takes();
            let result = op(&socket);
            let consumed = socket.signal().takes() != before;
            let register = waker.filter(|_| matches!(result, Err(Error::EAGAIN)));
            if consumed || register.is_some() {
                let mut slots = self.waiters.slots();
                if consumed {
                    other = slots[dir.other() as usize].take();
                }
                if let Some(w) = register {
                    match &mut slots[dir as usize] {
                        Some(old) if old.will_wake(w) => {}
                        slot => *slot = Some(w.clone()),
                    }
                }
            }
            result
        };
        if let Some(w) = other {
            w.wake();
        }
        result
    }

    /// Polls `op` to completion: tries it, and while it says `EAGAIN`
    /// waits for the wake-up descriptor. Returns `Pending` only after an
    /// attempt that changed nothing.
    fn poll_op<T>(
        &self,
        cx: &mut TaskContext<'_>,
        dir: Dir,
        op: &mut dyn FnMut(&Socket) -> Result<T>,
    ) -> Poll<Result<T>> {
        loop {
            match self.attempt(dir, Some(cx.waker()), op) {
                Err(Error::EAGAIN) => {}
                done => return Poll::Ready(done),
            }
            // Both directions give tokio the same fan-out waker, so neither
            // displaces the other's registration.
            match self
                .fd
                .poll_read_ready(&mut TaskContext::from_waker(&self.fanout))
            {
                // Readiness seen: forget it and look again. A raise after
                // this clear is a new edge tokio reports afresh.
                Poll::Ready(Ok(mut ready)) => ready.clear_ready(),
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(err(
                        Error::from_io(&e),
                        format!("waiting for the socket's descriptor: {e}"),
                    ))
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn sync(&self) -> SyncSocket<'_> {
        SyncSocket {
            guard: Some(self.lock()),
            waiters: &self.waiters,
        }
    }
}

impl fmt::Debug for Shared {
    /// The socket, unless a [`SyncSocket`] or an attempt holds it: never
    /// waits for the lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.socket.try_lock() {
            Ok(socket) => fmt::Debug::fmt(&*socket, f),
            Err(_) => f.write_str("Socket(in use)"),
        }
    }
}

/// Receives one whole message without blocking.
fn recv_message(socket: &Socket) -> Result<Multipart> {
    let first = socket.recv_msg(DONTWAIT)?;
    let mut more = first.get_more();
    let mut parts = vec![first];
    while more {
        // The rest of a message arrives with its first frame: these never
        // say EAGAIN.
        let part = socket.recv_msg(DONTWAIT)?;
        more = part.get_more();
        parts.push(part);
    }
    Ok(parts)
}

/// Sends `frames` as one message (with `SNDMORE` in `flags`: the message
/// goes on) without blocking. Only the first frame of a message can say
/// EAGAIN, and then nothing was queued.
fn send_message(socket: &Socket, frames: &[Bytes], flags: i32) -> Result<()> {
    if frames.is_empty() {
        return Ok(());
    }
    let last = frames.len().saturating_sub(1);
    for (i, frame) in frames.iter().enumerate() {
        let more = if i < last { SNDMORE } else { flags & SNDMORE };
        socket.send(frame.clone(), DONTWAIT | more)?;
    }
    Ok(())
}

fn frames<I>(parts: I) -> Vec<Bytes>
where
    I: IntoIterator,
    I::Item: Into<Message>,
{
    parts.into_iter().map(|p| p.into().into_bytes()).collect()
}

/// The synchronous API of an [`AsyncSocket`]'s socket, borrowed: derefs to
/// [`Socket`], so options, `bind`, `get_events`, even a blocking `recv`
/// work as usual. While it lives the async operations on the socket wait
/// for it (keep it short; a blocking call through it blocks the thread,
/// so use `DONTWAIT` or `spawn_blocking`). When it is dropped, the socket's
/// waiting futures look again, since a synchronous call may have taken the
/// wake-up they were waiting for.
pub struct SyncSocket<'a> {
    guard: Option<MutexGuard<'a, Socket>>,
    waiters: &'a Waiters,
}

impl Deref for SyncSocket<'_> {
    type Target = Socket;

    fn deref(&self) -> &Socket {
        self.guard.as_deref().expect("held until drop")
    }
}

impl Drop for SyncSocket<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.waiters.wake_all();
    }
}

impl fmt::Debug for SyncSocket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncSocket").field(&**self).finish()
    }
}

/// A [`Socket`] for async code: `Send` and `Sync`, movable between tasks
/// and runtime threads, splittable into a [`SendHalf`] and a [`RecvHalf`].
///
/// Made inside a tokio runtime (with I/O enabled); it stays registered with
/// that runtime.
///
/// ```
/// use fabriq::asynchronous::AsyncSocket;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> fabriq::Result<()> {
/// let ctx = fabriq::Context::new();
/// let mut rep = AsyncSocket::new(ctx.socket(fabriq::REP)?)?;
/// rep.bind("tcp://127.0.0.1:*")?;
/// let endpoint = rep.sync().get_last_endpoint()?.unwrap();
/// let mut req = ctx.socket(fabriq::REQ)?.into_async()?;
/// req.connect(&endpoint)?;
///
/// let server = tokio::spawn(async move {
///     let request = rep.recv().await?;
///     rep.send(format!("echo {}", request.as_str().unwrap()), 0).await
/// });
/// req.send("ping", 0).await?;
/// assert_eq!(req.recv().await?.as_str(), Some("echo ping"));
/// server.await.unwrap()?;
/// # Ok(())
/// # }
/// ```
pub struct AsyncSocket {
    tx: SendHalf,
    rx: RecvHalf,
}

impl fmt::Debug for AsyncSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncSocket").field(&self.rx.shared).finish()
    }
}

impl AsyncSocket {
    /// Wraps `socket`. `EINVAL` outside a tokio runtime.
    ///
    /// # Panics
    ///
    /// Inside a tokio runtime built without I/O (`enable_io`).
    pub fn new(socket: Socket) -> Result<AsyncSocket> {
        let shared = Arc::new(Shared::new(socket)?);
        Ok(AsyncSocket {
            tx: SendHalf {
                shared: shared.clone(),
                buffered: None,
            },
            rx: RecvHalf { shared },
        })
    }

    /// The synchronous API of the same socket; see [`SyncSocket`].
    pub fn sync(&self) -> SyncSocket<'_> {
        self.rx.sync()
    }

    /// Gives the socket back. A message the [`Sink`] accepted and has
    /// not sent yet is dropped; `flush` first to send it.
    pub fn into_inner(self) -> Socket {
        let AsyncSocket { tx, rx } = self;
        drop(tx);
        let shared = Arc::into_inner(rx.shared).expect("the halves are the only owners");
        let Shared { fd, socket, .. } = shared;
        drop(fd);
        socket.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Splits into a send half and a receive half, each usable from its own
    /// task at the same time as the other; [`SendHalf::reunite`] joins them.
    pub fn split(self) -> (SendHalf, RecvHalf) {
        (self.tx, self.rx)
    }

    /// [`Socket::bind`].
    pub fn bind(&self, endpoint: &str) -> Result<()> {
        self.sync().bind(endpoint)
    }

    /// [`Socket::connect`]: never blocks. The connection is made (and
    /// remade) in the background by the I/O thread; a host name is looked
    /// up there too. Sends wait (or queue, per the socket type) until a
    /// peer is there; [`AsyncSocket::monitor`] shows when it connects.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> fabriq::Result<()> {
    /// let ctx = fabriq::Context::new();
    /// let mut push = ctx.socket(fabriq::PUSH)?.into_async()?;
    /// push.sync().set_immediate(true)?; // queue only to connected peers
    /// push.sync().set_linger(0)?;
    /// // Nothing listens on port 1: connect still returns at once.
    /// push.connect("tcp://127.0.0.1:1")?;
    /// assert_eq!(push.try_send("nobody there", 0), Err(fabriq::Error::EAGAIN));
    /// // Without IMMEDIATE, a PUSH queues messages for the pending
    /// // connection instead, as libzmq does.
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect(&self, endpoint: &str) -> Result<()> {
        self.sync().connect(endpoint)
    }

    /// [`Socket::disconnect`].
    pub fn disconnect(&self, endpoint: &str) -> Result<()> {
        self.sync().disconnect(endpoint)
    }

    /// [`Socket::unbind`].
    pub fn unbind(&self, endpoint: &str) -> Result<()> {
        self.sync().unbind(endpoint)
    }

    /// The socket's monitor events as a [`Stream`]; see
    /// [`Socket::monitor_stream`].
    pub fn monitor(&self, events: i32) -> Result<MonitorStream> {
        self.sync().monitor_stream(events)
    }

    /// Receives one frame ([`Message::get_more`]: more of its message
    /// follow). Cancel safe: if dropped before it completes, no frame was
    /// taken.
    pub async fn recv(&mut self) -> Result<Message> {
        self.rx.recv().await
    }

    /// Receives one whole message. Cancel safe: if dropped before it
    /// completes, nothing was taken.
    pub async fn recv_multipart(&mut self) -> Result<Multipart> {
        self.rx.recv_multipart().await
    }

    /// Receives one frame if one is there now; `EAGAIN` if not.
    pub fn try_recv(&self) -> Result<Message> {
        self.rx.try_recv()
    }

    /// Receives one whole message if one is there now; `EAGAIN` if not.
    pub fn try_recv_multipart(&self) -> Result<Multipart> {
        self.rx.try_recv_multipart()
    }

    /// Sends one frame; `flags` as in [`Socket::send`] (`SNDMORE`: more
    /// frames of the message follow; `DONTWAIT`: `EAGAIN` instead of
    /// waiting). Cancel safe: if dropped before it completes, the frame was
    /// not queued.
    pub async fn send<T: Into<Message>>(&mut self, data: T, flags: i32) -> Result<()> {
        self.tx.send(data, flags).await
    }

    /// Sends all parts as one message. Cancel safe: if dropped before it
    /// completes, no part was queued.
    pub async fn send_multipart<I>(&mut self, parts: I, flags: i32) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Into<Message>,
    {
        self.tx.send_multipart(parts, flags).await
    }

    /// Sends the message the [`Sink`] holds, if any (`SinkExt::flush`
    /// without naming the item type). Cancel safe: the held message stays
    /// held until it went whole.
    pub async fn flush(&mut self) -> Result<()> {
        self.tx.flush().await
    }

    /// Sends one frame if the socket can take it now; `EAGAIN` if not.
    pub fn try_send<T: Into<Message>>(&mut self, data: T, flags: i32) -> Result<()> {
        self.tx.try_send(data, flags)
    }

    /// Sends one message if the socket can take it now; `EAGAIN` (and
    /// nothing sent) if not.
    pub fn try_send_multipart<I>(&mut self, parts: I, flags: i32) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Into<Message>,
    {
        self.tx.try_send_multipart(parts, flags)
    }
}

impl Stream for AsyncSocket {
    type Item = Result<Multipart>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().rx).poll_next(cx)
    }
}

impl<I> Sink<I> for AsyncSocket
where
    I: IntoIterator,
    I::Item: Into<Message>,
{
    type Error = Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        Sink::<I>::poll_ready(Pin::new(&mut self.get_mut().tx), cx)
    }

    fn start_send(self: Pin<&mut Self>, item: I) -> Result<()> {
        Pin::new(&mut self.get_mut().tx).start_send(item)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        Sink::<I>::poll_flush(Pin::new(&mut self.get_mut().tx), cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        Sink::<I>::poll_close(Pin::new(&mut self.get_mut().tx), cx)
    }
}

impl From<AsyncSocket> for Socket {
    fn from(socket: AsyncSocket) -> Socket {
        socket.into_inner()
    }
}

/// The receiving half of an [`AsyncSocket`] (see [`AsyncSocket::split`]):
/// `recv`, `recv_multipart`, and a [`Stream`] of whole messages that ends
/// when the socket's context is terminated.
///
/// ```
/// use fabriq::asynchronous::AsyncSocket;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> fabriq::Result<()> {
/// let ctx = fabriq::Context::new();
/// let pair = ctx.socket(fabriq::PAIR)?.into_async()?;
/// pair.bind("inproc://doc-split")?;
/// let mut peer = ctx.socket(fabriq::PAIR)?.into_async()?;
/// peer.connect("inproc://doc-split")?;
///
/// let (mut tx, mut rx) = pair.split();
/// let reader = tokio::spawn(async move { rx.recv().await.map(|m| m.to_vec()) });
/// tx.send("to the peer", 0).await?;
/// assert_eq!(peer.recv().await?.as_str(), Some("to the peer"));
/// peer.send("back", 0).await?;
/// assert_eq!(reader.await.unwrap()?, b"back");
/// # Ok(())
/// # }
/// ```
pub struct RecvHalf {
    shared: Arc<Shared>,
}

impl fmt::Debug for RecvHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RecvHalf").field(&self.shared).finish()
    }
}

impl RecvHalf {
    /// The synchronous API of the same socket; see [`SyncSocket`].
    pub fn sync(&self) -> SyncSocket<'_> {
        self.shared.sync()
    }

    /// Joins the halves again; gives them back if they are not of one
    /// socket.
    pub fn reunite(self, tx: SendHalf) -> std::result::Result<AsyncSocket, (SendHalf, RecvHalf)> {
        tx.reunite(self)
    }

    /// Receives one frame. Cancel safe: if dropped before it completes, no
    /// frame was taken.
    pub async fn recv(&mut self) -> Result<Message> {
        let shared = &self.shared;
        poll_fn(|cx| shared.poll_op(cx, Dir::Recv, &mut |s| s.recv_msg(DONTWAIT))).await
    }

    /// Receives one whole message (the rest of one, if frames of it were
    /// already taken with [`RecvHalf::recv`]). Cancel safe: if dropped
    /// before it completes, nothing was taken.
    pub async fn recv_multipart(&mut self) -> Result<Multipart> {
        let shared = &self.shared;
        poll_fn(|cx| shared.poll_op(cx, Dir::Recv, &mut recv_message)).await
    }

    /// Receives one frame if one is there now; `EAGAIN` if not.
    pub fn try_recv(&self) -> Result<Message> {
        self.shared
            .attempt(Dir::Recv, None, &mut |s| s.recv_msg(DONTWAIT))
    }

    /// Receives one whole message if one is there now; `EAGAIN` if not.
    pub fn try_recv_multipart(&self) -> Result<Multipart> {
        self.shared.attempt(Dir::Recv, None, &mut recv_message)
    }
}

impl Stream for RecvHalf {
    type Item = Result<Multipart>;

    /// The next whole message; `None` once the context is terminated.
    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        match self.shared.poll_op(cx, Dir::Recv, &mut recv_message) {
            Poll::Ready(Err(Error::ETERM)) => Poll::Ready(None),
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The sending half of an [`AsyncSocket`] (see [`AsyncSocket::split`]):
/// `send`, `send_multipart`, and a [`Sink`] of messages, each item
/// anything iterable whose items convert into [`Message`] (a `Vec<&str>`,
/// `[Bytes; 2]`, a `Multipart`...).
///
/// The sink holds at most one accepted message: `poll_ready` (and so
/// `SinkExt::send` and `feed`) first sends the one it holds. A held message
/// goes before any later [`SendHalf::send`] or
/// [`SendHalf::send_multipart`].
pub struct SendHalf {
    shared: Arc<Shared>,
    /// The message the Sink accepted and has not sent yet.
    buffered: Option<Vec<Bytes>>,
}

impl fmt::Debug for SendHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendHalf")
            .field("socket", &self.shared)
            .field("buffered", &self.buffered.is_some())
            .finish()
    }
}

impl SendHalf {
    /// The synchronous API of the same socket; see [`SyncSocket`].
    pub fn sync(&self) -> SyncSocket<'_> {
        self.shared.sync()
    }

    /// Joins the halves again; gives them back if they are not of one
    /// socket.
    pub fn reunite(self, rx: RecvHalf) -> std::result::Result<AsyncSocket, (SendHalf, RecvHalf)> {
        if Arc::ptr_eq(&self.shared, &rx.shared) {
            Ok(AsyncSocket { tx: self, rx })
        } else {
            Err((self, rx))
        }
    }

    /// Sends the message the Sink holds, if any.
    fn poll_buffered(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let Some(frames) = &self.buffered else {
            return Poll::Ready(Ok(()));
        };
        let result = std::task::ready!(self
            .shared
            .poll_op(cx, Dir::Send, &mut |s| { send_message(s, frames, 0) }));
        // Sent, or refused for good (not EAGAIN): either way it is done.
        self.buffered = None;
        Poll::Ready(result)
    }

    /// Sends the message the [`Sink`] holds, if any (`SinkExt::flush`
    /// without naming the item type). Cancel safe: the held message stays
    /// held until it went whole.
    pub async fn flush(&mut self) -> Result<()> {
        poll_fn(|cx| self.poll_buffered(cx)).await
    }

    async fn send_frames(&mut self, frames: Vec<Bytes>, flags: i32) -> Result<()> {
        poll_fn(|cx| self.poll_buffered(cx)).await?;
        if flags & DONTWAIT != 0 {
            return self
                .shared
                .attempt(Dir::Send, None, &mut |s| send_message(s, &frames, flags));
        }
        let shared = &self.shared;
        poll_fn(|cx| shared.poll_op(cx, Dir::Send, &mut |s| send_message(s, &frames, flags))).await
    }

    /// Sends one frame; `flags` as in [`Socket::send`] (`SNDMORE`: more
    /// frames of the message follow; `DONTWAIT`: `EAGAIN` instead of
    /// waiting). Cancel safe: if dropped before it completes, the frame
    /// was not queued.
    pub async fn send<T: Into<Message>>(&mut self, data: T, flags: i32) -> Result<()> {
        self.send_frames(vec![data.into().into_bytes()], flags)
            .await
    }

    /// Sends all parts as one message (`flags`: `DONTWAIT`, or `SNDMORE`
    /// to go on with more frames). Cancel safe: if dropped before it
    /// completes, no part was queued.
    pub async fn send_multipart<I>(&mut self, parts: I, flags: i32) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Into<Message>,
    {
        self.send_frames(frames(parts), flags).await
    }

    /// Sends one frame if the socket can take it now; `EAGAIN` if not
    /// (also while the Sink holds a message it could not send yet).
    pub fn try_send<T: Into<Message>>(&mut self, data: T, flags: i32) -> Result<()> {
        self.try_send_frames(vec![data.into().into_bytes()], flags)
    }

    /// Sends one message if the socket can take it now; `EAGAIN` (and
    /// nothing sent) if not.
    pub fn try_send_multipart<I>(&mut self, parts: I, flags: i32) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Into<Message>,
    {
        self.try_send_frames(frames(parts), flags)
    }

    fn try_send_frames(&mut self, frames: Vec<Bytes>, flags: i32) -> Result<()> {
        if let Some(held) = &self.buffered {
            self.shared
                .attempt(Dir::Send, None, &mut |s| send_message(s, held, 0))?;
            self.buffered = None;
        }
        self.shared
            .attempt(Dir::Send, None, &mut |s| send_message(s, &frames, flags))
    }
}

impl<I> Sink<I> for SendHalf
where
    I: IntoIterator,
    I::Item: Into<Message>,
{
    type Error = Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        self.get_mut().poll_buffered(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: I) -> Result<()> {
        let this = self.get_mut();
        if this.buffered.is_some() {
            return err(Error::EFSM, "Sink::start_send without poll_ready");
        }
        this.buffered = Some(frames(item));
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        self.get_mut().poll_buffered(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        self.get_mut().poll_buffered(cx)
    }
}

/// One monitor event, decoded from libzmq's two-frame format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorEvent {
    /// What happened.
    pub event: SocketEvent,
    /// The event's value: a descriptor, an errno, a retry interval in ms,
    /// a protocol error code (see libzmq's `zmq_socket_monitor`).
    pub value: u32,
    /// The endpoint it concerns.
    pub endpoint: String,
}

impl MonitorEvent {
    fn decode(frames: &[Message]) -> Result<MonitorEvent> {
        let [head, endpoint] = frames else {
            return err(Error::EPROTO, "a monitor event has two frames");
        };
        let [a, b, c, d, e, f] = head[..] else {
            return err(Error::EPROTO, "a monitor event's first frame has 6 bytes");
        };
        Ok(MonitorEvent {
            event: SocketEvent::from_raw(u16::from_le_bytes([a, b])),
            value: u32::from_le_bytes([c, d, e, f]),
            endpoint: String::from_utf8_lossy(endpoint).into_owned(),
        })
    }
}

/// A socket's monitor events as a [`Stream`]
/// (from [`AsyncSocket::monitor`] or [`Socket::monitor_stream`]).
///
/// It ends when monitoring stops: the socket is closed, or monitored anew
/// (a socket has one monitor at a time, as in libzmq). MONITOR_STOPPED is
/// yielded last if it was asked for. Events come in the order they
/// happened; a stream that is not read loses events once 1000 wait
/// (the receive high-water mark), as a libzmq monitor does.
///
/// ```
/// use fabriq::asynchronous::{AsyncSocket, MonitorEvent};
/// use fabriq::SocketEvent;
/// use futures_util::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> fabriq::Result<()> {
/// let ctx = fabriq::Context::new();
/// let rep = ctx.socket(fabriq::REP)?.into_async()?;
/// let mut events = rep.monitor(SocketEvent::ALL as i32)?;
/// rep.bind("tcp://127.0.0.1:*")?;
/// let endpoint = rep.sync().get_last_endpoint()?.unwrap();
/// let event = events.next().await.unwrap()?;
/// assert_eq!(event.event, SocketEvent::LISTENING);
/// assert_eq!(event.endpoint, endpoint);
/// drop(rep);
/// let last: Vec<MonitorEvent> = events.map(|e| e.unwrap()).collect().await;
/// assert_eq!(last.last().unwrap().event, SocketEvent::MONITOR_STOPPED);
/// # Ok(())
/// # }
/// ```
pub struct MonitorStream {
    rx: RecvHalf,
    /// Whether MONITOR_STOPPED is the caller's event or only our end mark.
    show_stopped: bool,
    ended: bool,
}

impl fmt::Debug for MonitorStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonitorStream")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Stream for MonitorStream {
    type Item = Result<MonitorEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let frames = match std::task::ready!(Pin::new(&mut this.rx).poll_next(cx)) {
            None => {
                this.ended = true;
                return Poll::Ready(None);
            }
            Some(Err(e)) => return Poll::Ready(Some(Err(e))),
            Some(Ok(frames)) => frames,
        };
        let event = MonitorEvent::decode(&frames);
        if let Ok(e) = &event {
            if e.event == SocketEvent::MONITOR_STOPPED {
                this.ended = true;
                if !this.show_stopped {
                    return Poll::Ready(None);
                }
            }
        }
        Poll::Ready(Some(event))
    }
}

static NEXT_MONITOR: AtomicU64 = AtomicU64::new(1);

impl Socket {
    /// Wraps this socket in an [`AsyncSocket`] (inside a tokio runtime).
    pub fn into_async(self) -> Result<AsyncSocket> {
        AsyncSocket::new(self)
    }

    /// Monitors this socket: its events (`SocketEvent` bits in `events`) as
    /// a [`MonitorStream`], made inside a tokio runtime. It is
    /// [`Socket::monitor`] on a fresh `inproc://` name with a PAIR socket
    /// already connected to it, so no event after this call is missed. It
    /// ends any earlier monitor of the socket.
    pub fn monitor_stream(&self, events: i32) -> Result<MonitorStream> {
        let pair = AsyncSocket::new(self.context().socket(SocketType::PAIR)?)?;
        let endpoint = format!(
            "inproc://fabriq-monitor-stream-{}",
            NEXT_MONITOR.fetch_add(1, Ordering::Relaxed)
        );
        let stopped = SocketEvent::MONITOR_STOPPED as i32;
        self.monitor(&endpoint, events | stopped)?;
        pair.connect(&endpoint)?;
        Ok(MonitorStream {
            rx: pair.split().1,
            show_stopped: events & stopped != 0,
            ended: false,
        })
    }
}
