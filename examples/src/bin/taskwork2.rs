//! Task worker with a kill signal (zguide ch. 2, taskwork2).
//!
//! As taskwork, plus a SUB socket on the sink's controller (5559): polls
//! both sockets and exits when the sink publishes "KILL".
//!
//!     taskwork2 [--ventilator tcp://localhost:5557] [--sink tcp://localhost:5558]
//!               [--controller tcp://localhost:5559]

use std::io::Write;
use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let receiver = context.socket(zmq::PULL)?;
    receiver.connect(args.get_or("ventilator", "tcp://localhost:5557"))?;
    let sender = context.socket(zmq::PUSH)?;
    sender.connect(args.get_or("sink", "tcp://localhost:5558"))?;
    // Socket for control input
    let controller = context.socket(zmq::SUB)?;
    controller.connect(args.get_or("controller", "tcp://localhost:5559"))?;
    controller.set_subscribe(b"")?;

    // Process messages from either socket
    let mut done = 0;
    loop {
        let mut items = [
            receiver.as_poll_item(zmq::POLLIN),
            controller.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, -1)?;
        if items[0].is_readable() {
            let task = receiver.recv_msg(0)?;
            let workload: u64 = task.as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
            thread::sleep(Duration::from_millis(workload)); // Do the work
            sender.send("", 0)?; // Send results to sink
            print!(".");
            let _ = std::io::stdout().flush();
            done += 1;
        }
        // Any waiting controller command acts as 'KILL'
        if items[1].is_readable() {
            break;
        }
    }
    println!();
    println!("Killed after {done} tasks");
    Ok(())
}
