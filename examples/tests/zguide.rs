//! Every zguide example, run as the processes a user would start, with
//! small counts, ephemeral ports and unique ipc names (so the tests run in
//! parallel), and checks of what each printed.

#[macro_use]
mod common;

use common::{Proc, TCP};
use fabriq as zmq;

#[test]
fn version_reports_the_api_level() {
    let out = Proc::start("version", &mut example!("version"), &[]).success();
    assert_eq!(out.stdout, ["Current 0MQ version is 4.3.5"]);
}

fn hello_world_over(bind: &str) {
    let server = Proc::start(
        "hwserver",
        &mut example!("hwserver"),
        &["--bind", bind, "--count", "5", "--work-ms", "0"],
    );
    let endpoint = server.bound("");
    let client = Proc::start(
        "hwclient",
        &mut example!("hwclient"),
        &["--connect", &endpoint, "--count", "5"],
    );
    let out = client.success();
    let replies = out.lines_starting("Received World ");
    assert_eq!(replies.len(), 5, "{out:#?}");
    assert_eq!(replies[4], "Received World 4");
    let served = server.success();
    assert_eq!(
        served.lines_starting("Received Hello").len(),
        5,
        "{served:#?}"
    );
}

#[test]
fn hello_world() {
    hello_world_over(TCP);
}

#[test]
fn hello_world_over_ipc() {
    hello_world_over("ipc://*");
}

#[test]
fn hello_world_over_the_fabric() {
    hello_world_over("ofi+tcp://127.0.0.1:*");
}

/// The average in `Average temperature for zipcode 'Z' was TF`.
fn average(line: &str) -> i64 {
    let t = line.rsplit(' ').next().unwrap().trim_end_matches('F');
    t.parse()
        .unwrap_or_else(|_| panic!("no temperature in {line:?}"))
}

#[test]
fn weather_update_server_and_clients_over_tcp_and_ipc() {
    // Zip codes 10000..10003, so that a third of the updates are 10001's.
    let server = Proc::start(
        "wuserver",
        &mut example!("wuserver"),
        &[
            "--bind",
            TCP,
            "--bind",
            "ipc://*",
            "--zip-min",
            "10000",
            "--zip-max",
            "10003",
        ],
    );
    let tcp = server.bound("");
    let ipc = server.bound("");
    assert!(ipc.starts_with("ipc://"), "{ipc}");
    let clients: Vec<_> = [(&tcp, "10001"), (&ipc, "10002")]
        .into_iter()
        .map(|(endpoint, zip)| {
            Proc::start(
                "wuclient",
                &mut example!("wuclient"),
                &[zip, "--connect", endpoint, "--count", "50"],
            )
        })
        .collect();
    for (client, zip) in clients.into_iter().zip(["10001", "10002"]) {
        let out = client.success();
        let line = out
            .lines_starting(&format!("Average temperature for zipcode '{zip}' was "))
            .pop()
            .unwrap_or_else(|| panic!("{out:#?}"))
            .to_string();
        assert!((-80..135).contains(&average(&line)), "{line}");
    }
    // The killed server leaves its socket file behind.
    drop(server);
    let _ = std::fs::remove_file(ipc.trim_start_matches("ipc://"));
}

#[test]
fn weather_proxy_forwards_updates_and_subscriptions() {
    let server = Proc::start(
        "wuserver",
        &mut example!("wuserver"),
        &["--bind", TCP, "--zip-min", "10000", "--zip-max", "10003"],
    );
    let upstream = server.bound("");
    let proxy = Proc::start(
        "wuproxy",
        &mut example!("wuproxy"),
        &["--connect", &upstream, "--bind", TCP],
    );
    let downstream = proxy.bound("");
    let out = Proc::start(
        "wuclient",
        &mut example!("wuclient"),
        &["10001", "--connect", &downstream, "--count", "30"],
    )
    .success();
    assert_eq!(
        out.lines_starting("Average temperature for zipcode '10001' was ")
            .len(),
        1,
        "{out:#?}"
    );
}

#[test]
fn divide_and_conquer() {
    let sink = Proc::start(
        "tasksink",
        &mut example!("tasksink"),
        &["--bind", TCP, "--tasks", "30"],
    );
    let sink_endpoint = sink.bound("");
    let mut ventilator = Proc::start(
        "taskvent",
        &mut example!("taskvent"),
        &[
            "--bind",
            TCP,
            "--sink",
            &sink_endpoint,
            "--tasks",
            "30",
            "--max-ms",
            "5",
        ],
    );
    let tasks = ventilator.bound("");
    let _workers: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "taskwork",
                &mut example!("taskwork"),
                &["--ventilator", &tasks, "--sink", &sink_endpoint],
            )
        })
        .collect();
    ventilator.line_where(|l| l.starts_with("Press Enter"));
    ventilator.send_line("");
    let vent = ventilator.success();
    assert_eq!(vent.lines_starting("Total expected cost: ").len(), 1);
    // The sink exits only once it has all 30 results.
    let out = sink.success();
    assert_eq!(out.stdout[0].len(), 30, "one mark per result: {out:#?}");
    assert_eq!(out.lines_starting("Total elapsed time: ").len(), 1);
}

