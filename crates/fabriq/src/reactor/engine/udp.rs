//! The engine of a `udp://` endpoint: one non-blocking UDP socket on the
//! I/O thread and the pipe to its RADIO, DISH or DGRAM socket (libzmq's
//! `udp_engine_t`). There is no handshake and no peer: the pipe exists
//! from bind or connect on, and lives until the socket drops it.
//!
//! Out (RADIO, DGRAM): each message the pipe carries becomes one datagram
//! (`transport::udp` has the formats); a message that does not fit, or a
//! DGRAM address that does not parse, is dropped, as libzmq does. In (DISH,
//! DGRAM): each datagram becomes one message while the pipe has room; when
//! it has none, reading stops (the kernel keeps or drops what comes) until
//! the socket makes room and wakes us.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;
use mio::{Interest, Registry, Token};

use super::Link;
use crate::mailbox::Mailbox;
use crate::pipe::{Item, PipeEnd};
use crate::transport::udp::{self, Directions, MAX_DATAGRAM};

/// How datagrams are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// RADIO / DISH: `[group length, group, body]`, to a fixed target.
    Groups { target: SocketAddr },
    /// DGRAM: the body alone; messages are `[address, body]`.
    Raw,
}

pub(crate) struct UdpEngine {
    socket: mio::net::UdpSocket,
    /// The I/O side of the pipe to the application socket.
    pipe: PipeEnd,
    /// Keeps the pipe's wake-ups pointed at this engine's token.
    _link: Arc<Link>,
    pub(crate) owner: Arc<Mailbox>,
    framing: Framing,
    dirs: Directions,
    /// The socket is IPv6 (dual stack): DGRAM maps IPv4 destinations.
    ipv6: bool,
    /// A datagram the kernel refused for now (EWOULDBLOCK), sent first
    /// when the socket is writable again.
    pending: Option<(Vec<u8>, SocketAddr)>,
    out: Vec<u8>,
    buf: Box<[u8]>,
}

impl UdpEngine {
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        pipe: PipeEnd,
        link: Arc<Link>,
        owner: Arc<Mailbox>,
        framing: Framing,
        dirs: Directions,
    ) -> UdpEngine {
        let ipv6 = socket.local_addr().is_ok_and(|a| a.is_ipv6());
        UdpEngine {
            socket: mio::net::UdpSocket::from_std(socket),
            pipe,
            _link: link,
            owner,
            framing,
            dirs,
            ipv6,
            pending: None,
            out: Vec::with_capacity(MAX_DATAGRAM),
            buf: vec![0; MAX_DATAGRAM].into_boxed_slice(),
        }
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(
            &mut self.socket,
            token,
            Interest::READABLE | Interest::WRITABLE,
        )
    }

    pub(crate) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.socket);
    }

    /// Moves what can move now. Returns false once the socket has dropped
    /// its end of the pipe (the engine is finished).
    pub(crate) fn drive(&mut self) -> bool {
        if self.dirs.recv {
            self.read();
        }
        self.write();
        !self.pipe.rx.is_writer_closed()
    }

    fn read(&mut self) {
        while self.pipe.tx.has_room() {
            let (n, from) = match self.socket.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // ICMP errors (a DGRAM's earlier send to a closed
                    // port) and the like: the socket is still usable.
                    tracing::debug!("udp recv: {e}");
                    continue;
                }
            };
            let datagram = &self.buf[..n];
            let msg: Multipart = match self.framing {
                Framing::Groups { .. } => {
                    let Some((group, body)) = udp::decode_group(datagram) else {
                        tracing::debug!("udp: dropped a datagram whose group does not fit");
                        continue;
                    };
                    [Part::copy_from_slice(group), Part::copy_from_slice(body)]
                        .into_iter()
                        .collect()
                }
                Framing::Raw => [
                    Part::from(udp::address_frame(from)),
                    Part::copy_from_slice(datagram),
                ]
                .into_iter()
                .collect(),
            };
            self.pipe.tx.push(Item::Msg(msg));
        }
    }

    fn write(&mut self) {
        if let Some((datagram, to)) = self.pending.take() {
            if !self.send(datagram, to) {
                return;
            }
        }
        while let Some(item) = self.pipe.rx.pop() {
            // A DISH's joins and leaves: nothing to send over udp.
            let Item::Msg(msg) = item else { continue };
            if !self.dirs.send || msg.len() != 2 {
                continue;
            }
            let to = match self.framing {
                Framing::Groups { target } => {
                    if !udp::encode_group(&msg[0], &msg[1], &mut self.out) {
                        tracing::debug!("udp: dropped a message too long for a datagram");
                        continue;
                    }
                    target
                }
                Framing::Raw => {
                    let Some(to) = udp::parse_address_frame(&msg[0]) else {
                        tracing::debug!("DGRAM: dropped a message with a bad address");
                        continue;
                    };
                    let Some(to) = udp::for_family(to, self.ipv6) else {
                        tracing::debug!("DGRAM: dropped a message to IPv6 from an IPv4 socket");
                        continue;
                    };
                    if msg[1].len() > MAX_DATAGRAM {
                        tracing::debug!("DGRAM: dropped a message too long for a datagram");
                        continue;
                    }
                    self.out.clear();
                    self.out.extend_from_slice(&msg[1]);
                    to
                }
            };
            let datagram = std::mem::take(&mut self.out);
            if !self.send(datagram, to) {
                return;
            }
        }
    }

    /// Sends one datagram; false if the kernel said to wait (it is kept).
    fn send(&mut self, datagram: Vec<u8>, to: SocketAddr) -> bool {
        loop {
            match self.socket.send_to(&datagram, to) {
                Ok(_) => {
                    self.out = datagram;
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.pending = Some((datagram, to));
                    return false;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Unreachable and the like: the datagram is lost, as
                    // any may be.
                    tracing::debug!("udp send to {to}: {e}");
                    self.out = datagram;
                    return true;
                }
            }
        }
    }

    /// The socket closed: sends what is queued now (no linger on udp),
    /// and lets the pipe go.
    pub(crate) fn close(&mut self) {
        self.write();
        self.pipe.close();
    }
}
