//! Task worker (zguide ch. 1, taskwork).
//!
//! Connects PULL to the ventilator (5557) and PUSH to the sink (5558);
//! "does" each task by sleeping its workload in msecs, then reports to the
//! sink.
//!
//!     taskwork [--ventilator tcp://localhost:5557] [--sink tcp://localhost:5558]
//!              [--count N]

use std::io::Write;
use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    // Socket to receive messages on
    let receiver = context.socket(zmq::PULL)?;
    receiver.connect(args.get_or("ventilator", "tcp://localhost:5557"))?;
    // Socket to send messages to
    let sender = context.socket(zmq::PUSH)?;
    sender.connect(args.get_or("sink", "tcp://localhost:5558"))?;

    // Process tasks forever
    for _ in rounds(args.count()) {
        let task = receiver.recv_msg(0)?;
        let workload: u64 = task.as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
        // Simple progress indicator for the viewer
        print!("{workload}.");
        let _ = std::io::stdout().flush();
        thread::sleep(Duration::from_millis(workload)); // Do the work
        sender.send("", 0)?; // Send results to sink
    }
    println!();
    Ok(())
}
