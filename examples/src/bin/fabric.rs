//! Divide and conquer over a fabric (fabriq extra; the zguide's
//! taskvent/taskwork/tasksink in one process, over libfabric).
//!
//! The same sockets and calls as over tcp://, with `ofi+PROVIDER://`
//! endpoints: the address is the TCP control connection's, the messages
//! go through the provider's RDM endpoint in registered pages
//! (docs/fabric.md). The ventilator sends `--tasks` tasks of `--size`
//! bytes; each worker thread sums a task's bytes and pushes the sum to the
//! sink, which checks the total. Run it with the providers the machine
//! has (`fabriq info` lists them): tcp and shm work everywhere, verbs on
//! InfiniBand/RoCE, and so on.
//!
//!     fabric [--provider tcp] [--workers 4] [--tasks 1000] [--size 65536]

use std::thread;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn task_body(task: u64, size: usize) -> Vec<u8> {
    (0..size).map(|i| (task as usize * 31 + i) as u8).collect()
}

fn checksum(body: &[u8]) -> u64 {
    body.iter().map(|&b| u64::from(b)).sum()
}

fn worker(context: zmq::Context, tasks: String, results: String) -> Result<(), zmq::Error> {
    let receiver = context.socket(zmq::PULL)?;
    receiver.connect(&tasks)?;
    let sender = context.socket(zmq::PUSH)?;
    sender.connect(&results)?;
    loop {
        // Zero-copy receive: the bytes stay in the fabric's registered page
        let task = receiver.recv_zc(0)?;
        if task.is_empty() {
            return Ok(()); // end of batch
        }
        sender.send(checksum(&task).to_string(), 0)?;
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let provider = args.get_or("provider", "tcp");
    let workers: usize = args.number("workers").unwrap_or(4);
    let tasks: u64 = args.number("tasks").unwrap_or(1000);
    let size: usize = args.number("size").unwrap_or(65536).max(1);

    let context = zmq::Context::new();
    let ventilator = context.socket(zmq::PUSH)?;
    ventilator.bind(&format!("ofi+{provider}://127.0.0.1:*"))?;
    announce("ventilator", &ventilator);
    let sink = context.socket(zmq::PULL)?;
    sink.bind(&format!("ofi+{provider}://127.0.0.1:*"))?;
    announce("sink", &sink);

    let tasks_endpoint = ventilator.get_last_endpoint()?.unwrap_or_default();
    let results_endpoint = sink.get_last_endpoint()?.unwrap_or_default();
    let pool: Vec<_> = (0..workers)
        .map(|_| {
            let (ctx, t, r) = (
                context.clone(),
                tasks_endpoint.clone(),
                results_endpoint.clone(),
            );
            thread::spawn(move || worker(ctx, t, r))
        })
        .collect();

    let start = std::time::Instant::now();
    let mut expected = 0;
    for task in 0..tasks {
        let body = task_body(task, size);
        expected += checksum(&body);
        ventilator.send(body, 0)?;
    }
    let mut total = 0;
    for _ in 0..tasks {
        let result = sink.recv_string(0)?.unwrap_or_default();
        total += result.parse::<u64>().unwrap_or(0);
    }
    let elapsed = start.elapsed();
    // An empty task tells each worker to stop (PUSH deals one to each).
    for _ in 0..workers {
        ventilator.send("", 0)?;
    }
    for w in pool {
        w.join().expect("a worker panicked")?;
    }

    let mib = (tasks as f64 * size as f64) / (1024.0 * 1024.0);
    println!(
        "{tasks} tasks of {size} bytes over ofi+{provider}:// in {} ms ({:.1} MiB/s)",
        elapsed.as_millis(),
        mib / elapsed.as_secs_f64().max(1e-9)
    );
    if total == expected {
        println!("checksum OK: {total}");
        Ok(())
    } else {
        println!("E: checksum {total}, expected {expected}");
        std::process::exit(1)
    }
}
