//! Hello World server (zguide ch. 1, hwserver).
//!
//! Binds a REP socket, expects "Hello" from clients, replies with "World".
//!
//!     hwserver [--bind tcp://*:5555] [--count N] [--work-ms 1000]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let responder = context.socket(zmq::REP)?;
    responder.bind(args.get_or("bind", "tcp://*:5555"))?;
    announce("", &responder);

    for _ in rounds(args.count()) {
        let request = responder.recv_msg(0)?;
        println!("Received {}", request.as_str().unwrap_or("<binary>"));
        thread::sleep(work); // Do some 'work'
        responder.send("World", 0)?;
    }
    Ok(())
}
