//! Security mechanisms: the handshake that runs after the greetings and
//! ends with both sides knowing each other's metadata.
//!
//! Each mechanism is one file implementing [`Mechanism`]. NULL is here;
//! PLAIN (RFC 24) and CURVE (RFC 26) arrive as `plain.rs` and `curve.rs`
//! behind the same trait.
//!
//! After the handshake a mechanism may also transform every frame:
//! CurveZMQ sends each frame as a MESSAGE command (`\x07MESSAGE`, an 8-byte
//! nonce, then a box holding a flags byte and the body). A mechanism that
//! does so answers `true` from [`Mechanism::transforms_frames`]; the
//! [`Connection`](crate::Connection) then passes every outgoing frame
//! through [`Mechanism::seal`] and every incoming frame through
//! [`Mechanism::open`], each from exactly one place in its frame path. NULL
//! and PLAIN answer `false`, and the connection never calls the hooks: the
//! NULL frame path is the same code as without them.

mod null;

use std::fmt;

pub use null::NullMechanism;

use crate::command::Command;
use crate::error::ProtocolError;
use crate::frame::Frame;
use crate::properties::Properties;

/// One side of a mechanism handshake.
pub trait Mechanism: fmt::Debug + Send {
    /// Commands to send as soon as the greetings have been exchanged.
    fn start(&mut self, out: &mut Vec<Command>);

    /// Handles one command from the peer during the handshake. Returns the
    /// peer's metadata once the handshake is complete, `None` while it
    /// goes on. Replies are pushed to `out`.
    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError>;

    /// Whether [`Mechanism::seal`] and [`Mechanism::open`] must see every
    /// frame after the handshake. The connection asks once, when the
    /// handshake completes, and keeps the answer; with `false` (the
    /// default, NULL, PLAIN) it never calls the two hooks. A mechanism that
    /// overrides them must return `true` here.
    fn transforms_frames(&self) -> bool {
        false
    }

    /// Turns one outgoing frame, as the connection would send it, into the
    /// frame that goes on the wire. Called after the handshake for every
    /// data frame of a message and every command (SUBSCRIBE, CANCEL, PING,
    /// PONG), in order, when [`Mechanism::transforms_frames`] is `true`.
    ///
    /// `frame.command` and `frame.more` say what the frame is; the result
    /// may be of the other kind (CURVE sends a data frame, MORE flag
    /// included, as a single MESSAGE command frame). An error fails the
    /// connection.
    fn seal(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }

    /// The inverse of [`Mechanism::seal`]: turns one frame decoded from
    /// the wire after the handshake into the frame the peer sealed, which
    /// the connection then handles as a command or message data. Called,
    /// in order, for every frame received after the handshake when
    /// [`Mechanism::transforms_frames`] is `true`. An error (a frame that
    /// does not open) fails the connection.
    fn open(&mut self, frame: Frame) -> Result<Frame, ProtocolError> {
        Ok(frame)
    }
}
