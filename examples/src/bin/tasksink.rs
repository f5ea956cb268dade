//! Task sink (zguide ch. 1, tasksink).
//!
//! Binds PULL on 5558, waits for the ventilator's start of batch, then
//! collects the batch's results from the workers and prints how long the
//! batch took.
//!
//!     tasksink [--bind tcp://*:5558] [--tasks 100]

use std::io::Write;
use std::time::Instant;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let tasks: u64 = args.number("tasks").unwrap_or(100);

    let context = zmq::Context::new();
    let receiver = context.socket(zmq::PULL)?;
    receiver.bind(args.get_or("bind", "tcp://*:5558"))?;
    announce("", &receiver);

    // Wait for start of batch
    receiver.recv_msg(0)?;
    let start = Instant::now();

    // Process the confirmations
    for task_nbr in 0..tasks {
        receiver.recv_msg(0)?;
        print!("{}", if task_nbr % 10 == 0 { ":" } else { "." });
        let _ = std::io::stdout().flush();
    }
    println!();
    println!("Total elapsed time: {} msec", start.elapsed().as_millis());
    Ok(())
}
