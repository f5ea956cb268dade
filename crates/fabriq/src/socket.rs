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
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::copies::{self, Site};
use fabriq_zmtp::{Multipart, Part, SocketType as ZmtpType};

use crate::context::Context;
use crate::endpoint::{Endpoint, Role};
use crate::error::{err, fail, Error, Result};
use crate::flags::{DONTWAIT, SNDMORE};
use crate::inproc::PipeOptions;
use crate::mailbox::Mailbox;
use crate::message::{Message, Metadata};
use crate::monitor::Event;
use crate::options::{check_identity, in_range, Options};
use crate::pattern::{self, Pattern, Received};
use crate::signal::Signal;
use crate::socket_type::SocketType;

static NEXT_SOCKET_ID: AtomicU64 = AtomicU64::new(1);

/// Sockets given up with [`Socket::into_raw`], by their pointer.
static RAW_SOCKETS: std::sync::Mutex<Vec<(usize, Socket)>> = std::sync::Mutex::new(Vec::new());

/// How an endpoint was bound or connected, for unbind/disconnect.
#[derive(Debug)]
enum Attachment {
    /// A tcp/ipc listener in I/O thread `io`.
    Listener { io: usize, token: usize },
    /// An outgoing tcp/ipc connection in I/O thread `io`.
    Session { io: usize, token: usize },
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
    /// frame last received (see `draft.rs`).
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
}

