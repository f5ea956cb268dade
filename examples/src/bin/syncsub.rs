//! Synchronized subscriber (zguide ch. 2, syncsub).
//!
//! Subscribes to everything, waits for the publisher's first "HELLO" (its
//! subscription is then in place), checks in on the REQ socket, and counts
//! updates until "END".
//!
//!     syncsub [--connect tcp://localhost:5561] [--sync tcp://localhost:5562]

use fabriq as zmq;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    // First, connect our subscriber socket
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect(args.get_or("connect", "tcp://localhost:5561"))?;
    subscriber.set_subscribe(b"")?;

    // The first HELLO proves that the publisher has our subscription
    while subscriber.recv_msg(0)?.as_str() != Some("HELLO") {}

    // Second, synchronize with publisher
    let syncclient = context.socket(zmq::REQ)?;
    syncclient.connect(args.get_or("sync", "tcp://localhost:5562"))?;
    // - send a synchronization request
    syncclient.send("", 0)?;
    // - wait for synchronization reply
    syncclient.recv_msg(0)?;

    // Third, get our updates and report how many we got
    let mut update_nbr = 0;
    loop {
        let update = subscriber.recv_msg(0)?;
        match update.as_str() {
            Some("END") => break,
            Some("HELLO") => {} // sent to the subscribers still joining
            _ => update_nbr += 1,
        }
    }
    println!("Received {update_nbr} updates");
    Ok(())
}
