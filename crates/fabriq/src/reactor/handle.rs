//! The handle application threads hold to an I/O thread: starting it,
//! handing it listeners and sessions (of connects and udp sockets) as
//! commands, and stopping it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mio::Poll;

use super::engine::Link;
use super::event_loop::EventLoop;
use super::session::{self, Session};
use super::{make_pipe, next_token, Clock, Cmd, Inbox, ReactorWaker, Shared, WAKER};
use crate::endpoint::Address;
use crate::error::Result;
use crate::mailbox::Mailbox;
use crate::monitor::Event;
use crate::options::Options;
use crate::pipe::{PeerMeta, PipeEnd};
use crate::transport::udp::{Directions, Framing};
use crate::transport::DataPath;

/// Handle to the I/O thread.
pub(crate) struct Reactor {
    pub(super) shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Reactor {
    /// Starts an I/O thread named `fabriq-io` (`fabriq-io-N` for the
    /// `N`th of several, from 1).
    pub(crate) fn start(index: usize) -> std::io::Result<Reactor> {
        let (reactor, event_loop) = Reactor::unstarted(Clock::default())?;
        let name = match index {
            0 => "fabriq-io".to_string(),
            n => format!("fabriq-io-{n}"),
        };
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || event_loop.run())?;
        *reactor.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(thread);
        Ok(reactor)
    }

