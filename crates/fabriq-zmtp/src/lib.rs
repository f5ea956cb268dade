//! ZMTP 3.0 / 3.1, the ZeroMQ wire protocol, as a sans-IO state machine.
//!
//! Bytes go in, events and bytes come out; there are no sockets, threads
//! or clocks in this crate (time is an argument). The socket layer in the
//! `fabriq` crate drives it over TCP and IPC, and the fabric transport
//! packs the same frames into registered pages.
//!
//! * [`greeting`]: the 64-byte greeting, decoded incrementally from any
//!   chunking (libzmq sends it in stages) and version negotiation;
//! * [`frame`]: frame headers and the zero-copy, bounded frame decoder;
//! * [`command`]: READY, ERROR, SUBSCRIBE, CANCEL, PING, PONG;
//! * [`properties`]: READY metadata;
//! * [`mechanism`]: the security handshake: NULL, PLAIN and CURVE;
//! * [`auth`]: the sans-IO authentication hook (what libzmq asks ZAP);
//! * [`keys`], [`z85`]: CURVE keys and their Z85 text form;
//! * [`encoder`]: batching of small frames and by-reference large bodies;
//! * [`connection`]: all of the above as one connection's state machine;
//! * [`copies`]: where message bytes are copied, counted for the copy
//!   budget (feature `copy-count`).
//!
//! See `docs/protocol.md` for what is implemented and where it differs
//! from libzmq.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod command;
pub mod connection;
pub mod copies;
pub mod encoder;
pub mod error;
pub mod frame;
pub mod greeting;
pub mod keys;
pub mod mechanism;
pub mod part;
pub mod properties;
pub mod socket_type;
pub mod z85;

pub use auth::{AuthReply, AuthRequest};
pub use command::Command;
pub use connection::{Config, Connection, Event, Multipart, PeerInfo};
pub use encoder::Encoder;
pub use error::{ProtocolError, UsageError};
pub use greeting::{Greeting, MechanismName, Version};
pub use keys::{CurveKeyPair, CurvePublicKey, CurveSecretKey};
pub use mechanism::MechanismConfig;
pub use part::Part;
pub use properties::Properties;
pub use socket_type::SocketType;