#[test]
fn kill_signal_stops_the_workers() {
    let sink = Proc::start(
        "tasksink2",
        &mut example!("tasksink2"),
        &[
            "--bind",
            TCP,
            "--controller",
            TCP,
            "--tasks",
            "30",
            "--workers",
            "3",
        ],
    );
    let (results, control) = (sink.bound("sink"), sink.bound("controller"));
    let mut ventilator = Proc::start(
        "taskvent",
        &mut example!("taskvent"),
        &[
            "--bind", TCP, "--sink", &results, "--tasks", "30", "--max-ms", "5",
        ],
    );
    let tasks = ventilator.bound("");
    let workers: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "taskwork2",
                &mut example!("taskwork2"),
                &[
                    "--ventilator",
                    &tasks,
                    "--sink",
                    &results,
                    "--controller",
                    &control,
                ],
            )
        })
        .collect();
    ventilator.line_where(|l| l.starts_with("Press Enter"));
    ventilator.send_line("");
    ventilator.success();
    sink.success();
    // Every worker exits on KILL; together they did the whole batch.
    let done: usize = workers
        .into_iter()
        .map(|w| {
            let out = w.success();
            let line = out
                .lines_starting("Killed after ")
                .pop()
                .unwrap()
                .to_string();
            line.split(' ').nth(2).unwrap().parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(done, 30);
}

fn request_reply_through(broker_name: &str, broker: &mut std::process::Command) {
    let broker = Proc::start(broker_name, broker, &["--frontend", TCP, "--backend", TCP]);
    let (frontend, backend) = (broker.bound("frontend"), broker.bound("backend"));
    let _workers: Vec<_> = (0..2)
        .map(|_| {
            Proc::start(
                "rrworker",
                &mut example!("rrworker"),
                &["--connect", &backend, "--work-ms", "0"],
            )
        })
        .collect();
    let clients: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "rrclient",
                &mut example!("rrclient"),
                &["--connect", &frontend, "--count", "5"],
            )
        })
        .collect();
    for client in clients {
        let out = client.success();
        assert_eq!(out.lines_starting("Received reply ").len(), 5, "{out:#?}");
        assert!(out.has_line("Received reply 4 [World]"), "{out:#?}");
    }
}

#[test]
fn request_reply_broker() {
    request_reply_through("rrbroker", &mut example!("rrbroker"));
}

#[test]
fn message_queue_proxy() {
    request_reply_through("msgqueue", &mut example!("msgqueue"));
}

#[test]
fn multithreaded_server() {
    let server = Proc::start(
        "mtserver",
        &mut example!("mtserver"),
        &["--bind", TCP, "--workers", "3", "--work-ms", "0"],
    );
    let endpoint = server.bound("");
    let clients: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "hwclient",
                &mut example!("hwclient"),
                &["--connect", &endpoint, "--count", "4"],
            )
        })
        .collect();
    for client in clients {
        let out = client.success();
        assert_eq!(out.lines_starting("Received World ").len(), 4, "{out:#?}");
    }
}

#[test]
fn multithreaded_relay() {
    let out = Proc::start("mtrelay", &mut example!("mtrelay"), &[]).success();
    assert_eq!(
        out.stdout,
        [
            "Step 1 ready, signaling step 2",
            "Step 2 ready, signaling step 3",
            "Test successful!"
        ]
    );
}

#[test]
fn node_coordination_loses_no_update() {
    let publisher = Proc::start(
        "syncpub",
        &mut example!("syncpub"),
        &[
            "--bind",
            TCP,
            "--sync",
            TCP,
            "--subscribers",
            "3",
            "--count",
            "2000",
        ],
    );
    let (updates, sync) = (publisher.bound("publisher"), publisher.bound("sync"));
    let subscribers: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "syncsub",
                &mut example!("syncsub"),
                &["--connect", &updates, "--sync", &sync],
            )
        })
        .collect();
    for s in subscribers {
        let out = s.success();
        assert_eq!(out.stdout, ["Received 2000 updates"]);
    }
    publisher.success();
}

