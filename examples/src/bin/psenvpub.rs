//! Pub-sub envelope publisher (zguide ch. 2, psenvpub).
//!
//! Publishes two-frame messages: the first frame is the key ("A" or "B"),
//! which the subscribers filter on, the second the content.
//!
//!     psenvpub [--bind tcp://*:5563] [--count N] [--interval-ms 1000]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let interval = Duration::from_millis(args.number("interval-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let publisher = context.socket(zmq::PUB)?;
    publisher.bind(args.get_or("bind", "tcp://*:5563"))?;
    announce("", &publisher);

    for _ in rounds(args.count()) {
        // Write two messages, each with an envelope and content
        publisher.send_multipart(["A", "We don't want to see this"], 0)?;
        publisher.send_multipart(["B", "We would like to see this"], 0)?;
        thread::sleep(interval);
    }
    Ok(())
}
