//! Debian's python3-zmq (pyzmq 24, linked against libzmq.so.5) unchanged
//! on fabriq: `LD_LIBRARY_PATH` points at the test prefix's `lib`. Also
//! against a real libzmq peer (a second Python process without the
//! variable, so on Debian's libzmq 4.3.4) and over `ofi+shm://` between
//! two Python processes on fabriq.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const PYTHON: &str = "/usr/bin/python3";

/// A Python process running `tests/py/SCRIPT`, on fabriq or on the
/// system's libzmq.
fn python(script: &str, on_fabriq: bool) -> Command {
    let mut cmd = Command::new(PYTHON);
    cmd.arg(common::crate_dir().join("tests/py").join(script))
        .env("PYTHONPATH", common::crate_dir().join("tests/py"))
        .env("FABRIQ_PREFIX", common::prefix())
        .env_remove("LD_PRELOAD");
    if on_fabriq {
        cmd.env("LD_LIBRARY_PATH", common::prefix().join("lib"));
    } else {
        cmd.env_remove("LD_LIBRARY_PATH");
    }
    cmd
}

#[test]
fn pyzmq_runs_unchanged() {
    common::run_ok(
        &mut python("basic.py", true),
        Duration::from_secs(60),
        "basic.py",
    );
}

#[test]
fn pyzmq_zero_copy_free_callbacks() {
    common::run_ok(
        &mut python("zerocopy.py", true),
        Duration::from_secs(60),
        "zerocopy.py",
    );
}

/// Runs a server and a client process; checks which library each loaded.
fn exchange(endpoint: &str, server_on_fabriq: bool, client_on_fabriq: bool) {
    let n = "200";
    let mut server = python("peer.py", server_on_fabriq)
        .args(["server", endpoint, n])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    // The server's first lines: its library and the endpoint bound.
    let stdout = server.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let bound = loop {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) else {
            let _ = server.kill();
            let out = server.wait_with_output().expect("output");
            panic!(
                "server gave no endpoint: {lines:?}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        if let Some(ep) = line.strip_prefix("endpoint ") {
            break ep.to_string();
        }
        lines.push(line);
    };
    let prefix = common::prefix().to_string_lossy().into_owned();
    assert_eq!(
        lines[0].contains(&prefix),
        server_on_fabriq,
        "server library: {lines:?}"
    );
    let client_out = common::run_ok(
        python("peer.py", client_on_fabriq).args(["client", &bound, n]),
        Duration::from_secs(60),
        "peer.py client",
    );
    let client_lib = client_out.lines().next().unwrap_or_default();
    assert_eq!(
        client_lib.contains(&prefix),
        client_on_fabriq,
        "{client_lib}"
    );
    let out = common::wait_limited(server, Duration::from_secs(30), "peer.py server");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)).ok().as_deref(),
        Some("ok")
    );
}

#[test]
fn fabriq_client_to_libzmq_server_over_tcp() {
    exchange("tcp://127.0.0.1:*", false, true);
}

#[test]
fn libzmq_client_to_fabriq_server_over_tcp() {
    exchange("tcp://127.0.0.1:*", true, false);
}

#[test]
fn fabriq_to_fabriq_over_ofi_shm() {
    exchange("ofi+shm://127.0.0.1:*", true, true);
}
