//! The bench in smoke size: every scenario and implementation runs once
//! with tiny counts, the results JSON is complete and error-free, and
//! `report` renders it. No timing is asserted: figures come from full runs.

use std::process::Command;

use clap::Parser;
use fabriq_bench::cli::BenchCli;
use fabriq_bench::results::Results;
use fabriq_bench::scenario::{plan, Slot};
use fabriq_bench::stats::Metric;

const BIN: &str = env!("CARGO_BIN_EXE_fabriq-bench");

#[test]
fn smoke_run_covers_every_scenario_and_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("r.json");
    let out = Command::new(BIN)
        .args(["--smoke", "--no-perf", "--out"])
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
    assert!(stdout.contains("A'/A"), "{stdout}");
    assert!(
        stdout.contains("C omq") && stdout.contains("C'/C"),
        "the omq column: {stdout}"
    );
    assert!(stdout.contains("placement: unpinned"), "{stdout}");

    let results = Results::load(&json).expect("results JSON");
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--smoke"]).expect("args");
    let expected = plan(&cli.run);
    let keys: Vec<String> = results.scenarios.iter().map(|s| s.key.clone()).collect();
    let want: Vec<String> = expected.iter().map(|s| s.key()).collect();
    assert_eq!(keys, want);
    assert!(
        keys.iter().all(|k| !k.contains("ofi")),
        "the default run has no fabric scenario: {keys:?}"
    );
    for sr in &results.scenarios {
        for slot in sr.scenario.slots(true, true, true) {
            let trial = sr
                .trials
                .iter()
                .find(|t| t.slot == slot)
                .unwrap_or_else(|| panic!("{} has no {slot:?} trial", sr.key));
            assert!(trial.ok, "{} {slot:?}: {:?}", sr.key, trial.error);
            let m = trial.metrics.as_ref().expect("metrics");
            assert!(
                m.messages > 0 && m.msg_per_s > 0.0,
                "{} {slot:?}: {m:?}",
                sr.key
            );
            if !sr.scenario.is_throughput() {
                assert!(
                    m.latency.as_ref().is_some_and(|l| l.p50_ns > 0),
                    "{}",
                    sr.key
                );
            }
            assert_eq!(
                m.per_receiver_msg_per_s.len(),
                if sr.scenario.is_throughput() {
                    sr.scenario.subs
                } else {
                    1
                },
                "{}",
                sr.key
            );
        }
    }
    assert!(!results.machine.libzmq.is_empty());
    assert!(results.machine.omq.starts_with("omq-tokio 0."));
    assert_eq!(results.config.placement, "unpinned");
    assert!(results.config.omq);

    let md = dir.path().join("doc").join("perf.md");
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
    for heading in [
        "## Machine",
        "## Method",
        "## Results",
        "## Targets",
        "## What each optimisation bought",
    ] {
        assert!(text.contains(heading), "missing {heading}");
    }
    assert!(
        text.contains("Preliminary"),
        "a smoke run is labelled preliminary"
    );
    assert!(
        text.contains("**placement: unpinned**"),
        "placement in the header"
    );
    assert!(
        text.contains("| C omq |") && text.contains("| B/C |"),
        "omq columns"
    );
    let svg = std::fs::read_to_string(dir.path().join("doc/perf/throughput-pushpull-tcp.svg"))
        .expect("plot written");
    assert!(svg.contains("<text"), "plot has text");
}

#[test]
fn filters_select_scenarios_and_an_empty_selection_is_an_error() {
    let out = Command::new(BIN)
        .args([
            "--smoke",
            "--pattern",
            "reqrep",
            "--subs",
            "1",
            "--sizes",
            "1",
            "--transport",
            "inproc",
            "--no-floor",
            "--out",
        ])
        .arg(std::env::temp_dir().join(format!("fabriq-bench-filter-{}.json", std::process::id())))
        .output()
        .expect("run");
    // reqrep/inproc/1 exists: this selects exactly one scenario and works.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .args([
            "--quick",
            "--pattern",
            "pubsub",
            "--out",
            "/nonexistent/never.json",
        ])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(1),
        "quick mode has no pubsub scenario"
    );
}

