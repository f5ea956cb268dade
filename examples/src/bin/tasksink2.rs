//! Task sink with a kill signal (zguide ch. 2, tasksink2).
//!
//! As tasksink, plus a publisher socket (5559) on which it tells the
//! workers to stop ("KILL") once the batch is done.
//!
//! The zguide's PUB socket cannot tell whether every worker's subscription
//! has arrived, so a worker that joined just before the end may miss the
//! KILL. This one is an XPUB (verbose: it reports every subscription, not
//! just the first for a topic), and with `--workers N` it waits until N
//! workers have subscribed before it sends KILL.
//!
//!     tasksink2 [--bind tcp://*:5558] [--controller tcp://*:5559] [--tasks 100]
//!               [--workers N]

use std::io::Write;
use std::time::Instant;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let tasks: u64 = args.number("tasks").unwrap_or(100);
    let workers: Option<u32> = args.number("workers");

    let context = zmq::Context::new();
    let receiver = context.socket(zmq::PULL)?;
    receiver.bind(args.get_or("bind", "tcp://*:5558"))?;
    announce("sink", &receiver);
    // Socket for worker control
    let controller = context.socket(zmq::XPUB)?;
    controller.set_xpub_verbose(true)?;
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

    // Make sure every worker will hear it: a subscription is one frame,
    // 1 then the topic.
    let mut subscribed = 0;
    while workers.is_some_and(|n| subscribed < n) {
        if controller.recv_bytes(0)?.first() == Some(&1) {
            subscribed += 1;
        }
    }
    // Send kill signal to workers
    controller.send("KILL", 0)?;
    Ok(())
}
