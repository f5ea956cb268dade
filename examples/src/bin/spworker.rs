//! Simple Pirate worker (zguide ch. 4, spworker).
//!
//! Connects REQ to the queue's backend, says READY, then echoes requests;
//! like lpserver it crashes or overloads at random after a few cycles (or
//! at `--crash-at N` / `--overload-at N`; never with `--steady`).
//!
//!     spworker [--connect tcp://localhost:5556] [--work-ms 1000]
//!              [--crash-at N] [--overload-at N] [--steady]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{random_identity, Args, Rng};

const WORKER_READY: &[u8] = b"\x01"; // Signals worker is ready

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));
    let crash_at: Option<u64> = args.number("crash-at");
    let overload_at: Option<u64> = args.number("overload-at");
    // --steady: no simulated failures at all
    let scripted = crash_at.is_some() || overload_at.is_some() || args.flag("steady");

    let context = zmq::Context::new();
    let worker = context.socket(zmq::REQ)?;
    // Set random identity to make tracing easier
    let mut rng = Rng::new();
    let identity = random_identity(&mut rng);
    worker.set_identity(identity.as_bytes())?;
    worker.connect(args.get_or("connect", "tcp://localhost:5556"))?;

    // Tell broker we're ready for work
    println!("I: ({identity}) worker ready");
    worker.send(WORKER_READY, 0)?;

    let mut cycles = 0;
    loop {
        // [client identity, "", request]
        let msg = worker.recv_multipart(0)?;
        cycles += 1;
        let crash = if scripted {
            crash_at == Some(cycles)
        } else {
            cycles > 3 && rng.below(5) == 0
        };
        let overload = if scripted {
            overload_at == Some(cycles)
        } else {
            cycles > 3 && rng.below(5) == 0
        };
        if crash {
            println!("I: ({identity}) simulating a crash");
            break;
        } else if overload {
            println!("I: ({identity}) simulating CPU overload");
            thread::sleep(Duration::from_secs(3));
        }
        let request = msg.last().map(|r| String::from_utf8_lossy(r).into_owned());
        println!(
            "I: ({identity}) normal reply ({})",
            request.unwrap_or_default()
        );
        thread::sleep(work); // Do some heavy work
        worker.send_multipart(msg, 0)?;
    }
    Ok(())
}