/// `--smoke --fabric`: every fabric scenario once, tiny counts; every B, R
/// and B' trial gives numbers, and fi_pingpong's P trials too where it is
/// installed (else the table says "not installed" and there are none).
#[test]
fn fabric_smoke_run_covers_every_fabric_scenario() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("fabric.json");
    let out = Command::new(BIN)
        .args(["--smoke", "--fabric", "--no-perf", "--out"])
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
    for col in [
        "B fabriq ofi+shm",
        "R fabriq ipc",
        "P fi_pingpong shm",
        "B/R ofi+shm/ipc",
        "B/P ofi+shm/pingpong",
        "F libfabric shm",
        "B/F ofi+shm/floor",
        "B fabriq ofi+tcp",
        "R fabriq tcp",
        "P fi_pingpong tcp",
        "B'/B (noise)",
        "1-way mean us",
    ] {
        assert!(stdout.contains(col), "missing {col:?}: {stdout}");
    }
    assert!(!stdout.contains("A libzmq"), "no ZeroMQ table: {stdout}");

    let results = Results::load(&json).expect("results JSON");
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--smoke", "--fabric"]).expect("args");
    let want: Vec<String> = plan(&cli.run).iter().map(|s| s.key()).collect();
    let keys: Vec<String> = results.scenarios.iter().map(|s| s.key.clone()).collect();
    assert_eq!(keys, want);
    assert!(keys.contains(&"reqrep/ofi+shm/64".to_string()), "{keys:?}");
    assert!(
        keys.contains(&"pushpull/ofi+tcp/1048576".to_string()),
        "{keys:?}"
    );
    assert!(keys.contains(&"pubsub4/ofi+shm/64".to_string()), "{keys:?}");
    let pingpong = !results.config.fi_pingpong.starts_with("not installed");
    if !pingpong {
        assert!(stdout.contains("not installed"), "{stdout}");
    }
    for sr in &results.scenarios {
        for slot in sr.scenario.slots(true, true, true) {
            let trial = sr.trials.iter().find(|t| t.slot == slot);
            if slot == Slot::Pingpong && !pingpong {
                assert!(trial.is_none(), "{}: a P trial without fi_pingpong", sr.key);
                continue;
            }
            let trial = trial.unwrap_or_else(|| panic!("{} has no {slot:?} trial", sr.key));
            assert!(trial.ok, "{} {slot:?}: {:?}", sr.key, trial.error);
            let m = trial.metrics.as_ref().expect("metrics");
            assert!(
                m.messages > 0 && m.msg_per_s > 0.0 && m.mb_per_s > 0.0,
                "{} {slot:?}: {m:?}",
                sr.key
            );
            if !sr.scenario.is_throughput() {
                let one_way = Metric::OneWayMean.value(m);
                assert!(one_way.is_some_and(|us| us > 0.0), "{} {slot:?}", sr.key);
            }
            if slot == Slot::Floor {
                // The raw libfabric floor runs in worker processes, one
                // per peer (a publisher and each subscriber).
                assert_eq!(
                    trial.workers.len(),
                    1 + sr.scenario.subs.max(1),
                    "{}",
                    sr.key
                );
            }
            if slot == Slot::Pingpong {
                assert!(
                    trial.log.iter().any(|l| l.contains("-e rdm")),
                    "{:?}",
                    trial.log
                );
            }
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
        .arg("--fabric-notes")
        .arg(dir.path().join("no-fabric-notes.md"))
        .output()
        .expect("run report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).expect("report written");
    assert!(text.contains("## Fabric"), "{text}");
    assert!(
        text.contains("| B fabriq ofi+shm | R fabriq ipc |"),
        "{text}"
    );
}

/// Without fi_pingpong the fabric floor says so: no crash, no number.
#[test]
fn fabric_floor_without_fi_pingpong_says_not_installed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("r.json");
    let out = Command::new(BIN)
        .args([
            "--smoke",
            "--no-perf",
            "--no-plots",
            "--transport",
            "ofi+shm",
            "--pattern",
            "reqrep",
            "--fi-pingpong",
            "/nonexistent/fi_pingpong",
            "--out",
        ])
        .arg(&json)
        .output()
        .expect("run fabriq-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("not installed"), "{stdout}");
    let results = Results::load(&json).expect("results JSON");
    assert!(results.config.fi_pingpong.starts_with("not installed"));
    let sr = &results.scenarios[0];
    assert_eq!(sr.key, "reqrep/ofi+shm/64");
    assert!(sr.trials.iter().all(|t| t.slot != Slot::Pingpong && t.ok));
}

/// A fi_pingpong that hangs is killed at the trial deadline, and its trial
/// is a failed trial (not a number, not a hung run).
#[test]
fn a_hanging_fi_pingpong_is_killed_at_the_deadline() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("fi_pingpong");
    std::fs::write(&fake, "#!/bin/sh\nsleep 1000\n").expect("write fake");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let json = dir.path().join("r.json");
    let out = Command::new(BIN)
        .args(["--smoke", "--no-perf", "--no-plots", "--no-calibration"])
        .args([
            "--transport",
            "ofi+shm",
            "--pattern",
            "reqrep",
            "--deadline",
            "3",
        ])
        .arg("--fi-pingpong")
        .arg(&fake)
        .arg("--out")
        .arg(&json)
        .output()
        .expect("run fabriq-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed trial fails the run: {stderr}"
    );
    assert!(stderr.contains("killed"), "{stderr}");
    let results = Results::load(&json).expect("results JSON");
    let p = results.scenarios[0]
        .trials
        .iter()
        .find(|t| t.slot == Slot::Pingpong)
        .expect("a P trial");
    assert!(!p.ok && p.metrics.is_none(), "{p:?}");
    assert!(
        p.error.as_deref().is_some_and(|e| e.contains("killed")),
        "{p:?}"
    );
}

/// The full run measures REQ/REP over tcp and ipc a second time with
/// busy-polling receives (fabriq `spin_us`, omq `recv_spin`); quick runs
/// do not. One short run of the tcp row: every trial succeeds.
#[test]
fn the_full_run_has_busy_polling_reqrep_rows_that_run() {
    let keys = |args: &[&str]| -> Vec<String> {
        let cli = BenchCli::try_parse_from(args).expect("args");
        plan(&cli.run).iter().map(|s| s.key()).collect()
    };
    let full = keys(&["fabriq-bench"]);
    for key in ["reqrep/tcp+busy/1", "reqrep/ipc+busy/1"] {
        assert!(full.contains(&key.to_string()), "{key}: {full:?}");
    }
    assert!(!keys(&["fabriq-bench", "--quick"])
        .iter()
        .any(|k| k.contains("+busy")));

    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("busy.json");
    let out = Command::new(BIN)
        .args([
            "--pattern",
            "reqrep",
            "--transport",
            "tcp",
            "--sizes",
            "1",
            "--reps",
            "1",
            "--trial-secs",
            "0.02",
            "--no-floor",
            "--no-calibration",
            "--no-plots",
            "--no-perf",
            "--out",
        ])
        .arg(&json)
        .output()
        .expect("run fabriq-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = Results::load(&json).expect("results JSON");
    let busy = results
        .scenarios
        .iter()
        .find(|s| s.key == "reqrep/tcp+busy/1")
        .expect("the busy row");
    assert!(!busy.trials.is_empty());
    for t in &busy.trials {
        assert!(t.ok, "{:?}: {:?}", t.slot, t.error);
    }
}

/// The full fabric run fans out over ofi+shm and ofi+tcp to 1, 4 and 16
/// subscribers at 64 B and 64 KiB (issue 31's PUB/SUB rows), each with
/// its raw libfabric floor; quick runs leave PUB/SUB out.
#[test]
fn the_full_fabric_run_fans_out_to_1_4_and_16_subscribers() {
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--fabric"]).expect("args");
    let full = plan(&cli.run);
    let keys: Vec<String> = full.iter().map(|s| s.key()).collect();
    for t in ["ofi+shm", "ofi+tcp"] {
        for subs in [1, 4, 16] {
            for size in [64, 65536] {
                let key = format!("pubsub{subs}/{t}/{size}");
                let sc = full
                    .iter()
                    .find(|s| s.key() == key)
                    .unwrap_or_else(|| panic!("{key}: {keys:?}"));
                assert!(sc.slots(true, true, true).contains(&Slot::Floor), "{key}");
            }
        }
    }
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--fabric", "--quick"]).expect("args");
    assert!(!plan(&cli.run).iter().any(|s| s.key().starts_with("pubsub")));
}

/// The variant without CMA runs over ofi+shm only (tcp has no CMA), in
/// full and smoke runs, not in the demo's quick run, and its trials get
/// `FI_SHM_DISABLE_CMA=1` (the smoke run above runs them).
#[test]
fn the_no_cma_variant_runs_over_shm_in_full_and_smoke_runs() {
    for args in [["fabriq-bench", "--fabric"], ["fabriq-bench", "--smoke"]] {
        let mut args = args.to_vec();
        if args[1] == "--smoke" {
            args.push("--fabric");
        }
        let cli = BenchCli::try_parse_from(args.clone()).expect("args");
        let keys: Vec<String> = plan(&cli.run).iter().map(|s| s.key()).collect();
        for key in ["pushpull/ofi+shm+nocma/65536", "reqrep/ofi+shm+nocma/64"] {
            assert!(keys.contains(&key.to_string()), "{args:?}: {key}: {keys:?}");
        }
        assert!(
            !keys.iter().any(|k| k.contains("ofi+tcp+nocma")),
            "{keys:?}"
        );
    }
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--fabric", "--quick"]).expect("args");
    assert!(!plan(&cli.run).iter().any(|s| s.key().contains("+nocma")));
    assert_eq!(
        fabriq_bench::scenario::FabricVariant::NoCma.env(),
        &[("FI_SHM_DISABLE_CMA", "1")]
    );
}

/// The by-reference variant is a PUSH/PULL variant of both fabric
/// transports, in full and smoke runs, not in the demo's quick run.
#[test]
fn the_zero_copy_variant_streams_over_both_fabrics_in_full_and_smoke_runs() {
    for args in [
        &["fabriq-bench", "--fabric"][..],
        &["fabriq-bench", "--smoke", "--fabric"],
    ] {
        let cli = BenchCli::try_parse_from(args).expect("args");
        let keys: Vec<String> = plan(&cli.run).iter().map(|s| s.key()).collect();
        for key in ["pushpull/ofi+shm+zc/65536", "pushpull/ofi+tcp+zc/65536"] {
            assert!(keys.contains(&key.to_string()), "{args:?}: {key}: {keys:?}");
        }
        let zc: Vec<&String> = keys.iter().filter(|k| k.contains("+zc")).collect();
        assert!(zc.iter().all(|k| k.starts_with("pushpull/")), "{zc:?}");
    }
    let cli = BenchCli::try_parse_from(["fabriq-bench", "--fabric", "--quick"]).expect("args");
    assert!(!plan(&cli.run).iter().any(|s| s.key().contains("+zc")));
}
