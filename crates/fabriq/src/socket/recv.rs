//! Receiving: frames, messages and multipart messages (`Socket::recv`...).

use std::sync::Arc;

use bytes::Bytes;
use fabriq_zmtp::copies::{self, Site};
use fabriq_zmtp::Part;

use super::{Core, Socket};
use crate::error::Result;
use crate::flags::DONTWAIT;
use crate::message::{Message, Metadata};

impl Socket {
    fn recv_frame(&self, flags: i32) -> Result<(Part, bool, Option<Arc<Metadata>>)> {
        let mut core = self.core();
        let core = &mut *core;
        if core.inbox.is_empty() {
            let timeout = core.opts.rcvtimeo;
            let received =
                self.wait_for(
                    core,
                    flags & DONTWAIT != 0,
                    timeout,
                    true,
                    |core| match core.prefetched.take() {
                        Some(r) => Ok(r),
                        None => {
                            let Core { pattern, opts, .. } = core;
                            pattern.recv(opts)
                        }
                    },
                )?;
            let mut frames = received.msg;
            if self.shared.socket_type.is_draft() {
                core.draft_prefix =
                    crate::pattern::take_prefix(self.shared.socket_type, &mut frames);
            }
            if frames.len() == 1 {
                // The common single-frame message skips the inbox.
                core.rcvmore = false;
                let frame = frames.pop().unwrap_or_default();
                return Ok((frame, false, received.meta));
            }
            core.inbox.extend(frames);
            core.inbox_meta = received.meta;
        }
        let frame = core.inbox.pop_front().unwrap_or_default();
        core.rcvmore = !core.inbox.is_empty();
        Ok((frame, core.rcvmore, core.inbox_meta.clone()))
    }

    /// Receives one frame into `msg`.
    pub fn recv(&self, msg: &mut Message, flags: i32) -> Result<()> {
        let (data, more, meta) = self.recv_frame(flags)?;
        *msg = Message::from_parts(data, more, meta);
        if self.shared.socket_type.is_draft() {
            if let Some(prefix) = self.core().draft_prefix.take() {
                crate::pattern::apply_prefix(self.shared.socket_type, msg, prefix);
            }
        }
        Ok(())
    }

    /// Receives one frame into `bytes`; returns the frame's full size
    /// (larger than `bytes.len()` if it was truncated).
    pub fn recv_into(&self, bytes: &mut [u8], flags: i32) -> Result<usize> {
        let (data, _, _) = self.recv_frame(flags)?;
        let n = data.len().min(bytes.len());
        bytes[..n].copy_from_slice(&data[..n]);
        copies::count(Site::Api, n);
        Ok(data.len())
    }

    /// Receives one frame as a new [`Message`].
    pub fn recv_msg(&self, flags: i32) -> Result<Message> {
        let mut msg = Message::new();
        self.recv(&mut msg, flags)?;
        Ok(msg)
    }

    /// Receives one frame as bytes.
    pub fn recv_bytes(&self, flags: i32) -> Result<Vec<u8>> {
        let data = self.recv_frame(flags)?.0;
        copies::count(Site::Api, data.len());
        Ok(data.to_vec())
    }

    /// Receives one frame as `Bytes`, without copying (a frame of at most
    /// 23 bytes, which travels inline, is copied: see [`Message::into_bytes`]).
    pub fn recv_zc(&self, flags: i32) -> Result<Bytes> {
        Ok(Message::from_parts(self.recv_frame(flags)?.0, false, None).into_bytes())
    }

    /// Receives one frame as a string; `Err(bytes)` inside if it is not
    /// UTF-8.
    pub fn recv_string(&self, flags: i32) -> Result<std::result::Result<String, Vec<u8>>> {
        let bytes = self.recv_bytes(flags)?;
        Ok(String::from_utf8(bytes).map_err(|e| e.into_bytes()))
    }

    /// Receives all frames of a message.
    pub fn recv_multipart(&self, flags: i32) -> Result<Vec<Vec<u8>>> {
        let mut parts = vec![self.recv_bytes(flags)?];
        while self.get_rcvmore()? {
            parts.push(self.recv_bytes(0)?);
        }
        Ok(parts)
    }

    /// Whether the last frame received has more frames after it.
    pub fn get_rcvmore(&self) -> Result<bool> {
        Ok(self.core().rcvmore)
    }
}
