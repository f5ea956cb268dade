//! Sending: frames, messages and multipart messages (`Socket::send`...).

use fabriq_zmtp::Part;

use super::{Core, Sendable, Socket};
use crate::error::Result;
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
        // A STREAM's message is [id, data]: the data frame ends it even
        // with SNDMORE, as libzmq's stream_t ignores that flag there.
        let stream_done =
            core.outbox.len() == 2 && self.shared.socket_type == fabriq_zmtp::SocketType::Stream;
        if flags & SNDMORE == 0 || stream_done {
            core.sending = false;
            let msg = std::mem::take(&mut core.outbox);
            let Core { pattern, opts, .. } = core;
            pattern.send(msg, opts)?;
        }
        Ok(())
    }
}
