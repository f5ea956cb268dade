//! `Socket`: the application's handle, shaped like `zmq::Socket`.
//!
//! A socket lives in one thread at a time (`Send`, not `Sync`). It owns
//! its routing pattern and its ends of the pipes to its peers; the I/O
//! thread and inproc peers reach it only through [`Mailbox`]: a
//! mailbox for new pipes and the wake-up signal.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use fabriq_zmtp::{Multipart, Part, SocketType as ZmtpType};

use crate::context::Context;
use crate::error::{err, fail, Error, Result};
use crate::mailbox::Mailbox;
use crate::message::{Message, Metadata};
use crate::options::Options;
use crate::pattern::{self, Pattern, PullWaits, Received};
use crate::pipe::{PipeEnd, PullWait, Queue};
use crate::signal::Signal;
use crate::socket_type::SocketType;

mod compat;
mod draft;
mod endpoints;
mod options;
mod raw;
mod recv;
mod send;
#[cfg(all(test, not(loom)))]
mod tests;

static NEXT_SOCKET_ID: AtomicU64 = AtomicU64::new(1);

/// How an endpoint was bound or connected, for unbind/disconnect.
#[derive(Debug)]
enum Attachment {
    /// A tcp/ipc listener in I/O thread `io`.
    Listener { io: usize, token: usize },
    /// An outgoing tcp/ipc connection in I/O thread `io`; `rx`, the queue
    /// from the peer when the pipe was made at connect time.
    Session {
        io: usize,
        token: usize,
        rx: Option<Weak<Queue>>,
    },
    /// A name in the inproc registry.
    InprocBind { name: String },
    /// An inproc pipe.
    InprocConnect { pipe: crate::pipe::PipeId },
}

#[derive(Debug)]
struct Endpoints {
    /// (text as given, text as resolved, what it is)
    list: Vec<(String, String, Attachment)>,
}

pub(crate) struct Core {
    pub(crate) opts: Options,
    pattern: Box<dyn Pattern>,
    /// The rest of the message being received.
    inbox: VecDeque<Part>,
    inbox_meta: Option<Arc<Metadata>>,
    rcvmore: bool,
    /// The routing id (SERVER) or group (DISH) frame that came before the
    /// frame last received (see `pattern/draft.rs`).
    pub(crate) draft_prefix: Option<Part>,
    /// A message fetched by `get_events` before the application asked.
    prefetched: Option<Received>,
    /// Frames of the message being sent (SNDMORE so far).
    outbox: Multipart,
    /// A message is being sent: its first frame went with SNDMORE.
    pub(crate) sending: bool,
    last_endpoint: String,
    endpoints: Endpoints,
    /// Several threads share the socket's signal ([`crate::ThreadSafeSocket`]):
    /// a look does not clear it; the thread whose turn it is to sleep on
    /// it does (see `turns.rs`).
    pub(crate) shared_signal: bool,
    /// The queues (to the peer, from the peer) of the pipes attached so
    /// far, for HWM changes (weak: a pipe that is gone is skipped).
    hwm_pipes: Vec<(Weak<Queue>, Weak<Queue>)>,
    /// What a blocked receive sleeps on beside the signal (gathered anew
    /// before each such sleep; kept for its room).
    pull_waits: PullWaits,
    /// The pull waits whose rings the last sleep took: settled after the
    /// next look at the pipes (see [`crate::pipe::PullWait`]).
    rung: Vec<Arc<dyn PullWait>>,
}

impl Core {
    /// Hands a pipe to the pattern, remembering its queues so that a later
    /// SNDHWM or RCVHWM applies to it too (libzmq's `update_pipe_options`).
    pub(crate) fn attach_pipe(&mut self, pipe: PipeEnd) {
        let n = self.hwm_pipes.len();
        if n >= 64 && n.is_power_of_two() {
            self.hwm_pipes.retain(|(tx, _)| tx.strong_count() > 0);
        }
        self.hwm_pipes
            .push((Arc::downgrade(&pipe.tx), Arc::downgrade(&pipe.rx)));
        let Core { pattern, opts, .. } = self;
        pattern.attach(pipe, opts);
    }

