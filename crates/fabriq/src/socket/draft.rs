//! The socket side of libzmq's draft socket types (CLIENT, SERVER, RADIO,
//! DISH, SCATTER, GATHER, CHANNEL, PEER, DGRAM): single-part sends, with
//! SERVER's routing id or RADIO's group taken from the [`Message`] into
//! the two-frame shape the patterns use (`pattern/draft.rs`, which also
//! turns received ones back), DGRAM's two-frame sends, PEER's
//! `connect_peer` and DISH's `join`/`leave`.

use fabriq_zmtp::SocketType as ZmtpType;

use super::Socket;
use crate::error::{err, Error, Result};
use crate::flags::SNDMORE;
use crate::message::Message;
use crate::pattern::routing_id_frame;

impl Socket {
    /// Sends one message on a draft socket: refuses `SNDMORE` (EINVAL, as
    /// libzmq), and puts SERVER's routing id or RADIO's group in front.
    pub(crate) fn send_draft(&self, mut msg: Message, flags: i32) -> Result<()> {
        let ty = self.zmtp_type();
        if flags & SNDMORE != 0 {
            return err(
                Error::EINVAL,
                format!("{ty} sockets send single-part messages only"),
            );
        }
        match ty {
            ZmtpType::Server | ZmtpType::Peer => {
                let Some(id) = msg.routing_id() else {
                    return err(
                        Error::EHOSTUNREACH,
                        format!("{ty}: the message has no routing id"),
                    );
                };
                self.send_frame(routing_id_frame(id), flags | SNDMORE)?;
                self.send_frame(msg.into_part(), flags)
            }
            ZmtpType::Radio => {
                let group = msg.take_group().unwrap_or_default();
                self.send_frame(fabriq_zmtp::Part::from(group), flags | SNDMORE)?;
                self.send_frame(msg.into_part(), flags)
            }
            _ => self.send_frame(msg.into_part(), flags),
        }
    }

    /// Sends one frame on a DGRAM socket, whose messages are exactly two
    /// frames (as libzmq's `dgram_t`): the address with `SNDMORE`, then
    /// the body without it; anything else is EINVAL.
    pub(crate) fn send_dgram(&self, msg: Message, flags: i32) -> Result<()> {
        let first = !self.core().sending;
        let more = flags & SNDMORE != 0;
        if first && !more {
            return err(
                Error::EINVAL,
                "DGRAM: the first frame is the address and needs SNDMORE",
            );
        }
        if !first && more {
            return err(
                Error::EINVAL,
                "DGRAM: a message is two frames, address and body",
            );
        }
        self.send_frame(msg.into_part(), flags)
    }

    /// PEER (draft): connects to `endpoint` and returns the routing id of
    /// the new peer, to address messages to it (libzmq's
    /// `zmq_connect_peer`). The pipe exists from now on, so messages sent
    /// to it queue until the connection is up. `ENOTSUP` on other socket
    /// types; `EFAULT` with `IMMEDIATE` set (as libzmq: there is no peer
    /// to name until the connection is made).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let peer = ctx.socket(fabriq::PEER).unwrap();
    /// // Nobody listens there yet: the routing id is given at once.
    /// let id = peer.connect_peer("tcp://127.0.0.1:5599").unwrap();
    /// assert_ne!(id, 0);
    /// peer.set_immediate(true).unwrap();
    /// assert_eq!(
    ///     peer.connect_peer("tcp://127.0.0.1:5599"),
    ///     Err(fabriq::Error::EFAULT)
    /// );
    /// ```
    ///
    /// [`crate::SocketType::PEER`] has an exchange both ways.
    pub fn connect_peer(&self, endpoint: &str) -> Result<u32> {
        if self.zmtp_type() != ZmtpType::Peer {
            return err(Error::ENOTSUP, "connect_peer is for PEER sockets only");
        }
        if self.core().opts.immediate {
            return err(
                Error::EFAULT,
                "connect_peer cannot work with IMMEDIATE set (as libzmq)",
            );
        }
        self.connect(endpoint)?;
        let core = self.core();
        core.last_routing_id().ok_or_else(|| {
            crate::error::fail(
                Error::EFAULT,
                "connect_peer: the new peer has no routing id",
            )
        })
    }

    /// DISH (draft): receive the messages RADIOs send to `group`
    /// (libzmq's `zmq_join`). `EINVAL` if the group is already joined or
    /// longer than 255 bytes, `ENOTSUP` on other socket types.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let dish = ctx.socket(fabriq::DISH).unwrap();
    /// dish.join("weather").unwrap();
    /// assert_eq!(dish.join("weather"), Err(fabriq::Error::EINVAL));
    /// dish.leave("weather").unwrap();
    /// assert_eq!(dish.leave("weather"), Err(fabriq::Error::EINVAL));
    /// let radio = ctx.socket(fabriq::RADIO).unwrap();
    /// assert_eq!(radio.join("weather"), Err(fabriq::Error::ENOTSUP));
    /// ```
    pub fn join(&self, group: &str) -> Result<()> {
        self.join_or_leave(group, true)
    }

    /// DISH (draft): stop receiving `group` (libzmq's `zmq_leave`).
    /// `EINVAL` if it was not joined.
    pub fn leave(&self, group: &str) -> Result<()> {
        self.join_or_leave(group, false)
    }

    fn join_or_leave(&self, group: &str, join: bool) -> Result<()> {
        let mut core = self.core();
        self.process_commands(&mut core);
        core.pattern_join(group.as_bytes(), join)
    }
}
