//! Weather update client (zguide ch. 1, wuclient).
//!
//! Connects a SUB socket to the weather server, collects `--count` updates
//! for one zip code and prints their average temperature.
//!
//!     wuclient [ZIPCODE] [--connect tcp://localhost:5556] [--count 100]

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(100);
    // Subscribe to zipcode, default is NYC, 10001
    let filter = args.positional(0).unwrap_or("10001");

    let context = zmq::Context::new();
    println!("Collecting updates from weather server...");
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect(args.get_or("connect", "tcp://localhost:5556"))?;
    subscriber.set_subscribe(format!("{filter} ").as_bytes())?;

    let mut total_temp = 0i64;
    for _ in 0..count {
        let update = subscriber.recv_msg(0)?;
        let text = update.as_str().unwrap_or_default();
        let fields: Vec<i64> = text
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        total_temp += fields.get(1).copied().unwrap_or(0);
    }
    println!(
        "Average temperature for zipcode '{filter}' was {}F",
        total_temp / count.max(1) as i64
    );
    Ok(())
}
