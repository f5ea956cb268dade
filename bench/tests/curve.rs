//! The CURVE scenarios through the real binary: every library runs them
//! (libzmq as Debian's libzmq5 with CURVE, loaded at run time), each side
//! says it ran CURVE, and a client with the wrong server key does not get
//! through the handshake scenario on any library (while the right key
//! does). Needs libzmq5 installed (scripts/test installs it).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use clap::Parser;
use fabriq_bench::cli::BenchCli;
use fabriq_bench::results::Results;
use fabriq_bench::scenario::{plan, FabricVariant, Impl, Pattern, Scenario, Slot, Transport};
use fabriq_bench::security::CurveKeys;
use fabriq_bench::worker::{Role, WorkerReport, WorkerSpec};

const BIN: &str = env!("CARGO_BIN_EXE_fabriq-bench");

/// The longest any one line from a worker may take.
const LINE_WAIT: Duration = Duration::from_secs(30);

#[test]
fn curve_scenarios_run_curve_on_every_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("r.json");
    let args = ["--smoke", "--pattern", "curve,curve-handshake"];
    let out = Command::new(BIN)
        .args(args)
        .args(["--no-perf", "--deadline", "60", "--out"])
        .arg(&json)
        .output()
        .expect("run fabriq-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("libzmq5"), "{stdout}");

    let results = Results::load(&json).expect("results JSON");
    let cli = BenchCli::try_parse_from(std::iter::once("fabriq-bench").chain(args)).expect("args");
    let want: Vec<String> = plan(&cli.run).iter().map(|s| s.key()).collect();
    let keys: Vec<String> = results.scenarios.iter().map(|s| s.key.clone()).collect();
    assert_eq!(keys, want);
    for k in [
        "curve/tcp/64",
        "curve/tcp/256",
        "curve/tcp/1024",
        "curve/tcp/16384",
        "curve/tcp/65536",
        "curve-handshake/tcp/64",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k} missing: {keys:?}");
    }
    for sr in &results.scenarios {
        assert!(sr.scenario.pattern.is_curve(), "{}", sr.key);
        assert!(
            sr.trials.iter().all(|t| t.slot != Slot::Floor),
            "{}: no raw floor under CURVE",
            sr.key
        );
        for slot in [Slot::A, Slot::B, Slot::C, Slot::A2, Slot::C2] {
            let t = sr
                .trials
                .iter()
                .find(|t| t.slot == slot)
                .unwrap_or_else(|| panic!("{} has no {slot:?} trial", sr.key));
            assert!(t.ok, "{} {slot:?}: {:?}", sr.key, t.error);
            let m = t.metrics.as_ref().expect("metrics");
            assert!(m.msg_per_s > 0.0, "{} {slot:?}: {m:?}", sr.key);
            assert_eq!(t.workers.len(), 2, "{} {slot:?}", sr.key);
            for w in &t.workers {
                let note = w.security.as_deref().unwrap_or_else(|| {
                    panic!("{} {slot:?} {:?}: no mechanism reported", sr.key, w.role)
                });
                let side = match w.role {
                    Role::Receiver | Role::Server => "CURVE server",
                    _ => "CURVE client",
                };
                assert!(note.contains(side), "{} {slot:?}: {note}", sr.key);
                match t.implementation {
                    Impl::Libzmq => {
                        assert!(
                            note.starts_with("libzmq 4.3.4 from ")
                                && note.contains("libzmq.so.5")
                                && note.contains("zmq_has(\"curve\") = 1")
                                && note.contains("ZMQ_MECHANISM = 2"),
                            "{note}"
                        );
                    }
                    Impl::Fabriq => assert!(note.contains("ZMQ_CURVE"), "{note}"),
                    Impl::Omq => assert!(note.starts_with("omq CURVE"), "{note}"),
                    other => panic!("{other:?} in a CURVE scenario"),
                }
            }
        }
        if sr.scenario.pattern == Pattern::CurveHandshake {
            let t = sr.trials.iter().find(|t| t.slot == Slot::B).expect("B");
            let m = t.metrics.as_ref().expect("metrics");
            assert!(m.latency.as_ref().is_some_and(|l| l.p50_ns > 0));
        }
    }

    let md = dir.path().join("perf.md");
    let out = Command::new(BIN)
        .arg("report")
        .arg(&json)
        .arg("--out")
        .arg(&md)
        .arg("--notes")
        .arg(dir.path().join("no-notes.md"))
        .output()
        .expect("run report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).expect("report written");
    assert!(text.contains("| curve/tcp/64 ("), "{text}");
    assert!(text.contains("| handshakes/s |"), "{text}");
    assert!(text.contains("CURVE handshakes per second"), "{text}");
    assert!(text.contains("zmq_has(\"curve\") = 1"), "{text}");
}

/// A worker process with its stdout lines on a channel.
struct Worker {
    child: Child,
    lines: Receiver<String>,
}

impl Worker {
    fn start(spec: &WorkerSpec) -> Worker {
        let mut child = Command::new(BIN)
            .arg("worker")
            .arg(serde_json::to_string(spec).expect("spec JSON"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start worker");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Worker { child, lines }
    }

    fn line(&self) -> String {
        self.lines
            .recv_timeout(LINE_WAIT)
            .expect("a line from the worker in time")
    }

    fn report(&self) -> WorkerReport {
        serde_json::from_str(&self.line()).expect("a report line")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spec(
    implementation: Impl,
    role: Role,
    count: u64,
    keys: &CurveKeys,
    endpoints: Vec<String>,
) -> WorkerSpec {
    WorkerSpec {
        role,
        implementation,
        scenario: Scenario {
            pattern: Pattern::CurveHandshake,
            transport: Transport::Tcp,
            size: 64,
            subs: 1,
            count,
            warm: 0,
            reps: 1,
            variant: FabricVariant::Default,
        },
        endpoints,
        cpus: Vec::new(),
        cpus_peer: Vec::new(),
        stall_ms: 1500,
        curve: Some(keys.clone()),
    }
}

/// One server and one client of `implementation`; the client knows
/// `client_keys` (its own pair and the server key it believes in).
fn handshake(implementation: Impl, keys: &CurveKeys, client_keys: &CurveKeys) -> WorkerReport {
    let server = Worker::start(&spec(implementation, Role::Server, 2, keys, Vec::new()));
    let bound = server.line();
    let ep = bound
        .strip_prefix("BOUND ")
        .unwrap_or_else(|| panic!("{implementation:?} server: {bound}"))
        .to_string();
    let client = Worker::start(&spec(
        implementation,
        Role::Client,
        2,
        client_keys,
        vec![ep],
    ));
    client.report()
}

#[test]
fn a_wrong_server_key_does_not_get_through_on_any_library() {
    let keys = CurveKeys::generate().expect("keys");
    let other = CurveKeys::generate().expect("keys");
    let wrong = CurveKeys {
        server_public: other.server_public.clone(),
        ..keys.clone()
    };
    for implementation in [Impl::Fabriq, Impl::Libzmq, Impl::Omq] {
        let good = handshake(implementation, &keys, &keys);
        assert!(
            good.ok,
            "{implementation:?} with the right key: {:?}",
            good.error
        );
        assert_eq!(good.outcome.messages, 2);
        let bad = handshake(implementation, &keys, &wrong);
        assert!(
            !bad.ok,
            "{implementation:?}: a wrong server key got through"
        );
        let err = bad.error.unwrap_or_default();
        assert!(
            err.contains("the handshake did not complete"),
            "{implementation:?}: {err}"
        );
    }
}
