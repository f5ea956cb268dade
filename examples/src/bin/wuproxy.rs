//! Weather proxy (zguide ch. 2, wuproxy).
//!
//! Subscribes (XSUB) to the weather server on the internal network and
//! republishes (XPUB) on the external one; subscriptions flow upstream
//! through the proxy.
//!
//!     wuproxy [--connect tcp://localhost:5556] [--bind tcp://*:8100]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    // This is where the weather server sits
    let frontend = context.socket(zmq::XSUB)?;
    frontend.connect(args.get_or("connect", "tcp://localhost:5556"))?;
    // This is our public endpoint for subscribers
    let backend = context.socket(zmq::XPUB)?;
    backend.bind(args.get_or("bind", "tcp://*:8100"))?;
    announce("", &backend);

    // Run the proxy until the user interrupts us
    zmq::proxy(&frontend, &backend)
}
