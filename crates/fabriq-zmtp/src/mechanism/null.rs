//! The NULL mechanism (RFC 37): each side sends READY with its metadata;
//! an ERROR instead of READY refuses the connection.

use super::Mechanism;
use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::properties::Properties;

/// NULL security: no authentication, no encryption; frames travel as they
/// are.
#[derive(Debug, Clone)]
pub struct NullMechanism {
    ours: Properties,
    sent_ready: bool,
}

impl NullMechanism {
    /// A NULL handshake that will announce `ours` in its READY.
    pub fn new(ours: Properties) -> Self {
        NullMechanism {
            ours,
            sent_ready: false,
        }
    }
}

impl Mechanism for NullMechanism {
    fn start(&mut self, out: &mut Vec<Command>) {
        if !self.sent_ready {
            self.sent_ready = true;
            out.push(Command::Ready(self.ours.clone()));
        }
    }

    fn on_command(
        &mut self,
        cmd: Command,
        _out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match cmd {
            Command::Ready(props) => Ok(Some(props)),
            Command::Error(reason) => Err(ProtocolError::PeerError(reason)),
            other => Err(ProtocolError::UnexpectedCommand(other.display_name())),
        }
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