impl Core {
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
            let Core { pattern, opts, .. } = core;
            pattern.attach(pipe, opts);
        }
        let Core { pattern, opts, .. } = core;
        pattern.prune(opts);
    }

    /// Runs `op` until it stops saying EAGAIN, sleeping on the socket's
    /// signal in between, within `timeout_ms` (-1: forever).
    fn wait_for<T>(
        &self,
        core: &mut Core,
        nonblocking: bool,
        timeout_ms: i32,
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
                return err(Error::ETERM, "the context was terminated");
            }
            self.process_commands(core);
            match op(core) {
                Err(Error::EAGAIN) => {
                    // A shared socket's blocking waits are the
                    // ThreadSafeSocket's own (a wait here would hold the
                    // socket, and could clear a raise another thread
                    // sleeps for): a call made through `with` never blocks.
                    if nonblocking || timeout_ms == 0 || core.shared_signal {
                        return Err(Error::EAGAIN);
                    }
                    let spin_us = core.opts.spin_us;
                    if timeout_ms < 0 && spin_us == 0 {
                        // Nothing to time: sleep until woken.
                        self.shared.signal.wait(None);
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
                    self.shared.signal.wait(deadline);
                }
                other => return other,
            }
        }
    }

    // ---- sending -------------------------------------------------------

    /// Sends one frame; with `SNDMORE`, more frames of the same message
    /// follow. Accepts `&str`, `&[u8]`, `Vec<u8>`, `String`, `Message`,
    /// `bytes::Bytes` (zero-copy)...
    pub fn send<T: Sendable>(&self, data: T, flags: i32) -> Result<()> {
        data.send(self, flags)
    }

    /// Sends a message given as [`Message`].
    #[deprecated(note = "use `send`")]
    pub fn send_msg(&self, msg: Message, flags: i32) -> Result<()> {
        self.send(msg, flags)
    }

    /// Sends a string.
    #[deprecated(note = "use `send`")]
    pub fn send_str(&self, data: &str, flags: i32) -> Result<()> {
        self.send(data, flags)
    }

    /// Sends all parts of a multipart message.
    pub fn send_multipart<I, T>(&self, iter: I, flags: i32) -> Result<()>
    where
        I: IntoIterator<Item = T>,
        T: Into<Message>,
    {
        let mut last: Option<T> = None;
        for part in iter {
            if let Some(prev) = last.take() {
                self.send(prev.into(), flags | SNDMORE)?;
            }
            last = Some(part);
        }
        match last {
            Some(part) => self.send(part.into(), flags),
            None => Ok(()),
        }
    }

    pub(crate) fn send_frame(&self, frame: Part, flags: i32) -> Result<()> {
        let mut core = self.core();
        let core = &mut *core;
        if !core.sending {
            let timeout = core.opts.sndtimeo;
            self.wait_for(core, flags & DONTWAIT != 0, timeout, |core| {
                let Core { pattern, opts, .. } = core;
                pattern.start_send(&frame, opts)
            })?;
            core.sending = true;
        }
        core.outbox.push(frame);
        if flags & SNDMORE == 0 {
            core.sending = false;
            let msg = std::mem::take(&mut core.outbox);
            let Core { pattern, opts, .. } = core;
            pattern.send(msg, opts)?;
        }
        Ok(())
    }

    // ---- receiving -----------------------------------------------------

    fn recv_frame(&self, flags: i32) -> Result<(Part, bool, Option<Arc<Metadata>>)> {
        let mut core = self.core();
        let core = &mut *core;
        if core.inbox.is_empty() {
            let timeout = core.opts.rcvtimeo;
            let received =
                self.wait_for(core, flags & DONTWAIT != 0, timeout, |core| {
                    match core.prefetched.take() {
                        Some(r) => Ok(r),
                        None => {
                            let Core { pattern, opts, .. } = core;
                            pattern.recv(opts)
                        }
                    }
                })?;
            let mut frames = received.msg;
            if self.shared.socket_type.is_draft() {
                core.draft_prefix =
                    crate::pattern::take_prefix(self.shared.socket_type, &mut frames);
            }
            if frames.len() == 1 {
                // The common single-frame message skips the inbox.
                core.rcvmore = false;
                let frame = frames.pop().unwrap_or_default();
                return Ok((frame, false, received.meta));
            }
            core.inbox.extend(frames);
            core.inbox_meta = received.meta;
        }
        let frame = core.inbox.pop_front().unwrap_or_default();
        core.rcvmore = !core.inbox.is_empty();
        Ok((frame, core.rcvmore, core.inbox_meta.clone()))
    }

    /// Receives one frame into `msg`.
    pub fn recv(&self, msg: &mut Message, flags: i32) -> Result<()> {
        let (data, more, meta) = self.recv_frame(flags)?;
        *msg = Message::from_parts(data, more, meta);
        if self.shared.socket_type.is_draft() {
            if let Some(prefix) = self.core().draft_prefix.take() {
                crate::pattern::apply_prefix(self.shared.socket_type, msg, prefix);
            }
        }
        Ok(())
    }

    /// Receives one frame into `bytes`; returns the frame's full size
    /// (larger than `bytes.len()` if it was truncated).
    pub fn recv_into(&self, bytes: &mut [u8], flags: i32) -> Result<usize> {
        let (data, _, _) = self.recv_frame(flags)?;
        let n = data.len().min(bytes.len());
        bytes[..n].copy_from_slice(&data[..n]);
        copies::count(Site::Api, n);
        Ok(data.len())
    }

    /// Receives one frame as a new [`Message`].
    pub fn recv_msg(&self, flags: i32) -> Result<Message> {
        let mut msg = Message::new();
        self.recv(&mut msg, flags)?;
        Ok(msg)
    }

    /// Receives one frame as bytes.
    pub fn recv_bytes(&self, flags: i32) -> Result<Vec<u8>> {
        let data = self.recv_frame(flags)?.0;
        copies::count(Site::Api, data.len());
        Ok(data.to_vec())
    }

    /// Receives one frame as `Bytes`, without copying (a frame of at most
    /// 23 bytes, which travels inline, is copied: see [`Message::into_bytes`]).
    pub fn recv_zc(&self, flags: i32) -> Result<Bytes> {
        Ok(Message::from_parts(self.recv_frame(flags)?.0, false, None).into_bytes())
    }

    /// Receives one frame as a string; `Err(bytes)` inside if it is not
    /// UTF-8.
    pub fn recv_string(&self, flags: i32) -> Result<std::result::Result<String, Vec<u8>>> {
        let bytes = self.recv_bytes(flags)?;
        Ok(String::from_utf8(bytes).map_err(|e| e.into_bytes()))
    }

    /// Receives all frames of a message.
    pub fn recv_multipart(&self, flags: i32) -> Result<Vec<Vec<u8>>> {
        let mut parts = vec![self.recv_bytes(flags)?];
        while self.get_rcvmore()? {
            parts.push(self.recv_bytes(0)?);
        }
        Ok(parts)
    }

    /// Whether the last frame received has more frames after it.
    pub fn get_rcvmore(&self) -> Result<bool> {
        Ok(self.core().rcvmore)
    }

    // ---- endpoints -----------------------------------------------------

    /// Accepts connections on `endpoint`: `tcp://host:port` (port `*` or
    /// `0` for an ephemeral one), `ipc://path`, `ipc://@abstract`,
    /// `ipc://*`, `inproc://name`, `ofi+PROVIDER://host:port` (libfabric;
    /// the address is the TCP control connection's).
    pub fn bind(&self, endpoint: &str) -> Result<()> {
        self.check_open()?;
        let parsed = Endpoint::parse(endpoint, Role::Bind)?;
        self.check_stream_transport(&parsed)?;
        let mut core = self.core();
        let (resolved, attachment) = match &parsed {
            Endpoint::Inproc(name) => {
                crate::inproc::bind(
                    &self.ctx.inner.inproc,
                    &self.shared,
                    &inproc_options(&core.opts),
                    name,
                )?;
                (
                    endpoint.to_string(),
                    Attachment::InprocBind { name: name.clone() },
                )
            }
            Endpoint::Udp(address) => {
                let (text, token, io) = self.open_udp(&mut core, address, Role::Bind)?;
                (text, Attachment::Listener { io, token })
            }
            Endpoint::Io(address) => {
                let (io, reactor) = self.ctx.reactor()?;
                let result = reactor.listen(address, &self.shared, &core.opts);
                match result {
                    Ok((token, text)) => (text, Attachment::Listener { io, token }),
                    Err(e) => {
                        self.shared
                            .monitor
                            .emit(Event::BindFailed, e.to_raw() as u32, endpoint);
                        return Err(e);
                    }
                }
            }
        };
        core.last_endpoint = resolved.clone();
        core.endpoints
            .list
            .push((endpoint.to_string(), resolved, attachment));
        Ok(())
    }

    /// Stops accepting on an endpoint given as bound or as
    /// `get_last_endpoint` showed it; closes the connections it accepted.
    pub fn unbind(&self, endpoint: &str) -> Result<()> {
        self.check_open()?;
        let mut core = self.core();
        let attachment = take_endpoint(&mut core.endpoints, endpoint, |a| {
            matches!(
                a,
                Attachment::Listener { .. } | Attachment::InprocBind { .. }
            )
        })
        .ok_or_else(|| fail(Error::ENOENT, format!("{endpoint} is not bound")))?;
        match attachment {
            Attachment::Listener { io, token } => self.ctx.reactor_at(io)?.unbind(token),
            Attachment::InprocBind { name } => crate::inproc::unbind(&self.ctx.inner.inproc, &name),
            _ => unreachable!("filtered above"),
        }
        Ok(())
    }

    /// Connects to `endpoint`; the connection is made (and remade) in the
    /// background, so this returns at once.
    pub fn connect(&self, endpoint: &str) -> Result<()> {
        self.check_open()?;
        let parsed = Endpoint::parse(endpoint, Role::Connect)?;
        self.check_stream_transport(&parsed)?;
        let mut core = self.core();
        let core = &mut *core;
        let attachment = match &parsed {
            Endpoint::Inproc(name) => {
                let pipe = crate::inproc::connect(
                    &self.ctx.inner.inproc,
                    &self.shared,
                    &inproc_options(&core.opts),
                    name,
                );
                let id = pipe.id;
                let Core { pattern, opts, .. } = core;
                pattern.attach(pipe, opts);
                Attachment::InprocConnect { pipe: id }
            }
            Endpoint::Udp(address) => {
                let (_, token, io) = self.open_udp(core, address, Role::Connect)?;
                Attachment::Session { io, token }
            }
            Endpoint::Io(address) => {
                let (io, reactor) = self.ctx.reactor()?;
                let (token, pipe) = reactor.connect(address, endpoint, &self.shared, &core.opts)?;
                if let Some(pipe) = pipe {
                    let Core { pattern, opts, .. } = core;
                    pattern.attach(pipe, opts);
                }
                Attachment::Session { io, token }
            }
        };
        core.last_endpoint = endpoint.to_string();
        core.endpoints
            .list
            .push((endpoint.to_string(), endpoint.to_string(), attachment));
        Ok(())
    }

    /// Drops the connection made by `connect(endpoint)`.
    pub fn disconnect(&self, endpoint: &str) -> Result<()> {
        self.check_open()?;
        let mut core = self.core();
        let attachment = take_endpoint(&mut core.endpoints, endpoint, |a| {
            matches!(
                a,
                Attachment::Session { .. } | Attachment::InprocConnect { .. }
            )
        })
        .ok_or_else(|| fail(Error::ENOENT, format!("{endpoint} is not connected")))?;
        match attachment {
            Attachment::Session { io, token } => self.ctx.reactor_at(io)?.disconnect(token),
            Attachment::InprocConnect { pipe } => {
                crate::inproc::disconnect(&self.ctx.inner.inproc, pipe)
            }
            _ => unreachable!("filtered above"),
        }
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if self.ctx.is_terminated() {
            return err(Error::ETERM, "the context was terminated");
        }
        Ok(())
    }

    /// Reports this socket's events (`SocketEvent` bits in `events`) as
    /// two-frame messages on a PAIR socket bound at `monitor_endpoint`
    /// (an `inproc://` name), in libzmq's format: a 6-byte frame (event
    /// number u16 and value u32, little endian) and the endpoint.
    pub fn monitor(&self, monitor_endpoint: &str, events: i32) -> Result<()> {
        let slot = &self.shared.monitor;
        slot.stop();
        if monitor_endpoint.is_empty() {
            return Ok(());
        }
        let Endpoint::Inproc(name) = Endpoint::parse(monitor_endpoint, Role::Bind)? else {
            return err(
                Error::EPROTONOSUPPORT,
                format!("monitor endpoint {monitor_endpoint:?} must be inproc://"),
            );
        };
        let sink =
            Arc::new(crate::monitor::Sink::new().map_err(|e| fail(Error::EMFILE, e.to_string()))?);
        let names = self.ctx.inner.inproc.clone();
        crate::inproc::bind_binder(&names, &name, crate::inproc::Binder::Monitor(sink.clone()))?;
        slot.start(crate::monitor::Active {
            sink,
            // As in libzmq, a mask of 0 selects no events.
            mask: events as u32,
            release: Box::new(move || crate::inproc::unbind(&names, &name)),
        });
        Ok(())
    }

    // ---- polling -------------------------------------------------------

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
        let writable = core.sending || {
            let Core { pattern, opts, .. } = core;
            pattern.can_send(opts)
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

    // ---- options -------------------------------------------------------

    /// Opens a `udp://` endpoint (as libzmq: RADIO connects, DISH and
    /// DGRAM bind; ENOCOMPATPROTO otherwise), hands it to an I/O thread
    /// and attaches its pipe. Returns `LAST_ENDPOINT`'s text (an ephemeral
    /// port filled in), the token and the I/O thread.
    fn open_udp(
        &self,
        core: &mut Core,
        address: &crate::transport::udp::UdpAddress,
        role: Role,
    ) -> Result<(String, usize, usize)> {
        use crate::reactor::Framing;
        use crate::transport::udp::{self, Directions};
        let ty = self.shared.socket_type;
        let text = &address.text;
        // The socket type first, as libzmq checks it before resolving.
        let (groups, dirs) = match (ty, role) {
            (ZmtpType::Radio, Role::Connect) => (
                true,
                Directions {
                    send: true,
                    recv: false,
                },
            ),
            (ZmtpType::Dish, Role::Bind) => (
                true,
                Directions {
                    send: false,
                    recv: true,
                },
            ),
            (ZmtpType::Dgram, Role::Bind) => (
                false,
                Directions {
                    send: true,
                    recv: true,
                },
            ),
            _ => {
                let verb = if role == Role::Bind {
                    "bind"
                } else {
                    "connect"
                };
                return err(
                    Error::ENOCOMPATPROTO,
                    format!(
                        "{ty} sockets cannot {verb} udp://; udp is for RADIO (connect), \
                         DISH and DGRAM (bind) sockets (accepted forms: udp://HOST:PORT, \
                         udp://IFACE;GROUP:PORT)"
                    ),
                );
            }
        };
        let address = &udp::resolve(address, core.opts.ipv6)?;
        let framing = if groups {
            Framing::Groups {
                target: address.target,
            }
        } else {
            Framing::Raw
        };
        let socket = udp::open(
            address,
            dirs,
            core.opts.multicast_hops,
            core.opts.multicast_loop,
        )
        .map_err(|e| crate::error::fail(Error::from_io(&e), format!("udp://{text}: {e}")))?;
        let mut text = format!("udp://{text}");
        if role == Role::Bind && address.bind.port() == 0 {
            if let Ok(local) = socket.local_addr() {
                let host = text.rsplit_once(':').map_or("", |(h, _)| h);
                text = format!("{host}:{}", local.port());
            }
        }
        let (io, reactor) = self.ctx.reactor()?;
        let (token, pipe) = reactor.udp(socket, &self.shared, &core.opts, framing, dirs);
        let Core { pattern, opts, .. } = core;
        pattern.attach(pipe, opts);
        Ok((text, token, io))
    }

    /// STREAM sockets carry raw bytes over tcp and ipc connections only.
    fn check_stream_transport(&self, parsed: &Endpoint) -> Result<()> {
        if self.shared.socket_type == ZmtpType::Dgram && !matches!(parsed, Endpoint::Udp(_)) {
            return err(
                Error::ENOCOMPATPROTO,
                "DGRAM sockets work over udp:// only (bind udp://HOST:PORT)",
            );
        }
        if self.shared.socket_type != ZmtpType::Stream {
            return Ok(());
        }
        match parsed {
            Endpoint::Io(a) if a.scheme == "tcp" || a.scheme == "ipc" => Ok(()),
            _ => err(
                Error::EPROTONOSUPPORT,
                "STREAM sockets work over tcp:// and ipc:// only",
            ),
        }
    }

    /// The socket's type.
    pub fn get_socket_type(&self) -> Result<SocketType> {
        Ok(self.shared.socket_type.into())
    }

    /// Whether the socket's type is one libzmq makes thread-safe
    /// (`ZMQ_THREAD_SAFE`: CLIENT, SERVER, RADIO, DISH, SCATTER, GATHER,
    /// PEER, CHANNEL): such a socket can be shared between threads as a
    /// [`crate::ThreadSafeSocket`].
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// assert!(ctx.socket(fabriq::SERVER).unwrap().is_thread_safe().unwrap());
    /// assert!(!ctx.socket(fabriq::ROUTER).unwrap().is_thread_safe().unwrap());
    /// ```
    pub fn is_thread_safe(&self) -> Result<bool> {
        Ok(self.shared.socket_type.is_draft())
    }

    /// The endpoint last bound or connected, with ephemeral ports resolved.
    pub fn get_last_endpoint(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(Ok(self.core().last_endpoint.clone()))
    }

    /// The routing id (`ZMQ_ROUTING_ID`, also known as identity).
    pub fn get_identity(&self) -> Result<Vec<u8>> {
        Ok(self.core().opts.identity.to_vec())
    }

    /// Sets the routing id: 1 to 255 bytes, not starting with a zero byte.
    pub fn set_identity(&self, value: &[u8]) -> Result<()> {
        self.core().opts.identity = check_identity(value)?;
        Ok(())
    }

    /// Subscribes a SUB socket to messages starting with `topic`; on an
    /// XPUB with [`Socket::set_xpub_manual`], subscribes the peer whose
    /// subscription message was received last.
    pub fn set_subscribe(&self, topic: &[u8]) -> Result<()> {
        let mut core = self.core();
        self.manual_xpub_check(&core, "subscribe")?;
        self.process_commands(&mut core);
        core.pattern.subscribe(topic, true)
    }

    /// Removes one subscription to `topic` (XPUB_MANUAL: as
    /// [`Socket::set_subscribe`]).
    pub fn set_unsubscribe(&self, topic: &[u8]) -> Result<()> {
        let mut core = self.core();
        self.manual_xpub_check(&core, "unsubscribe")?;
        self.process_commands(&mut core);
        core.pattern.subscribe(topic, false)
    }

    fn manual_xpub_check(&self, core: &Core, what: &str) -> Result<()> {
        if self.shared.socket_type == ZmtpType::XPub && !core.opts.xpub_manual {
            return err(
                Error::EINVAL,
                format!("{what} is an option of SUB sockets, and of XPUB ones with xpub_manual"),
            );
        }
        Ok(())
    }

    /// XPUB: passes every subscription to the application, not only new
    /// topics (`ZMQ_XPUB_VERBOSE`; as in libzmq this also turns
    /// [`Socket::set_xpub_verboser`]'s verbose unsubscriptions off).
    pub fn set_xpub_verbose(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verbose")?;
        let opts = &mut self.core().opts;
        opts.xpub_verbose = value;
        opts.xpub_verbose_unsubscribe = false;
        Ok(())
    }

    /// XPUB: passes every unsubscription to the application (fabriq's own
    /// option; libzmq has it only together with verbose subscriptions, as
    /// [`Socket::set_xpub_verboser`]).
    pub fn set_xpub_verbose_unsubscribe(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verbose_unsubscribe")?;
        self.core().opts.xpub_verbose_unsubscribe = value;
        Ok(())
    }

    /// XPUB: passes every subscription and every unsubscription to the
    /// application (`ZMQ_XPUB_VERBOSER`; not in the zmq crate).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_verboser(true).unwrap();
    /// xpub.bind("inproc://verboser-doc").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// let subs: Vec<_> = (0..2).map(|_| ctx.socket(fabriq::SUB).unwrap()).collect();
    /// for s in &subs {
    ///     s.connect("inproc://verboser-doc").unwrap();
    ///     s.set_subscribe(b"t").unwrap();
    ///     assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01t");
    /// }
    /// subs[0].set_unsubscribe(b"t").unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00t");
    /// ```
    pub fn set_xpub_verboser(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verboser")?;
        let opts = &mut self.core().opts;
        opts.xpub_verbose = value;
        opts.xpub_verbose_unsubscribe = value;
        Ok(())
    }

    /// XPUB: subscriptions are the application's to apply
    /// (`ZMQ_XPUB_MANUAL`; not in the zmq crate). Every (un)subscription
    /// is received and none takes effect until the application calls
    /// [`Socket::set_subscribe`] / [`Socket::set_unsubscribe`] on the XPUB,
    /// which apply to the peer whose (un)subscription was received last.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_manual(true).unwrap();
    /// xpub.bind("inproc://manual-doc").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// let sub = ctx.socket(fabriq::SUB).unwrap();
    /// sub.set_rcvtimeo(5000).unwrap();
    /// sub.connect("inproc://manual-doc").unwrap();
    /// sub.set_subscribe(b"weather").unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01weather");
    /// xpub.send("weather: not delivered, not applied yet", 0).unwrap();
    /// // Apply it for that peer.
    /// xpub.set_subscribe(b"weather").unwrap();
    /// xpub.send("weather: sunny", 0).unwrap();
    /// assert_eq!(sub.recv_bytes(0).unwrap(), b"weather: sunny");
    /// ```
    pub fn set_xpub_manual(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_manual")?;
        self.core().opts.xpub_manual = value;
        Ok(())
    }

    /// XPUB: a message that a matching subscriber has no room for is
    /// refused with `EAGAIN` (a blocking send waits, up to the send
    /// timeout) instead of being dropped for that subscriber
    /// (`ZMQ_XPUB_NODROP`; not in the zmq crate).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_nodrop(true).unwrap();
    /// xpub.set_sndhwm(1).unwrap();
    /// xpub.bind("inproc://nodrop-doc").unwrap();
    /// let sub = ctx.socket(fabriq::SUB).unwrap();
    /// sub.set_rcvhwm(1).unwrap();
    /// sub.connect("inproc://nodrop-doc").unwrap();
    /// sub.set_subscribe(b"").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01");
    /// // The subscriber reads nothing: soon there is no room.
    /// let refused = (0..100).any(|_| xpub.send("m", fabriq::DONTWAIT).is_err());
    /// assert!(refused);
    /// ```
    pub fn set_xpub_nodrop(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_nodrop")?;
        self.core().opts.xpub_nodrop = value;
        Ok(())
    }

    /// XPUB: a message sent to each new subscriber (`None` or an empty
    /// text: none, as in libzmq).
    pub fn set_xpub_welcome_msg(&self, value: Option<&str>) -> Result<()> {
        self.xpub_only("xpub_welcome_msg")?;
        self.core().opts.xpub_welcome_msg = value.map(|v| Bytes::copy_from_slice(v.as_bytes()));
        Ok(())
    }

    fn xpub_only(&self, name: &str) -> Result<()> {
        if self.shared.socket_type != ZmtpType::XPub {
            return err(
                Error::EINVAL,
                format!("{name} is an option of XPUB sockets"),
            );
        }
        Ok(())
    }

    /// Adds an application metadata property sent to peers in the
    /// handshake (`ZMQ_METADATA`); the name must start with `X-`.
    pub fn set_metadata(&self, name: &str, value: &[u8]) -> Result<()> {
        if !name.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("x-")) {
            return err(Error::EINVAL, "metadata property names must start with X-");
        }
        self.core()
            .opts
            .metadata
            .push(name, Bytes::copy_from_slice(value))
            .map_err(|e| fail(Error::EINVAL, e.to_string()))
    }
}

