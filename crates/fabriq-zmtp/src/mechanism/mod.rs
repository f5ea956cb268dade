//! Security mechanisms: the handshake that runs after the greetings and
//! ends with both sides knowing each other's metadata.
//!
//! Each mechanism is one file implementing [`Mechanism`]. NULL is here;
//! PLAIN (RFC 24) and CURVE (RFC 26) arrive as `plain.rs` and `curve.rs`
//! behind the same trait. CURVE also encrypts every frame after the
//! handshake; it will get that through the [`Mechanism::seal`] /
//! [`Mechanism::open`] hooks, which NULL and PLAIN leave as pass-through, so
//! the connection's frame path does not change shape when it lands.

mod null;

use std::fmt;

use bytes::Bytes;

pub use null::NullMechanism;

use crate::command::Command;
use crate::error::ProtocolError;
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

    /// Transforms an outgoing frame body after the handshake. NULL and
    /// PLAIN send frames as they are.
    fn seal(&mut self, frame: Bytes) -> Bytes {
        frame
    }

    /// Transforms an incoming frame body after the handshake. NULL and
    /// PLAIN receive frames as they are.
    fn open(&mut self, frame: Bytes) -> Result<Bytes, ProtocolError> {
        Ok(frame)
    }
}
