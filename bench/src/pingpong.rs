//! The fabric's floor: libfabric's own `fi_pingpong` (package
//! `libfabric-bin`) on the same provider as the fabric scenario, run as two
//! processes and parsed into the bench's result types.
//!
//! How it is run (libfabric 1.17; see `fi_pingpong -h`):
//!
//! * server: `fi_pingpong -p PROV -e rdm [-d lo] -I ITERS -S SIZE -B PORT`
//! * client: the same with `-P PORT 127.0.0.1` instead of `-B PORT`.
//!
//! The positional address is never a fabric address: it is where the
//! client's TCP control ("out of band") socket connects, and both sides
//! exchange their `fi_getname` addresses over it. So shm needs no
//! destination name of its own: `127.0.0.1` plus the control port does.
//! The control port is chosen free for every trial (`-B` / `-P`), so
//! trials never collide on fi_pingpong's default 47592. The tcp provider is
//! named `tcp` (libfabric 1.17 layers `ofi_rxm` on it for RDM, as `fi_info
//! -p tcp -t FI_EP_RDM` shows: `tcp;ofi_rxm`) with `-d lo`, the loopback
//! domain, where fabriq's `ofi+tcp://127.0.0.1` puts its endpoint too
//! (without `-d`, the first domain is the machine's first interface).
//!
//! What it measures: `-I` round trips of `-S` bytes, one message in flight,
//! both sides busy-polling their completion queues (100% CPU each), no
//! warm-up (the first transfer pays for connection setup). It prints one
//! row: `bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec`, where a
//! transfer is one message one way, `usec/xfer` = elapsed / (2 x ITERS)
//! (half the round trip) and `MB/sec` = 2 x ITERS x SIZE / elapsed (both
//! directions, 1e6 bytes).
//!
//! A server or client still running at the deadline is killed (SIGKILL to
//! its process group: each is started as the leader of its own), and the
//! trial is an error; so is a row whose `#ack` differs from
//! `#sent`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::placement::CpuSets;
use crate::results::Metrics;
use crate::scenario::{Pattern, Scenario};
use crate::sys::Usage;

/// The program's name on PATH.
pub const PROGRAM: &str = "fi_pingpong";

/// Finds fi_pingpong: `explicit` if given, else `fi_pingpong` on PATH.
/// `Err` says why not ("not installed: ...").
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("not installed: {} not found", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(PROGRAM))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!("not installed: no {PROGRAM} on PATH (Debian: apt-get install libfabric-bin)")
        })
}

/// libfabric's version from `fi_info --version` beside fi_pingpong, if any.
pub fn libfabric_version(fi_pingpong: &Path) -> Option<String> {
    let fi_info = fi_pingpong.with_file_name("fi_info");
    let out = Command::new(fi_info)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("libfabric:").map(|v| v.trim().to_string()))
}

/// One row of fi_pingpong's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `bytes`: the transfer size.
    pub bytes: u64,
    /// `#sent`: iterations (as printed: `2k`).
    pub sent: String,
    /// `#ack`: `=N` when every one was acknowledged.
    pub acked: String,
    /// `time`, seconds (printed with two decimals only).
    pub time_s: f64,
    /// `MB/sec` (1e6 bytes, both directions).
    pub mb_per_s: f64,
    /// `usec/xfer`: one-way time of one message, microseconds.
    pub usec_per_xfer: f64,
    /// `Mxfers/sec`.
    pub mxfers_per_s: f64,
}

/// A size as fi_pingpong prints it: `64`, `1.5k`, `64k`, `1m`.
pub fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let x: f64 = num.parse().ok()?;
    (x >= 0.0).then(|| (x * mult as f64).round() as u64)
}