    /// Applies a new SNDHWM (`send`) or RCVHWM to the pipes attached.
    pub(crate) fn update_hwms(&self, send: bool) {
        let (snd, rcv) = (
            Options::hwm(self.opts.sndhwm),
            Options::hwm(self.opts.rcvhwm),
        );
        for (tx, rx) in &self.hwm_pipes {
            if send {
                if let Some(q) = tx.upgrade() {
                    q.set_hwm_parts(Some(snd), None);
                }
            } else if let Some(q) = rx.upgrade() {
                q.set_hwm_parts(None, Some(rcv));
            }
        }
    }

    /// The routing id PEER gave its newest pipe, for `connect_peer`.
    pub(crate) fn last_routing_id(&self) -> Option<u32> {
        self.pattern.last_routing_id()
    }

    /// DISH's join/leave, for `draft.rs`.
    pub(crate) fn pattern_join(&mut self, group: &[u8], join: bool) -> Result<()> {
        self.pattern.join(group, join)
    }
}

/// A fabriq socket. Create one with [`Context::socket`].
///
/// ```
/// let ctx = fabriq::Context::new();
/// let rep = ctx.socket(fabriq::REP).unwrap();
/// rep.bind("tcp://127.0.0.1:*").unwrap();
/// let endpoint = rep.get_last_endpoint().unwrap().unwrap();
/// let req = ctx.socket(fabriq::REQ).unwrap();
/// req.connect(&endpoint).unwrap();
/// req.send("ping", 0).unwrap();
/// assert_eq!(rep.recv_string(0).unwrap().unwrap(), "ping");
/// rep.send("pong", 0).unwrap();
/// assert_eq!(req.recv_string(0).unwrap().unwrap(), "pong");
/// ```
pub struct Socket {
    ctx: Context,
    shared: Arc<Mailbox>,
    core: RefCell<Core>,
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket")
            .field("id", &self.shared.id)
            .field("type", &self.shared.socket_type)
            .finish()
    }
}

/// Sendable over a [`Socket`]: anything that converts into a [`Message`].
pub trait Sendable {
    /// Sends `self` as one frame.
    fn send(self, socket: &Socket, flags: i32) -> Result<()>;
}

impl<T> Sendable for T
where
    T: Into<Message>,
{
    fn send(self, socket: &Socket, flags: i32) -> Result<()> {
        let msg = self.into();
        if socket.shared.socket_type.is_draft() {
            return socket.send_draft(msg, flags);
        }
        if socket.shared.socket_type == ZmtpType::Dgram {
            return socket.send_dgram(msg, flags);
        }
        socket.send_frame(msg.into_part(), flags)
    }
}

impl Socket {
    pub(crate) fn new(ctx: Context, socket_type: ZmtpType) -> Result<Socket> {
        let signal = Arc::new(
            Signal::new()
                .map_err(|e| fail(Error::EMFILE, format!("cannot create eventfd: {e}")))?,
        );
        let shared = Arc::new(Mailbox::new(
            NEXT_SOCKET_ID.fetch_add(1, Ordering::Relaxed),
            socket_type,
            signal.clone(),
        ));
        ctx.socket_opened(shared.id, signal);
        let mut opts = Options::default();
        opts.security.names = ctx.inner.inproc.downgrade();
        Ok(Socket {
            ctx,
            shared,
            core: RefCell::new(Core {
                opts,
                pattern: pattern::for_type(socket_type),
                inbox: VecDeque::new(),
                inbox_meta: None,
                rcvmore: false,
                draft_prefix: None,
                prefetched: None,
                outbox: Multipart::new(),
                sending: false,
                last_endpoint: String::new(),
                endpoints: Endpoints { list: Vec::new() },
                shared_signal: false,
                hwm_pipes: Vec::new(),
                pull_waits: PullWaits::default(),
                rung: Vec::new(),
            }),
        })
    }

