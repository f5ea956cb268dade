//! The security mechanisms, named as in the zmq crate.

/// Security mechanisms, named as in the zmq crate.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// No security.
    ZMQ_NULL,
    /// User name and password.
    ZMQ_PLAIN,
    /// CurveZMQ.
    ZMQ_CURVE,
    /// GSSAPI.
    ZMQ_GSSAPI,
}
