//! libzmq's options that the zmq crate has no setter for, kept for C
//! programs (`fabriq-capi`) and libzmq's own tests: accept filters
//! (`ZMQ_TCP_ACCEPT_FILTER`, `ZMQ_IPC_FILTER_UID`/`GID`/`PID`) and
//! `ZMQ_USE_FD`, `ZMQ_CONNECT_ROUTING_ID`, `ZMQ_STREAM_NOTIFY`,
//! `ZMQ_INVERT_MATCHING`.

use super::Socket;
use bytes::Bytes;

use crate::accept_filter::AddressMask;
use crate::error::{err, Error, Result};
use crate::options::in_range;

impl Socket {
    /// Adds a tcp accept filter, `ADDRESS[/BITS]` (`ZMQ_TCP_ACCEPT_FILTER`):
    /// listeners bound afterwards keep only connections from matching
    /// addresses. `None` or an empty text clears the list. A malformed
    /// mask is `EINVAL`.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let s = ctx.socket(fabriq::PAIR).unwrap();
    /// s.set_tcp_accept_filter(Some("127.0.0.1/32")).unwrap();
    /// assert!(s.set_tcp_accept_filter(Some("0.0.0.0/33")).is_err());
    /// s.set_tcp_accept_filter(None).unwrap();
    /// ```
    pub fn set_tcp_accept_filter(&self, filter: Option<&str>) -> Result<()> {
        let mut core = self.core();
        match filter.filter(|f| !f.is_empty()) {
            None => core.opts.accept_filters.tcp.clear(),
            Some(f) => {
                let mask = AddressMask::parse(f, core.opts.ipv6)?;
                core.opts.accept_filters.tcp.push(mask);
            }
        }
        Ok(())
    }

    /// Adds a user id to the ipc accept filter (`ZMQ_IPC_FILTER_UID`;
    /// `None` clears the list): ipc listeners bound afterwards keep only
    /// peers whose credentials match one of the uid, gid or pid filters.
    pub fn set_ipc_filter_uid(&self, uid: Option<u32>) -> Result<()> {
        let f = &mut self.core().opts.accept_filters.ipc_uids;
        match uid {
            None => f.clear(),
            Some(u) => f.push(u),
        }
        Ok(())
    }

    /// Adds a group id to the ipc accept filter (`ZMQ_IPC_FILTER_GID`;
    /// `None` clears the list): a peer matches if the group is its primary
    /// group or lists its user as a member.
    pub fn set_ipc_filter_gid(&self, gid: Option<u32>) -> Result<()> {
        let f = &mut self.core().opts.accept_filters.ipc_gids;
        match gid {
            None => f.clear(),
            Some(g) => f.push(g),
        }
        Ok(())
    }

    /// Adds a process id to the ipc accept filter (`ZMQ_IPC_FILTER_PID`;
    /// `None` clears the list).
    pub fn set_ipc_filter_pid(&self, pid: Option<i32>) -> Result<()> {
        let f = &mut self.core().opts.accept_filters.ipc_pids;
        match pid {
            None => f.clear(),
            Some(p) => f.push(p),
        }
        Ok(())
    }

    /// The listening socket later binds take (`ZMQ_USE_FD`; -1, the
    /// default: binds make their own).
    pub fn get_use_fd(&self) -> Result<i32> {
        Ok(self.core().opts.use_fd)
    }

    /// Makes later tcp and ipc binds take `fd`, a socket the application
    /// created, bound and put in the listening state, instead of making
    /// one (`ZMQ_USE_FD`; -1: none). The bind's endpoint then only names
    /// the transport; the listener owns the descriptor and closes it
    /// with itself. A bind fails with `EINVAL` if `fd` is not a
    /// listening stream socket of the endpoint's address family.
    pub fn set_use_fd(&self, fd: i32) -> Result<()> {
        self.core().opts.use_fd = in_range("use_fd", fd, -1, i32::MAX)?;
        Ok(())
    }

    /// Names the peer of the next [`Socket::connect`]
    /// (`ZMQ_CONNECT_ROUTING_ID`, 1 to 255 bytes; empty: none): a ROUTER
    /// or STREAM routes to it by this id from the moment `connect`
    /// returns, whatever identity the peer announces. Each connect takes
    /// the name (the next one needs a new call), as in libzmq.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let server = ctx.socket(fabriq::ROUTER).unwrap();
    /// server.bind("inproc://connect-rid-doc").unwrap();
    /// let client = ctx.socket(fabriq::ROUTER).unwrap();
    /// client.set_connect_routing_id(b"server").unwrap();
    /// client.connect("inproc://connect-rid-doc").unwrap();
    /// client.send_multipart(["server", "hello"], 0).unwrap();
    /// server.set_rcvtimeo(5000).unwrap();
    /// assert_eq!(server.recv_multipart(0).unwrap()[1], b"hello");
    /// ```
    pub fn set_connect_routing_id(&self, id: &[u8]) -> Result<()> {
        if id.len() > 255 {
            return err(
                Error::EINVAL,
                "connect_routing_id must be at most 255 bytes",
            );
        }
        self.core().opts.connect_routing_id = Bytes::copy_from_slice(id);
        Ok(())
    }

    /// Whether a STREAM delivers an empty message when a peer connects
    /// or goes away (`ZMQ_STREAM_NOTIFY`, on by default).
    pub fn is_stream_notify(&self) -> Result<bool> {
        Ok(self.core().opts.stream_notify)
    }

    /// Turns a STREAM's connect and disconnect notices on or off
    /// (`ZMQ_STREAM_NOTIFY`; `EINVAL` on other socket types, as libzmq).
    pub fn set_stream_notify(&self, value: bool) -> Result<()> {
        if self.shared.socket_type != fabriq_zmtp::SocketType::Stream {
            return err(
                Error::EINVAL,
                "stream_notify is an option of STREAM sockets",
            );
        }
        self.core().opts.stream_notify = value;
        Ok(())
    }

    /// Whether matching is inverted (`ZMQ_INVERT_MATCHING`, off by
    /// default).
    pub fn is_invert_matching(&self) -> Result<bool> {
        Ok(self.core().opts.invert_matching)
    }

    /// Inverts subscription matching (`ZMQ_INVERT_MATCHING`): a PUB or
    /// XPUB sends each message to the peers none of whose subscriptions
    /// match it, and a SUB keeps the messages that match none of its own
    /// (set it on both sides).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let publisher = ctx.socket(fabriq::PUB).unwrap();
    /// publisher.set_invert_matching(true).unwrap();
    /// publisher.bind("inproc://invert-doc").unwrap();
    /// let sub = ctx.socket(fabriq::SUB).unwrap();
    /// sub.set_invert_matching(true).unwrap();
    /// sub.connect("inproc://invert-doc").unwrap();
    /// sub.set_subscribe(b"noise").unwrap();
    /// sub.set_rcvtimeo(5000).unwrap();
    /// publisher.send("noise: dropped", 0).unwrap();
    /// publisher.send("signal", 0).unwrap();
    /// assert_eq!(sub.recv_bytes(0).unwrap(), b"signal");
    /// ```
    pub fn set_invert_matching(&self, value: bool) -> Result<()> {
        self.core().opts.invert_matching = value;
        Ok(())
    }
}
