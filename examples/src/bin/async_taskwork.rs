//! Task worker, async (zguide ch. 1, taskwork, on tokio).
//!
//! taskwork as one stream pipeline: the PULL socket from the ventilator
//! is a `Stream` of tasks, each "done" by an async sleep of its workload
//! in msecs, and the results are `forward`ed into the PUSH socket to the
//! sink, used as a `Sink`.
//!
//!     async_taskwork [--ventilator tcp://localhost:5557]
//!                    [--sink tcp://localhost:5558] [--count N]

use std::io::Write;
use std::time::Duration;

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::Args;
use futures_util::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    // Socket to receive messages on
    let receiver = AsyncSocket::new(context.socket(zmq::PULL)?)?;
    receiver.connect(args.get_or("ventilator", "tcp://localhost:5557"))?;
    // Socket to send messages to
    let sender = AsyncSocket::new(context.socket(zmq::PUSH)?)?;
    sender.connect(args.get_or("sink", "tcp://localhost:5558"))?;

    // Process tasks forever (or --count of them)
    let count = args.count().map_or(usize::MAX, |n| n as usize);
    receiver
        .take(count)
        .then(|task| async move {
            let task = task?;
            let workload: u64 = task[0].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
            // Simple progress indicator for the viewer
            print!("{workload}.");
            let _ = std::io::stdout().flush();
            tokio::time::sleep(Duration::from_millis(workload)).await; // Do the work
            Ok(vec![""]) // Results for the sink
        })
        .forward(sender)
        .await?;
    println!();
    Ok(())
}
