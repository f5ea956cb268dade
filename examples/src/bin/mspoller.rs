//! Reading from multiple sockets with poll (zguide ch. 2, mspoller).
//!
//! Connects a PULL socket to the ventilator (5557) and a SUB socket to the
//! weather server (5556, zip code 10001), and serves whichever has a
//! message, without favouring either.
//!
//!     mspoller [--ventilator tcp://localhost:5557] [--weather tcp://localhost:5556]
//!              [--tasks N] [--updates N]

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let tasks: Option<u64> = args.number("tasks");
    let updates: Option<u64> = args.number("updates");

    let context = zmq::Context::new();
    // Connect to task ventilator
    let receiver = context.socket(zmq::PULL)?;
    receiver.connect(args.get_or("ventilator", "tcp://localhost:5557"))?;
    // Connect to weather server
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect(args.get_or("weather", "tcp://localhost:5556"))?;
    subscriber.set_subscribe(b"10001 ")?;

    let (mut task_nbr, mut update_nbr) = (0, 0);
    let done = |n: u64, limit: Option<u64>| limit.is_some_and(|l| n >= l);
    // Process messages from both sockets
    while !(done(task_nbr, tasks) && done(update_nbr, updates)) {
        let mut items = [
            receiver.as_poll_item(zmq::POLLIN),
            subscriber.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, -1)?;
        if items[0].is_readable() {
            let task = receiver.recv_msg(0)?;
            println!("task: {}", task.as_str().unwrap_or("<binary>"));
            task_nbr += 1;
        }
        if items[1].is_readable() {
            let update = subscriber.recv_msg(0)?;
            println!("weather: {}", update.as_str().unwrap_or("<binary>"));
            update_nbr += 1;
        }
    }
    Ok(())
}
