//! Load-balancing broker, async (zguide ch. 3, lbbroker, on tokio).
//!
//! lbbroker with tokio tasks for the clients (REQ) and workers (REQ)
//! instead of threads, and the broker's poll replaced by `tokio::select!`
//! over the backend and frontend receives: the frontend branch is enabled
//! only while a worker is queued. The losing branch's receive is dropped,
//! which takes nothing from its socket. Stops when every client has its
//! reply.
//!
//!     async_lbbroker [--frontend ipc://frontend.ipc]
//!                    [--backend ipc://backend.ipc] [--clients 10] [--workers 3]

use std::collections::VecDeque;

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::{announce, Args};

/// Basic request-reply client using REQ socket.
async fn client_task(context: zmq::Context, frontend: String, id: usize) -> zmq::Result<()> {
    let client = context.socket(zmq::REQ)?;
    client.set_identity(format!("Client-{id}").as_bytes())?;
    client.connect(&frontend)?;
    let mut client = AsyncSocket::new(client)?;
    // Send request, get reply
    client.send("HELLO", 0).await?;
    let reply = client.recv().await?;
    println!("Client-{id}: {}", reply.as_str().unwrap_or_default());
    Ok(())
}

/// The worker tells the broker it's ready, then serves requests: each
/// arrives as [client identity, "", request], and the reply goes back
/// under the same envelope.
async fn worker_task(context: zmq::Context, backend: String, id: usize) -> zmq::Result<()> {
    let worker = context.socket(zmq::REQ)?;
    worker.set_identity(format!("Worker-{id}").as_bytes())?;
    worker.connect(&backend)?;
    let mut worker = AsyncSocket::new(worker)?;
    // Tell backend we're ready for work
    worker.send("READY", 0).await?;
    loop {
        let mut request = worker.recv_multipart().await?;
        let identity = request.remove(0);
        println!(
            "Worker-{id}: {}",
            request.last().and_then(|m| m.as_str()).unwrap_or_default()
        );
        worker
            .send_multipart([identity, "".into(), "OK".into()], 0)
            .await?;
    }
}

fn endpoint(socket: &zmq::Socket) -> zmq::Result<String> {
    Ok(socket
        .get_last_endpoint()?
        .unwrap_or_default()
        .replace("0.0.0.0", "127.0.0.1"))
}

#[tokio::main]
async fn main() -> zmq::Result<()> {
    let args = Args::from_env();
    let nbr_clients: usize = args.number("clients").unwrap_or(10);
    let nbr_workers: usize = args.number("workers").unwrap_or(3);

    // Prepare our context and sockets
    let context = zmq::Context::new();
    let mut frontend = AsyncSocket::new(context.socket(zmq::ROUTER)?)?;
    let mut backend = AsyncSocket::new(context.socket(zmq::ROUTER)?)?;
    frontend.bind(args.get_or("frontend", "ipc://frontend.ipc"))?;
    announce("frontend", &frontend.sync());
    backend.bind(args.get_or("backend", "ipc://backend.ipc"))?;
    announce("backend", &backend.sync());

    let mut clients = Vec::new();
    for id in 0..nbr_clients {
        let endpoint = endpoint(&frontend.sync())?;
        clients.push(tokio::spawn(client_task(context.clone(), endpoint, id)));
    }
    for id in 0..nbr_workers {
        let endpoint = endpoint(&backend.sync())?;
        tokio::spawn(worker_task(context.clone(), endpoint, id));
    }

    // Queue of available workers
    let mut worker_queue = VecDeque::new();
    let mut client_nbr = nbr_clients;
    while client_nbr > 0 {
        tokio::select! {
            // Handle worker activity on backend
            reply = backend.recv_multipart() => {
                // [worker, "", READY] or [worker, "", client, "", reply]
                let mut reply = reply?;
                // Queue worker identity for load-balancing
                worker_queue.push_back(reply.remove(0));
                // Then "" and READY, or else "", client, "", reply
                if reply.len() == 4 {
                    let answer = reply.swap_remove(3);
                    let client_id = reply.swap_remove(1);
                    frontend.send_multipart([client_id, "".into(), answer], 0).await?;
                    client_nbr -= 1;
                }
            }
            // Get next client request (only if we have available
            // workers), route to the least recently used worker
            request = frontend.recv_multipart(), if !worker_queue.is_empty() => {
                // [client, "", request]
                let mut request = request?;
                let worker_id = worker_queue.pop_front().expect("a worker is queued");
                request.insert(0, "".into());
                request.insert(0, worker_id);
                backend.send_multipart(request, 0).await?;
            }
        }
    }
    for client in clients {
        client.await.expect("a client panicked")?;
    }
    Ok(())
}