/// Parses fi_pingpong's output: the header line and the row under it.
pub fn parse_output(text: &str) -> Result<Row, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.trim_start().starts_with("bytes") && l.contains("usec/xfer"))
        .ok_or_else(|| format!("no result table in fi_pingpong's output {text:?}"))?;
    let row = lines
        .find(|l| !l.trim().is_empty())
        .ok_or("fi_pingpong printed a header but no row")?;
    let f: Vec<&str> = row.split_whitespace().collect();
    if f.len() != 8 {
        return Err(format!("fi_pingpong row of {} fields: {row:?}", f.len()));
    }
    let num = |i: usize, what: &str| -> Result<f64, String> {
        f[i].trim_end_matches('s')
            .parse::<f64>()
            .map_err(|_| format!("fi_pingpong {what} {:?} in {row:?}", f[i]))
    };
    Ok(Row {
        bytes: parse_size(f[0]).ok_or_else(|| format!("fi_pingpong size {:?}", f[0]))?,
        sent: f[1].to_string(),
        acked: f[2].to_string(),
        time_s: num(4, "time")?,
        mb_per_s: num(5, "MB/sec")?,
        usec_per_xfer: num(6, "usec/xfer")?,
        mxfers_per_s: num(7, "Mxfers/sec")?,
    })
}

/// Round trips (`-I`) for a trial of about `trial_secs` at `size`: from
/// the one-way time `measured` in an earlier repetition if there is one,
/// else from a rough idle-machine estimate of fi_pingpong's one-way time
/// (shm about 1 us + 5 GB/s, tcp about 15 us + 1.5 GB/s). A spinning
/// pair on a busy 2-CPU machine can be 20x slower than that estimate,
/// hence the measured time. `smoke`: a handful.
pub fn iterations(
    provider: &str,
    size: usize,
    trial_secs: f64,
    smoke: bool,
    measured: Option<f64>,
) -> u64 {
    if smoke {
        return 20;
    }
    let one_way_us = measured.filter(|&us| us > 0.0).unwrap_or(match provider {
        "shm" => 1.0 + size as f64 / 5000.0,
        _ => 15.0 + size as f64 / 1500.0,
    });
    ((trial_secs * 1e6 / (2.0 * one_way_us)).round() as u64).clamp(20, 500_000)
}

/// The command-line flags both sides share, for `provider`.
pub fn common_args(provider: &str, size: usize, iters: u64) -> Vec<String> {
    let mut a: Vec<String> = vec!["-p".into(), provider.into(), "-e".into(), "rdm".into()];
    if provider == "tcp" {
        a.extend(["-d".into(), "lo".into()]);
    }
    a.extend([
        "-I".into(),
        iters.to_string(),
        "-S".into(),
        size.to_string(),
    ]);
    a
}

/// What one fi_pingpong trial gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The parsed row (the client's).
    pub row: Row,
    /// Round trips asked for.
    pub iterations: u64,
    /// CPU seconds of both processes, whole (start-up included).
    pub cpu_s: f64,
    /// Largest peak RSS of the two, KiB.
    pub maxrss_kb: u64,
    /// The commands and the client's row, for the results file.
    pub log: Vec<String>,
}

impl Outcome {
    /// The trial's figures in the bench's terms. Throughput scenarios:
    /// messages = one-way transfers (one in flight), msg/s = 1e6 /
    /// usec_per_xfer, MB/s = bytes x transfers/s (fi_pingpong's MB/sec,
    /// both directions, from the one-way time rather than its printed
    /// MB/sec column: that has two decimals and reads 0.00 for a slow small
    /// run, e.g. 64 B at 15.9 ms per transfer on a loaded machine). REQ/REP: round trips/s
    /// and the one-way time; no percentiles (fi_pingpong gives a mean only).
    pub fn metrics(&self, sc: &Scenario) -> Metrics {
        let xfers = 2 * self.iterations;
        let xfer_rate = if self.row.usec_per_xfer > 0.0 {
            1e6 / self.row.usec_per_xfer
        } else {
            0.0
        };
        let (messages, msg_per_s) = match sc.pattern {
            Pattern::Reqrep => (self.iterations, xfer_rate / 2.0),
            _ => (xfers, xfer_rate),
        };
        Metrics {
            messages,
            msg_per_s,
            mb_per_s: self.row.bytes as f64 * xfer_rate / 1e6,
            per_receiver_msg_per_s: vec![msg_per_s],
            latency: None,
            one_way_us: Some(self.row.usec_per_xfer),
            cpu_s: self.cpu_s,
            cpu_us_per_msg: self.cpu_s / messages.max(1) as f64 * 1e6,
            peak_rss_kb: self.maxrss_kb,
            instructions_per_msg: None,
        }
    }
}