/// What inproc pipes take of a socket's options.
fn inproc_options(opts: &Options) -> PipeOptions {
    PipeOptions {
        sndhwm: Options::hwm(opts.sndhwm),
        rcvhwm: Options::hwm(opts.rcvhwm),
        conflate: opts.conflate,
        probe_router: opts.probe_router,
        identity: opts.identity.clone(),
    }
}

fn take_endpoint(
    endpoints: &mut Endpoints,
    text: &str,
    kind: impl Fn(&Attachment) -> bool,
) -> Option<Attachment> {
    let i = endpoints
        .list
        .iter()
        .rposition(|(given, resolved, a)| (given == text || resolved == text) && kind(a))?;
    Some(endpoints.list.remove(i).2)
}

/// Integer options: getter, setter, field, lowest accepted value.
macro_rules! int_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident [$min:expr, $max:expr] ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<i32> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: i32) -> Result<()> {
                    self.core().opts.$field = in_range(stringify!($field), value, $min, $max)?;
                    Ok(())
                }
            )*
        }
    };
}

int_options! {
    /// Send high-water mark, in messages per peer (0: none).
    (get_sndhwm, set_sndhwm) => sndhwm [0, i32::MAX],
    /// Receive high-water mark, in messages per peer (0: none).
    (get_rcvhwm, set_rcvhwm) => rcvhwm [0, i32::MAX],
    /// How long pending messages may delay close, in ms (-1: forever).
    (get_linger, set_linger) => linger [-1, i32::MAX],
    /// Receive timeout in ms (-1: forever).
    (get_rcvtimeo, set_rcvtimeo) => rcvtimeo [-1, i32::MAX],
    /// Send timeout in ms (-1: forever).
    (get_sndtimeo, set_sndtimeo) => sndtimeo [-1, i32::MAX],
    /// Reconnect interval in ms (-1: no reconnect).
    (get_reconnect_ivl, set_reconnect_ivl) => reconnect_ivl [-1, i32::MAX],
    /// Maximum reconnect interval in ms for exponential backoff (0: none).
    (get_reconnect_ivl_max, set_reconnect_ivl_max) => reconnect_ivl_max [0, i32::MAX],
    /// Interval between heartbeat PINGs in ms (0: off).
    (get_heartbeat_ivl, set_heartbeat_ivl) => heartbeat_ivl [0, i32::MAX],
    /// TTL announced in PINGs, in ms (rounded down to 100 ms).
    (get_heartbeat_ttl, set_heartbeat_ttl) => heartbeat_ttl [0, 6_553_599],
    /// Time to wait for traffic after a PING, in ms (default -1: the
    /// interval; only 0 and above can be set, as in libzmq).
    (get_heartbeat_timeout, set_heartbeat_timeout) => heartbeat_timeout [0, i32::MAX],
    /// Time allowed for the ZMTP handshake, in ms (0: unlimited).
    (get_handshake_ivl, set_handshake_ivl) => handshake_ivl [0, i32::MAX],
    /// Time allowed for a tcp connect, in ms (0: the OS default).
    (get_connect_timeout, set_connect_timeout) => connect_timeout [0, i32::MAX],
    /// SO_KEEPALIVE (-1: OS default, 0: off, 1: on).
    (get_tcp_keepalive, set_tcp_keepalive) => tcp_keepalive [-1, 1],
    /// TCP_KEEPCNT (-1: OS default).
    (get_tcp_keepalive_cnt, set_tcp_keepalive_cnt) => tcp_keepalive_cnt [-1, i32::MAX],
    /// TCP_KEEPIDLE in s (-1: OS default).
    (get_tcp_keepalive_idle, set_tcp_keepalive_idle) => tcp_keepalive_idle [-1, i32::MAX],
    /// TCP_KEEPINTVL in s (-1: OS default).
    (get_tcp_keepalive_intvl, set_tcp_keepalive_intvl) => tcp_keepalive_intvl [-1, i32::MAX],
    /// SO_SNDBUF in bytes (-1: OS default).
    (get_sndbuf, set_sndbuf) => sndbuf [-1, i32::MAX],
    /// SO_RCVBUF in bytes (-1: OS default).
    (get_rcvbuf, set_rcvbuf) => rcvbuf [-1, i32::MAX],
    /// Listen backlog.
    (get_backlog, set_backlog) => backlog [0, i32::MAX],
    /// IP type-of-service.
    (get_tos, set_tos) => tos [0, i32::MAX],
    /// Multicast rate (recorded; no multicast transport).
    (get_rate, set_rate) => rate [1, i32::MAX],
    /// Multicast recovery interval (recorded; no multicast transport).
    (get_recovery_ivl, set_recovery_ivl) => recovery_ivl [0, i32::MAX],
    /// Multicast hops: the TTL (IPv4) or hop limit (IPv6) of what a RADIO
    /// sends to a `udp://` multicast group (default 1: this network only).
    (get_multicast_hops, set_multicast_hops) => multicast_hops [1, i32::MAX],
    /// fabriq extra: how long a blocking send or receive keeps reading and
    /// writing its connections on the calling thread before it sleeps, in
    /// µs (0, the default: sleep at once). Spinning trades a core for
    /// latency; over `ofi+` endpoints it polls the completion queue as
    /// `fi_pingpong` does. Applies to sockets with up to 8 connections.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let rep = ctx.socket(fabriq::REP).unwrap();
    /// rep.set_spin_us(50).unwrap();
    /// assert_eq!(rep.get_spin_us().unwrap(), 50);
    /// assert!(rep.set_spin_us(-1).is_err());
    /// ```
    (get_spin_us, set_spin_us) => spin_us [0, 10_000_000],
}

