//! Simple Pirate queue (zguide ch. 4, spqueue).
//!
//! The load-balancing broker between Lazy Pirate clients (ROUTER frontend,
//! 5555) and workers (ROUTER backend, 5556) that say "\x01" (READY) when
//! they start; a worker that dies simply never comes back to the queue.
//!
//!     spqueue [--frontend tcp://*:5555] [--backend tcp://*:5556]

use std::collections::VecDeque;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

const WORKER_READY: &[u8] = b"\x01"; // Signals worker is ready

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let frontend = context.socket(zmq::ROUTER)?;
    let backend = context.socket(zmq::ROUTER)?;
    frontend.bind(args.get_or("frontend", "tcp://*:5555"))?; // For clients
    announce("frontend", &frontend);
    backend.bind(args.get_or("backend", "tcp://*:5556"))?; // For workers
    announce("backend", &backend);

    // Queue of available workers
    let mut workers: VecDeque<Vec<u8>> = VecDeque::new();
    loop {
        let mut items = [
            backend.as_poll_item(zmq::POLLIN),
            frontend.as_poll_item(zmq::POLLIN),
        ];
        // Poll frontend only if we have available workers
        let polled = if workers.is_empty() { 1 } else { 2 };
        zmq::poll(&mut items[..polled], -1)?;

        // Handle worker activity on backend
        if items[0].is_readable() {
            // Use worker identity for load-balancing
            let mut msg = backend.recv_multipart(0)?;
            workers.push_back(msg.remove(0));
            msg.remove(0); // Envelope delimiter
                           // Forward message to client if it's not a READY
            if msg != [WORKER_READY] {
                frontend.send_multipart(msg, 0)?;
            }
        }
        if polled == 2 && items[1].is_readable() {
            // Get client request, route to first available worker
            let msg = frontend.recv_multipart(0)?;
            let worker = workers.pop_front().expect("a worker is queued");
            backend.send(worker, zmq::SNDMORE)?;
            backend.send("", zmq::SNDMORE)?;
            backend.send_multipart(msg, 0)?;
        }
    }
}
