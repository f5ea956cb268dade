//! Message queue broker (zguide ch. 2, msgqueue).
//!
//! The same as rrbroker, using the built-in proxy: ROUTER for the clients
//! (5559), DEALER for the workers (5560).
//!
//!     msgqueue [--frontend tcp://*:5559] [--backend tcp://*:5560]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    // Socket facing clients
    let frontend = context.socket(zmq::ROUTER)?;
    frontend.bind(args.get_or("frontend", "tcp://*:5559"))?;
    announce("frontend", &frontend);
    // Socket facing services
    let backend = context.socket(zmq::DEALER)?;
    backend.bind(args.get_or("backend", "tcp://*:5560"))?;
    announce("backend", &backend);

    // Start the proxy; it runs until the context is terminated.
    zmq::proxy(&frontend, &backend)
}
