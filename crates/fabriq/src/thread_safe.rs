//! [`ThreadSafeSocket`]: a draft socket several threads use at once, as
//! libzmq's thread-safe sockets (`ZMQ_THREAD_SAFE`: CLIENT, SERVER,
//! RADIO, DISH, SCATTER, GATHER, PEER, CHANNEL).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{err, Error, Result};
use crate::flags::DONTWAIT;
use crate::message::Message;
use crate::poll::{PollEvents, POLLIN, POLLOUT};
use crate::signal::Signal;
use crate::socket::Socket;
use crate::turns::Turns;

/// A socket of a thread-safe draft type that any number of threads may
/// use at once through `&ThreadSafeSocket` (share it in an `Arc`), as
/// libzmq allows for CLIENT, SERVER, RADIO, DISH, SCATTER, GATHER, PEER
/// and CHANNEL.
///
/// A thread blocked in [`send`](Self::send) or [`recv_msg`](Self::recv_msg)
/// does not hold the socket: the others go on sending and receiving
/// meanwhile (a `Mutex<Socket>` would hold it for the whole wait). Each
/// message goes to exactly one receiving thread. The send and receive
/// timeouts are the socket's (`SNDTIMEO`, `RCVTIMEO`), read at each call.
/// Everything else (options, `bind`, `connect`, `join`, `connect_peer`)
/// is done through [`with`](Self::with), under the socket's lock.
///
/// ```
/// use std::sync::Arc;
/// use fabriq::{Message, ThreadSafeSocket};
///
/// let ctx = fabriq::Context::new();
/// let server = Arc::new(ThreadSafeSocket::new(ctx.socket(fabriq::SERVER).unwrap()).unwrap());
/// let ep = server.with(|s| {
///     s.set_rcvtimeo(5000)?;
///     s.bind("inproc://thread-safe-doc")?;
///     s.get_last_endpoint().map(|e| e.unwrap())
/// }).unwrap();
/// // Two threads receive on the one SERVER.
/// let workers: Vec<_> = (0..2)
///     .map(|_| {
///         let server = server.clone();
///         std::thread::spawn(move || server.recv_msg(0).unwrap().routing_id())
///     })
///     .collect();
/// let client = ctx.socket(fabriq::CLIENT).unwrap();
/// client.connect(&ep).unwrap();
/// client.send("one", 0).unwrap();
/// client.send("two", 0).unwrap();
/// for w in workers {
///     assert!(w.join().unwrap().is_some());
/// }
/// // Not a thread-safe type:
/// assert!(ThreadSafeSocket::new(ctx.socket(fabriq::DEALER).unwrap()).is_err());
/// ```
pub struct ThreadSafeSocket {
    socket: Mutex<Socket>,
    signal: Arc<Signal>,
    turns: Turns,
}

impl std::fmt::Debug for ThreadSafeSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadSafeSocket").finish_non_exhaustive()
    }
}

impl ThreadSafeSocket {
    /// Takes `socket` for sharing. EINVAL unless it is of a thread-safe
    /// type (libzmq's `ZMQ_THREAD_SAFE`; [`Socket::is_thread_safe`]).
    pub fn new(socket: Socket) -> Result<ThreadSafeSocket> {
        if !socket.is_thread_safe()? {
            let ty = socket.get_socket_type()?;
            return err(
                Error::EINVAL,
                format!(
                    "{ty:?} is not a thread-safe socket type (those are CLIENT, SERVER, \
                     RADIO, DISH, SCATTER, GATHER, PEER and CHANNEL); share other sockets \
                     by moving them, or behind a Mutex"
                ),
            );
        }
        socket.core().shared_signal = true;
        let signal = socket.signal_handle();
        Ok(ThreadSafeSocket {
            socket: Mutex::new(socket),
            signal,
            turns: Turns::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Socket> {
        // A panic in another thread's call leaves the socket as usable as
        // any completed call does.
        self.socket.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the socket under its lock: options, `bind`, `connect`,
    /// `join`, `connect_peer`... Sends and receives made inside `f` never
    /// block (they answer EAGAIN as with `DONTWAIT`): blocking ones are
    /// [`send`](Self::send) and [`recv_msg`](Self::recv_msg), which wait
    /// without holding the socket.
    pub fn with<R>(&self, f: impl FnOnce(&Socket) -> R) -> R {
        f(&self.lock())
    }

    /// Sends one message (a routing id or group set on a [`Message`] is
    /// kept). Blocks, without holding the socket, until it can go or the
    /// send timeout passes (EAGAIN); `DONTWAIT` fails at once instead.
    pub fn send<T: Into<Message>>(&self, data: T, flags: i32) -> Result<()> {
        let msg: Message = data.into();
        self.blocking(
            flags,
            |s| s.get_sndtimeo(),
            |s| s.send(msg.clone(), flags | DONTWAIT),
        )
    }

    /// Receives one message. Blocks, without holding the socket, until one
    /// comes or the receive timeout passes (EAGAIN); `DONTWAIT` fails at
    /// once instead.
    pub fn recv_msg(&self, flags: i32) -> Result<Message> {
        self.blocking(
            flags,
            |s| s.get_rcvtimeo(),
            |s| s.recv_msg(flags | DONTWAIT),
        )
    }

    /// Waits, without holding the socket, until it can receive (`POLLIN`)
    /// or send (`POLLOUT`) as `events` asks, or `timeout_ms` passes (-1:
    /// forever); returns what it can do (empty on timeout). The
    /// single-socket form of libzmq's `zmq_poller` for thread-safe sockets
    /// (`zmq_poll` refuses them); another thread may take the message
    /// before this one receives it.
    pub fn poll(&self, events: PollEvents, timeout_ms: i64) -> Result<PollEvents> {
        let wanted = events & (POLLIN | POLLOUT);
        let found = self.wait(timeout_ms, || match self.lock().get_events() {
            Ok(e) if (e & wanted).is_empty() => None,
            other => Some(other.map(|e| e & wanted)),
        });
        found.unwrap_or(Ok(PollEvents::empty()))
    }

    fn blocking<T>(
        &self,
        flags: i32,
        timeout: impl Fn(&Socket) -> Result<i32>,
        op: impl Fn(&Socket) -> Result<T>,
    ) -> Result<T> {
        let timeout_ms = if flags & DONTWAIT != 0 {
            0
        } else {
            timeout(&self.lock())?
        };
        let done = self.wait(i64::from(timeout_ms), || match op(&self.lock()) {
            Err(Error::EAGAIN) => None,
            done => Some(done),
        });
        done.unwrap_or_else(|| match timeout_ms {
            0 => Err(Error::EAGAIN),
            _ => err(Error::EAGAIN, "timed out"),
        })
    }

    /// Looks until `look` gives a result, in turns with the other threads,
    /// for `timeout_ms` (-1: forever; 0: one look); `None` when it passed.
    fn wait<T>(&self, timeout_ms: i64, mut look: impl FnMut() -> Option<T>) -> Option<T> {
        if timeout_ms == 0 {
            let done = look();
            if done.is_some() {
                self.turns.took(&self.signal);
            }
            return done;
        }
        let deadline = u64::try_from(timeout_ms)
            .ok()
            .map(|ms| Instant::now() + Duration::from_millis(ms));
        self.turns.wait_for(&self.signal, deadline, look)
    }
}
