//! Paranoid Pirate queue (zguide ch. 4, ppqueue).
//!
//! The Simple Pirate queue plus heartbeating: it sends workers a HEARTBEAT
//! every interval, expects one back (or any message), and forgets a worker
//! it has not heard from for three intervals. Workers are DEALERs, so a
//! control message is the single frame "\x01" (READY) or "\x02" (HEARTBEAT).
//!
//!     ppqueue [--frontend tcp://*:5555] [--backend tcp://*:5556]
//!             [--heartbeat-ms 1000]

use std::time::{Duration, Instant};

use fabriq as zmq;
use fabriq_examples::{announce, printable, Args};

const HEARTBEAT_LIVENESS: u32 = 3; // 3-5 is reasonable
const PPP_READY: &[u8] = b"\x01"; // Signals worker is ready
const PPP_HEARTBEAT: &[u8] = b"\x02"; // Signals worker heartbeat

/// A worker we have heard from recently, and when it expires.
struct Worker {
    identity: Vec<u8>,
    expiry: Instant,
}

/// The ready workers, least recently used first.
struct Workers {
    list: Vec<Worker>,
    liveness: Duration,
}

impl Workers {
    /// The worker is ready: to the end of the list, with a new expiry.
    fn ready(&mut self, identity: Vec<u8>) {
        self.list.retain(|w| w.identity != identity);
        self.list.push(Worker {
            identity,
            expiry: Instant::now() + self.liveness,
        });
    }

    /// The least recently used worker, taken off the list.
    fn next(&mut self) -> Vec<u8> {
        self.list.remove(0).identity
    }

    /// Forgets the workers whose heartbeats stopped.
    fn purge(&mut self) {
        let now = Instant::now();
        self.list.retain(|w| w.expiry > now);
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let interval = Duration::from_millis(args.number("heartbeat-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let frontend = context.socket(zmq::ROUTER)?;
    let backend = context.socket(zmq::ROUTER)?;
    frontend.bind(args.get_or("frontend", "tcp://*:5555"))?; // For clients
    announce("frontend", &frontend);
    backend.bind(args.get_or("backend", "tcp://*:5556"))?; // For workers
    announce("backend", &backend);

    let mut workers = Workers {
        list: Vec::new(),
        liveness: interval * HEARTBEAT_LIVENESS,
    };
    // Send out heartbeats at regular intervals
    let mut heartbeat_at = Instant::now() + interval;
    loop {
        let mut items = [
            backend.as_poll_item(zmq::POLLIN),
            frontend.as_poll_item(zmq::POLLIN),
        ];
        // Poll frontend only if we have available workers
        let polled = if workers.list.is_empty() { 1 } else { 2 };
        let timeout = heartbeat_at.saturating_duration_since(Instant::now());
        zmq::poll(&mut items[..polled], timeout.as_millis() as i64)?;

        // Handle worker activity on backend
        if items[0].is_readable() {
            let mut msg = backend.recv_multipart(0)?;
            let identity = msg.remove(0);
            // Any sign of life from worker means it's ready
            workers.ready(identity);
            // Validate control message, or return reply to client
            if msg.len() == 1 {
                if msg[0] != PPP_READY && msg[0] != PPP_HEARTBEAT {
                    println!("E: invalid message from worker: {}", printable(&msg[0]));
                }
            } else {
                frontend.send_multipart(msg, 0)?;
            }
        }
        if polled == 2 && items[1].is_readable() {
            // Now get next client request, route to next worker
            let msg = frontend.recv_multipart(0)?;
            backend.send(workers.next(), zmq::SNDMORE)?;
            backend.send_multipart(msg, 0)?;
        }
        // Send heartbeats to idle workers if it's time
        if Instant::now() >= heartbeat_at {
            for worker in &workers.list {
                backend.send(&worker.identity[..], zmq::SNDMORE)?;
                backend.send(PPP_HEARTBEAT, 0)?;
            }
            heartbeat_at = Instant::now() + interval;
        }
        workers.purge();
    }
}
