//! Load-balancing broker (zguide ch. 3, lbbroker).
//!
//! Clients (REQ) and workers (REQ) are threads of this process. Workers
//! announce themselves with "READY"; the broker (ROUTER frontend and
//! backend) queues the ready workers and gives each client request to the
//! least recently used one. It stops when every client has its reply.
//!
//!     lbbroker [--frontend ipc://frontend.ipc] [--backend ipc://backend.ipc]
//!              [--clients 10] [--workers 3]

use std::collections::VecDeque;
use std::thread;

use fabriq as zmq;
use fabriq_examples::{announce, Args};

/// Basic request-reply client using REQ socket.
fn client_task(context: zmq::Context, frontend: String, id: usize) -> Result<(), zmq::Error> {
    let client = context.socket(zmq::REQ)?;
    client.set_identity(format!("Client-{id}").as_bytes())?;
    client.connect(&frontend)?;
    // Send request, get reply
    client.send("HELLO", 0)?;
    let reply = client.recv_string(0)?.unwrap_or_default();
    println!("Client-{id}: {reply}");
    Ok(())
}

/// The worker tells the broker it's ready, then serves requests: each
/// arrives as [client identity, "", request], and the reply goes back
/// under the same envelope.
fn worker_task(context: zmq::Context, backend: String, id: usize) -> Result<(), zmq::Error> {
    let worker = context.socket(zmq::REQ)?;
    worker.set_identity(format!("Worker-{id}").as_bytes())?;
    worker.connect(&backend)?;
    // Tell backend we're ready for work
    worker.send("READY", 0)?;
    loop {
        let identity = worker.recv_bytes(0)?;
        worker.recv_msg(0)?; // Envelope delimiter
        let request = worker.recv_string(0)?.unwrap_or_default();
        println!("Worker-{id}: {request}");
        worker.send_multipart([&identity[..], b"", b"OK"], 0)?;
    }
}

fn endpoint(socket: &zmq::Socket) -> Result<String, zmq::Error> {
    Ok(socket
        .get_last_endpoint()?
        .unwrap_or_default()
        .replace("0.0.0.0", "127.0.0.1"))
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let nbr_clients: usize = args.number("clients").unwrap_or(10);
    let nbr_workers: usize = args.number("workers").unwrap_or(3);

    // Prepare our context and sockets
    let context = zmq::Context::new();
    let frontend = context.socket(zmq::ROUTER)?;
    let backend = context.socket(zmq::ROUTER)?;
    frontend.bind(args.get_or("frontend", "ipc://frontend.ipc"))?;
    announce("frontend", &frontend);
    backend.bind(args.get_or("backend", "ipc://backend.ipc"))?;
    announce("backend", &backend);

    let clients: Vec<_> = (0..nbr_clients)
        .map(|id| {
            let (context, endpoint) = (context.clone(), endpoint(&frontend)?);
            Ok(thread::spawn(move || client_task(context, endpoint, id)))
        })
        .collect::<Result<_, zmq::Error>>()?;
    for id in 0..nbr_workers {
        let (context, endpoint) = (context.clone(), endpoint(&backend)?);
        thread::spawn(move || worker_task(context, endpoint, id));
    }

    // Queue of available workers
    let mut worker_queue = VecDeque::new();
    let mut client_nbr = nbr_clients;
    while client_nbr > 0 {
        // Poll frontend only if we have available workers
        let mut items = [
            backend.as_poll_item(zmq::POLLIN),
            frontend.as_poll_item(zmq::POLLIN),
        ];
        let polled = if worker_queue.is_empty() { 1 } else { 2 };
        zmq::poll(&mut items[..polled], -1)?;

        // Handle worker activity on backend
        if items[0].is_readable() {
            // Queue worker identity for load-balancing
            let worker_id = backend.recv_bytes(0)?;
            worker_queue.push_back(worker_id);
            backend.recv_msg(0)?; // Second frame is empty
                                  // Third frame is READY or else a client reply identity
            let client_id = backend.recv_bytes(0)?;
            if client_id != b"READY" {
                backend.recv_msg(0)?; // empty
                let reply = backend.recv_bytes(0)?;
                frontend.send_multipart([client_id, Vec::new(), reply], 0)?;
                client_nbr -= 1;
            }
        }
        if polled == 2 && items[1].is_readable() {
            // Now get next client request, route to last-used worker
            let client_id = frontend.recv_bytes(0)?;
            frontend.recv_msg(0)?; // empty
            let request = frontend.recv_bytes(0)?;
            let worker_id = worker_queue.pop_front().expect("a worker is queued");
            backend.send_multipart([worker_id, Vec::new(), client_id, Vec::new(), request], 0)?;
        }
    }
    for client in clients {
        client.join().expect("a client panicked")?;
    }
    Ok(())
}