#[test]
fn pubsub_envelopes_filter_on_the_key_frame() {
    let publisher = Proc::start(
        "psenvpub",
        &mut example!("psenvpub"),
        &["--bind", TCP, "--interval-ms", "5"],
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
fn identity_shows_generated_and_chosen_identities() {
    let out = Proc::start("identity", &mut example!("identity"), &[]).success();
    let frames: Vec<&str> = out
        .stdout
        .iter()
        .filter(|l| !l.starts_with("---"))
        .map(String::as_str)
        .collect();
    assert_eq!(frames.len(), 6, "{out:#?}");
    // A generated identity: 5 bytes, libzmq's form (a zero byte first).
    assert!(frames[0].starts_with("[005] 00"), "{frames:?}");
    assert_eq!(frames[1], "[000] ");
    assert_eq!(frames[2], "[039] ROUTER uses a generated 5 byte identity");
    assert_eq!(frames[3], "[005] PEER2");
    assert_eq!(frames[4], "[000] ");
    assert_eq!(frames[5], "[040] ROUTER socket uses REQ's socket identity");
}

fn load_balancing(name: &str, cmd: &mut std::process::Command) {
    let out = Proc::start(
        name,
        cmd,
        &[
            "--bind",
            TCP,
            "--workers",
            "4",
            "--tasks",
            "40",
            "--max-ms",
            "5",
        ],
    )
    .success();
    let completed = out.lines_starting("Completed: ");
    assert_eq!(completed.len(), 4, "{out:#?}");
    let total: u32 = completed
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(total, 40);
}

#[test]
fn router_to_req_load_balancing() {
    load_balancing("rtreq", &mut example!("rtreq"));
}

#[test]
fn router_to_dealer_load_balancing() {
    load_balancing("rtdealer", &mut example!("rtdealer"));
}

#[test]
fn load_balancing_broker() {
    let out = Proc::start(
        "lbbroker",
        &mut example!("lbbroker"),
        &[
            "--frontend",
            "ipc://*",
            "--backend",
            "ipc://*",
            "--clients",
            "6",
            "--workers",
            "3",
        ],
    )
    .success();
    let mut clients = out.lines_starting("Client-");
    clients.sort();
    let expected: Vec<String> = (0..6).map(|i| format!("Client-{i}: OK")).collect();
    assert_eq!(clients, expected, "{out:#?}");
    let served = out.lines_starting("Worker-");
    assert_eq!(served.len(), 6, "{out:#?}");
    assert!(served.iter().all(|l| l.ends_with(": HELLO")), "{out:#?}");
}

#[test]
fn asynchronous_client_server() {
    let out = Proc::start(
        "asyncsrv",
        &mut example!("asyncsrv"),
        &[
            "--bind",
            TCP,
            "--clients",
            "3",
            "--workers",
            "2",
            "--requests",
            "3",
            "--replies",
            "2",
            "--tick-ms",
            "1",
        ],
    )
    .success();
    let done: Vec<_> = out
        .stdout
        .iter()
        .filter(|l| l.ends_with(": done, 6 replies"))
        .collect();
    assert_eq!(done.len(), 3, "{out:#?}");
    // Each reply echoes one of the client's own requests.
    for line in out.stdout.iter().filter(|l| !l.contains("done")) {
        assert!(line.contains(": request #"), "{line}");
    }
}

#[test]
fn lazy_pirate_survives_a_server_restart() {
    let first = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", TCP, "--work-ms", "0", "--crash-at", "4"],
    );
    let endpoint = first.bound("");
    let client = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &endpoint,
            "--count",
            "8",
            "--timeout-ms",
            "300",
            "--retries",
            "50",
        ],
    );
    let crashed = first.success();
    assert!(crashed.has_line("I: simulating a crash"), "{crashed:#?}");
    // A new server on the same port; the client's retries find it.
    let second = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", &endpoint, "--work-ms", "0", "--steady"],
    );
    assert_eq!(second.bound(""), endpoint);
    let out = client.success();
    let ok: Vec<_> = out.lines_starting("I: server replied OK");
    let expected: Vec<String> = (1..=8)
        .map(|i| format!("I: server replied OK ({i})"))
        .collect();
    assert_eq!(ok, expected, "{out:#?}");
    assert!(
        out.has_line("W: no response from server, retrying..."),
        "{out:#?}"
    );
}

#[test]
fn lazy_pirate_abandons_a_dead_server() {
    let server = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", TCP, "--work-ms", "0", "--crash-at", "2"],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &endpoint,
            "--count",
            "5",
            "--timeout-ms",
            "200",
            "--retries",
            "2",
        ],
    )
    .finish();
    assert!(!out.status.success());
    assert!(out.has_line("I: server replied OK (1)"), "{out:#?}");
    assert!(
        out.has_line("E: server seems to be offline, abandoning"),
        "{out:#?}"
    );
}

