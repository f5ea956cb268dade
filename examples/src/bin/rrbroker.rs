//! Simple request-reply broker (zguide ch. 2, rrbroker).
//!
//! ROUTER frontend for the clients (5559), DEALER backend for the workers
//! (5560), and a poll loop that moves whole multipart messages between
//! them, envelopes included.
//!
//!     rrbroker [--frontend tcp://*:5559] [--backend tcp://*:5560]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let frontend = context.socket(zmq::ROUTER)?;
    let backend = context.socket(zmq::DEALER)?;
    frontend.bind(args.get_or("frontend", "tcp://*:5559"))?;
    announce("frontend", &frontend);
    backend.bind(args.get_or("backend", "tcp://*:5560"))?;
    announce("backend", &backend);

    // Switch messages between sockets
    loop {
        let mut items = [
            frontend.as_poll_item(zmq::POLLIN),
            backend.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, -1)?;
        if items[0].is_readable() {
            forward(&frontend, &backend)?;
        }
        if items[1].is_readable() {
            forward(&backend, &frontend)?;
        }
    }
}

/// Moves one message, frame by frame, keeping the "more" flags.
fn forward(from: &zmq::Socket, to: &zmq::Socket) -> Result<(), zmq::Error> {
    loop {
        let frame = from.recv_msg(0)?;
        let more = from.get_rcvmore()?;
        to.send(frame, if more { zmq::SNDMORE } else { 0 })?;
        if !more {
            return Ok(());
        }
    }
}
