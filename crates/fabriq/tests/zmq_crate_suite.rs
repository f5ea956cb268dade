//! The `zmq` crate's own tests and examples, unchanged, against fabriq
//! (issue 14: "swap the dependency, change nothing else").
//!
//! At test time this finds the `zmq` 0.10 sources cargo already fetched
//! (the crate is a dev-dependency of this one; `cargo metadata` names its
//! manifest), copies its `tests/` and `examples/` into a fresh cargo
//! project under `target/zmq-crate-suite/` whose `zmq` dependency is
//! `{ package = "fabriq", path = "crates/fabriq" }`, with the `zmq`
//! crate's own dev-dependencies and its `[[example]]` layout, then runs
//! `cargo build --examples` and `cargo test` there. Nothing of the `zmq`
//! crate is committed here; only the lock file for that project is
//! (`zmq_crate_suite/Cargo.lock`, so the run is `--locked`).
//!
//! The project builds in the workspace's own target directory, so what the
//! workspace already built and the project can share is reused. `zmq_sys`
//! is a dependency of that project too: two of the `zmq` crate's tests
//! (`context.rs`, `error.rs`) compare fabriq's values with libzmq's
//! constants from it. It is zmq-sys's own source without its build
//! script, so libzmq is not built again for a few constants.
//!
//! The exclusions are below, each with its reason; docs/api.md ("The zmq
//! crate's own test suite") has what the run found and what the `zmq`
//! crate itself does with the same tests over its bundled libzmq 4.3.4.
//!
//! To refresh the committed lock file after fabriq's dependencies change:
//! `FABRIQ_ZMQ_SUITE_RELOCK=1 cargo test -p fabriq --test zmq_crate_suite`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whole test files of the `zmq` crate that are not built, with why.
///
/// In place of `compile-tests.rs`, each of its compile-fail programs is
/// built against fabriq here and must be refused with the error code its
/// `.stderr` file names (at the end of the test below).
const EXCLUDED_FILES: &[(&str, &str)] = &[(
    "compile-tests.rs",
    "trybuild compile-fail tests: they compare rustc's exact error text, \
     which names the zmq crate's own internals (`*mut c_void` inside \
     `Socket`) and an older rustc's wording; fabriq refuses the same \
     programs with the same error codes but other text. The zmq crate's \
     own run over its libzmq fails this test too on the current rustc.",
)];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The directory of the package `NAME-VERSION...` (`prefix`, e.g.
/// `zmq-0.10.`) cargo resolved for this workspace, from `cargo metadata`
/// (no hard-coded registry hash).
fn package_dir(root: &Path, prefix: &str) -> PathBuf {
    let out = cargo()
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8(out.stdout).expect("utf-8 metadata");
    // Each package object has "name", "version", ... "manifest_path"; the
    // registry keeps a package in a directory named NAME-VERSION.
    let key = "\"manifest_path\":\"";
    let mut found = Vec::new();
    let mut rest = json.as_str();
    while let Some(i) = rest.find(key) {
        rest = &rest[i + key.len()..];
        let end = rest.find('"').expect("end of manifest_path");
        let manifest = PathBuf::from(&rest[..end]);
        let dir = manifest.parent().expect("manifest directory").to_path_buf();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with(prefix) {
            found.push(dir);
        }
    }
    found.sort();
    found.dedup();
    assert_eq!(
        found.len(),
        1,
        "expected one {prefix}* package in cargo metadata, found {found:?}"
    );
    found.pop().unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The `[[example]]` sections of the zmq crate's manifest, verbatim.
fn example_sections(manifest: &str) -> String {
    let mut out = String::new();
    let mut in_example = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_example = t == "[[example]]";
        }
        if in_example {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(
        out.contains("[[example]]"),
        "no [[example]] in zmq's manifest"
    );
    out
}

fn manifest(root: &Path, zmq_dir: &Path, tests: &[String]) -> String {
    // zmq-sys's constants, from its own source (below).
    let zmq_manifest = fs::read_to_string(zmq_dir.join("Cargo.toml")).unwrap();
    let mut m = String::new();
    writeln!(
        m,
        r#"# Generated by crates/fabriq/tests/zmq_crate_suite.rs; not committed.
[package]
name = "zmq-crate-suite"
version = "0.0.0"
edition = "2018"
publish = false
autotests = false
autoexamples = false

# The compile-fail programs are binaries of a second package, built one
# by one.
[workspace]
members = ["compile-fail", "zmq-sys"]

[lib]
path = "lib.rs"

[dependencies]
zmq = {{ package = "fabriq", path = "{fabriq}" }}
# The zmq crate's tests read libzmq's constants (ZMQ_IO_THREADS_DFLT,
# errno) from zmq-sys, its own dependency: its Rust source, without its
# build script (which builds and links libzmq; only constants are used).
zmq-sys = {{ path = "zmq-sys" }}

# The zmq crate's dev-dependencies (its Cargo.toml).
[dev-dependencies]
env_logger = {{ version = "0.9", default-features = false }}
log = "0.4.3"
nix = "0.23"
quickcheck = "1"
rand = "0.8"
tempfile = "3"
timebomb = "0.1.2"
trybuild = "1"
"#,
        fabriq = root.join("crates/fabriq").display()
    )
    .unwrap();
    for t in tests {
        writeln!(
            m,
            "[[test]]\nname = \"{}\"\npath = \"tests/{t}\"\n",
            t.trim_end_matches(".rs")
        )
        .unwrap();
    }
    m.push_str(&example_sections(&zmq_manifest));
    m
}

/// The second package: the compile-fail programs as binaries.
fn compile_fail_manifest(root: &Path, zmq_dir: &Path) -> String {
    let mut m = format!(
        r#"[package]
name = "zmq-crate-compile-fail"
version = "0.0.0"
edition = "2018"
publish = false
autobins = false

[dependencies]
zmq = {{ package = "fabriq", path = "{}" }}
"#,
        root.join("crates/fabriq").display()
    );
    for (name, path) in compile_fail_programs(zmq_dir) {
        writeln!(m, "\n[[bin]]\nname = \"{name}\"\npath = \"../{path}\"").unwrap();
    }
    m
}

/// zmq-sys 0.12 as a package of its `src/` alone (no build script, so no
/// libzmq): the constants and declarations, nothing called.
fn zmq_sys_manifest(zmq_sys_dir: &Path) -> String {
    let manifest = fs::read_to_string(zmq_sys_dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[dependencies.libc]"),
        "zmq-sys's only dependency should be libc"
    );
    format!(
        r#"[package]
name = "zmq-sys"
version = "0.12.0"
edition = "2015"
publish = false
build = false

[lib]
path = "{}"

[dependencies]
libc = "0.2.15"
"#,
        zmq_sys_dir.join("src/lib.rs").display()
    )
}

/// `(binary name, path)` of each `tests/compile-fail/*.rs` program.
fn compile_fail_programs(zmq_dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(zmq_dir.join("tests/compile-fail"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".rs"))
        .map(|n| {
            let stem = n.trim_end_matches(".rs");
            (
                format!("compile-fail-{stem}"),
                format!("tests/compile-fail/{n}"),
            )
        })
        .collect();
    out.sort();
    out
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout + &stderr
}

#[test]
fn zmq_crate_tests_and_examples_pass_against_fabriq() {
    let root = repo_root();
    let zmq_dir = package_dir(&root, "zmq-0.10.");
    let zmq_sys_dir = package_dir(&root, "zmq-sys-0.12.");
    let project = root.join("target/zmq-crate-suite");
    if project.exists() {
        fs::remove_dir_all(&project).unwrap();
    }
    fs::create_dir_all(&project).unwrap();
    copy_dir(&zmq_dir.join("tests"), &project.join("tests"));
    copy_dir(&zmq_dir.join("examples"), &project.join("examples"));
    fs::write(
        project.join("lib.rs"),
        "//! Empty: the package is its tests and examples.\n",
    )
    .unwrap();

    let mut tests: Vec<String> = fs::read_dir(zmq_dir.join("tests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".rs"))
        .collect();
    tests.sort();
    for (file, _) in EXCLUDED_FILES {
        assert!(
            tests.iter().any(|t| t == file),
            "excluded {file} is not in the zmq crate's tests"
        );
    }
    tests.retain(|t| !EXCLUDED_FILES.iter().any(|(f, _)| f == t));
    fs::write(
        project.join("Cargo.toml"),
        manifest(&root, &zmq_dir, &tests),
    )
    .unwrap();
    fs::create_dir_all(project.join("compile-fail")).unwrap();
    fs::write(
        project.join("compile-fail/Cargo.toml"),
        compile_fail_manifest(&root, &zmq_dir),
    )
    .unwrap();

    fs::create_dir_all(project.join("zmq-sys")).unwrap();
    fs::write(
        project.join("zmq-sys/Cargo.toml"),
        zmq_sys_manifest(&zmq_sys_dir),
    )
    .unwrap();

    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zmq_crate_suite/Cargo.lock");
    let relock = std::env::var_os("FABRIQ_ZMQ_SUITE_RELOCK").is_some();
    if lock.exists() {
        fs::copy(&lock, project.join("Cargo.lock")).unwrap();
    } else {
        assert!(relock, "{} is missing", lock.display());
        fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    }
    let locked: &[&str] = if relock { &[] } else { &["--locked"] };
    // The workspace's target directory, to share what both build.
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| root.join(d))
        .unwrap_or_else(|| root.join("target"));

    run(
        cargo()
            .args(["build", "--examples"])
            .args(locked)
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(&project),
        "cargo build --examples (the zmq crate's examples)",
    );
    if relock {
        fs::copy(project.join("Cargo.lock"), &lock).unwrap();
    }

    let mut test = cargo();
    test.args(["test", "--tests", "--no-fail-fast"])
        .args(locked)
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&project);
    let output = run(&mut test, "cargo test (the zmq crate's tests)");

    // What trybuild would check, less the exact text: each compile-fail
    // program is refused, with the error code of its .stderr file.
    let programs = compile_fail_programs(&zmq_dir);
    assert!(!programs.is_empty(), "no compile-fail programs");
    for (name, path) in &programs {
        let expected = fs::read_to_string(zmq_dir.join(path.replace(".rs", ".stderr"))).unwrap();
        let code = expected
            .split("error[")
            .nth(1)
            .and_then(|r| r.split(']').next())
            .expect("error code in .stderr");
        let out = cargo()
            .args(["build", "-p", "zmq-crate-compile-fail", "--bin", name])
            .args(locked)
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(&project)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{path} compiled against fabriq");
        assert!(
            stderr.contains(&format!("error[{code}]")),
            "{path}: expected error[{code}], got:\n{stderr}"
        );
        println!("{path}: refused with error[{code}], as with the zmq crate");
    }

    // Every test binary must have run something, and nothing failed.
    let mut passed = 0;
    let mut binaries = 0;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("test result: ok. ") {
            binaries += 1;
            passed += rest
                .split(' ')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .expect("count of passed tests");
        }
    }
    println!("{output}");
    println!(
        "zmq crate suite: {passed} passed in {binaries} test binaries; \
         {} test files excluded",
        EXCLUDED_FILES.len()
    );
    assert_eq!(
        binaries,
        tests.len() + 1,
        "one result per test file (+ lib)"
    );
    assert!(passed >= 60, "only {passed} tests passed");
}
