//! Lazy Pirate server (zguide ch. 4, lpserver).
//!
//! A REP echo server that, after a few cycles, at random either crashes
//! (exits without replying) or simulates CPU overload (replies late).
//! `--crash-at N` and `--overload-at N` make those happen at request N
//! instead, and `--steady` turns them off.
//!
//!     lpserver [--bind tcp://*:5555] [--work-ms 1000]
//!              [--crash-at N] [--overload-at N] [--steady]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));
    let crash_at: Option<u64> = args.number("crash-at");
    let overload_at: Option<u64> = args.number("overload-at");
    // --steady: no simulated failures at all
    let scripted = crash_at.is_some() || overload_at.is_some() || args.flag("steady");

    let context = zmq::Context::new();
    let server = context.socket(zmq::REP)?;
    server.bind(args.get_or("bind", "tcp://*:5555"))?;
    announce("", &server);

    let mut rng = Rng::new();
    let mut cycles = 0;
    loop {
        let request = server.recv_string(0)?.unwrap_or_default();
        cycles += 1;

        // Simulate various problems, after a few cycles
        let crash = if scripted {
            crash_at == Some(cycles)
        } else {
            cycles > 3 && rng.below(3) == 0
        };
        let overload = if scripted {
            overload_at == Some(cycles)
        } else {
            cycles > 3 && rng.below(3) == 0
        };
        if crash {
            println!("I: simulating a crash");
            break;
        } else if overload {
            println!("I: simulating CPU overload");
            thread::sleep(Duration::from_secs(2));
        }
        println!("I: normal request ({request})");
        thread::sleep(work); // Do some heavy work
        server.send(&request, 0)?;
    }
    Ok(())
}
