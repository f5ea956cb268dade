//! What the tests share: a prefix laid out as `scripts/capi` installs it
//! (from the debug build of this crate), compiling C programs against it,
//! and running programs with a time limit.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/debug` (where cargo put this test binary's `deps/`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// A prefix with `lib/libzmq.so.5`, `lib/libzmq.so` and `include/zmq.h`,
/// made once per test process (its own directory, so test binaries
/// running at the same time do not share one).
pub fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let dir = profile_dir().join(format!("capi-test-prefix-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::create_dir_all(dir.join("include")).unwrap();
        // `cargo test` leaves the cdylib in deps/ (only `cargo build`
        // copies it up a level): the one cargo built for this test run.
        let so = [
            profile_dir().join("deps/libfabriq_capi.so"),
            profile_dir().join("libfabriq_capi.so"),
        ]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no libfabriq_capi.so in {}", profile_dir().display()));
        std::fs::copy(&so, dir.join("lib/libzmq.so.5")).unwrap();
        std::os::unix::fs::symlink("libzmq.so.5", dir.join("lib/libzmq.so")).unwrap();
        std::fs::copy(crate_dir().join("include/zmq.h"), dir.join("include/zmq.h")).unwrap();
        std::fs::create_dir_all(dir.join("lib/pkgconfig")).unwrap();
        let pc = std::fs::read_to_string(crate_dir().join("libzmq.pc.in"))
            .unwrap()
            .replace("@PREFIX@", &dir.to_string_lossy())
            .replace("@CFLAGS@", "");
        std::fs::write(dir.join("lib/pkgconfig/libzmq.pc"), pc).unwrap();
        dir
    })
}

/// `pkg-config --cflags --libs libzmq` with the prefix's `libzmq.pc`.
pub fn pkg_config_libzmq() -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(["--cflags", "--libs", "libzmq"])
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"))
        .output()
        .expect("pkg-config runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Compiles `tests/c/NAME.c` against the prefix; returns the program.
pub fn compile_c(name: &str) -> PathBuf {
    compile_c_with(name, &[])
}

/// `compile_c` with extra compiler arguments.
pub fn compile_c_with(name: &str, extra: &[&str]) -> PathBuf {
    let prefix = prefix();
    let out = prefix.join(name);
    let src = crate_dir().join("tests/c").join(format!("{name}.c"));
    let status = Command::new("cc")
        .arg("-std=gnu99")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg(format!("-I{}", crate_dir().join("tests/c").display()))
        .arg(format!("-L{}", prefix.join("lib").display()))
        .arg("-lzmq")
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-pthread")
        .args(extra)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed for {}", src.display());
    out
}

/// Waits for a child up to `limit`; kills it past that and fails.
pub fn wait_limited(mut child: Child, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a command to completion within `limit`; fails unless it exits 0
/// with `ok` as its last line of output.
pub fn run_ok(cmd: &mut Command, limit: Duration, what: &str) -> String {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = wait_limited(child, limit, what);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.lines().last() == Some("ok"),
        "{what} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
