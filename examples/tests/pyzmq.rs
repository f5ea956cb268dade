//! zguide examples mixed with pyzmq (libzmq) peers: the fabriq program on
//! one side, the zguide's Python version of its peer on the other.

#[macro_use]
mod common;

use common::{py, Proc, TCP};

/// Python prelude: every socket gives up after 30 s, so a stuck peer ends.
const PRELUDE: &str = r#"
import sys, time, random, zmq
ctx = zmq.Context()
def sock(kind):
    s = ctx.socket(kind)
    s.RCVTIMEO = 30000
    s.SNDTIMEO = 30000
    s.LINGER = 1000
    return s
def bind(s, label=""):
    port = s.bind_to_random_port("tcp://127.0.0.1")
    prefix = f"bound {label} " if label else "bound "
    print(f"{prefix}tcp://127.0.0.1:{port}", file=sys.stderr, flush=True)
"#;

fn python(body: &str) -> std::process::Command {
    py(&format!("{PRELUDE}\n{body}"))
}

#[test]
fn hwclient_against_a_pyzmq_hwserver() {
    let server = Proc::start(
        "pyzmq hwserver",
        &mut python(
            r#"
s = sock(zmq.REP); bind(s)
for _ in range(int(sys.argv[1])):
    print(s.recv().decode())
    s.send(b"World")
"#,
        ),
        &["5"],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "hwclient",
        &mut example!("hwclient"),
        &["--connect", &endpoint, "--count", "5"],
    )
    .success();
    let replies = out.lines_starting("Received World ");
    assert_eq!(replies.len(), 5, "{out:#?}");
    let served = server.success();
    assert_eq!(served.stdout, vec!["Hello"; 5]);
}

#[test]
fn hwserver_serves_a_pyzmq_hwclient() {
    let server = Proc::start(
        "hwserver",
        &mut example!("hwserver"),
        &["--bind", TCP, "--count", "3", "--work-ms", "0"],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "pyzmq hwclient",
        &mut python(
            r#"
s = sock(zmq.REQ); s.connect(sys.argv[1])
for i in range(3):
    s.send(b"Hello")
    print(f"Received {s.recv().decode()} {i}")
"#,
        ),
        &[&endpoint],
    )
    .success();
    assert_eq!(
        out.stdout,
        ["Received World 0", "Received World 1", "Received World 2"]
    );
    server.success();
}

#[test]
fn wuclient_against_a_pyzmq_weather_server() {
    // Publishes until the test ends (bounded at 60 s).
    let server = Proc::start(
        "pyzmq wuserver",
        &mut python(
            r#"
s = sock(zmq.PUB); bind(s)
end = time.time() + 60
while time.time() < end:
    zipcode = random.randrange(10000, 10003)
    temperature = random.randrange(-80, 135)
    relhumidity = random.randrange(10, 60)
    s.send_string(f"{zipcode:05d} {temperature} {relhumidity}")
"#,
        ),
        &[],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "wuclient",
        &mut example!("wuclient"),
        &["10001", "--connect", &endpoint, "--count", "50"],
    )
    .success();
    let line = out
        .lines_starting("Average temperature for zipcode '10001' was ")
        .pop()
        .unwrap_or_else(|| panic!("{out:#?}"))
        .to_string();
    let average: i64 = line
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches('F')
        .parse()
        .unwrap();
    assert!((-80..135).contains(&average), "{line}");
}

#[test]
fn taskwork_between_a_pyzmq_ventilator_and_sink() {
    // The zguide's taskvent and tasksink in one Python process: it starts
    // the batch when told on stdin, then collects every result.
    let mut python_side = Proc::start(
        "pyzmq taskvent+tasksink",
        &mut python(
            r#"
tasks = int(sys.argv[1])
sender = sock(zmq.PUSH); bind(sender, "ventilator")
sink = sock(zmq.PULL); bind(sink, "sink")
print("Press Enter when the workers are ready: ", flush=True)
sys.stdin.readline()
for _ in range(tasks):
    sender.send_string(str(random.randint(1, 5)))
for _ in range(tasks):
    sink.recv()
print(f"collected {tasks} results", flush=True)
"#,
        ),
        &["40"],
    );
    let (tasks, results) = (python_side.bound("ventilator"), python_side.bound("sink"));
    let _workers: Vec<_> = (0..2)
        .map(|_| {
            Proc::start(
                "taskwork",
                &mut example!("taskwork"),
                &["--ventilator", &tasks, "--sink", &results],
            )
        })
        .collect();
    python_side.line_where(|l| l.starts_with("Press Enter"));
    python_side.send_line("");
    let out = python_side.success();
    assert!(out.has_line("collected 40 results"), "{out:#?}");
    // Only the fabriq workers send results: the sink got the whole batch
    // from them. They are stopped when the test ends.
}

