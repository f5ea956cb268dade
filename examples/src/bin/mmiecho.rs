//! MMI echo query (zguide ch. 4, mmiecho): asks the Majordomo broker
//! whether a service ("echo" by default) has workers: 200 yes, 404 no.
//!
//!     mmiecho [SERVICE] [--connect tcp://localhost:5555] [-v]

use fabriq as zmq;
use fabriq_examples::mdcliapi::Client;
use fabriq_examples::Args;

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let service = args.positional(0).unwrap_or("echo");
    let mut session = Client::new(
        args.get_or("connect", "tcp://localhost:5555"),
        args.flag("v"),
    )?;

    // This is the service we want to look up
    let request = vec![service.as_bytes().to_vec()];
    // This is the service we send our request to
    match session.send("mmi.service", &request)? {
        Some(reply) => {
            let code = String::from_utf8_lossy(&reply[0]);
            println!("Lookup {service} service: {code}");
        }
        None => println!("E: no response from broker, make sure it's running"),
    }
    Ok(())
}
