//! `fabriq bench`: the benchmark through the CLI, including its workers
//! (which re-execute `fabriq bench worker ...`).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fabriq");

#[test]
fn bench_help_lists_the_modes() {
    let out = Command::new(BIN)
        .args(["bench", "--help"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "--quick",
        "--smoke",
        "--pattern",
        "report",
        "--fabric",
        "fi_pingpong",
    ] {
        assert!(text.contains(word), "missing {word}:\n{text}");
    }
}

#[test]
fn bench_runs_its_workers_through_the_cli() {
    let json = std::env::temp_dir().join(format!("fabriq-cli-bench-{}.json", std::process::id()));
    let out = Command::new(BIN)
        .args([
            "bench",
            "--smoke",
            "--no-perf",
            "--no-plots",
            "--pattern",
            "reqrep",
        ])
        .args(["--transport", "tcp", "--sizes", "1", "--out"])
        .arg(&json)
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&json);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("reqrep/tcp/1"));
}

#[test]
fn bench_runs_a_fabric_scenario_through_the_cli() {
    let json = std::env::temp_dir().join(format!("fabriq-cli-fabric-{}.json", std::process::id()));
    let out = Command::new(BIN)
        .args(["bench", "--smoke", "--no-perf", "--no-plots", "--fabric"])
        .args(["--transport", "ofi+shm", "--pattern", "reqrep", "--out"])
        .arg(&json)
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("reqrep/ofi+shm/64"), "{stdout}");
    assert!(stdout.contains("R fabriq ipc"), "{stdout}");
}
