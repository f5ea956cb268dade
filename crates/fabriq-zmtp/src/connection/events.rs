//! Events: [`Connection::poll_event`] decoding buffered input, the
//! commands an active connection answers itself, and failing.

use std::mem;
use std::time::Duration;

use bytes::Buf;

use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::greeting::Greeting;
use crate::part::Part;
use crate::socket_type::SocketType;

use super::{Auth, Connection, Event, Multipart, State};

impl Connection {
    /// The next event decoded from buffered input, `Ok(None)` if more input
    /// is needed. After an error the connection is dead and every call
    /// returns that error; queued output may hold an ERROR for the peer.
    pub fn poll_event(&mut self) -> Result<Option<Event>, ProtocolError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        self.step().inspect_err(|e| self.fail(e.clone()))
    }

    fn step(&mut self) -> Result<Option<Event>, ProtocolError> {
        loop {
            match self.state {
                State::Greeting => match self.next_greeting()? {
                    Some(g) => self.on_greeting(g)?,
                    None => return Ok(None),
                },
                State::Handshake => {
                    match mem::replace(&mut self.auth, Auth::Idle) {
                        Auth::Idle => {}
                        Auth::Waiting => {
                            // Paused until the owner answers; input waits.
                            self.auth = Auth::Waiting;
                            return Ok(None);
                        }
                        Auth::Replied(reply) => {
                            if reply.status_code != 200 {
                                return Err(ProtocolError::AuthFailed {
                                    status: reply.status_code,
                                    reason: reply.status_text,
                                });
                            }
                            self.accepted = Some(reply);
                            let done = self.mechanism.auth_allowed(&mut self.replies)?;
                            self.flush_replies();
                            if let Some(props) = done {
                                self.on_peer_ready(props)?;
                                return Ok(Some(Event::HandshakeComplete));
                            }
                            continue;
                        }
                    }
                    if let Some(request) = self.mechanism.take_auth_request() {
                        self.auth = Auth::Waiting;
                        return Ok(Some(Event::AuthRequest(request)));
                    }
                    let Some(frame) = self.next_frame()? else {
                        return Ok(None);
                    };
                    if !frame.command {
                        return Err(ProtocolError::DataBeforeHandshake);
                    }
                    if frame.more {
                        return Err(ProtocolError::MultipartCommand);
                    }
                    let cmd = if self.mechanism.raw_commands() {
                        Command::decode_raw(&frame.data)?
                    } else {
                        Command::decode(&frame.data)?
                    };
                    let done = self.mechanism.on_command(cmd, &mut self.replies)?;
                    self.flush_replies();
                    if let Some(props) = done {
                        self.on_peer_ready(props)?;
                        return Ok(Some(Event::HandshakeComplete));
                    }
                }
                State::Active => {
                    // Small data frames are copied out of the read buffer
                    // into their part (see `part.rs`); the rest are cut
                    // out of it.
                    let small = if !self.sealing && self.owned.is_empty() {
                        self.decoder.decode_small(&mut self.rx)
                    } else {
                        None
                    };
                    let (part, more) = match small {
                        Some(small) => small,
                        None => {
                            let Some(frame) = self.next_frame()? else {
                                return Ok(None);
                            };
                            let frame = self.open(frame)?;
                            if frame.command {
                                if frame.more {
                                    return Err(ProtocolError::MultipartCommand);
                                }
                                match self.on_command(Command::decode(&frame.data)?)? {
                                    Some(event) => return Ok(Some(event)),
                                    None => continue,
                                }
                            }
                            (Part::from(frame.data), frame.more)
                        }
                    };
                    self.partial.push(part);
                    if !more {
                        let msg = mem::take(&mut self.partial);
                        return Ok(Some(self.classify(msg)));
                    }
                }
                State::Failed(ref e) => return Err(e.clone()),
            }
        }
    }

    /// Feeds buffered input to the greeting decoder until the greeting is
    /// complete or the input runs out.
    fn next_greeting(&mut self) -> Result<Option<Greeting>, ProtocolError> {
        loop {
            let greeting = if !self.rx.is_empty() {
                let (used, greeting) = self.greeting.feed(&self.rx)?;
                self.rx.advance(used);
                greeting
            } else if let Some(front) = self.owned.front_mut() {
                let (used, greeting) = self.greeting.feed(front)?;
                front.advance(used);
                if front.is_empty() {
                    self.owned.pop_front();
                }
                greeting
            } else {
                return Ok(None);
            };
            if greeting.is_some() {
                return Ok(greeting);
            }
        }
    }

    /// The next complete frame of buffered input.
    #[inline]
    fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if self.owned.is_empty() {
            // Only the read buffer holds input: the stream path.
            return self.decoder.decode(&mut self.rx);
        }
        self.next_frame_from_owned()
    }

    /// The next frame when caller buffers are queued: sliced out of the
    /// first one when it holds the whole frame, else assembled in `rx`.
    fn next_frame_from_owned(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if self.rx.is_empty() {
            if let Some(front) = self.owned.front_mut() {
                if let Some(frame) = self.decoder.decode_bytes(front)? {
                    if front.is_empty() {
                        self.owned.pop_front();
                    }
                    return Ok(Some(frame));
                }
            }
            if self.owned.len() < 2 {
                // The frame goes on in a buffer yet to come; copy nothing
                // until then.
                return Ok(None);
            }
        }
        // The frame at the front continues into the next buffer (or began
        // in `rx`): copy exactly its bytes into `rx`, then cut it there.
        self.decoder.assemble(&mut self.rx, &mut self.owned)?;
        self.decoder.decode(&mut self.rx)
    }

    fn on_command(&mut self, cmd: Command) -> Result<Option<Event>, ProtocolError> {
        let ty = self.config.socket_type;
        let publisher = ty.is_publisher() && !ty.uses_groups();
        let radio = ty == SocketType::Radio;
        Ok(match cmd {
            Command::Ping { ttl, context } => {
                self.queue_command(&Command::Pong { context })?;
                self.peer_ttl = (ttl > 0).then(|| Duration::from_millis(u64::from(ttl) * 100));
                None
            }
            Command::Pong { .. } => None,
            Command::Subscribe(topic) if publisher => Some(Event::Subscribe(topic)),
            Command::Cancel(topic) if publisher => Some(Event::Cancel(topic)),
            Command::Subscribe(_) | Command::Cancel(_) => None,
            // A RADIO's peers join and leave groups; the pipe carries them
            // as subscriptions to the exact group.
            Command::Join(group) if radio => Some(Event::Subscribe(group)),
            Command::Leave(group) if radio => Some(Event::Cancel(group)),
            Command::Join(_) | Command::Leave(_) => None,
            Command::Error(reason) => return Err(ProtocolError::PeerError(reason)),
            Command::Ready(_) => return Err(ProtocolError::UnexpectedCommand("READY".into())),
            // Not ours: the caller decides (libzmq ignores them).
            Command::Other { name, body } => Some(Event::Command { name, body }),
        })
    }

    /// A publisher reads single-frame messages starting with 0x01/0x00 as
    /// ZMTP 3.0 subscriptions.
    #[inline]
    fn classify(&self, mut msg: Multipart) -> Event {
        let ty = self.config.socket_type;
        if ty.is_publisher() && !ty.uses_groups() && msg.len() == 1 {
            match msg[0].first() {
                Some(1) => return Event::Subscribe(msg.remove(0).into_bytes().slice(1..)),
                Some(0) => return Event::Cancel(msg.remove(0).into_bytes().slice(1..)),
                _ => {}
            }
        }
        Event::Message(msg)
    }

    /// Undoes the mechanism's transform on a frame received after the
    /// handshake: the one place where [`Mechanism::open`](crate::mechanism::Mechanism::open) is called.
    #[inline]
    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        if self.sealing {
            self.mechanism.open(frame)
        } else {
            Ok(frame)
        }
    }

    pub(super) fn flush_replies(&mut self) {
        for cmd in self.replies.drain(..) {
            self.tx.push_command(&cmd);
        }
    }

    pub(super) fn fail(&mut self, error: ProtocolError) {
        // Tell the peer why its handshake was refused, as RFC 37 allows.
        if self.state == State::Handshake {
            let reason = match &error {
                // The peer said why already.
                ProtocolError::PeerError(_) | ProtocolError::PeerRefusedAuth { .. } => None,
                // A temporary failure closes silently (RFC 27, libzmq).
                ProtocolError::AuthFailed { status: 300, .. } => None,
                // libzmq sends the bare status code, which libzmq clients
                // turn into HANDSHAKE_FAILED_AUTH.
                ProtocolError::AuthFailed { status, .. } => Some(status.to_string()),
                other => Some(other.to_string()),
            };
            if let Some(reason) = reason {
                self.tx.push_command(&Command::Error(reason));
            }
        }
        self.state = State::Failed(error);
    }
}
