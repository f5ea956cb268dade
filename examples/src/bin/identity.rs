//! Identity check (zguide ch. 3, identity).
//!
//! Shows the envelopes a ROUTER sees: from a REQ peer with a generated
//! identity, then from one that set its own identity ("PEER2").
//!
//!     identity

use fabriq as zmq;
use fabriq_examples::dump;

fn main() -> Result<(), zmq::Error> {
    let context = zmq::Context::new();
    let sink = context.socket(zmq::ROUTER)?;
    sink.bind("inproc://example")?;

    // First allow 0MQ to set the identity
    let anonymous = context.socket(zmq::REQ)?;
    anonymous.connect("inproc://example")?;
    anonymous.send("ROUTER uses a generated 5 byte identity", 0)?;
    dump(&sink)?;

    // Then set the identity ourselves
    let identified = context.socket(zmq::REQ)?;
    identified.set_identity(b"PEER2")?;
    identified.connect("inproc://example")?;
    identified.send("ROUTER socket uses REQ's socket identity", 0)?;
    dump(&sink)?;
    Ok(())
}