    /// A reactor and its loop, not yet running: [`Reactor::start`] runs
    /// the loop on its thread; the deterministic tests step it by hand.
    pub(super) fn unstarted(clock: Clock) -> std::io::Result<(Reactor, EventLoop)> {
        let poll = Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), WAKER)?;
        let shared = Arc::new(Shared {
            waker,
            inbox: Mutex::new(Inbox::default()),
            clock,
            live: AtomicUsize::new(0),
            posted: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        });
        let event_loop = EventLoop::new(poll, shared.clone());
        let reactor = Reactor {
            shared,
            thread: Mutex::new(None),
        };
        Ok((reactor, event_loop))
    }

    /// The listeners and connections this I/O thread serves or is about
    /// to (accepted connections count once the loop has seen them).
    pub(crate) fn load(&self) -> usize {
        // `taken` first: the loop stores `live` before `taken`, so a
        // `taken` that counts a command comes with a `live` that counts
        // what it made (a newer `live` only counts it twice for a while).
        let s = &self.shared;
        let taken = s.taken.load(Ordering::Acquire);
        let live = s.live.load(Ordering::Acquire);
        let posted = s.posted.load(Ordering::Acquire);
        live + posted.saturating_sub(taken)
    }

    pub(super) fn reactor_waker(&self, token: usize) -> ReactorWaker {
        ReactorWaker {
            shared: self.shared.clone(),
            token,
        }
    }

    /// Binds an endpoint now (so errors come back at once) and hands the
    /// listener to the I/O thread.
    pub(crate) fn listen(
        &self,
        endpoint: &Address,
        socket: &Arc<Mailbox>,
        opts: &Options,
    ) -> Result<(usize, String)> {
        let (listener, text) = endpoint.transport.bind(endpoint, opts)?;
        socket
            .monitor
            .emit(Event::Listening, listener.monitor_value(), &text);
        let token = next_token();
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared.post(|inbox| {
            inbox.cmds.push(Cmd::Listen {
                token,
                listener,
                socket: socket.clone(),
                opts: Box::new(opts.clone()),
                text: text.clone(),
                data_path: endpoint.transport.data_path(endpoint),
            })
        });
        Ok((token, text))
    }

    /// Starts connecting in the background. Unless IMMEDIATE is set (or
    /// the socket is a ROUTER, which needs the peer's identity first), the
    /// pipe exists from now on, so messages queue until the peer is there.
    pub(crate) fn connect(
        &self,
        endpoint: &Address,
        text: &str,
        socket: &Arc<Mailbox>,
        opts: &Options,
    ) -> Result<(usize, Option<PipeEnd>)> {
        endpoint.transport.check_connect(endpoint, opts)?;
        let token = next_token();
        let link = Link::new(self.reactor_waker(token), self.shared.clock.clone());
        // (A STREAM's peer gets a new routing id per connection too.) With
        // CONNECT_ROUTING_ID they have the peer's id now, and the pipe is
        // made at once, as libzmq's.
        let named = !opts.connect_routing_id.is_empty();
        let early_pipe = !opts.immediate
            && (named
                || !matches!(
                    socket.socket_type,
                    fabriq_zmtp::SocketType::Router | fabriq_zmtp::SocketType::Stream
                ));
        let (socket_end, session_end) = if early_pipe {
            let peer = named.then(|| PeerMeta {
                identity: opts.connect_routing_id.clone(),
                metadata: None,
                all_groups: false,
                late: None,
            });
            let (a, b) = make_pipe(&link, socket, opts, peer);
            (Some(a), Some(b))
        } else {
            (None, None)
        };
        let base = session::Base {
            token,
            socket: socket.clone(),
            opts: opts.clone(),
            endpoint: text.to_string(),
            link,
            data_path: endpoint.transport.data_path(endpoint),
        };
        let session =
            Session::connecting(base, endpoint.clone(), session_end, self.shared.clock.now());
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Session(Box::new(session))));
        Ok((token, socket_end))
    }

    /// Hands a bound (or, for a sender, unbound) udp socket, `text` in
    /// monitor terms, to the I/O thread as a session whose engine moves
    /// its datagrams; returns its token and the socket's end of its pipe,
    /// which takes every RADIO group (DISHes filter).
    pub(crate) fn udp(
        &self,
        udp_socket: std::net::UdpSocket,
        text: &str,
        socket: &Arc<Mailbox>,
        opts: &Options,
        framing: Framing,
        dirs: Directions,
    ) -> (usize, PipeEnd) {
        let token = next_token();
        let link = Link::new(self.reactor_waker(token), self.shared.clock.clone());
        let peer = PeerMeta {
            identity: Default::default(),
            metadata: None,
            all_groups: true,
            late: None,
        };
        let (socket_end, session_end) = make_pipe(&link, socket, opts, Some(peer));
        let base = session::Base {
            token,
            socket: socket.clone(),
            opts: opts.clone(),
            endpoint: text.to_string(),
            link,
            data_path: DataPath::Datagram { framing, dirs },
        };
        let session = Session::datagram(base, udp_socket, session_end);
        self.shared.posted.fetch_add(1, Ordering::AcqRel);
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Session(Box::new(session))));
        (token, socket_end)
    }

    pub(crate) fn unbind(&self, token: usize) {
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Unbind(token)));
    }

    /// Ends a session and waits until it has (its pipe closed), so the
    /// socket stops using it at once, as libzmq's zmq_disconnect.
    pub(crate) fn disconnect(&self, token: usize) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.shared
            .post(|inbox| inbox.cmds.push(Cmd::Disconnect(token, tx)));
        // An I/O thread that is gone drops the sender: no wait.
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }

    /// Closes the socket's listeners and lingers its sessions. With
    /// `done`, it is told once the listeners are closed.
    pub(crate) fn close_socket(
        &self,
        socket: u64,
        linger: i32,
        done: Option<std::sync::mpsc::Sender<()>>,
    ) {
        self.shared.post(|inbox| {
            inbox.cmds.push(Cmd::CloseSocket {
                socket,
                linger,
                done,
            })
        });
    }

    /// Asks the loop to finish (after lingering sessions) and waits.
    pub(crate) fn shutdown_and_wait(&self) {
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            self.shared.post(|inbox| inbox.cmds.push(Cmd::Shutdown));
            if handle.join().is_err() {
                tracing::error!("the I/O thread panicked");
            }
        }
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        self.shutdown_and_wait();
    }
}