/// A child process reaped with `wait4`, so its rusage is known.
struct Proc {
    name: &'static str,
    child: Child,
    reaped: Option<(libc::c_int, Usage)>,
}

impl Proc {
    /// Reaps the child if it has exited (non-blocking).
    fn poll(&mut self) -> bool {
        if self.reaped.is_some() {
            return true;
        }
        let mut status: libc::c_int = 0;
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: wait4 on our own child's pid, writing an int and a whole
        // `struct rusage` into memory we own.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, ru.as_mut_ptr()) };
        if rc != pid {
            return false;
        }
        // SAFETY: zeroed, and filled in by the kernel since wait4 returned the pid.
        let ru = unsafe { ru.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        self.reaped = Some((
            status,
            Usage {
                user_s: secs(ru.ru_utime),
                sys_s: secs(ru.ru_stime),
                maxrss_kb: ru.ru_maxrss.max(0) as u64,
            },
        ));
        true
    }

    fn running(&mut self) -> bool {
        !self.poll()
    }

    /// Kills the child (its whole process group: it was started as the
    /// leader of its own) if it has not been reaped yet, then reaps it.
    fn kill(&mut self) {
        if !self.poll() {
            let pgid = self.child.id() as libc::pid_t;
            // SAFETY: a plain system call; the group is our unreaped
            // child's own (process_group(0) at spawn), so the id is not
            // reused while we have not reaped it.
            if unsafe { libc::kill(-pgid, libc::SIGKILL) } != 0 {
                let _ = self.child.kill();
            }
            let end = Instant::now() + Duration::from_secs(5);
            while !self.poll() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    fn exited_ok(&self) -> bool {
        matches!(self.reaped, Some((s, _)) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0)
    }

    fn status_text(&self) -> String {
        match self.reaped {
            Some((s, _)) if libc::WIFEXITED(s) => format!("exit {}", libc::WEXITSTATUS(s)),
            Some((s, _)) if libc::WIFSIGNALED(s) => format!("signal {}", libc::WTERMSIG(s)),
            Some(_) => "ended".into(),
            None => "running".into(),
        }
    }

    fn usage(&self) -> Usage {
        self.reaped.map(|(_, u)| u).unwrap_or_default()
    }

    /// Its stdout and stderr (after it has ended).
    fn output(&mut self) -> (String, String) {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut s) = self.child.stdout.take() {
            let _ = s.read_to_string(&mut out);
        }
        if let Some(mut s) = self.child.stderr.take() {
            let _ = s.read_to_string(&mut err);
        }
        (out, err)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(
    exe: &Path,
    name: &'static str,
    args: &[String],
    cpus: &[usize],
    env: &[(&str, &str)],
) -> Result<Proc, String> {
    let mut cmd = Command::new(exe);
    use std::os::unix::process::CommandExt;
    cmd.args(args)
        .envs(env.iter().copied())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !cpus.is_empty() {
        let mut set = rustix::thread::CpuSet::new();
        for &c in cpus
            .iter()
            .filter(|&&c| c < rustix::thread::CpuSet::MAX_CPU)
        {
            set.set(c);
        }
        // SAFETY: the closure runs between fork and exec and only makes
        // the sched_setaffinity system call on a set built before the fork
        // (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || {
                rustix::thread::sched_setaffinity(None, &set).map_err(std::io::Error::from)
            });
        }
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("{PROGRAM} {name}: spawn {}: {e}", exe.display()))?;
    Ok(Proc {
        name,
        child,
        reaped: None,
    })
}

/// A TCP port free on this machine right now (for the control socket).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("0.0.0.0:0").map_err(|e| format!("free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("free port: {e}"))
}

