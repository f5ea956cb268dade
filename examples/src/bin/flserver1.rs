//! Freelance server, model one (zguide ch. 4, flserver1): a plain REP
//! echo service on the given endpoint.
//!
//!     flserver1 ENDPOINT [--count N]

use fabriq as zmq;
use fabriq_examples::{announce, rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let Some(endpoint) = args.positional(0) else {
        println!("I: syntax: flserver1 <endpoint>");
        return Ok(());
    };
    let context = zmq::Context::new();
    let server = context.socket(zmq::REP)?;
    server.bind(endpoint)?;
    announce("", &server);

    println!("I: echo service is ready at {endpoint}");
    for _ in rounds(args.count()) {
        let msg = server.recv_multipart(0)?;
        server.send_multipart(msg, 0)?;
    }
    Ok(())
}
