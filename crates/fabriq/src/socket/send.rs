//! Sending: frames, messages and multipart messages (`Socket::send`...).

use fabriq_zmtp::Part;

use super::{Core, Sendable, Socket};
use crate::error::{Error, Result};
use crate::flags::{DONTWAIT, SNDMORE};
use crate::message::Message;

impl Socket {
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

    /// Sends the frame in `msg` as [`Socket::send`] does, taking it out
    /// only if it is sent: when the send fails (EAGAIN, EFSM, ETERM...)
    /// `msg` is as it was, as libzmq's `zmq_msg_send` leaves a message
    /// that failed intact, so a caller that must keep it needs no copy.
    /// When it is sent, `msg` holds an empty frame (its other fields, as a
    /// routing id, stay).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// let mut msg = fabriq::Message::from(vec![7u8; 64]);
    /// let e = push.send_from(&mut msg, fabriq::DONTWAIT).unwrap_err();
    /// assert_eq!(e, fabriq::Error::EAGAIN);
    /// assert_eq!(&msg[..], &[7u8; 64][..]); // no peer yet: kept
    /// let pull = ctx.socket(fabriq::PULL).unwrap();
    /// pull.bind("inproc://send-from").unwrap();
    /// push.connect("inproc://send-from").unwrap();
    /// push.send_from(&mut msg, 0).unwrap();
    /// assert!(msg.is_empty()); // sent: taken
    /// assert_eq!(pull.recv_bytes(0).unwrap(), vec![7u8; 64]);
    /// ```
    pub fn send_from(&self, msg: &mut Message, flags: i32) -> Result<()> {
        let ty = self.shared.socket_type;
        if ty.is_draft() || ty == fabriq_zmtp::SocketType::Dgram {
            // These take the message apart before they can fail: they
            // send a copy (a reference count, or a small inline copy).
            self.send(msg.clone(), flags)?;
            msg.take_part();
            return Ok(());
        }
        let part = msg.take_part();
        self.send_part(part, flags).map_err(|(e, part)| {
            msg.put_part(part);
            e
        })
    }

    #[inline]
    pub(crate) fn send_frame(&self, frame: Part, flags: i32) -> Result<()> {
        self.send_part(frame, flags).map_err(|(e, _)| e)
    }

    /// [`Socket::send_frame`], giving the frame back on failure. Once the
    /// pattern has accepted the frame (`start_send`), the classic
    /// patterns' `send` does not fail; if one did, the frame given back
    /// would be empty.
    fn send_part(&self, frame: Part, flags: i32) -> std::result::Result<(), (Error, Part)> {
        let mut core = self.core();
        let core = &mut *core;
        if !core.sending {
            let timeout = core.opts.sndtimeo;
            let started = self.wait_for(core, flags & DONTWAIT != 0, timeout, false, |core| {
                let Core { pattern, opts, .. } = core;
                pattern.start_send(&frame, opts)
            });
            if let Err(e) = started {
                return Err((e, frame));
            }
            core.sending = true;
        }
        core.outbox.push(frame);
        // A STREAM's message is [id, data]: the data frame ends it even
        // with SNDMORE, as libzmq's stream_t ignores that flag there.
        let stream_done =
            core.outbox.len() == 2 && self.shared.socket_type == fabriq_zmtp::SocketType::Stream;
        if flags & SNDMORE == 0 || stream_done {
            core.sending = false;
            let msg = std::mem::take(&mut core.outbox);
            let Core { pattern, opts, .. } = core;
            pattern.send(msg, opts).map_err(|e| (e, Part::new()))?;
        }
        Ok(())
    }
}
