//! Synchronized publisher (zguide ch. 2, syncpub).
//!
//! Waits until `--subscribers` subscribers have checked in on the REP
//! socket (5562), then publishes `--count` updates and "END" on the PUB
//! socket (5561).
//!
//! The zguide's syncsub sleeps a second after subscribing, hoping the
//! subscription has reached the publisher before it checks in. Here the
//! publisher instead sends "HELLO" on the PUB socket while it waits, and a
//! subscriber checks in only once one has arrived: then its subscription is
//! known to be in place, and no update can be lost.
//!
//!     syncpub [--bind tcp://*:5561] [--sync tcp://*:5562]
//!             [--subscribers 10] [--count 1000000]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let subscribers_expected: u32 = args.number("subscribers").unwrap_or(10);
    let updates = args.count().unwrap_or(1_000_000);

    let context = zmq::Context::new();
    // Socket to talk to clients
    let publisher = context.socket(zmq::PUB)?;
    publisher.set_sndhwm(1_100_000)?;
    publisher.bind(args.get_or("bind", "tcp://*:5561"))?;
    announce("publisher", &publisher);
    // Socket to receive signals
    let syncservice = context.socket(zmq::REP)?;
    syncservice.bind(args.get_or("sync", "tcp://*:5562"))?;
    announce("sync", &syncservice);

    // Get synchronization from subscribers
    println!("Waiting for subscribers");
    let mut subscribers = 0;
    while subscribers < subscribers_expected {
        // Tell the subscribers that are still joining that we are here;
        // one that receives this is subscribed.
        publisher.send("HELLO", 0)?;
        // - wait for synchronization request (or the next HELLO tick)
        if syncservice.poll(zmq::POLLIN, 10)? > 0 {
            syncservice.recv_msg(0)?;
            // - send synchronization reply
            syncservice.send("", 0)?;
            subscribers += 1;
        }
    }
    // Now broadcast exactly the updates followed by END
    println!("Broadcasting messages");
    for _ in 0..updates {
        publisher.send("Rhubarb", 0)?;
    }
    publisher.send("END", 0)?;
    Ok(())
}