#[test]
fn rrbroker_between_pyzmq_and_fabriq_clients_and_workers() {
    let broker = Proc::start(
        "rrbroker",
        &mut example!("rrbroker"),
        &["--frontend", TCP, "--backend", TCP],
    );
    let (frontend, backend) = (broker.bound("frontend"), broker.bound("backend"));
    let _fabriq_worker = Proc::start(
        "rrworker",
        &mut example!("rrworker"),
        &["--connect", &backend, "--work-ms", "0"],
    );
    let _python_worker = Proc::start(
        "pyzmq rrworker",
        &mut python(
            r#"
s = sock(zmq.REP); s.connect(sys.argv[1])
while True:
    try:
        print("Received request: [%s]" % s.recv().decode(), flush=True)
    except zmq.Again:
        break
    s.send(b"World")
"#,
        ),
        &[&backend],
    );
    let python_client = Proc::start(
        "pyzmq rrclient",
        &mut python(
            r#"
s = sock(zmq.REQ); s.connect(sys.argv[1])
for i in range(6):
    s.send(b"Hello")
    print(f"Received reply {i} [{s.recv().decode()}]")
"#,
        ),
        &[&frontend],
    );
    let fabriq_client = Proc::start(
        "rrclient",
        &mut example!("rrclient"),
        &["--connect", &frontend, "--count", "6"],
    );
    for client in [python_client, fabriq_client] {
        let out = client.success();
        let expected: Vec<String> = (0..6)
            .map(|i| format!("Received reply {i} [World]"))
            .collect();
        assert_eq!(out.stdout, expected);
    }
}

#[test]
fn psenvsub_against_a_pyzmq_envelope_publisher() {
    let publisher = Proc::start(
        "pyzmq psenvpub",
        &mut python(
            r#"
s = sock(zmq.PUB); bind(s)
end = time.time() + 60
while time.time() < end:
    s.send_multipart([b"A", b"We don't want to see this"])
    s.send_multipart([b"B", b"We would like to see this"])
    time.sleep(0.005)
"#,
        ),
        &[],
    );
    let endpoint = publisher.bound("");
    let out = Proc::start(
        "psenvsub",
        &mut example!("psenvsub"),
        &["--connect", &endpoint, "--count", "5"],
    )
    .success();
    assert_eq!(out.stdout, vec!["[B] We would like to see this"; 5]);
}

#[test]
fn lpclient_survives_a_pyzmq_lpserver_crash_and_restart() {
    // The zguide's Python lpserver, its crash scripted: it exits without
    // replying to request number argv[2] (0: never).
    let lpserver = r#"
crash_at = int(sys.argv[2])
s = sock(zmq.REP)
if sys.argv[1] == "*":
    bind(s)
else:
    s.bind(sys.argv[1])
    print(f"bound {sys.argv[1]}", file=sys.stderr, flush=True)
cycles = 0
while True:
    try:
        request = s.recv()
    except zmq.Again:
        break
    cycles += 1
    if cycles == crash_at:
        print("I: simulating a crash", flush=True)
        break
    print(f"I: normal request ({request.decode()})", flush=True)
    s.send(request)
"#;
    let first = Proc::start("pyzmq lpserver", &mut python(lpserver), &["*", "3"]);
    let endpoint = first.bound("");
    let client = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &endpoint,
            "--count",
            "6",
            "--timeout-ms",
            "300",
            "--retries",
            "50",
        ],
    );
    let crashed = first.success();
    assert!(crashed.has_line("I: simulating a crash"), "{crashed:#?}");
    let second = Proc::start("pyzmq lpserver", &mut python(lpserver), &[&endpoint, "0"]);
    assert_eq!(second.bound(""), endpoint);
    let out = client.success();
    let expected: Vec<String> = (1..=6)
        .map(|i| format!("I: server replied OK ({i})"))
        .collect();
    assert_eq!(out.lines_starting("I: server replied OK"), expected);
    assert!(
        out.has_line("W: no response from server, retrying..."),
        "{out:#?}"
    );
}
