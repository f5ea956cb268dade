//! Hello World client (zguide ch. 1, hwclient).
//!
//! Connects a REQ socket, sends "Hello" to the server, expects "World" back.
//!
//!     hwclient [--connect tcp://localhost:5555] [--count 10]

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(10);

    let context = zmq::Context::new();
    println!("Connecting to hello world server...");
    let requester = context.socket(zmq::REQ)?;
    requester.connect(args.get_or("connect", "tcp://localhost:5555"))?;

    for request_nbr in 0..count {
        println!("Sending Hello {request_nbr}...");
        requester.send("Hello", 0)?;
        let reply = requester.recv_msg(0)?;
        println!(
            "Received {} {request_nbr}",
            reply.as_str().unwrap_or("<binary>")
        );
    }
    Ok(())
}
