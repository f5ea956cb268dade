//! Pathological publisher (zguide ch. 5, pathopub).
//!
//! Sends one update "Save Roger" on each of `--topics` topics ("000",
//! "001", ...), then an update "Off with his head!" on a random topic every
//! `--interval-ms`. Binds, or with `--connect` connects (to a last value
//! cache's frontend, say).
//!
//!     pathopub [--bind tcp://*:5556 | --connect EP] [--topics 1000]
//!              [--interval-ms 1000] [--count N]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, rounds, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let topics: u64 = args.number("topics").unwrap_or(1000);
    let interval = Duration::from_millis(args.number("interval-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let publisher = context.socket(zmq::PUB)?;
    if let Some(endpoint) = args.get("connect") {
        publisher.connect(endpoint)?;
    } else {
        publisher.bind(args.get_or("bind", "tcp://*:5556"))?;
        announce("", &publisher);
    }

    // Ensure subscriber connection has time to complete (the zguide
    // sleeps a second here; updates sent before then are simply lost,
    // which a last value cache makes up for)
    for topic_nbr in 0..topics {
        publisher.send(format!("{topic_nbr:03}"), zmq::SNDMORE)?;
        publisher.send("Save Roger", 0)?;
    }
    // Send one random update per interval
    let mut rng = Rng::new();
    for _ in rounds(args.count()) {
        thread::sleep(interval);
        publisher.send(format!("{:03}", rng.below(topics)), zmq::SNDMORE)?;
        publisher.send("Off with his head!", 0)?;
    }
    Ok(())
}
