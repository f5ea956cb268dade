//! Paranoid Pirate worker (zguide ch. 4, ppworker).
//!
//! A DEALER that says READY, then serves requests and exchanges heartbeats
//! with the queue. If the queue is silent for three heartbeats, it closes
//! its socket and reconnects, waiting longer each time (1 s doubling up to
//! 32 s). Like spworker it crashes or overloads at random after a few
//! cycles (at `--crash-at N` / `--overload-at N`; never with `--steady`).
//!
//!     ppworker [--connect tcp://localhost:5556] [--heartbeat-ms 1000]
//!              [--reconnect-ms 1000] [--work-ms 1000]
//!              [--crash-at N] [--overload-at N] [--steady]

use std::thread;
use std::time::{Duration, Instant};

use fabriq as zmq;
use fabriq_examples::{random_identity, Args, Rng};

const HEARTBEAT_LIVENESS: u32 = 3; // 3-5 is reasonable
const PPP_READY: &[u8] = b"\x01"; // Signals worker is ready
const PPP_HEARTBEAT: &[u8] = b"\x02"; // Signals worker heartbeat

/// A DEALER socket connected to the queue, announced with READY.
fn worker_socket(
    context: &zmq::Context,
    endpoint: &str,
    identity: &str,
) -> Result<zmq::Socket, zmq::Error> {
    let worker = context.socket(zmq::DEALER)?;
    worker.set_identity(identity.as_bytes())?;
    worker.set_linger(0)?;
    worker.connect(endpoint)?;
    // Tell queue we're ready for work
    println!("I: ({identity}) worker ready");
    worker.send(PPP_READY, 0)?;
    Ok(worker)
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let endpoint = args.get_or("connect", "tcp://localhost:5556");
    let heartbeat = Duration::from_millis(args.number("heartbeat-ms").unwrap_or(1000));
    let reconnect_init = Duration::from_millis(args.number("reconnect-ms").unwrap_or(1000));
    let reconnect_max = reconnect_init * 32;
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));
    let crash_at: Option<u64> = args.number("crash-at");
    let overload_at: Option<u64> = args.number("overload-at");
    // --steady: no simulated failures at all
    let scripted = crash_at.is_some() || overload_at.is_some() || args.flag("steady");

    let context = zmq::Context::new();
    let mut rng = Rng::new();
    let identity = random_identity(&mut rng);
    let mut worker = worker_socket(&context, endpoint, &identity)?;

    // If liveness hits zero, queue is considered disconnected
    let mut liveness = HEARTBEAT_LIVENESS;
    let mut interval = reconnect_init;
    // Send out heartbeats at regular intervals
    let mut heartbeat_at = Instant::now() + heartbeat;
    let mut cycles = 0;
    loop {
        if worker.poll(zmq::POLLIN, heartbeat.as_millis() as i64)? > 0 {
            // Get message
            // - 3-part envelope + content -> request
            // - 1-part HEARTBEAT -> heartbeat
            let msg = worker.recv_multipart(0)?;
            if msg.len() == 3 {
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
                println!("I: ({identity}) normal reply");
                worker.send_multipart(msg, 0)?;
                liveness = HEARTBEAT_LIVENESS;
                thread::sleep(work); // Do some heavy work
            } else if msg == [PPP_HEARTBEAT] {
                liveness = HEARTBEAT_LIVENESS;
            } else {
                println!("E: ({identity}) invalid message: {msg:?}");
            }
            interval = reconnect_init;
        } else {
            liveness -= 1;
            if liveness == 0 {
                println!("W: ({identity}) heartbeat failure, can't reach queue");
                println!(
                    "W: ({identity}) reconnecting in {} msec...",
                    interval.as_millis()
                );
                thread::sleep(interval);
                interval = (interval * 2).min(reconnect_max);
                worker = worker_socket(&context, endpoint, &identity)?;
                liveness = HEARTBEAT_LIVENESS;
            }
        }
        // Send heartbeat to queue if it's time
        if Instant::now() > heartbeat_at {
            heartbeat_at = Instant::now() + heartbeat;
            worker.send(PPP_HEARTBEAT, 0)?;
        }
    }
    Ok(())
}