/// Options of the fabric data path, `ofi+` endpoints (fabriq extras; see
/// docs/fabric.md). They apply to connections made after they are set.
macro_rules! fabric_int_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident [$min:expr, $max:expr] ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<i32> {
                    Ok(self.core().opts.fabric.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: i32) -> Result<()> {
                    self.core().opts.fabric.$field =
                        in_range(concat!("fabric_", stringify!($field)), value, $min, $max)?;
                    Ok(())
                }
            )*
        }
    };
}

fabric_int_options! {
    /// Buffered mode: how long a partly filled page may wait for more
    /// messages before it is sent, in µs (0, the default: it goes as soon
    /// as the socket has nothing more queued).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_flush_us(100).unwrap();
    /// assert_eq!(push.get_fabric_flush_us().unwrap(), 100);
    /// ```
    (get_fabric_flush_us, set_fabric_flush_us) => flush_us [0, 10_000_000],
    /// Bytes per registered page (default 64 KiB; 4 KiB to 64 MiB). A
    /// page is the unit a fabric send carries; peers may differ (a sender
    /// fills at most the receiver's page size).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// assert_eq!(push.get_fabric_page_size().unwrap(), 65536);
    /// assert!(push.set_fabric_page_size(1000).is_err());
    /// ```
    (get_fabric_page_size, set_fabric_page_size) => page_size [4096, 64 << 20],
    /// Registered pages per fabric endpoint (default 512; at least 16).
    /// A quarter (at most 128) are kept posted for receiving.
    (get_fabric_page_count, set_fabric_page_count) => page_count [16, 1 << 20],
}

