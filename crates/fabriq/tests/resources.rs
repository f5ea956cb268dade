//! Running out of resources: a listener that cannot accept (no file
//! descriptors left) must accept again once it can.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use fabriq as zmq;

/// How many connections the child can accept before it runs out.
const SPARE: u64 = 4;

/// The child: a PULL on tcp with only `SPARE` descriptors to spare. It
/// prints its endpoint, then each message it receives.
fn child() {
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();
    // Tell the parent when an accept fails (made before the limit, as
    // it needs descriptors of its own).
    pull.monitor(
        "inproc://accept-failed",
        zmq::SocketEvent::ACCEPT_FAILED as i32,
    )
    .unwrap();
    let events = ctx.socket(zmq::PAIR).unwrap();
    events.connect("inproc://accept-failed").unwrap();
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(open + SPARE),
            maximum: limit.maximum,
        },
    )
    .unwrap();
    println!("endpoint {endpoint}");
    std::thread::spawn(move || {
        events.set_rcvtimeo(10_000).unwrap();
        if events.recv_multipart(0).is_ok() {
            println!("accept failed");
        }
    });
    pull.set_rcvtimeo(10_000).unwrap();
    let got = pull.recv_bytes(0).unwrap();
    println!("got {}", String::from_utf8_lossy(&got));
}

/// The child's descriptors are taken by idle connections, so accepting a
/// PUSH's connection fails (EMFILE); the idle ones then go. Nothing new
/// connects after that: the PUSH's connection waits in the backlog, and
/// an edge-triggered listener gets no new readiness for it. It must still
/// be accepted and its message received (before the fix it never was).
#[test]
fn a_listener_out_of_descriptors_accepts_again_once_some_are_free() {
    if std::env::var_os("FABRIQ_FD_CHILD").is_some() {
        return child();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_listener_out_of_descriptors_accepts_again_once_some_are_free",
            "--nocapture",
        ])
        .env("FABRIQ_FD_CHILD", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("endpoint ").map(str::to_string))
        .expect("the child binds");
    let address = endpoint.trim_start_matches("tcp://").to_string();
    // More idle connections than the child has descriptors for: it
    // accepts SPARE of them, the rest wait in its backlog.
    let idle: Vec<TcpStream> = (0..SPARE + 2)
        .map(|_| TcpStream::connect(&address).unwrap())
        .collect();
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).unwrap();
    push.set_linger(5000).unwrap();
    push.monitor(
        "inproc://push-connected",
        zmq::SocketEvent::CONNECTED as i32,
    )
    .unwrap();
    let connected = ctx.socket(zmq::PAIR).unwrap();
    connected.set_rcvtimeo(10_000).unwrap();
    connected.connect("inproc://push-connected").unwrap();
    push.connect(&endpoint).unwrap();
    // Its TCP connection is made (it waits in the child's backlog).
    connected.recv_multipart(0).expect("the PUSH connects");
    push.send("after the shortage", 0).unwrap();
    // The child hits the limit; then its descriptors are freed, with the
    // PUSH's connection still waiting to be accepted.
    let failed = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l == "accept failed");
    assert!(failed, "the child never ran out");
    drop(idle);
    // Read to the end (the child's harness writes after our line).
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let got = rest
        .iter()
        .find_map(|l| l.strip_prefix("got ").map(str::to_string));
    let status = child.wait().unwrap();
    assert_eq!(
        got.as_deref(),
        Some("after the shortage"),
        "child: {status}"
    );
    assert!(status.success());
}
