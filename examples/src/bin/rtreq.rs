//! ROUTER-to-REQ load balancing (zguide ch. 3, rtreq).
//!
//! A ROUTER hands tasks to a pool of REQ workers in the order they ask for
//! work: whoever asks first gets the next task, so faster workers do more.
//! After `--tasks` tasks (the zguide runs for five seconds) it answers each
//! worker "Fired!", and each reports how many tasks it completed.
//!
//!     rtreq [--bind tcp://*:5671] [--workers 10] [--tasks 100] [--max-ms 500]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, random_identity, Args, Rng};

fn worker_task(endpoint: String, max_ms: u64) -> Result<(), zmq::Error> {
    let context = zmq::Context::new();
    let worker = context.socket(zmq::REQ)?;
    let mut rng = Rng::new();
    worker.set_identity(random_identity(&mut rng).as_bytes())?;
    worker.connect(&endpoint)?;

    let mut total = 0;
    loop {
        // Tell the broker we're ready for work
        worker.send("Hi Boss", 0)?;
        // Get workload from broker, until finished
        let workload = worker.recv_string(0)?.unwrap_or_default();
        if workload == "Fired!" {
            println!("Completed: {total} tasks");
            return Ok(());
        }
        total += 1;
        // Do some random work
        thread::sleep(Duration::from_millis(rng.below(max_ms) + 1));
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let workers: usize = args.number("workers").unwrap_or(10);
    let tasks: u64 = args.number("tasks").unwrap_or(100);
    let max_ms: u64 = args.number("max-ms").unwrap_or(500);

    let context = zmq::Context::new();
    let broker = context.socket(zmq::ROUTER)?;
    broker.bind(args.get_or("bind", "tcp://*:5671"))?;
    announce("", &broker);
    let endpoint = broker
        .get_last_endpoint()?
        .unwrap_or_default()
        .replace("0.0.0.0", "127.0.0.1");

    let pool: Vec<_> = (0..workers)
        .map(|_| {
            let endpoint = endpoint.clone();
            thread::spawn(move || worker_task(endpoint, max_ms))
        })
        .collect();

    // Hand out the tasks, then fire each worker when it next asks
    let mut workers_fired = 0;
    let mut sent = 0;
    while workers_fired < workers {
        // Next message gives us least recently used worker
        let identity = broker.recv_bytes(0)?;
        broker.recv_msg(0)?; // Envelope delimiter
        broker.recv_msg(0)?; // Response from worker
        broker.send(identity, zmq::SNDMORE)?;
        broker.send("", zmq::SNDMORE)?;
        if sent < tasks {
            broker.send("Work harder", 0)?;
            sent += 1;
        } else {
            broker.send("Fired!", 0)?;
            workers_fired += 1;
        }
    }
    for worker in pool {
        worker.join().expect("a worker panicked")?;
    }
    Ok(())
}