#[test]
fn simple_pirate_queue_routes_around_a_crashed_worker() {
    let queue = Proc::start(
        "spqueue",
        &mut example!("spqueue"),
        &["--frontend", TCP, "--backend", TCP],
    );
    let (frontend, backend) = (queue.bound("frontend"), queue.bound("backend"));
    let crashing = Proc::start(
        "spworker",
        &mut example!("spworker"),
        &["--connect", &backend, "--work-ms", "0", "--crash-at", "2"],
    );
    crashing.line_where(|l| l.ends_with("worker ready"));
    let steady = Proc::start(
        "spworker",
        &mut example!("spworker"),
        &["--connect", &backend, "--work-ms", "0", "--steady"],
    );
    steady.line_where(|l| l.ends_with("worker ready"));
    let out = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &frontend,
            "--count",
            "10",
            "--timeout-ms",
            "300",
            "--retries",
            "10",
        ],
    )
    .success();
    assert_eq!(
        out.lines_starting("I: server replied OK").len(),
        10,
        "{out:#?}"
    );
    let crashed = crashing.success();
    assert_eq!(
        crashed
            .stdout
            .iter()
            .filter(|l| l.ends_with("simulating a crash"))
            .count(),
        1,
        "{crashed:#?}"
    );
}

#[test]
fn clone_model_one() {
    let server = Proc::start("clonesrv1", &mut example!("clonesrv1"), &["--bind", TCP]);
    let endpoint = server.bound("");
    let out = Proc::start(
        "clonecli1",
        &mut example!("clonecli1"),
        &["--connect", &endpoint, "--count", "200"],
    )
    .success();
    assert!(out.has_line("200 messages in"), "{out:#?}");
    assert!(out.lines_starting("E:").is_empty(), "{out:#?}");
    let summary = out.lines_starting("").pop().unwrap();
    let keys: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!((1..=200).contains(&keys), "{summary}");
}

#[test]
fn interrupt_ends_a_blocked_server_cleanly() {
    let server = Proc::start("interrupt", &mut example!("interrupt"), &["--bind", TCP]);
    let endpoint = server.bound("");
    let client = Proc::start(
        "hwclient",
        &mut example!("hwclient"),
        &["--connect", &endpoint, "--count", "1"],
    )
    .success();
    assert!(client.has_line("Received World 0"), "{client:#?}");
    // The server is blocked in recv again once it has printed the request.
    server.line_where(|l| l == "Received Hello");
    server.signal("INT");
    let out = server.success();
    assert!(
        out.has_line("W: interrupt received, killing server..."),
        "{out:#?}"
    );
}

#[test]
fn polling_two_sockets() {
    let weather = Proc::start(
        "wuserver",
        &mut example!("wuserver"),
        &["--bind", TCP, "--zip-min", "10000", "--zip-max", "10003"],
    );
    let weather_endpoint = weather.bound("");
    // The task source is this test: a PUSH socket, as taskvent's.
    let ctx = zmq::Context::new();
    let ventilator = ctx.socket(zmq::PUSH).unwrap();
    ventilator.set_sndtimeo(30_000).unwrap();
    ventilator.bind(TCP).unwrap();
    let tasks = ventilator.get_last_endpoint().unwrap().unwrap();
    let poller = Proc::start(
        "mspoller",
        &mut example!("mspoller"),
        &[
            "--ventilator",
            &tasks,
            "--weather",
            &weather_endpoint,
            "--tasks",
            "5",
            "--updates",
            "5",
        ],
    );
    for i in 0..5 {
        ventilator.send(format!("{i}"), 0).unwrap();
    }
    let out = poller.success();
    let tasks: Vec<_> = out.lines_starting("task: ");
    assert_eq!(
        tasks,
        ["task: 0", "task: 1", "task: 2", "task: 3", "task: 4"]
    );
    let updates = out.lines_starting("weather: 10001 ");
    assert!(updates.len() >= 5, "{out:#?}");
    assert_eq!(updates.len(), out.lines_starting("weather: ").len());
}

fn fabric(provider: &str, size: &str) {
    let out = Proc::start(
        "fabric",
        &mut example!("fabric"),
        &[
            "--provider",
            provider,
            "--workers",
            "3",
            "--tasks",
            "200",
            "--size",
            size,
        ],
    )
    .success();
    assert_eq!(out.lines_starting("checksum OK: ").len(), 1, "{out:#?}");
}

#[test]
fn divide_and_conquer_over_ofi_tcp() {
    // 70 000 bytes: each task spans two fabric pages.
    fabric("tcp", "70000");
}

