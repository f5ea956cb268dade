//! Endpoints: bind, unbind, connect, disconnect (inproc, udp and the
//! I/O threads' transports), and the socket monitor.

use std::sync::Arc;

use fabriq_zmtp::SocketType as ZmtpType;

use super::{Attachment, Core, Endpoints, Socket};
use crate::endpoint::{Endpoint, Role};
use crate::error::{err, fail, Error, Result};
use crate::inproc::PipeOptions;
use crate::monitor::Event;
use crate::options::Options;

impl Socket {
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
                // Connectors that waited for this name are attached now,
                // as libzmq's bind does: a SUB's subscriptions reach a
                // PUB that connected first before anything else is sent.
                self.process_commands(&mut core);
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
                let mut pipe = crate::inproc::connect(
                    &self.ctx.inner.inproc,
                    &self.shared,
                    &inproc_options(&core.opts),
                    name,
                );
                if !core.opts.connect_routing_id.is_empty() {
                    pipe.peer.identity = core.opts.connect_routing_id.clone();
                }
                let id = pipe.id;
                core.attach_pipe(pipe);
                Attachment::InprocConnect { pipe: id }
            }
            Endpoint::Udp(address) => {
                let (_, token, io) = self.open_udp(core, address, Role::Connect)?;
                Attachment::Session {
                    io,
                    token,
                    rx: None,
                }
            }
            Endpoint::Io(address) => {
                let (io, reactor) = self.ctx.reactor()?;
                let (token, pipe) = reactor.connect(address, endpoint, &self.shared, &core.opts)?;
                let rx = pipe.as_ref().map(|p| Arc::downgrade(&p.rx));
                if let Some(pipe) = pipe {
                    core.attach_pipe(pipe);
                }
                Attachment::Session { io, token, rx }
            }
        };
        core.last_endpoint = endpoint.to_string();
        // CONNECT_ROUTING_ID names one connect's peer, as in libzmq.
        core.opts.connect_routing_id = Default::default();
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
            Attachment::Session { io, token, rx } => {
                // What the peer sent and the application did not read goes
                // with the connection, as libzmq's pipe termination drops it.
                if let Some(q) = rx.and_then(|rx| rx.upgrade()) {
                    q.close_reader();
                    q.close_writer();
                }
                self.ctx.reactor_at(io)?.disconnect(token)
            }
            Attachment::InprocConnect { pipe } => {
                crate::inproc::disconnect(&self.ctx.inner.inproc, pipe)
            }
            _ => unreachable!("filtered above"),
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
        use crate::transport::udp::{self, Directions, Framing};
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
        let (token, pipe) = reactor.udp(socket, &text, &self.shared, &core.opts, framing, dirs);
        core.attach_pipe(pipe);
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
