//! tcp connects through a SOCKS5 proxy (`ZMQ_SOCKS_PROXY`), as libzmq's
//! socks_connecter.cpp does it: "no authentication" offered, then a
//! CONNECT request for the endpoint's host (an IPv4 or IPv6 literal as
//! such, a name as a domain name for the proxy to resolve) and port. The
//! connect counts as done once the proxy has granted the request; ZMTP
//! then runs over the proxied connection.

use std::io::{self, IoSlice, Read};
use std::net::IpAddr;

use bytes::BytesMut;
use mio::Token;

use super::{Poller, Stream};
use crate::options::Options;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The tcp connect to the proxy is in progress.
    Connecting,
    /// The greeting is sent (or being sent); the method choice is awaited.
    Greeting,
    /// The CONNECT request is sent (or being sent); the reply is awaited.
    Request,
    /// The proxy connected us.
    Done,
}

#[derive(Debug)]
pub(crate) struct Socks5 {
    inner: mio::net::TcpStream,
    state: State,
    /// Bytes to send, and how many went.
    out: Vec<u8>,
    sent: usize,
    /// The reply read so far.
    reply: Vec<u8>,
    request: Vec<u8>,
}

fn refused(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, why.into())
}

impl Socks5 {
    /// Talks to the proxy over `inner`, a tcp connect to it in progress
    /// (`transport::tcp` starts it, to the `socks_proxy` option's address),
    /// for `address` (`HOST:PORT`).
    pub(crate) fn start(inner: mio::net::TcpStream, address: &str) -> io::Result<Socks5> {
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| refused(format!("SOCKS5: no port in {address:?}")))?;
        let port: u16 = port
            .parse()
            .map_err(|_| refused(format!("SOCKS5: bad port in {address:?}")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let mut request = vec![5, 1, 0];
        match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) => {
                request.push(1);
                request.extend_from_slice(&a.octets());
            }
            Ok(IpAddr::V6(a)) => {
                request.push(4);
                request.extend_from_slice(&a.octets());
            }
            Err(_) => {
                let name = host.as_bytes();
                let len = u8::try_from(name.len())
                    .map_err(|_| refused("SOCKS5: host name longer than 255 bytes"))?;
                request.push(3);
                request.push(len);
                request.extend_from_slice(name);
            }
        }
        request.extend_from_slice(&port.to_be_bytes());
        Ok(Socks5 {
            inner,
            state: State::Connecting,
            out: Vec::new(),
            sent: 0,
            reply: Vec::new(),
            request,
        })
    }

    /// How many bytes of the current reply are still missing (0: whole).
    fn missing(&self) -> usize {
        let have = self.reply.len();
        let want = match self.state {
            State::Greeting => 2,
            State::Request if have < 5 => 5,
            State::Request => {
                4 + match self.reply[3] {
                    1 => 4,
                    4 => 16,
                    _ => 1 + usize::from(self.reply[4]),
                } + 2
            }
            _ => 0,
        };
        want.saturating_sub(have)
    }

    /// Writes what is pending; `Ok(false)` if the proxy takes no more now.
    fn flush(&mut self) -> io::Result<bool> {
        while self.sent < self.out.len() {
            match Stream::write_vectored(&mut self.inner, &[IoSlice::new(&self.out[self.sent..])]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn send(&mut self, bytes: Vec<u8>) {
        self.out = bytes;
        self.sent = 0;
        self.reply.clear();
    }
}

impl Stream for Socks5 {
    fn read_into(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        self.inner.read_into(buf, max)
    }

    fn short_read_drains(&self) -> bool {
        self.inner.short_read_drains()
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        Stream::write_vectored(&mut self.inner, bufs)
    }

    fn connect_result(&mut self) -> io::Result<bool> {
        loop {
            match self.state {
                State::Done => return Ok(true),
                State::Connecting => {
                    if !self.inner.connect_result()? {
                        return Ok(false);
                    }
                    self.send(vec![5, 1, 0]); // version 5, one method: none
                    self.state = State::Greeting;
                }
                State::Greeting | State::Request => {
                    if !self.flush()? {
                        return Ok(false);
                    }
                    // Read exactly the reply: what follows it is the peer's.
                    let missing = self.missing();
                    if missing > 0 {
                        let mut chunk = vec![0u8; missing];
                        match self.inner.read(&mut chunk) {
                            Ok(0) => return Err(refused("SOCKS5: the proxy closed")),
                            Ok(n) => self.reply.extend_from_slice(&chunk[..n]),
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                        continue;
                    }
                    if self.reply[0] != 5 || self.reply[1] != 0 {
                        return Err(refused(format!(
                            "SOCKS5: the proxy refused ({:?})",
                            &self.reply[..2]
                        )));
                    }
                    if self.state == State::Greeting {
                        let request = self.request.clone();
                        self.send(request);
                        self.state = State::Request;
                    } else {
                        self.state = State::Done;
                    }
                }
            }
        }
    }

    fn peer_address(&self) -> String {
        self.inner.peer_address()
    }

    fn local_address(&self) -> String {
        self.inner.local_address()
    }

    fn monitor_value(&self) -> u32 {
        self.inner.monitor_value()
    }

    fn tune(&self, opts: &Options) {
        self.inner.tune(opts);
    }

    fn register(&mut self, poller: &mut Poller<'_>, token: Token) -> io::Result<()> {
        self.inner.register(poller, token)
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        self.inner.deregister(poller);
    }
}