#[test]
fn divide_and_conquer_over_ofi_shm() {
    fabric("shm", "1000");
}

#[test]
fn paranoid_pirate_routes_around_a_crashed_worker() {
    let queue = Proc::start(
        "ppqueue",
        &mut example!("ppqueue"),
        &["--frontend", TCP, "--backend", TCP, "--heartbeat-ms", "250"],
    );
    let (frontend, backend) = (queue.bound("frontend"), queue.bound("backend"));
    let workers: Vec<_> = ["--crash-at", "--steady"]
        .into_iter()
        .map(|behaviour| {
            let mut args = vec!["--connect", &backend, "--heartbeat-ms", "250"];
            args.extend(["--work-ms", "0", behaviour]);
            if behaviour == "--crash-at" {
                args.push("2");
            }
            let w = Proc::start("ppworker", &mut example!("ppworker"), &args);
            w.line_where(|l| l.ends_with("worker ready"));
            w
        })
        .collect();
    let out = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &frontend,
            "--count",
            "10",
            "--timeout-ms",
            "500",
            "--retries",
            "10",
        ],
    )
    .success();
    let expected: Vec<String> = (1..=10)
        .map(|i| format!("I: server replied OK ({i})"))
        .collect();
    assert_eq!(out.lines_starting("I: server replied OK"), expected);
    let mut workers = workers.into_iter();
    let crashed = workers.next().unwrap().success();
    assert!(
        crashed
            .stdout
            .iter()
            .any(|l| l.ends_with("simulating a crash")),
        "{crashed:#?}"
    );
}

#[test]
fn paranoid_pirate_worker_reconnects_to_a_restarted_queue() {
    let first = Proc::start(
        "ppqueue",
        &mut example!("ppqueue"),
        &["--frontend", TCP, "--backend", TCP, "--heartbeat-ms", "250"],
    );
    let (frontend, backend) = (first.bound("frontend"), first.bound("backend"));
    let worker = Proc::start(
        "ppworker",
        &mut example!("ppworker"),
        &[
            "--connect",
            &backend,
            "--heartbeat-ms",
            "250",
            "--reconnect-ms",
            "100",
            "--work-ms",
            "0",
            "--steady",
        ],
    );
    worker.line_where(|l| l.ends_with("worker ready"));
    drop(first); // the queue dies
    worker.line_where(|l| l.ends_with("heartbeat failure, can't reach queue"));
    let second = Proc::start(
        "ppqueue",
        &mut example!("ppqueue"),
        &[
            "--frontend",
            &frontend,
            "--backend",
            &backend,
            "--heartbeat-ms",
            "250",
        ],
    );
    assert_eq!(second.bound("frontend"), frontend);
    let out = Proc::start(
        "lpclient",
        &mut example!("lpclient"),
        &[
            "--connect",
            &frontend,
            "--count",
            "3",
            "--timeout-ms",
            "1000",
            "--retries",
            "20",
        ],
    )
    .success();
    assert_eq!(
        out.lines_starting("I: server replied OK").len(),
        3,
        "{out:#?}"
    );
}

#[test]
fn majordomo_echo_service() {
    let broker = Proc::start(
        "mdbroker",
        &mut example!("mdbroker"),
        &["--bind", TCP, "--heartbeat-ms", "1000"],
    );
    let endpoint = broker.bound("");
    let lookup = |service: &str| {
        Proc::start(
            "mmiecho",
            &mut example!("mmiecho"),
            &[service, "--connect", &endpoint],
        )
        .success()
        .stdout
    };
    assert_eq!(lookup("echo"), ["Lookup echo service: 404"]);
    let worker = |count: &str| {
        Proc::start(
            "mdworker",
            &mut example!("mdworker"),
            &[
                "--connect",
                &endpoint,
                "--heartbeat-ms",
                "1000",
                "--count",
                count,
            ],
        )
    };
    let workers = [worker("10"), worker("10")];
    // Each worker is known once its READY has reached the broker.
    let deadline = std::time::Instant::now() + common::WAIT;
    while lookup("echo") != ["Lookup echo service: 200"] {
        assert!(std::time::Instant::now() < deadline, "no echo workers");
    }
    let out = Proc::start(
        "mdclient",
        &mut example!("mdclient"),
        &["--connect", &endpoint, "--count", "20"],
    )
    .success();
    assert_eq!(out.stdout, ["20 requests/replies processed"]);
    // Between them the workers served all 20, 10 each (each stops after
    // its 10th).
    for w in workers {
        assert_eq!(w.success().stdout, ["10 requests served"]);
    }
    assert_eq!(lookup("mmi.nosuch"), ["Lookup mmi.nosuch service: 404"]);
}

