//! Clone server, model one (zguide ch. 5, clonesrv1).
//!
//! Publishes key-value updates (kvsimple: key, sequence number, body) for
//! random keys below 10000, with a rising sequence number. Model one keeps
//! no state for late joiners: a client sees only what is published after
//! it subscribed.
//!
//!     clonesrv1 [--bind tcp://*:5556] [--count N]

use fabriq as zmq;
use fabriq_examples::kvsimple::KvMsg;
use fabriq_examples::{announce, rounds, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    // Prepare our context and publisher socket
    let context = zmq::Context::new();
    let publisher = context.socket(zmq::PUB)?;
    publisher.bind(args.get_or("bind", "tcp://*:5556"))?;
    announce("", &publisher);

    let mut rng = Rng::new();
    let mut sequence = 0;
    for _ in rounds(args.count()) {
        // Distribute as key-value message
        sequence += 1;
        let kvmsg = KvMsg {
            key: rng.below(10_000).to_string(),
            sequence,
            body: rng.below(1_000_000).to_string().into_bytes(),
        };
        kvmsg.send(&publisher)?;
    }
    println!("Interrupted\n{sequence} messages out");
    Ok(())
}
