//! Freelance server, model three (zguide ch. 4, flserver3).
//!
//! A ROUTER whose identity is the endpoint clients connect to, so a
//! client's ROUTER can address it by name. Answers "PING" with "PONG" and a
//! request `[sequence, body]` with `[sequence, "OK"]`.
//!
//!     flserver3 [--bind tcp://*:5555] [--identity tcp://localhost:5555] [-v]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let verbose = args.flag("v");

    // Prepare server socket with predictable identity
    let context = zmq::Context::new();
    let server = context.socket(zmq::ROUTER)?;
    let bind_endpoint = args.get_or("bind", "tcp://*:5555");
    let connect_endpoint = args.get_or("identity", "tcp://localhost:5555");
    server.set_identity(connect_endpoint.as_bytes())?;
    server.bind(bind_endpoint)?;
    announce("", &server);
    println!("I: service is ready at {bind_endpoint}");

    loop {
        let mut request = server.recv_multipart(0)?;
        if verbose {
            println!("I: request {request:?}");
        }
        // Frame 0: identity of client
        // Frame 1: PING, or client control frame
        // Frame 2: request body
        if request.len() < 2 {
            continue;
        }
        let identity = request.remove(0);
        let control = request.remove(0);
        let reply: Vec<&[u8]> = if control == b"PING" {
            vec![&identity, b"PONG"]
        } else {
            vec![&identity, &control, b"OK"]
        };
        server.send_multipart(reply, 0)?;
    }
}