    pub(crate) fn core(&self) -> std::cell::RefMut<'_, Core> {
        self.core.borrow_mut()
    }

    /// Takes in new pipes and forgets dead ones.
    ///
    /// Inlined for the test alone, which every send and receive makes;
    /// the work is out of line.
    #[inline]
    pub(crate) fn process_commands(&self, core: &mut Core) {
        // New pipes and dead peers always raise the signal; while it was
        // not raised there is nothing to attach or prune.
        if self.shared.signal.take_dirty() {
            self.attach_and_prune(core);
        }
    }

    #[cold]
    fn attach_and_prune(&self, core: &mut Core) {
        for pipe in self.shared.take_pipes() {
            core.attach_pipe(pipe);
        }
        let Core { pattern, opts, .. } = core;
        pattern.prune(opts);
    }

    /// Runs `op` until it stops saying EAGAIN, sleeping on the socket's
    /// signal in between, within `timeout_ms` (-1: forever). A receive
    /// (`receiving`) also sleeps on its connections' [`PullWait`]s.
    ///
    /// [`PullWait`]: crate::pipe::PullWait
    fn wait_for<T>(
        &self,
        core: &mut Core,
        nonblocking: bool,
        timeout_ms: i32,
        receiving: bool,
        mut op: impl FnMut(&mut Core) -> Result<T>,
    ) -> Result<T> {
        // The deadline is set at the first EAGAIN, not here: a call that
        // finds its message (or room) at once, the common case of a busy
        // stream, then reads no clock (20-50 ns a read on the bench's VM,
        // where an 8 B message costs about 200 ns in all). libzmq's
        // `socket_base_t::recv` does the same; the timeout then runs from
        // the first look that failed, a few instructions later.
        let mut deadline: Option<Instant> = None;
        // With spin_us, the first EAGAIN starts a spell of looking again
        // at once (each look reads the connections on this thread, see
        // `Pipes::fair_recv`) before the sleeps begin. Fabric peers see the
        // spell (`spin.rs`); it ends when this call does.
        let mut spin_until: Option<Instant> = None;
        // Looks in the spell: the clock is read every SPIN_CLOCK_EVERY-th
        // (a read was 12% of a spinning REQ's time; each look's length is
        // how late it sees a reply).
        let mut looks: u32 = 0;
        let spin = &self.shared.spin;
        let mut spell = SpellEnd(None);
        loop {
            // Clear first: anything that happens after this look raises
            // the signal again, so no wake-up is lost. (A shared signal is
            // cleared by the thread whose turn it is to sleep on it.)
            if !core.shared_signal {
                self.shared.signal.clear();
            }
            if self.ctx.is_terminated() {
                if !core.rung.is_empty() {
                    Self::settle(core);
                }
                return err(Error::ETERM, "the context was terminated");
            }
            self.process_commands(core);
            let result = op(core);
            if !core.rung.is_empty() {
                Self::settle(core);
            }
            match result {
                Err(Error::EAGAIN) => {
                    // A shared socket's blocking waits are the
                    // ThreadSafeSocket's own (a wait here would hold the
                    // socket, and could clear a raise another thread
                    // sleeps for): a call made through `with` never blocks.
                    if nonblocking || timeout_ms == 0 || core.shared_signal {
                        return Err(Error::EAGAIN);
                    }
                    let spin_us = core.opts.spin_us;
                    if spin_until.is_some() {
                        looks = looks.wrapping_add(1);
                        if looks % SPIN_CLOCK_EVERY != 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                    }
                    if timeout_ms < 0 && spin_us == 0 {
                        // Nothing to time: sleep until woken.
                        self.sleep(core, receiving, None);
                        continue;
                    }
                    let now = Instant::now();
                    if timeout_ms >= 0 {
                        let d = *deadline
                            .get_or_insert_with(|| now + Duration::from_millis(timeout_ms as u64));
                        if now >= d {
                            return err(Error::EAGAIN, "timed out");
                        }
                    }
                    if spin_us > 0 {
                        let until = *spin_until.get_or_insert_with(|| {
                            spin.begin();
                            spell.0 = Some(spin);
                            now + Duration::from_micros(spin_us as u64)
                        });
                        if now < until {
                            std::hint::spin_loop();
                            continue;
                        }
                        // Peers that saw the spell did not ring: look
                        // once more now that they will.
                        if spin.end() {
                            continue;
                        }
                    }
                    self.sleep(core, receiving, deadline);
                }
                other => return other,
            }
        }
    }

    /// Sleeps until the signal is raised or `deadline` passes; a receive
    /// also wakes when one of its connections' [`PullWait`]s turns
    /// readable (input the next look pulls itself, with no hand-off
    /// through the I/O thread).
    ///
    /// [`PullWait`]: crate::pipe::PullWait
    // Out of line: the busy path (a look that finds its message) stays
    // small enough for the pattern's receive to be inlined into it.
    #[inline(never)]
    fn sleep(&self, core: &mut Core, receiving: bool, deadline: Option<Instant>) {
        use rustix::event::{PollFd, PollFlags};
        if receiving {
            core.pull_waits.clear();
            core.pattern.pull_waits(&mut core.pull_waits);
        }
        let waits = if receiving {
            core.pull_waits.list()
        } else {
            &[]
        };
        if waits.is_empty() {
            self.shared.signal.wait(deadline);
            return;
        }
        // Input already there that would not wake its descriptor: taken
        // now, instead of sleeping (and every wait that was ready to sleep
        // is told it woke: see `PullWait::woke`).
        let sleepy: Vec<bool> = waits.iter().map(|w| w.may_sleep()).collect();
        if sleepy.contains(&false) {
            let queued: Vec<Arc<dyn PullWait>> = waits
                .iter()
                .zip(sleepy)
                .filter(|(w, sleepy)| {
                    let woke = *sleepy && w.woke();
                    (!sleepy || woke) && w.take()
                })
                .map(|(w, _)| w.clone())
                .collect();
            core.rung.extend(queued);
            return;
        }
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(1 + waits.len());
        fds.push(PollFd::from_borrowed_fd(
            self.shared.signal.as_fd(),
            PollFlags::IN,
        ));
        for w in waits {
            fds.push(PollFd::from_borrowed_fd(w.fd(), PollFlags::IN));
        }
        let any = crate::signal::wait_fds(&mut fds, deadline) > 0;
        let rung: Vec<bool> = fds[1..]
            .iter()
            .map(|f| any && !f.revents().is_empty())
            .collect();
        drop(fds);
        // Every wait is told it woke (whatever woke the thread, a timeout
        // included), then taken if its descriptor turned readable or it
        // asks to be.
        let taken: Vec<Arc<dyn PullWait>> = waits
            .iter()
            .zip(rung)
            .filter(|(w, rung)| {
                let woke = w.woke();
                (*rung || woke) && w.take()
            })
            .map(|(w, _)| w.clone())
            .collect();
        core.rung.extend(taken);
    }

    /// Hands what the rings taken by the last sleep announced, and this
    /// thread's look did not pull, back to the I/O thread.
    #[cold]
    #[inline(never)]
    fn settle(core: &mut Core) {
        for w in core.rung.drain(..) {
            w.settle();
        }
    }
}