#[test]
fn espresso_captures_both_directions_of_a_proxy() {
    let out = Proc::start(
        "espresso",
        &mut example!("espresso"),
        &["--count", "5", "--interval-ms", "1"],
    )
    .success();
    assert!(out.has_line("subscriber received 5 messages"), "{out:#?}");
    // The listener saw both directions, in order: upstream a subscription
    // (0x01 then the topic, "0141" for A), then downstream the messages on
    // that topic ("A-NNNNN").
    let mut subscribed = Vec::new();
    let mut messages = 0;
    for line in &out.stdout {
        if let Some(topic) = line.strip_prefix("captured [002] 01") {
            subscribed.push(if topic == "41" { 'A' } else { 'B' });
        } else if let Some(msg) = line.strip_prefix("captured [007] ") {
            let topic = msg.chars().next().unwrap();
            assert!(subscribed.contains(&topic), "{msg} before its subscription");
            messages += 1;
        }
    }
    assert!(messages >= 5, "{out:#?}");
}

#[test]
fn last_value_cache_answers_a_late_subscriber() {
    let cache = Proc::start(
        "lvcache",
        &mut example!("lvcache"),
        &["--frontend", TCP, "--backend", TCP],
    );
    let (frontend, backend) = (cache.bound("frontend"), cache.bound("backend"));
    let publisher = Proc::start(
        "pathopub",
        &mut example!("pathopub"),
        &[
            "--connect",
            &frontend,
            "--topics",
            "10",
            "--interval-ms",
            "1",
        ],
    );
    // Once the cache holds all ten topics the publisher goes away ...
    for _ in 0..10 {
        cache.line_where(|l| l.starts_with("I: caching topic "));
    }
    drop(publisher);
    // ... and subscribers still get each topic's last value, from the cache.
    for topic in ["003", "007", "007"] {
        let out = Proc::start(
            "pathosub",
            &mut example!("pathosub"),
            &[topic, "--connect", &backend, "--count", "1"],
        )
        .success();
        assert!(
            out.has_line("Save Roger") || out.has_line("Off with his head!"),
            "{out:#?}"
        );
    }
}

#[test]
fn freelance_client_fails_over_to_a_live_server() {
    // A port the system just handed out and took back: nothing listens.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("tcp://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let server = Proc::start(
        "flserver1",
        &mut example!("flserver1"),
        &[TCP, "--count", "1"],
    );
    let live = server.bound("");
    let out = Proc::start(
        "flclient1",
        &mut example!("flclient1"),
        &[&dead, &live, "--timeout-ms", "300"],
    )
    .success();
    assert_eq!(
        out.stdout,
        [
            format!("I: trying echo service at {dead}..."),
            format!("I: trying echo service at {live}..."),
            "Service is running OK".to_string(),
        ]
    );
    server.success();
    // With only the dead one, it gives up after its retries.
    let out = Proc::start(
        "flclient1",
        &mut example!("flclient1"),
        &[&dead, "--timeout-ms", "100", "--retries", "2"],
    )
    .finish();
    assert!(!out.status.success());
    assert_eq!(out.lines_starting("I: trying").len(), 2);
    assert!(out.has_line("E: no service available"));
}

#[test]
fn round_trips_synchronous_and_asynchronous() {
    let out = Proc::start("tripping", &mut example!("tripping"), &["--count", "200"]).success();
    let rates = out.lines_starting(" ");
    assert_eq!(rates.len(), 2, "{out:#?}");
    for rate in rates {
        assert!(rate.ends_with(" calls/second"), "{rate}");
    }
}

/// A fresh ipc endpoint name for this process: the Freelance model three
/// server is addressed by the endpoint it was given, so the test chooses
/// it (no port to read back).
fn unique_ipc(name: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "fabriq-zguide-{name}-{}-{n}.ipc",
        std::process::id()
    ));
    format!("ipc://{}", path.display())
}

#[test]
fn freelance_model_three_uses_the_server_that_answers_pings() {
    let (dead, live) = (unique_ipc("fl3-dead"), unique_ipc("fl3-live"));
    let server = Proc::start(
        "flserver3",
        &mut example!("flserver3"),
        &["--bind", &live, "--identity", &live],
    );
    assert_eq!(server.bound(""), live);
    let out = Proc::start(
        "flclient3",
        &mut example!("flclient3"),
        &[&dead, &live, "--count", "50", "--ping-ms", "100"],
    )
    .success();
    assert_eq!(
        out.lines_starting("Average round trip cost: ").len(),
        1,
        "{out:#?}"
    );
    // With no server at all, the first request times out.
    let out = Proc::start(
        "flclient3",
        &mut example!("flclient3"),
        &[
            &dead,
            "--count",
            "1",
            "--ping-ms",
            "100",
            "--timeout-ms",
            "300",
        ],
    )
    .finish();
    assert!(!out.status.success());
    assert!(
        out.has_line("E: name service not available, aborting"),
        "{out:#?}"
    );
    // The killed server leaves its socket file behind.
    drop(server);
    let _ = std::fs::remove_file(live.trim_start_matches("ipc://"));
}