/// Whether some socket listens on TCP `port` (IPv4), from /proc/net/tcp:
/// probing with a connection would be taken as fi_pingpong's client.
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    std::fs::read_to_string("/proc/net/tcp")
        .map(|t| {
            t.lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
            })
        })
        .unwrap_or(false)
}

fn tail(s: &str) -> String {
    let t: Vec<&str> = s.lines().rev().take(3).collect();
    t.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// Runs one fi_pingpong trial: server and client on `provider`, `iters`
/// round trips of `size` bytes, both killed at `deadline`, with `env`
/// added to their environment.
#[allow(clippy::too_many_arguments)]
pub fn run(
    exe: &Path,
    provider: &str,
    size: usize,
    iters: u64,
    deadline: Instant,
    server_cpus: &CpuSets,
    client_cpus: &CpuSets,
    env: &[(&str, &str)],
) -> Result<Outcome, String> {
    let common = common_args(provider, size, iters);
    let mut last_err = String::new();
    // A port taken between free_port() and the server's bind: try again.
    for _attempt in 0..3 {
        let port = free_port()?.to_string();
        let mut server_args = common.clone();
        server_args.extend(["-B".to_string(), port.clone()]);
        let mut server = spawn(exe, "server", &server_args, &server_cpus.process, env)?;
        let port_n: u16 = port.parse().unwrap_or(0);
        while !listening(port_n) && server.running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if server.running() && Instant::now() >= deadline {
            server.kill();
            return Err(format!(
                "{PROGRAM}: deadline passed with the server not listening yet: killed"
            ));
        }
        if !server.running() {
            let (_, err) = server.output();
            last_err = format!(
                "{PROGRAM} server ended before listening ({}): {}",
                server.status_text(),
                tail(&err)
            );
            if err.contains("Address already in use") {
                continue;
            }
            return Err(last_err);
        }
        let mut client_args = common.clone();
        client_args.extend(["-P".to_string(), port.clone(), "127.0.0.1".to_string()]);
        let mut client = spawn(exe, "client", &client_args, &client_cpus.process, env)?;
        while (client.running() || server.running()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if client.running() || server.running() {
            let who: Vec<&str> = [&mut server, &mut client]
                .into_iter()
                .filter_map(|p| p.running().then_some(p.name))
                .collect();
            server.kill();
            client.kill();
            return Err(format!(
                "{PROGRAM}: deadline passed with the {} still running: killed",
                who.join(" and ")
            ));
        }
        let (out, err) = client.output();
        let (sout, serr) = server.output();
        if !client.exited_ok() || !server.exited_ok() {
            return Err(format!(
                "{PROGRAM}: client {} ({}), server {} ({})",
                client.status_text(),
                tail(&err),
                server.status_text(),
                tail(&serr)
            ));
        }
        let row = parse_output(&out)?;
        if row.bytes != size as u64 {
            return Err(format!(
                "{PROGRAM} measured {} bytes, asked for {size}",
                row.bytes
            ));
        }
        if !row.acked.starts_with('=') {
            return Err(format!(
                "{PROGRAM}: {} sent but {} acknowledged",
                row.sent, row.acked
            ));
        }
        // The server prints the same measurement from its side; keep it.
        let server_row = parse_output(&sout).ok();
        let (cu, su) = (client.usage(), server.usage());
        let mut log = vec![
            format!("server: {} {}", exe.display(), server_args.join(" ")),
            format!("client: {} {}", exe.display(), client_args.join(" ")),
            format!("client row: {}", out.lines().last().unwrap_or("").trim()),
        ];
        if let Some(r) = server_row {
            log.push(format!("server usec/xfer: {:.2}", r.usec_per_xfer));
        }
        return Ok(Outcome {
            row,
            iterations: iters,
            cpu_s: cu.user_s + cu.sys_s + su.user_s + su.sys_s,
            maxrss_kb: cu.maxrss_kb.max(su.maxrss_kb),
            log,
        });
    }
    Err(last_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real output of libfabric 1.17's fi_pingpong on this machine.
    const SHM_64: &str = "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n\
                          64      1k      =1k      125k        3.15s      0.04    1577.44       0.00\n";

    /// A slow small run prints 0.00 MB/sec; the trial's MB/s comes from the
    /// one-way time, as fi_pingpong computes its column, so it is not zero.
    #[test]
    fn a_slow_small_run_has_its_bytes_per_second() {
        let slow =
            "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n\
                    64      20      =20      2.5k        0.63s      0.00    15864.55       0.00\n";
        let outcome = Outcome {
            row: parse_output(slow).unwrap(),
            iterations: 20,
            cpu_s: 1.0,
            maxrss_kb: 1,
            log: Vec::new(),
        };
        let sc = Scenario {
            pattern: Pattern::Reqrep,
            transport: crate::scenario::Transport::OfiTcp,
            size: 64,
            subs: 1,
            count: 20,
            warm: 0,
            reps: 1,
            variant: Default::default(),
        };
        let m = outcome.metrics(&sc);
        let want = 64.0 * 1e6 / 15864.55 / 1e6;
        assert!((m.mb_per_s - want).abs() < 1e-12, "{}", m.mb_per_s);
        assert!(m.mb_per_s > 0.0);
        // The same formula gives fi_pingpong's own column where it has digits.
        let fast = Outcome {
            row: parse_output(SHM_64).unwrap(),
            ..outcome
        };
        assert_eq!((fast.metrics(&sc).mb_per_s * 100.0).round() / 100.0, 0.04);
    }

    #[test]
    fn a_row_is_parsed() {
        let r = parse_output(SHM_64).unwrap();
        assert_eq!(r.bytes, 64);
        assert_eq!((r.sent.as_str(), r.acked.as_str()), ("1k", "=1k"));
        assert_eq!(r.time_s, 3.15);
        assert_eq!(r.mb_per_s, 0.04);
        assert_eq!(r.usec_per_xfer, 1577.44);
        assert_eq!(r.mxfers_per_s, 0.0);
        let big =
            "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n\
                   1m      200     =200     400m        0.05s   8388.61     125.00       0.01\n";
        let r = parse_output(big).unwrap();
        assert_eq!(r.bytes, 1 << 20);
        assert_eq!(r.usec_per_xfer, 125.0);
    }

    #[test]
    fn sizes_as_printed() {
        assert_eq!(parse_size("64"), Some(64));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("256k"), Some(262144));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("1.5k"), Some(1536));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn bad_output_is_an_error_not_a_number() {
        assert!(parse_output("").is_err());
        assert!(
            parse_output("fi_getinfo(): util/pingpong.c:1093, ret=-61 (No data available)")
                .is_err()
        );
        assert!(
            parse_output("bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec\n64 1k\n")
                .is_err()
        );
    }

    #[test]
    fn a_missing_program_says_not_installed() {
        let e = locate(Some(Path::new("/nonexistent/fi_pingpong"))).unwrap_err();
        assert!(e.starts_with("not installed"), "{e}");
    }

    #[test]
    fn tcp_uses_the_loopback_domain() {
        let a = common_args("tcp", 64, 10).join(" ");
        assert_eq!(a, "-p tcp -e rdm -d lo -I 10 -S 64");
        assert_eq!(
            common_args("shm", 65536, 5).join(" "),
            "-p shm -e rdm -I 5 -S 65536"
        );
    }
}