impl Socket {
    fn check_open(&self) -> Result<()> {
        if self.ctx.is_terminated() {
            return err(Error::ETERM, "the context was terminated");
        }
        Ok(())
    }

    /// Whether the socket could receive and send now, without blocking
    /// (what [`Socket::get_events`] reports).
    pub(crate) fn readiness(&self) -> Result<(bool, bool)> {
        self.check_open()?;
        let mut core = self.core();
        let core = &mut *core;
        // As in `wait_for`: a shared signal is cleared only by the thread
        // whose turn it is to sleep on it.
        if !core.shared_signal {
            self.shared.signal.clear();
        }
        self.process_commands(core);
        // Writability first: prefetching a REP's request (or a REQ's
        // reply) moves the pattern to its next state, which the
        // application has not reached until it receives that message
        // (libzmq's REP reports POLLIN only, then, not POLLOUT).
        let lockstep = matches!(self.shared.socket_type, ZmtpType::Req | ZmtpType::Rep);
        let writable = core.sending
            || (!(lockstep && core.prefetched.is_some()) && {
                let Core { pattern, opts, .. } = core;
                pattern.can_send(opts)
            });
        let readable = !core.inbox.is_empty() || core.prefetched.is_some() || {
            let Core { pattern, opts, .. } = core;
            match pattern.recv(opts) {
                Ok(r) => {
                    core.prefetched = Some(r);
                    true
                }
                Err(_) => false,
            }
        };
        Ok((readable, writable))
    }

