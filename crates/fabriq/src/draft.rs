//! The socket side of libzmq's draft socket types (CLIENT, SERVER, RADIO,
//! DISH, SCATTER, GATHER, CHANNEL): single-part sends, routing ids and
//! groups moved between [`Message`] and the two-frame shape the patterns
//! use (`pattern/draft.rs`), and DISH's `join`/`leave`.

use bytes::Bytes;
use fabriq_zmtp::SocketType as ZmtpType;

use crate::error::{err, Error, Result};
use crate::message::Message;
use crate::pattern::{parse_routing_id, routing_id_frame};
use crate::socket::Socket;
use crate::SNDMORE;

/// Takes the routing id (SERVER) or group (DISH) frame off the front of
/// a received message.
pub(crate) fn take_prefix(ty: ZmtpType, frames: &mut fabriq_zmtp::Multipart) -> Option<Bytes> {
    match ty {
        ZmtpType::Server | ZmtpType::Dish if frames.len() == 2 => Some(frames.remove(0)),
        _ => None,
    }
}

/// Puts a prefix taken by [`take_prefix`] on the received message.
pub(crate) fn apply_prefix(ty: ZmtpType, msg: &mut Message, prefix: Bytes) {
    match ty {
        ZmtpType::Server => {
            if let Some(id) = parse_routing_id(&prefix) {
                msg.set_routing_id_raw(id);
            }
        }
        ZmtpType::Dish => msg.set_group_raw(prefix),
        _ => {}
    }
}

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
            ZmtpType::Server => {
                let Some(id) = msg.routing_id() else {
                    return err(Error::EHOSTUNREACH, "SERVER: the message has no routing id");
                };
                self.send_frame(routing_id_frame(id), flags | SNDMORE)?;
                self.send_frame(msg.into_bytes(), flags)
            }
            ZmtpType::Radio => {
                let group = msg.take_group().unwrap_or_default();
                self.send_frame(group, flags | SNDMORE)?;
                self.send_frame(msg.into_bytes(), flags)
            }
            _ => self.send_frame(msg.into_bytes(), flags),
        }
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
