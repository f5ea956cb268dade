//! Records the compiler's version and omq-tokio's (from Cargo.lock) for the
//! machine description.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FABRIQ_BENCH_RUSTC={}", version.trim());
    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let omq = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"omq-tokio\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FABRIQ_BENCH_OMQ={omq}");
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");
}
