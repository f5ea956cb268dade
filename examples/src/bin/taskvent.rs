//! Task ventilator (zguide ch. 1, taskvent).
//!
//! Binds PUSH socket on 5557, sends a batch of tasks to the workers
//! connected to it; tells the sink (on 5558) that the batch starts. Waits
//! for Enter first, so the workers can connect and share the batch.
//!
//!     taskvent [--bind tcp://*:5557] [--sink tcp://localhost:5558]
//!              [--tasks 100] [--max-ms 100]

use std::io::BufRead;

use fabriq as zmq;
use fabriq_examples::{announce, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let tasks: u64 = args.number("tasks").unwrap_or(100);
    let max_ms: i64 = args.number("max-ms").unwrap_or(100);

    let context = zmq::Context::new();
    // Socket to send messages on
    let sender = context.socket(zmq::PUSH)?;
    sender.bind(args.get_or("bind", "tcp://*:5557"))?;
    announce("", &sender);
    // Socket to send start of batch message on
    let sink = context.socket(zmq::PUSH)?;
    sink.connect(args.get_or("sink", "tcp://localhost:5558"))?;

    println!("Press Enter when the workers are ready: ");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    println!("Sending tasks to workers...");

    // The first message is "0" and signals start of batch
    sink.send("0", 0)?;

    // Send the tasks
    let mut rng = Rng::new();
    let mut total_msec = 0;
    for _ in 0..tasks {
        // Random workload from 1 to max-ms msecs
        let workload = rng.range(1, max_ms + 1);
        total_msec += workload;
        sender.send(workload.to_string(), 0)?;
    }
    println!("Total expected cost: {total_msec} msec");
    // Dropping the sockets waits (linger) until the tasks are delivered.
    Ok(())
}
