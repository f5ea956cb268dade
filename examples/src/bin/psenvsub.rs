//! Pub-sub envelope subscriber (zguide ch. 2, psenvsub).
//!
//! Subscribes to key "B" only and prints `[KEY] CONTENT` for each message.
//!
//!     psenvsub [--connect tcp://localhost:5563] [--count N]

use fabriq as zmq;
use fabriq_examples::{rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect(args.get_or("connect", "tcp://localhost:5563"))?;
    subscriber.set_subscribe(b"B")?;

    for _ in rounds(args.count()) {
        // Read envelope with address, then message contents
        let address = subscriber.recv_string(0)?.unwrap_or_default();
        let contents = subscriber.recv_string(0)?.unwrap_or_default();
        println!("[{address}] {contents}");
    }
    Ok(())
}
