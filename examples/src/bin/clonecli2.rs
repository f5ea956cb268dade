//! Clone client, model two (zguide ch. 5, clonecli2).
//!
//! Subscribes to the updates first, then asks for a snapshot of the state
//! ("ICANHAZ?" on a DEALER), stores it, and applies the updates that are
//! newer than the snapshot, dropping the older ones it queued meanwhile.
//!
//! The zguide asks for the snapshot right after subscribing, so updates
//! published before the subscription took effect but after the snapshot
//! can be lost. This client waits for its first update (then its
//! subscription is in place) before asking, so it misses nothing; it
//! reports any gap in the sequence numbers.
//!
//!     clonecli2 [--snapshot tcp://localhost:5556] [--subscriber tcp://localhost:5557]
//!               [--count N]

use std::collections::{HashMap, VecDeque};

use fabriq as zmq;
use fabriq_examples::kvsimple::KvMsg;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    // Prepare our context and subscriber
    let context = zmq::Context::new();
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.set_subscribe(b"")?;
    subscriber.connect(args.get_or("subscriber", "tcp://localhost:5557"))?;
    // The first update proves that our subscription is in place
    let mut queued = VecDeque::from([KvMsg::recv(&subscriber)?]);

    let snapshot = context.socket(zmq::DEALER)?;
    snapshot.connect(args.get_or("snapshot", "tcp://localhost:5556"))?;

    // Get state snapshot
    let mut kvmap: HashMap<String, KvMsg> = HashMap::new();
    snapshot.send("ICANHAZ?", 0)?;
    let sequence = loop {
        let kvmsg = KvMsg::recv(&snapshot)?;
        if kvmsg.key == "KTHXBAI" {
            println!("Received snapshot={}", kvmsg.sequence);
            break kvmsg.sequence;
        }
        kvmap.insert(kvmsg.key.clone(), kvmsg);
    };
    println!("{} keys in the snapshot", kvmap.len());

    // Now apply pending updates, discard out-of-sequence messages
    let mut last = sequence;
    let mut applied = 0;
    let count = args.count();
    while count.map_or(true, |n| applied < n) {
        let kvmsg = match queued.pop_front() {
            Some(kvmsg) => kvmsg,
            None => KvMsg::recv(&subscriber)?,
        };
        if kvmsg.sequence <= sequence {
            continue; // Already in the snapshot
        }
        if kvmsg.sequence != last + 1 {
            println!("E: gap: update {} after {last}", kvmsg.sequence);
        }
        last = kvmsg.sequence;
        kvmap.insert(kvmsg.key.clone(), kvmsg);
        applied += 1;
    }
    println!("{applied} updates applied, last sequence {last}");
    Ok(())
}
