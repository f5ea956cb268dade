//! The operating system's side: CPU pinning, resource usage, `perf stat`.

use std::path::Path;
use std::process::{Command, Stdio};

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use serde::{Deserialize, Serialize};

/// The CPUs this process may run on, in order.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

/// Restricts the calling thread (and the threads it starts later) to the
/// CPUs in `cpus` (a set: one CPU only where the caller asks for one).
pub fn pin_current_thread(cpus: &[usize]) -> Result<(), String> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        if cpu >= CpuSet::MAX_CPU {
            return Err(format!("cpu {cpu} out of range"));
        }
        set.set(cpu);
    }
    sched_setaffinity(None, &set).map_err(|e| format!("sched_setaffinity({cpus:?}): {e}"))
}

/// CPU time and peak memory of this process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User CPU seconds (all threads).
    pub user_s: f64,
    /// System CPU seconds (all threads).
    pub sys_s: f64,
    /// Peak resident set size, KiB: the process's own (see
    /// [`Usage::now`]).
    pub maxrss_kb: u64,
}

/// This process's own peak resident set size in KiB (`VmHWM` in
/// `/proc/self/status`), if the kernel reports it.
///
/// Not `ru_maxrss`: at `execve` Linux keeps the high-water mark of the
/// memory the process had before (`setmax_mm_hiwater_rss` in
/// `exec_mmap`), which for a child started with `posix_spawn` or `vfork`
/// (as `std::process::Command` does) is its parent's whole address
/// space. Every worker's `ru_maxrss` was then at least the runner's peak
/// RSS at the time: a floor that grew as the runner collected results
/// (6.6 MiB in the first scenarios of a full run, 16.9 MiB in the last)
/// and hid every difference below it. `VmHWM` belongs to the memory map
/// the program runs in, made new by `execve`.
pub fn own_peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Usage {
    /// `getrusage(RUSAGE_SELF)`.
    pub fn now() -> Usage {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a whole `struct rusage` to the pointer,
        // which points to memory of that type we own; RUSAGE_SELF is valid.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
        if rc != 0 {
            return Usage::default();
        }
        // SAFETY: zero-initialised and, on success, filled in by the kernel.
        let ru = unsafe { ru.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Usage {
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
            maxrss_kb: own_peak_rss_kb().unwrap_or(ru.ru_maxrss.max(0) as u64),
        }
    }

    /// CPU used between `before` and `self`; peak RSS is `self`'s.
    pub fn since(&self, before: &Usage) -> Usage {
        Usage {
            user_s: (self.user_s - before.user_s).max(0.0),
            sys_s: (self.sys_s - before.sys_s).max(0.0),
            maxrss_kb: self.maxrss_kb,
        }
    }
}

/// Whether `perf stat -e instructions` counts here; `Err` says why not.
pub fn probe_perf() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("perf not runnable: {e}"))?;
    let text = String::from_utf8_lossy(&out.stderr);
    match parse_perf_instructions(&text) {
        Some(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "perf stat cannot count instructions here ({})",
            text.lines()
                .find(|l| l.contains("instructions"))
                .unwrap_or("no output")
                .trim()
        )),
    }
}

/// The instruction count in `perf stat -x,` output, if counted.
pub fn parse_perf_instructions(text: &str) -> Option<u64> {
    text.lines()
        .filter(|l| l.contains("instructions"))
        .find_map(|l| l.split(',').next()?.trim().parse::<u64>().ok())
}

/// Reads a `perf stat -o FILE` output file.
pub fn read_perf_file(path: &Path) -> Option<u64> {
    parse_perf_instructions(&std::fs::read_to_string(path).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_output_is_parsed() {
        assert_eq!(
            parse_perf_instructions("# started\n\n12345,,instructions:u,100.00,,\n"),
            Some(12345)
        );
        assert_eq!(
            parse_perf_instructions("<not supported>,,instructions,0,100.00,,"),
            None
        );
    }

    #[test]
    fn usage_grows() {
        let a = Usage::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = Usage::now().since(&a);
        assert!(b.user_s >= 0.0 && b.maxrss_kb > 0);
    }

    #[test]
    fn own_peak_rss_counts_memory_this_process_touched() {
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let peak = own_peak_rss_kb().expect("VmHWM in /proc/self/status");
        assert!(peak >= 64 << 10, "{peak} KiB");
        // What `Usage` reports (VmHWM only grows).
        assert!(Usage::now().maxrss_kb >= peak);
    }
}
