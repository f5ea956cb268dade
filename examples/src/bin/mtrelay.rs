//! Multithreaded relay (zguide ch. 2, mtrelay).
//!
//! Three steps in three threads, each signalling the next over a PAIR
//! socket on inproc: step 1 -> step 2 -> step 3.
//!
//!     mtrelay

use std::thread;

use fabriq as zmq;

fn step1(context: &zmq::Context) -> Result<(), zmq::Error> {
    // Connect to step2 and tell it we're ready
    let xmitter = context.socket(zmq::PAIR)?;
    xmitter.connect("inproc://step2")?;
    println!("Step 1 ready, signaling step 2");
    xmitter.send("READY", 0)
}

fn step2(context: &zmq::Context) -> Result<(), zmq::Error> {
    // Bind inproc socket before starting step1
    let receiver = context.socket(zmq::PAIR)?;
    receiver.bind("inproc://step2")?;
    let ctx = context.clone();
    let step1 = thread::spawn(move || step1(&ctx));

    // Wait for signal and pass it on
    receiver.recv_msg(0)?;
    step1.join().expect("step 1 panicked")?;

    // Connect to step3 and tell it we're ready
    let xmitter = context.socket(zmq::PAIR)?;
    xmitter.connect("inproc://step3")?;
    println!("Step 2 ready, signaling step 3");
    xmitter.send("READY", 0)
}

fn main() -> Result<(), zmq::Error> {
    let context = zmq::Context::new();

    // Bind inproc socket before starting step2
    let receiver = context.socket(zmq::PAIR)?;
    receiver.bind("inproc://step3")?;
    let ctx = context.clone();
    let step2 = thread::spawn(move || step2(&ctx));

    // Wait for signal
    receiver.recv_msg(0)?;
    step2.join().expect("step 2 panicked")?;
    println!("Test successful!");
    Ok(())
}
