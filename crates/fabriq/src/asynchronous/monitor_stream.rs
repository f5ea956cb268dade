//! The socket's monitor events as a [`Stream`]: [`MonitorStream`] of
//! [`MonitorEvent`]s (`Socket::monitor_stream`, in `async_socket.rs`,
//! makes one).

use std::fmt;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures_core::Stream;

use super::halves::RecvHalf;
use crate::error::{err, Error, Result};
use crate::message::Message;
use crate::monitor::SocketEvent;

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
/// (from [`AsyncSocket::monitor`](crate::asynchronous::AsyncSocket::monitor) or [`Socket::monitor_stream`](crate::Socket::monitor_stream)).
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
    pub(super) rx: RecvHalf,
    /// Whether MONITOR_STOPPED is the caller's event or only our end mark.
    pub(super) show_stopped: bool,
    pub(super) ended: bool,
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
