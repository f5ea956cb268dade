//! Multithreaded Hello World server (zguide ch. 2, mtserver).
//!
//! A ROUTER for the clients (5555), a DEALER bound on inproc for a pool of
//! REP worker threads, and the proxy between them.
//!
//!     mtserver [--bind tcp://*:5555] [--workers 5] [--work-ms 1000]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn worker_routine(context: zmq::Context, work: Duration) -> Result<(), zmq::Error> {
    // Socket to talk to dispatcher
    let receiver = context.socket(zmq::REP)?;
    receiver.connect("inproc://workers")?;
    loop {
        let request = receiver.recv_msg(0)?;
        println!(
            "Received request: [{}]",
            request.as_str().unwrap_or("<binary>")
        );
        thread::sleep(work); // Do some 'work'
        receiver.send("World", 0)?;
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let workers: usize = args.number("workers").unwrap_or(5);
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    // Socket to talk to clients
    let clients = context.socket(zmq::ROUTER)?;
    clients.bind(args.get_or("bind", "tcp://*:5555"))?;
    announce("", &clients);
    // Socket to talk to workers
    let workers_socket = context.socket(zmq::DEALER)?;
    workers_socket.bind("inproc://workers")?;

    // Launch pool of worker threads
    for _ in 0..workers {
        let context = context.clone();
        thread::spawn(move || worker_routine(context, work));
    }
    // Connect work threads to client threads via a queue proxy
    zmq::proxy(&clients, &workers_socket)
}
