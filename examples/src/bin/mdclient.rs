//! Majordomo client (zguide ch. 4, mdclient): sends "Hello world" to the
//! "echo" service `--count` times through the broker, with the client API
//! (`fabriq_examples::mdcliapi`).
//!
//!     mdclient [--connect tcp://localhost:5555] [--count 100000]
//!              [--timeout-ms 2500] [--retries 3] [-v]

use fabriq as zmq;
use fabriq_examples::mdcliapi::Client;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(100_000);
    let mut session = Client::new(
        args.get_or("connect", "tcp://localhost:5555"),
        args.flag("v"),
    )?;
    if let Some(ms) = args.number("timeout-ms") {
        session.set_timeout(ms);
    }
    if let Some(retries) = args.number("retries") {
        session.set_retries(retries);
    }

    let request = vec![b"Hello world".to_vec()];
    let mut done = 0;
    while done < count {
        match session.send("echo", &request)? {
            Some(reply) if reply == request => done += 1,
            Some(reply) => {
                println!("E: unexpected reply {reply:?}");
                break;
            }
            None => break, // Interrupt or failure
        }
    }
    println!("{done} requests/replies processed");
    if done < count {
        std::process::exit(1);
    }
    Ok(())
}
