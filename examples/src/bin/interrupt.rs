//! Handling Ctrl-C cleanly (zguide ch. 2, interrupt).
//!
//! A REP server blocked in recv. On SIGINT (Ctrl-C) the handler
//! terminates the context (as `zmq_ctx_term` from another thread does):
//! the blocked call returns ETERM, and the server closes its socket and
//! exits normally.
//!
//!     interrupt [--bind tcp://*:5555]

use fabriq as zmq;
use fabriq_examples::{announce, Args};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let socket = context.socket(zmq::REP)?;
    socket.bind(args.get_or("bind", "tcp://*:5555"))?;

    let mut terminator = context.clone();
    ctrlc::set_handler(move || {
        // Wakes every blocked call with ETERM, then waits until the
        // sockets are closed.
        let _ = terminator.destroy();
    })?;
    announce("", &socket);

    loop {
        // Blocking read will exit on a signal
        match socket.recv_msg(0) {
            Ok(request) => {
                println!("Received {}", request.as_str().unwrap_or("<binary>"));
                socket.send("World", 0)?;
            }
            Err(zmq::Error::ETERM) => {
                println!("W: interrupt received, killing server...");
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    drop(socket);
    Ok(())
}
