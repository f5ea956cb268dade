//! C programs of the zguide (tests/c/zguide: hwserver/hwclient,
//! wuserver/wuclient, taskvent/taskwork/tasksink, rrbroker with
//! rrclient/rrworker, mtserver), built with `pkg-config --cflags --libs
//! libzmq` against the prefix and run together as the zguide runs them,
//! each within a time limit. The servers bind ephemeral endpoints and
//! print them; the zguide's fixed ports are the only change besides
//! bounded loops (see the programs' comments). hwserver/hwclient also run
//! over `ofi+shm://` with only the endpoint string changed.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// Upper bound of each program's run and of each wait for a line.
const LIMIT: Duration = Duration::from_secs(60);

/// Compiles `tests/c/zguide/NAME.c` with the prefix's pkg-config flags,
/// once per test process (tests running at once share the program).
fn build(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let dir = common::prefix().join("zguide");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(name);
    let src = common::crate_dir().join(format!("tests/c/zguide/{name}.c"));
    let status = Command::new("cc")
        .args(["-std=gnu99", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&src)
        .args(common::pkg_config_libzmq())
        .arg(format!(
            "-Wl,-rpath,{}",
            common::prefix().join("lib").display()
        ))
        .arg("-pthread")
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed for {}", src.display());
    built.push((name.to_string(), out.clone()));
    out
}

/// A program running in the background, killed when dropped (the zguide's
/// servers and workers loop forever).
struct Background {
    child: Child,
    lines: mpsc::Receiver<String>,
    name: String,
}

impl Background {
    fn start(name: &str, args: &[&str]) -> Background {
        let mut child = Command::new(build(name))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let lines = read_lines(child.stdout.take().expect("piped stdout"));
        Background {
            child,
            lines,
            name: name.to_string(),
        }
    }

    /// The next line the program prints.
    fn line(&self) -> String {
        self.lines
            .recv_timeout(LIMIT)
            .unwrap_or_else(|e| panic!("{} printed nothing: {e}", self.name))
    }

    /// Writes a line to the program's standard input.
    fn enter(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("piped stdin");
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the program to exit by itself, successfully, printing
    /// `ok` last.
    fn finish(mut self) {
        let mut last = String::new();
        while let Ok(line) = self.lines.recv_timeout(LIMIT) {
            last = line;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} did not exit",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            status.success() && last == "ok",
            "{} failed ({status}), last line {last:?}",
            self.name
        );
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Runs a client to completion (`ok` last).
fn client(name: &str, args: &[&str]) {
    let program = build(name);
    common::run_ok(Command::new(&program).args(args), LIMIT, name);
}

fn hello_world(endpoint: &str) {
    let server = Background::start("hwserver", &[endpoint, "10"]);
    let at = server.line();
    client("hwclient", &[&at]);
    server.finish();
}

#[test]
fn hwserver_and_hwclient() {
    hello_world("tcp://127.0.0.1:*");
}

#[test]
fn hwserver_and_hwclient_over_ofi_shm() {
    hello_world("ofi+shm://127.0.0.1:*");
}

#[test]
fn wuserver_and_wuclient() {
    let server = Background::start("wuserver", &["tcp://127.0.0.1:*"]);
    let at = server.line();
    client("wuclient", &[&at]);
}

#[test]
fn taskvent_taskwork_and_tasksink() {
    let sink = Background::start("tasksink", &["tcp://127.0.0.1:*"]);
    let sink_at = sink.line();
    let mut vent = Background::start("taskvent", &["tcp://127.0.0.1:*", &sink_at]);
    let vent_at = vent.line();
    let workers: Vec<_> = (0..3)
        .map(|_| Background::start("taskwork", &[&vent_at, &sink_at]))
        .collect();
    for w in &workers {
        assert_eq!(w.line(), "ready");
    }
    // "Press Enter when the workers are ready".
    vent.enter();
    vent.finish();
    sink.finish();
}

#[test]
fn rrbroker_with_rrclient_and_rrworker() {
    let broker = Background::start("rrbroker", &["tcp://127.0.0.1:*", "tcp://127.0.0.1:*"]);
    let (frontend, backend) = (broker.line(), broker.line());
    let _workers: Vec<_> = (0..2)
        .map(|_| Background::start("rrworker", &[&backend]))
        .collect();
    for _ in 0..2 {
        client("rrclient", &[&frontend]);
    }
}

#[test]
fn mtserver_with_hwclients() {
    let server = Background::start("mtserver", &["tcp://127.0.0.1:*"]);
    let at = server.line();
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let at = at.clone();
            std::thread::spawn(move || client("hwclient", &[&at]))
        })
        .collect();
    for c in clients {
        c.join().expect("a client failed");
    }
}
