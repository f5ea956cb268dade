//! The machine description recorded with every run.

use std::process::Command;

use serde::{Deserialize, Serialize};

/// Where and with what a run was made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model (/proc/cpuinfo).
    pub cpu_model: String,
    /// CPUs the run may use (affinity mask).
    pub cpus: Vec<usize>,
    /// Logical CPUs online.
    pub cpus_online: usize,
    /// `uname -r`.
    pub kernel: String,
    /// Compiler that built the bench.
    pub rustc: String,
    /// `release` or `debug`.
    pub build_profile: String,
    /// libzmq's version (zmq::version()).
    pub libzmq: String,
    /// omq.rs's version (`omq-tokio` in Cargo.lock, read at build time).
    #[serde(default)]
    pub omq: String,
    /// fabriq's crate version.
    pub fabriq: String,
    /// The git commit measured (with `-dirty` for uncommitted changes).
    pub git_commit: String,
    /// Start of the run, UTC.
    pub date: String,
}

impl Machine {
    /// Describes this machine now.
    pub fn describe() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        let (a, b, c) = zmq::version();
        Machine {
            cpu_model,
            cpus: crate::sys::allowed_cpus(),
            cpus_online: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            kernel: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
            rustc: env!("FABRIQ_BENCH_RUSTC").to_string(),
            build_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
            libzmq: format!("{a}.{b}.{c}"),
            omq: format!("omq-tokio {}", env!("FABRIQ_BENCH_OMQ")),
            fabriq: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: git_commit(),
            date: utc_now(),
        }
    }
}

fn git_commit() -> String {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .map(|s| !s.is_empty())
                .unwrap_or(false);
            if dirty {
                format!("{commit}-dirty")
            } else {
                commit
            }
        }
        None => "unknown".to_string(),
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_looks_like_a_date() {
        let d = super::utc_now();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20") && d.ends_with('Z'), "{d}");
    }
}
