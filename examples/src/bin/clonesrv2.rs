//! Clone server, model two (zguide ch. 5, clonesrv2).
//!
//! Publishes key-value updates (PUB, 5557) and keeps the state: every
//! update also goes over an inproc PAIR pipe to a state manager thread,
//! which holds the key-value map and answers snapshot requests
//! ("ICANHAZ?") on a ROUTER (5556) with every entry, then "KTHXBAI"
//! carrying the sequence number the snapshot is at.
//!
//!     clonesrv2 [--snapshot tcp://*:5556] [--publisher tcp://*:5557]
//!               [--count N] [--interval-ms 0] [--keys 10000]

use std::collections::HashMap;
use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::kvsimple::KvMsg;
use fabriq_examples::{announce, rounds, Args, Rng};

/// The state manager: applies the updates from the pipe, answers
/// snapshot requests.
fn state_manager(context: zmq::Context, snapshot_endpoint: String) -> zmq::Result<()> {
    let pipe = context.socket(zmq::PAIR)?;
    pipe.connect("inproc://clonesrv2-pipe")?;
    let snapshot = context.socket(zmq::ROUTER)?;
    snapshot.bind(&snapshot_endpoint)?;
    announce("snapshot", &snapshot);
    pipe.send("READY", 0)?; // Tell the publisher we are listening

    let mut kvmap: HashMap<String, KvMsg> = HashMap::new();
    let mut sequence = 0;
    loop {
        let mut items = [
            pipe.as_poll_item(zmq::POLLIN),
            snapshot.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, -1)?;
        // Apply state update from main thread
        if items[0].is_readable() {
            let kvmsg = KvMsg::recv(&pipe)?;
            sequence = kvmsg.sequence;
            kvmap.insert(kvmsg.key.clone(), kvmsg);
        }
        // Execute state snapshot request
        if items[1].is_readable() {
            let identity = snapshot.recv_bytes(0)?;
            // Request is in second frame of message
            let request = snapshot.recv_string(0)?.unwrap_or_default();
            if request != "ICANHAZ?" {
                println!("E: bad request, aborting");
                break;
            }
            // Send state snapshot to client
            for kvmsg in kvmap.values() {
                snapshot.send(&identity[..], zmq::SNDMORE)?;
                kvmsg.send(&snapshot)?;
            }
            // Now send END message with sequence number
            println!("Sending state snapshot={sequence}");
            snapshot.send(&identity[..], zmq::SNDMORE)?;
            KvMsg {
                key: "KTHXBAI".into(),
                sequence,
                body: Vec::new(),
            }
            .send(&snapshot)?;
        }
    }
    Ok(())
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let interval = Duration::from_millis(args.number("interval-ms").unwrap_or(0));
    let keys: u64 = args.number("keys").unwrap_or(10_000);

    // Prepare our context and sockets
    let context = zmq::Context::new();
    let publisher = context.socket(zmq::PUB)?;
    publisher.bind(args.get_or("publisher", "tcp://*:5557"))?;
    announce("publisher", &publisher);

    let updates = context.socket(zmq::PAIR)?;
    updates.bind("inproc://clonesrv2-pipe")?;
    let ctx = context.clone();
    let snapshot_endpoint = args.get_or("snapshot", "tcp://*:5556").to_string();
    thread::spawn(move || state_manager(ctx, snapshot_endpoint));
    updates.recv_msg(0)?; // Wait for state manager to be ready

    let mut rng = Rng::new();
    let mut sequence = 0;
    for _ in rounds(args.count()) {
        // Distribute as key-value message
        sequence += 1;
        let kvmsg = KvMsg {
            key: rng.below(keys).to_string(),
            sequence,
            body: rng.below(1_000_000).to_string().into_bytes(),
        };
        kvmsg.send(&publisher)?;
        kvmsg.send(&updates)?;
        thread::sleep(interval);
    }
    println!("Interrupted\n{sequence} messages handled");
    Ok(())
}
