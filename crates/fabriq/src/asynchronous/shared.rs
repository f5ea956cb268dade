//! What the halves of one async socket share: the socket behind a lock,
//! its wake-up descriptor registered with tokio, the tasks waiting on it;
//! the non-blocking whole-message operations; and [`SyncSocket`], the
//! socket borrowed for synchronous calls.

use std::fmt;
use std::ops::Deref;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use bytes::Bytes;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::error::{err, fail, Error, Result};
use crate::flags::{DONTWAIT, SNDMORE};
use crate::message::Message;
use crate::signal::Signal;
use crate::socket::Socket;

/// A multipart message as the async API receives it: its frames in order
/// (each frame's [`Message::get_more`] says whether another follows).
pub type Multipart = Vec<Message>;

/// The socket's wake-up eventfd as tokio registers it; holding the signal
/// keeps the descriptor open for as long as the registration lives.
pub(super) struct WakeFd(Arc<Signal>);

impl AsRawFd for WakeFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.raw_fd()
    }
}

/// Which half of the socket waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dir {
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
pub(super) struct Shared {
    pub(super) fd: AsyncFd<WakeFd>,
    pub(super) socket: Mutex<Socket>,
    waiters: Arc<Waiters>,
    /// `waiters` as a [`Waker`], handed to tokio for the descriptor.
    fanout: Waker,
}

impl Shared {
    pub(super) fn new(socket: Socket) -> Result<Shared> {
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

    pub(super) fn lock(&self) -> MutexGuard<'_, Socket> {
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
    pub(super) fn attempt<T>(
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
    pub(super) fn poll_op<T>(
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

    pub(super) fn sync(&self) -> SyncSocket<'_> {
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
pub(super) fn recv_message(socket: &Socket) -> Result<Multipart> {
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
pub(super) fn send_message(socket: &Socket, frames: &[Bytes], flags: i32) -> Result<()> {
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

pub(super) fn frames<I>(parts: I) -> Vec<Bytes>
where
    I: IntoIterator,
    I::Item: Into<Message>,
{
    parts.into_iter().map(|p| p.into().into_bytes()).collect()
}

/// The synchronous API of an [`AsyncSocket`](crate::asynchronous::AsyncSocket)'s socket, borrowed: derefs to
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
