//! Pathological subscriber (zguide ch. 5, pathosub).
//!
//! Subscribes to one topic (random among `--topics`, or the one given)
//! and prints every update on it.
//!
//!     pathosub [TOPIC] [--connect tcp://localhost:5556] [--topics 1000]
//!              [--count N]

use fabriq as zmq;
use fabriq_examples::{rounds, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let topics: u64 = args.number("topics").unwrap_or(1000);
    let topic = match args.positional(0) {
        Some(topic) => topic.to_string(),
        None => format!("{:03}", Rng::new().below(topics)),
    };

    let context = zmq::Context::new();
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect(args.get_or("connect", "tcp://localhost:5556"))?;
    subscriber.set_subscribe(topic.as_bytes())?;

    for _ in rounds(args.count()) {
        let msg = subscriber.recv_multipart(0)?;
        assert_eq!(msg[0], topic.as_bytes(), "a message on another topic");
        println!("{}", String::from_utf8_lossy(&msg[1]));
    }
    Ok(())
}