impl Socket {
    /// Whether `ofi+` connections coalesce messages into pages (true, the
    /// default) or send each message at once in its own page(s)
    /// (unbuffered: lowest latency, one fabric send per message).
    pub fn is_fabric_buffered(&self) -> Result<bool> {
        Ok(self.core().opts.fabric.buffered)
    }

    /// Chooses the fabric send mode; see [`Socket::is_fabric_buffered`].
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_buffered(false).unwrap();
    /// assert!(!push.is_fabric_buffered().unwrap());
    /// ```
    pub fn set_fabric_buffered(&self, value: bool) -> Result<()> {
        self.core().opts.fabric.buffered = value;
        Ok(())
    }

    /// Whether `ofi+` connections encrypt their data path (false, the
    /// default): see [`Socket::set_fabric_encrypt`].
    pub fn is_fabric_encrypt(&self) -> Result<bool> {
        Ok(self.core().opts.fabric.encrypt)
    }

    /// Encrypts the fabric data path of `ofi+` connections made after
    /// this is set: every page is one XSalsa20-Poly1305 box under a fresh
    /// random key per direction, which each side sends the other inside
    /// the CURVE-encrypted control connection (a `KEY` command) before
    /// its first page. Frames larger than a page are streamed through
    /// sealed pages instead of being read by RMA, so nothing crosses the
    /// fabric in clear. Both peers must set it: a connection between one
    /// that does and one that does not is refused at the handshake.
    ///
    /// It needs CURVE (`set_curve_server(true)` or
    /// `set_curve_serverkey`), whose confidentiality carries the page
    /// keys: `bind` and `connect` of an `ofi+` endpoint on a socket with
    /// this option and the NULL or PLAIN mechanism fail with `EINVAL`,
    /// saying so. Other transports ignore the option (use CURVE there).
    /// Its cost is measured in docs/fabric.md.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_encrypt(true).unwrap();
    /// assert!(push.is_fabric_encrypt().unwrap());
    /// // Without CURVE there is nothing to carry the page keys.
    /// let e = push.connect("ofi+tcp://127.0.0.1:5555").unwrap_err();
    /// assert_eq!(e, fabriq::Error::EINVAL);
    /// ```
    pub fn set_fabric_encrypt(&self, value: bool) -> Result<()> {
        self.core().opts.fabric.encrypt = value;
        Ok(())
    }
}