#[test]
fn clone_model_two_snapshot_then_updates_without_gaps() {
    let server = Proc::start(
        "clonesrv2",
        &mut example!("clonesrv2"),
        &[
            "--snapshot",
            TCP,
            "--publisher",
            TCP,
            "--interval-ms",
            "1",
            "--keys",
            "100",
        ],
    );
    let (snapshot, publisher) = (server.bound("snapshot"), server.bound("publisher"));
    let client = || {
        Proc::start(
            "clonecli2",
            &mut example!("clonecli2"),
            &[
                "--snapshot",
                &snapshot,
                "--subscriber",
                &publisher,
                "--count",
                "50",
            ],
        )
        .success()
    };
    let first = client();
    let second = client();
    for out in [&first, &second] {
        assert!(out.lines_starting("E:").is_empty(), "{out:#?}");
        let applied = out.lines_starting("50 updates applied, last sequence ");
        assert_eq!(applied.len(), 1, "{out:#?}");
    }
    // The second client started after the first had seen 50 updates: its
    // snapshot holds some state, and is later than the first's.
    let snapshot_at = |out: &common::Finished| -> u64 {
        let line = out.lines_starting("Received snapshot=").pop().unwrap();
        line["Received snapshot=".len()..].parse().unwrap()
    };
    assert!(snapshot_at(&second) >= snapshot_at(&first) + 50);
    let keys = second
        .lines_starting("")
        .into_iter()
        .find(|l| l.ends_with(" keys in the snapshot"));
    let keys: usize = keys.unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..=100).contains(&keys), "{second:#?}");
}

// The async_* programs: the same zguide examples on tokio with
// fabriq::asynchronous, run and checked as their synchronous originals,
// and each against a synchronous peer where the example has one.

#[test]
fn async_hello_world() {
    let server = Proc::start(
        "async_hwserver",
        &mut example!("async_hwserver"),
        &["--bind", TCP, "--count", "5", "--work-ms", "0"],
    );
    let endpoint = server.bound("");
    let client = Proc::start(
        "async_hwclient",
        &mut example!("async_hwclient"),
        &["--connect", &endpoint, "--count", "5"],
    );
    let out = client.success();
    let replies = out.lines_starting("Received World ");
    assert_eq!(replies.len(), 5, "{out:#?}");
    assert_eq!(replies[4], "Received World 4");
    let served = server.success();
    assert_eq!(
        served.lines_starting("Received Hello").len(),
        5,
        "{served:#?}"
    );
}

#[test]
fn async_hello_world_client_against_the_synchronous_server() {
    let server = Proc::start(
        "hwserver",
        &mut example!("hwserver"),
        &["--bind", "ipc://*", "--count", "3", "--work-ms", "0"],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "async_hwclient",
        &mut example!("async_hwclient"),
        &["--connect", &endpoint, "--count", "3"],
    )
    .success();
    assert_eq!(out.lines_starting("Received World ").len(), 3, "{out:#?}");
    server.success();
}

#[test]
fn async_divide_and_conquer() {
    let sink = Proc::start(
        "tasksink",
        &mut example!("tasksink"),
        &["--bind", TCP, "--tasks", "30"],
    );
    let sink_endpoint = sink.bound("");
    let mut ventilator = Proc::start(
        "taskvent",
        &mut example!("taskvent"),
        &[
            "--bind",
            TCP,
            "--sink",
            &sink_endpoint,
            "--tasks",
            "30",
            "--max-ms",
            "5",
        ],
    );
    let tasks = ventilator.bound("");
    let _workers: Vec<_> = (0..3)
        .map(|_| {
            Proc::start(
                "async_taskwork",
                &mut example!("async_taskwork"),
                &["--ventilator", &tasks, "--sink", &sink_endpoint],
            )
        })
        .collect();
    ventilator.line_where(|l| l.starts_with("Press Enter"));
    ventilator.send_line("");
    let vent = ventilator.success();
    assert_eq!(vent.lines_starting("Total expected cost: ").len(), 1);
    // The sink exits only once it has all 30 results.
    let out = sink.success();
    assert_eq!(out.stdout[0].len(), 30, "one mark per result: {out:#?}");
    assert_eq!(out.lines_starting("Total elapsed time: ").len(), 1);
}

