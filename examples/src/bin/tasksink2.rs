//! Task sink with a kill signal (zguide ch. 2, tasksink2).
//!
//! As tasksink, plus a PUB socket (5559) on which it tells the workers to
//! stop ("KILL") once the batch is done.
//!
//!     tasksink2 [--bind tcp://*:5558] [--controller tcp://*:5559] [--tasks 100]

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
    announce("sink", &receiver);
    // Socket for worker control
    let controller = context.socket(zmq::PUB)?;
    controller.bind(args.get_or("controller", "tcp://*:5559"))?;
    announce("controller", &controller);

    // Wait for start of batch
    receiver.recv_msg(0)?;
    let start = Instant::now();
    for task_nbr in 0..tasks {
        receiver.recv_msg(0)?;
        print!("{}", if task_nbr % 10 == 0 { ":" } else { "." });
        let _ = std::io::stdout().flush();
    }
    println!();
    println!("Total elapsed time: {} msec", start.elapsed().as_millis());

    // Send kill signal to workers
    controller.send("KILL", 0)?;
    Ok(())
}
