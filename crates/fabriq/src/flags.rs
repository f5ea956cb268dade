//! The send and receive flags, named as in the zmq crate.

/// Send flag: do not block; fail with `EAGAIN` instead.
pub const DONTWAIT: i32 = 1;
/// Send flag: more frames of this message follow.
pub const SNDMORE: i32 = 2;
