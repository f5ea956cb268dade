//! Majordomo worker (zguide ch. 4, mdworker): the "echo" service, built
//! on the worker API (`fabriq_examples::mdwrkapi`).
//!
//!     mdworker [--connect tcp://localhost:5555] [--service echo]
//!              [--heartbeat-ms 2500] [--count N] [-v]

use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::mdwrkapi::Worker;
use fabriq_examples::{rounds, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let mut session = Worker::new(
        args.get_or("connect", "tcp://localhost:5555"),
        args.get_or("service", "echo"),
        args.flag("v"),
    )?;
    if let Some(ms) = args.number("heartbeat-ms") {
        session.set_heartbeat(Duration::from_millis(ms));
        session.set_reconnect(Duration::from_millis(ms));
    }

    let mut reply = None;
    let mut served = 0;
    for _ in rounds(args.count()) {
        let request = session.recv(reply.take())?;
        served += 1;
        reply = Some(request); // Echo is complex... :-)
    }
    // The last reply still goes out before we stop.
    if let Some(reply) = reply {
        session.send_last(reply)?;
    }
    println!("{served} requests served");
    Ok(())
}
