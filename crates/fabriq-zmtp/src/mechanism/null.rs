//! The NULL mechanism (RFC 37): each side sends READY with its metadata;
//! an ERROR instead of READY refuses the connection.
//!
//! With authentication on (libzmq: a ZAP domain is set and a handler
//! runs), the side asks the owner before it sends its READY, with no
//! credentials, as libzmq's `null_mechanism_t` does.

use super::{peer_error, Mechanism};
use crate::auth::AuthRequest;
use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::greeting::MechanismName;
use crate::properties::Properties;

/// NULL security: no authentication, no encryption; frames travel as they
/// are.
#[derive(Debug, Clone)]
pub struct NullMechanism {
    ours: Properties,
    sent_ready: bool,
    authenticate: bool,
    auth_request: Option<AuthRequest>,
}

impl NullMechanism {
    /// A NULL handshake that will announce `ours` in its READY.
    pub fn new(ours: Properties) -> Self {
        NullMechanism {
            ours,
            sent_ready: false,
            authenticate: false,
            auth_request: None,
        }
    }

    /// A NULL handshake that asks for an authentication decision (no
    /// credentials) before sending its READY.
    pub fn with_auth(ours: Properties) -> Self {
        NullMechanism {
            authenticate: true,
            ..NullMechanism::new(ours)
        }
    }
}

impl Mechanism for NullMechanism {
    fn start(&mut self, out: &mut Vec<Command>) -> Result<(), ProtocolError> {
        if self.authenticate {
            self.auth_request = Some(AuthRequest {
                mechanism: MechanismName::Null,
                credentials: Vec::new(),
            });
        } else if !self.sent_ready {
            self.sent_ready = true;
            out.push(Command::Ready(self.ours.clone()));
        }
        Ok(())
    }

    fn on_command(
        &mut self,
        cmd: Command,
        _out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match cmd {
            Command::Ready(props) => Ok(Some(props)),
            Command::Error(reason) => Err(peer_error(reason)),
            other => Err(ProtocolError::UnexpectedCommand(other.display_name())),
        }
    }

    fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.auth_request.take()
    }

    fn auth_allowed(
        &mut self,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        if !self.sent_ready {
            self.sent_ready = true;
            out.push(Command::Ready(self.ours.clone()));
        }
        Ok(None)
    }

    fn transforms_frames(&self) -> bool {
        false
    }

    #[inline]
    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }

    #[inline]
    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }
}
