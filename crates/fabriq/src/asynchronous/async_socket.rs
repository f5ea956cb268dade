//! [`AsyncSocket`]: async send and receive, a [`Stream`] of messages and a
//! [`Sink`] that sends them; rejoining its halves; `Socket::into_async` and
//! `Socket::monitor_stream`.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures_core::Stream;
use futures_sink::Sink;

use super::halves::{RecvHalf, SendHalf};
use super::monitor_stream::MonitorStream;
use super::shared::{Multipart, Shared, SyncSocket};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::monitor::SocketEvent;
use crate::socket::Socket;
use crate::socket_type::SocketType;

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
    pub(super) tx: SendHalf,
    pub(super) rx: RecvHalf,
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

impl Socket {
    /// Wraps this socket in an [`AsyncSocket`] (inside a tokio runtime).
    pub fn into_async(self) -> Result<AsyncSocket> {
        AsyncSocket::new(self)
    }
}

// Joining the halves again, the inverse of `AsyncSocket::split`.

impl RecvHalf {
    /// Joins the halves again; gives them back if they are not of one
    /// socket.
    pub fn reunite(self, tx: SendHalf) -> std::result::Result<AsyncSocket, (SendHalf, RecvHalf)> {
        tx.reunite(self)
    }
}

impl SendHalf {
    /// Joins the halves again; gives them back if they are not of one
    /// socket.
    pub fn reunite(self, rx: RecvHalf) -> std::result::Result<AsyncSocket, (SendHalf, RecvHalf)> {
        if Arc::ptr_eq(&self.shared, &rx.shared) {
            Ok(AsyncSocket { tx: self, rx })
        } else {
            Err((self, rx))
        }
    }
}

static NEXT_MONITOR: AtomicU64 = AtomicU64::new(1);

impl Socket {
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
