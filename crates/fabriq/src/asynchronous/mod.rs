//! The async API (feature `tokio`, on by default): the same sockets, driven
//! from tokio tasks.
//!
//! [`AsyncSocket`] wraps a [`Socket`](crate::Socket) and adds `async fn send/recv`,
//! `send_multipart/recv_multipart`, `try_send/try_recv`, a [`Stream`](futures_core::Stream) of
//! multipart messages and a [`Sink`](futures_sink::Sink) that sends them. It can be
//! [split](AsyncSocket::split) into a [`SendHalf`] and a [`RecvHalf`] for
//! two tasks, and [`AsyncSocket::monitor`] gives the socket's monitor events
//! as a [`MonitorStream`].
//!
//! There is no second engine. Every async operation is the socket's own
//! non-blocking (`DONTWAIT`) operation; when that says `EAGAIN`, the future
//! waits for the socket's wake-up descriptor ([`Socket::get_fd`](crate::Socket::get_fd), libzmq's
//! `ZMQ_FD`) to become readable through tokio's [`AsyncFd`](tokio::io::unix::AsyncFd), then tries
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
mod async_socket;
mod halves;
mod monitor_stream;
mod shared;

pub use async_socket::AsyncSocket;
pub use halves::{RecvHalf, SendHalf};
pub use monitor_stream::{MonitorEvent, MonitorStream};
pub use shared::{Multipart, SyncSocket};
