//! Clone client, model one (zguide ch. 5, clonecli1).
//!
//! Subscribes to every update from clonesrv1 and applies each to its own
//! copy of the key-value store (a hash map).
//!
//!     clonecli1 [--connect tcp://localhost:5556] [--count N]

use std::collections::HashMap;

use fabriq as zmq;
use fabriq_examples::kvsimple::KvMsg;
use fabriq_examples::{rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    // Prepare our context and updates socket
    let context = zmq::Context::new();
    let updates = context.socket(zmq::SUB)?;
    updates.set_subscribe(b"")?;
    updates.connect(args.get_or("connect", "tcp://localhost:5556"))?;

    let mut kvmap: HashMap<String, KvMsg> = HashMap::new();
    let mut last_sequence = 0;
    let mut received = 0;
    for _ in rounds(args.count()) {
        let kvmsg = KvMsg::recv(&updates)?;
        if kvmsg.sequence <= last_sequence {
            println!(
                "E: out of order update {} after {last_sequence}",
                kvmsg.sequence
            );
        }
        last_sequence = kvmsg.sequence;
        kvmap.insert(kvmsg.key.clone(), kvmsg);
        received += 1;
    }
    println!("Interrupted\n{received} messages in");
    println!("{} keys, last sequence {last_sequence}", kvmap.len());
    Ok(())
}
