//! Request-reply worker (zguide ch. 2, rrworker).
//!
//! Connects REP to the broker's backend (5560), expects "Hello", replies
//! "World".
//!
//!     rrworker [--connect tcp://localhost:5560] [--count N] [--work-ms 1000]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let responder = context.socket(zmq::REP)?;
    responder.connect(args.get_or("connect", "tcp://localhost:5560"))?;

    for _ in rounds(args.count()) {
        let request = responder.recv_msg(0)?;
        println!(
            "Received request: [{}]",
            request.as_str().unwrap_or("<binary>")
        );
        thread::sleep(work); // Do some 'work'
        responder.send("World", 0)?;
    }
    Ok(())
}
