//! The halves of a split [`AsyncSocket`](crate::asynchronous::AsyncSocket): [`RecvHalf`] (a [`Stream`])
//! and [`SendHalf`] (a [`Sink`]), for two tasks.

use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use futures_core::Stream;
use futures_sink::Sink;

use super::shared::{frames, recv_message, send_message, Dir, Multipart, Shared, SyncSocket};
use crate::error::{err, Error, Result};
use crate::flags::DONTWAIT;
use crate::message::Message;

/// The receiving half of an [`AsyncSocket`](crate::asynchronous::AsyncSocket) (see [`AsyncSocket::split`](crate::asynchronous::AsyncSocket::split)):
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
    pub(super) shared: Arc<Shared>,
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

/// The sending half of an [`AsyncSocket`](crate::asynchronous::AsyncSocket) (see [`AsyncSocket::split`](crate::asynchronous::AsyncSocket::split)):
/// `send`, `send_multipart`, and a [`Sink`] of messages, each item
/// anything iterable whose items convert into [`Message`] (a `Vec<&str>`,
/// `[Bytes; 2]`, a `Multipart`...).
///
/// The sink holds at most one accepted message: `poll_ready` (and so
/// `SinkExt::send` and `feed`) first sends the one it holds. A held message
/// goes before any later [`SendHalf::send`] or
/// [`SendHalf::send_multipart`].
pub struct SendHalf {
    pub(super) shared: Arc<Shared>,
    /// The message the Sink accepted and has not sent yet.
    pub(super) buffered: Option<Vec<Bytes>>,
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

    /// Sends one frame; `flags` as in [`Socket::send`](crate::Socket::send) (`SNDMORE`: more
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