#[test]
fn async_task_worker_stops_after_its_count() {
    // One worker, five tasks: with --count 5 its stream ends and it exits.
    let sink = Proc::start(
        "tasksink",
        &mut example!("tasksink"),
        &["--bind", TCP, "--tasks", "5"],
    );
    let sink_endpoint = sink.bound("");
    let mut ventilator = Proc::start(
        "taskvent",
        &mut example!("taskvent"),
        &[
            "--bind",
            TCP,
            "--sink",
            &sink_endpoint,
            "--tasks",
            "5",
            "--max-ms",
            "3",
        ],
    );
    let tasks = ventilator.bound("");
    let worker = Proc::start(
        "async_taskwork",
        &mut example!("async_taskwork"),
        &[
            "--ventilator",
            &tasks,
            "--sink",
            &sink_endpoint,
            "--count",
            "5",
        ],
    );
    ventilator.line_where(|l| l.starts_with("Press Enter"));
    ventilator.send_line("");
    ventilator.success();
    let out = worker.success();
    assert_eq!(out.stdout[0].matches('.').count(), 5, "{out:#?}");
    let out = sink.success();
    assert_eq!(out.stdout[0].len(), 5, "{out:#?}");
}

#[test]
fn async_load_balancing_broker() {
    let out = Proc::start(
        "async_lbbroker",
        &mut example!("async_lbbroker"),
        &[
            "--frontend",
            "ipc://*",
            "--backend",
            "ipc://*",
            "--clients",
            "6",
            "--workers",
            "3",
        ],
    )
    .success();
    let mut clients = out.lines_starting("Client-");
    clients.sort();
    let expected: Vec<String> = (0..6).map(|i| format!("Client-{i}: OK")).collect();
    assert_eq!(clients, expected, "{out:#?}");
    let served = out.lines_starting("Worker-");
    assert_eq!(served.len(), 6, "{out:#?}");
    assert!(served.iter().all(|l| l.ends_with(": HELLO")), "{out:#?}");
}

#[test]
fn async_asynchronous_client_server() {
    let out = Proc::start(
        "async_asyncsrv",
        &mut example!("async_asyncsrv"),
        &[
            "--bind",
            TCP,
            "--clients",
            "3",
            "--workers",
            "2",
            "--requests",
            "3",
            "--replies",
            "2",
            "--tick-ms",
            "1",
        ],
    )
    .success();
    let done: Vec<_> = out
        .stdout
        .iter()
        .filter(|l| l.ends_with(": done, 6 replies"))
        .collect();
    assert_eq!(done.len(), 3, "{out:#?}");
    // Each reply echoes one of the client's own requests.
    for line in out.stdout.iter().filter(|l| !l.contains("done")) {
        assert!(line.contains(": request #"), "{line}");
    }
}

#[test]
fn async_lazy_pirate_survives_a_server_restart() {
    let first = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", TCP, "--work-ms", "0", "--crash-at", "4"],
    );
    let endpoint = first.bound("");
    let client = Proc::start(
        "async_lpclient",
        &mut example!("async_lpclient"),
        &[
            "--connect",
            &endpoint,
            "--count",
            "8",
            "--timeout-ms",
            "300",
            "--retries",
            "50",
        ],
    );
    let crashed = first.success();
    assert!(crashed.has_line("I: simulating a crash"), "{crashed:#?}");
    // A new server on the same port; the client's retries find it.
    let second = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", &endpoint, "--work-ms", "0", "--steady"],
    );
    assert_eq!(second.bound(""), endpoint);
    let out = client.success();
    let ok: Vec<_> = out.lines_starting("I: server replied OK");
    let expected: Vec<String> = (1..=8)
        .map(|i| format!("I: server replied OK ({i})"))
        .collect();
    assert_eq!(ok, expected, "{out:#?}");
    assert!(
        out.has_line("W: no response from server, retrying..."),
        "{out:#?}"
    );
}

#[test]
fn async_lazy_pirate_abandons_a_dead_server() {
    let server = Proc::start(
        "lpserver",
        &mut example!("lpserver"),
        &["--bind", TCP, "--work-ms", "0", "--crash-at", "2"],
    );
    let endpoint = server.bound("");
    let out = Proc::start(
        "async_lpclient",
        &mut example!("async_lpclient"),
        &[
            "--connect",
            &endpoint,
            "--count",
            "5",
            "--timeout-ms",
            "200",
            "--retries",
            "2",
        ],
    )
    .finish();
    assert!(!out.status.success());
    assert!(out.has_line("I: server replied OK (1)"), "{out:#?}");
    assert!(
        out.has_line("E: server seems to be offline, abandoning"),
        "{out:#?}"
    );
}
