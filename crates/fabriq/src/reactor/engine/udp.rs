//! The engine of a `udp://` endpoint: one non-blocking UDP socket on the
//! I/O thread, moving datagrams between it and the pipe to its RADIO,
//! DISH or DGRAM socket (libzmq's `udp_engine_t`). There is no handshake
//! and no peer: the session's pipe exists from bind or connect on, and
//! the session makes this engine on its first turn and ends with the
//! socket (see `session.rs`).
//!
//! Out (RADIO, DGRAM): each message the pipe carries becomes one datagram
//! (`transport::udp` has the formats); a message that does not fit, or a
//! DGRAM address that does not parse, is dropped, as libzmq does. In (DISH,
//! DGRAM): each datagram becomes one message while the pipe has room; when
//! it has none, reading stops (the kernel keeps or drops what comes) until
//! the socket makes room and wakes the session.
//!
//! The socket's thread never reads or writes here: [`Engine::pull`] and
//! [`Engine::output_ready`] decline, and the session does the work.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use fabriq_zmtp::{Multipart, Part, PeerInfo, ProtocolError};
use mio::{Interest, Token};

use super::{Delivery, Engine, Input, Pulled, Reads};
use crate::pipe::{Item, Queue};
use crate::topics::Topics;
use crate::transport::udp::{self, Directions, Framing, MAX_DATAGRAM};
use crate::transport::Poller;

pub(crate) struct UdpEngine {
    socket: mio::net::UdpSocket,
    framing: Framing,
    dirs: Directions,
    /// The socket is IPv6 (dual stack): DGRAM maps IPv4 destinations.
    ipv6: bool,
    /// A datagram the kernel refused for now (EWOULDBLOCK), sent first
    /// when the socket is writable again.
    pending: Option<(Vec<u8>, SocketAddr)>,
    out: Vec<u8>,
    buf: Box<[u8]>,
    /// Messages read and held back by a delivery (empty between reads).
    decoded: Vec<Item>,
}

impl UdpEngine {
    /// The engine of `socket` (opened by bind or connect), registered
    /// with the poller under `token`.
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        framing: Framing,
        dirs: Directions,
        token: Token,
        poller: &mut Poller<'_>,
    ) -> io::Result<UdpEngine> {
        let ipv6 = socket.local_addr().is_ok_and(|a| a.is_ipv6());
        let mut socket = mio::net::UdpSocket::from_std(socket);
        poller
            .registry
            .register(&mut socket, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(UdpEngine {
            socket,
            framing,
            dirs,
            ipv6,
            pending: None,
            out: Vec::with_capacity(MAX_DATAGRAM),
            buf: vec![0; MAX_DATAGRAM].into_boxed_slice(),
            decoded: Vec::new(),
        })
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
}

impl Engine for UdpEngine {
    /// Readiness is not tracked: a turn tries to read and write, and the
    /// socket says `WouldBlock` when there is nothing to do.
    fn ready(&mut self, _readable: bool, _writable: bool) {}

    /// Each datagram (one read) becomes one message while `inbound` has
    /// room, up to `reads.max` datagrams.
    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, _now: Instant) -> (Input, usize) {
        let Some(inbound) = inbound.filter(|_| self.dirs.recv) else {
            return (Input::Idle, 0);
        };
        let mut delivery = Delivery::new(inbound, &mut self.decoded);
        let mut input = Input::More;
        for _ in 0..reads.max {
            if !delivery.has_room() {
                input = Input::Full;
                break;
            }
            let (n, from) = match self.socket.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    input = Input::Idle;
                    break;
                }
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
            delivery.push(Item::Msg(msg));
        }
        (input, delivery.finish())
    }

    /// Sends each message of `outbound` as one datagram until the kernel
    /// says to wait. A DISH's joins and leaves are not sent (udp carries
    /// none), nor recorded in `subs` (nothing is replayed over udp).
    fn write(
        &mut self,
        outbound: Option<&Queue>,
        _subs: Option<&mut Topics>,
        _now: Instant,
    ) -> io::Result<()> {
        if let Some((datagram, to)) = self.pending.take() {
            if !self.send(datagram, to) {
                return Ok(());
            }
        }
        let Some(outbound) = outbound else {
            return Ok(());
        };
        while let Some(item) = outbound.pop() {
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
                return Ok(());
            }
        }
        Ok(())
    }

    /// The datagram the kernel refused for now, if any.
    fn unsent(&self) -> usize {
        self.pending.as_ref().map_or(0, |(d, _)| d.len())
    }

    fn is_active(&self) -> bool {
        true
    }

    /// There is no handshake: messages flow from the start.
    fn handshaken(&self) -> bool {
        true
    }

    fn peer(&self) -> Option<&PeerInfo> {
        None
    }

    fn peer_address(&self) -> String {
        String::new()
    }

    /// Subscriptions (a DISH's joins) do not travel over udp.
    fn subscribe(&mut self, _topic: &[u8]) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) -> Result<(), ProtocolError> {
        Ok(())
    }

    fn end_of_input(&mut self) -> Option<ProtocolError> {
        None
    }

    /// The socket's descriptor (udp sessions report no monitor events).
    fn monitor_value(&self) -> u32 {
        use std::os::fd::AsRawFd;
        self.socket.as_raw_fd() as u32
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        let _ = poller.registry.deregister(&mut self.socket);
    }

    /// Never on the socket's thread: the session reads.
    fn pull(&mut self, _inbound: &Queue, _now: Instant) -> Pulled {
        Pulled::default()
    }

    /// Never on the socket's thread: the session is woken to write.
    fn output_ready(&mut self, _outbound: &Queue, _now: Instant) -> bool {
        false
    }
}