/// Boolean options.
macro_rules! bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<bool> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

bool_options! {
    /// Queue messages only on completed connections.
    (is_immediate, set_immediate) => immediate,
    /// Keep only the newest message in each queue.
    (is_conflate, set_conflate) => conflate,
    /// Use IPv6 as well as IPv4.
    (is_ipv6, set_ipv6) => ipv6,
    /// Draft (libzmq's `ZMQ_MULTICAST_LOOP`, on by default): whether a
    /// RADIO sending to a `udp://` multicast group also delivers to
    /// receivers on its own host (`IP_MULTICAST_LOOP` /
    /// `IPV6_MULTICAST_LOOP`). Read when the RADIO connects, as libzmq
    /// reads it when its engine starts.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let radio = ctx.socket(fabriq::RADIO).unwrap();
    /// assert!(radio.is_multicast_loop().unwrap());
    /// radio.set_multicast_loop(false).unwrap();
    /// radio.connect("udp://239.0.0.1:5555").unwrap();
    /// ```
    (is_multicast_loop, set_multicast_loop) => multicast_loop,
}

/// Boolean options that only one socket type has (EINVAL elsewhere, as in
/// libzmq).
macro_rules! typed_bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident for $ty:ident ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<bool> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    if self.shared.socket_type != ZmtpType::$ty {
                        return err(
                            Error::EINVAL,
                            format!("{} is an option of {} sockets", stringify!($field), ZmtpType::$ty),
                        );
                    }
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