    /// The file descriptor that becomes readable when [`Socket::get_events`]
    /// may have changed (`ZMQ_FD`).
    pub fn get_fd(&self) -> Result<RawFd> {
        Ok(self.shared.signal.raw_fd())
    }

    /// The ZMTP socket type.
    pub(crate) fn zmtp_type(&self) -> ZmtpType {
        self.shared.socket_type
    }

    pub(crate) fn signal(&self) -> &Signal {
        &self.shared.signal
    }

    /// The signal behind [`Socket::get_fd`], shared (the async API keeps
    /// the descriptor open for as long as tokio has it registered).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn signal_handle(&self) -> Arc<Signal> {
        self.shared.signal.clone()
    }

    /// The context the socket was made in.
    #[cfg_attr(any(loom, not(feature = "tokio")), allow(dead_code))]
    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }
}

/// The zmq crate's `AsRawFd`: the socket's wake-up descriptor
/// ([`Socket::get_fd`]).
impl std::os::fd::AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.get_fd().expect("the socket's wake-up descriptor")
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let core = self.core.get_mut();
        core.pattern.close_all();
        let linger = core.opts.linger;
        for (_, _, a) in core.endpoints.list.drain(..) {
            if let Attachment::InprocBind { name } = a {
                crate::inproc::unbind(&self.ctx.inner.inproc, &name);
            }
        }
        // A monitored socket waits for its listeners' CLOSED events, so
        // they come before MONITOR_STOPPED, as in libzmq.
        let monitored = self.shared.monitor.is_active();
        let mut acks = Vec::new();
        for r in self.ctx.reactors_started() {
            let done = monitored.then(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                acks.push(rx);
                tx
            });
            r.close_socket(self.shared.id, linger, done);
        }
        for ack in acks {
            // An I/O thread that is gone drops the sender: no wait.
            let _ = ack.recv_timeout(std::time::Duration::from_secs(5));
        }
        self.shared.monitor.stop();
        self.ctx.socket_closed(self.shared.id);
    }
}

impl Context {
    /// A new socket of the given type.
    pub fn socket(&self, socket_type: SocketType) -> Result<Socket> {
        if self.is_terminated() {
            return err(Error::ETERM, "the context was terminated");
        }
        let Some(zmtp_type) = socket_type.to_zmtp() else {
            return err(
                Error::EINVAL,
                format!("{socket_type:?} sockets are not supported by fabriq"),
            );
        };
        Socket::new(self.clone(), zmtp_type)
    }
}

/// While a socket spins, the clock (the spell's end, the receive
/// timeout) is read at every this many looks.
const SPIN_CLOCK_EVERY: u32 = 16;

/// Ends the socket's spell of spinning, if one is on, however
/// `Socket::wait_for` returns.
struct SpellEnd<'a>(Option<&'a crate::spin::Spin>);

impl Drop for SpellEnd<'_> {
    fn drop(&mut self) {
        if let Some(spin) = self.0 {
            spin.end();
        }
    }
}
