//! Request-reply client (zguide ch. 2, rrclient).
//!
//! Connects REQ to the broker's frontend (5559), sends "Hello", expects
//! "World", through the broker and whichever worker serves it.
//!
//!     rrclient [--connect tcp://localhost:5559] [--count 10]

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(10);

    let context = zmq::Context::new();
    let requester = context.socket(zmq::REQ)?;
    requester.connect(args.get_or("connect", "tcp://localhost:5559"))?;

    for request_nbr in 0..count {
        requester.send("Hello", 0)?;
        let reply = requester.recv_msg(0)?;
        println!(
            "Received reply {request_nbr} [{}]",
            reply.as_str().unwrap_or("<binary>")
        );
    }
    Ok(())
}