/// Boolean options of one socket type that libzmq 4.3 can set but not
/// read: the setter answers EINVAL on other socket types, the getter
/// always answers EINVAL (as `zmq_getsockopt` does for them).
macro_rules! write_only_bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident for $($ty:ident)|+ ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                ///
                /// The getter fails with `EINVAL`: libzmq 4.3 has no getter
                /// for this option.
                pub fn $get(&self) -> Result<bool> {
                    err(
                        Error::EINVAL,
                        format!("{} cannot be read (libzmq 4.3 has no getter for it)", stringify!($field)),
                    )
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    if !matches!(self.shared.socket_type, $(ZmtpType::$ty)|+) {
                        return err(
                            Error::EINVAL,
                            format!("{} is an option of {} sockets", stringify!($field), stringify!($($ty)|+)),
                        );
                    }
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

write_only_bool_options! {
    /// ROUTER: refuse unroutable messages (EHOSTUNREACH) instead of
    /// dropping them, and say EAGAIN when the peer's pipe is full.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let router = ctx.socket(fabriq::ROUTER).unwrap();
    /// router.set_router_mandatory(true).unwrap();
    /// let sent = router.send_multipart(["nobody", "hello"], fabriq::DONTWAIT);
    /// assert_eq!(sent, Err(fabriq::Error::EHOSTUNREACH));
    /// ```
    (is_router_mandatory, set_router_mandatory) => router_mandatory for Router,
    /// ROUTER: a new peer with a taken identity takes it over.
    (is_router_handover, set_router_handover) => router_handover for Router,
    /// DEALER, ROUTER, REQ: send an empty message to each new peer as soon
    /// as it is attached (`ZMQ_PROBE_ROUTER`), so that a ROUTER learns the
    /// peer's routing id before it says anything.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let router = ctx.socket(fabriq::ROUTER).unwrap();
    /// router.bind("inproc://probe-doc").unwrap();
    /// let dealer = ctx.socket(fabriq::DEALER).unwrap();
    /// dealer.set_identity(b"d1").unwrap();
    /// dealer.set_probe_router(true).unwrap();
    /// dealer.connect("inproc://probe-doc").unwrap();
    /// router.set_rcvtimeo(5000).unwrap();
    /// assert_eq!(router.recv_multipart(0).unwrap(), [b"d1".to_vec(), Vec::new()]);
    /// ```
    (is_probe_router, set_probe_router) => probe_router for Dealer | Router | Req,
}

typed_bool_options! {
    /// REQ: allow a new request before the reply to the previous one.
    (is_req_relaxed, set_req_relaxed) => req_relaxed for Req,
    /// REQ: match replies to requests with a request id.
    (is_req_correlate, set_req_correlate) => req_correlate for Req,
}

impl Socket {
    /// Largest accepted message frame in bytes (-1: no limit).
    pub fn get_maxmsgsize(&self) -> Result<i64> {
        Ok(self.core().opts.maxmsgsize)
    }

    /// Sets the largest accepted frame; a peer sending more is
    /// disconnected.
    pub fn set_maxmsgsize(&self, value: i64) -> Result<()> {
        // Any negative value means no limit, as in libzmq.
        self.core().opts.maxmsgsize = value.max(-1);
        Ok(())
    }

    /// I/O thread affinity (recorded; one I/O thread).
    pub fn get_affinity(&self) -> Result<u64> {
        Ok(self.core().opts.affinity)
    }

    /// Sets the I/O thread affinity (recorded; one I/O thread).
    pub fn set_affinity(&self, value: u64) -> Result<()> {
        self.core().opts.affinity = value;
        Ok(())
    }
}

impl Socket {
    /// Gives the socket up as a raw pointer (the zmq crate's `into_raw`):
    /// the same pointer [`Socket::as_mut_ptr`] gave, as in the zmq crate.
    ///
    /// The pointer is fabriq's own, not a libzmq socket: it can only go
    /// back through [`Socket::from_raw`]; until it does, the socket stays
    /// open (held by fabriq).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let mut s = ctx.socket(fabriq::PAIR).unwrap();
    /// let ptr = s.as_mut_ptr();
    /// let raw = s.into_raw();
    /// assert_eq!(ptr, raw);
    /// // SAFETY: `raw` came from `into_raw` and is used once.
    /// let s = unsafe { fabriq::Socket::from_raw(raw) };
    /// assert_eq!(s.get_socket_type().unwrap(), fabriq::PAIR);
    /// ```
    pub fn into_raw(mut self) -> *mut std::os::raw::c_void {
        let ptr = self.as_mut_ptr();
        RAW_SOCKETS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((ptr as usize, self));
        ptr
    }

    /// Takes back a socket given up with [`Socket::into_raw`].
    ///
    /// # Safety
    ///
    /// `sock` must come from [`Socket::into_raw`] and must not be used
    /// again after this call (the returned `Socket` owns it). (fabriq
    /// checks: any other pointer panics.)
    #[allow(unsafe_code)]
    pub unsafe fn from_raw(sock: *mut std::os::raw::c_void) -> Socket {
        let mut raw = RAW_SOCKETS.lock().unwrap_or_else(|p| p.into_inner());
        let i = raw
            .iter()
            .position(|(p, _)| *p == sock as usize)
            .expect("Socket::from_raw: not a pointer from Socket::into_raw");
        raw.swap_remove(i).1
    }

    /// A pointer that names this socket (the zmq crate's `as_mut_ptr`),
    /// the one [`Socket::into_raw`] gives. It is not a libzmq socket; it
    /// stays the same while the socket is open, moved or not.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let mut s = ctx.socket(fabriq::PAIR).unwrap();
    /// assert!(!s.as_mut_ptr().is_null());
    /// ```
    pub fn as_mut_ptr(&mut self) -> *mut std::os::raw::c_void {
        Arc::as_ptr(&self.shared).cast_mut().cast()
    }

    /// The SOCKS5 proxy recorded with [`Socket::set_socks_proxy`] (empty:
    /// none).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let s = ctx.socket(fabriq::DEALER).unwrap();
    /// s.set_socks_proxy(Some("127.0.0.1:1080")).unwrap();
    /// assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "127.0.0.1:1080");
    /// s.set_socks_proxy(None).unwrap();
    /// assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "");
    /// ```
    pub fn get_socks_proxy(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(Ok(self.core().opts.socks_proxy.clone()))
    }

    /// Sets a SOCKS5 proxy, `HOST:PORT` (`ZMQ_SOCKS_PROXY`; `None` or an
    /// empty text: none): later tcp connects go through it, as libzmq's:
    /// "no authentication", then a CONNECT for the endpoint's address (a
    /// host name is passed for the proxy to resolve).
    pub fn set_socks_proxy(&self, value: Option<&str>) -> Result<()> {
        self.core().opts.socks_proxy = value.unwrap_or("").to_string();
        Ok(())
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
