//! Network namespaces for the "two hosts" tests (`netns.rs`, `faults.rs`):
//! a pair of namespaces joined by a veth, `fabriq` run in either with
//! `ip netns exec`, and what the kernel shows of their connections
//! (`ss`), links (`ip link`) and packet filters (`nft`).
//!
//! The tests need root (CAP_NET_ADMIN, to make namespaces) and iproute2
//! (`ip`, `ss`); without them they fail saying so.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use super::{Finished, Proc};

/// Serializes `ip netns add` / `del` within this process: concurrent
/// first uses of /run/netns race in iproute2 (it makes the directory a
/// shared mount point on first use).
static NETNS_LOCK: Mutex<()> = Mutex::new(());

/// Numbers the namespace pairs of this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The prefix of every namespace these tests make: `fq-PID-N-a`.
const PREFIX: &str = "fq-";

/// Runs a short command (ip, cat, ss) to its end, within the tests' time
/// limit; returns its exit status, stdout and stderr.
pub fn run(cmd: &mut Command) -> Finished {
    let name = format!("{cmd:?}");
    Proc::start(&name, cmd).finish()
}

/// Runs `ip ARGS`, panicking with its stderr when it fails.
pub fn ip(args: &[&str]) {
    let done = run(Command::new("ip").args(args));
    assert!(
        done.status.success(),
        "ip {} failed: {}",
        args.join(" "),
        done.err_text()
    );
}

/// Runs `ip ARGS`, ignoring failure (deleting what may not exist).
pub fn ip_quietly(args: &[&str]) {
    let _ = run(Command::new("ip").args(args));
}

/// Fails the test unless it can make namespaces: it must run as root and
/// have `ip` from iproute2.
fn require_root_and_iproute2() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // "Uid:\treal\teffective\tsaved\tfs"
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(str::to_string);
    assert!(
        euid.as_deref() == Some("0"),
        "the netns tests need root (CAP_NET_ADMIN, to create network namespaces and \
         veth pairs), but the effective uid is {}; run `cargo test` as root (CI does) - \
         they fail rather than skip",
        euid.as_deref().unwrap_or("unknown")
    );
    let found = Command::new("ip").arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "the netns tests need `ip` and `ss` from iproute2: apt-get install iproute2 \
         (scripts/test installs it)"
    );
}

/// One side: a namespace with one end of the veth pair.
pub struct Host {
    pub ns: String,
    pub dev: String,
    pub ip: String,
}

impl Host {
    /// `ip netns exec NS PROGRAM ARGS`.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, program]).args(args);
        cmd
    }

    /// `fabriq ARGS` in this namespace, started with its pipes read.
    pub fn fabriq(&self, name: &str, args: &[&str]) -> Proc {
        let program = env!("CARGO_BIN_EXE_fabriq");
        Proc::start(
            &format!("{name} in {}", self.ns),
            &mut self.command(program, args),
        )
    }

    /// A counter of the veth device, read inside the namespace.
    pub fn counter(&self, name: &str) -> u64 {
        let path = format!("/sys/class/net/{}/statistics/{name}", self.dev);
        let done = run(&mut self.command("cat", &[&path]));
        assert!(done.status.success(), "cat {path}: {}", done.err_text());
        done.stdout
            .first()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("{path}: not a number: {:?}", done.stdout))
    }

    /// Bytes the veth device has sent.
    pub fn tx_bytes(&self) -> u64 {
        self.counter("tx_bytes")
    }

    /// The established TCP connections of the namespace, with the bytes
    /// each has received (`ss -tin`).
    pub fn connections(&self) -> Vec<Connection> {
        self.sockets_in("established")
    }

    /// The TCP sockets of the namespace in `state` (an `ss` state name:
    /// `established`, `syn-sent`, ...), with the same details.
    pub fn sockets_in(&self, state: &str) -> Vec<Connection> {
        let done = run(&mut self.command("ss", &["-tinH", "state", state]));
        assert!(done.status.success(), "ss: {}", done.err_text());
        parse_ss(&done.stdout)
    }
}

/// Two namespaces joined by a veth pair: `a` is 10.77.N.1, `b` is
/// 10.77.N.2. Deleted on drop (deleting a namespace deletes its end of
/// the veth, and with it the other end).
pub struct Hosts {
    pub a: Host,
    pub b: Host,
}

impl Hosts {
    pub fn new() -> Hosts {
        require_root_and_iproute2();
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // A subnet of its own for each pair of this process (10.77.1-250.x),
        // though the namespaces would keep equal subnets apart anyway.
        let subnet = (pid.wrapping_add(n) % 250) + 1;
        let host = |side: &str| Host {
            ns: format!("{PREFIX}{pid}-{n}-{side}"),
            // Interface names are at most 15 bytes: "fq" + pid (<= 7
            // digits) + n + side.
            dev: format!("fq{pid}{n}{side}"),
            ip: format!("10.77.{subnet}.{}", if side == "a" { 1 } else { 2 }),
        };
        let hosts = Hosts {
            a: host("a"),
            b: host("b"),
        };
        assert!(hosts.a.dev.len() <= 15, "{}", hosts.a.dev);
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        remove_stale_namespaces();
        for h in [&hosts.a, &hosts.b] {
            ip_quietly(&["netns", "del", &h.ns]);
            ip_quietly(&["link", "del", &h.dev]);
        }
        // From here on, drop cleans up whatever was made.
        ip(&["netns", "add", &hosts.a.ns]);
        ip(&["netns", "add", &hosts.b.ns]);
        ip(&[
            "link",
            "add",
            &hosts.a.dev,
            "netns",
            &hosts.a.ns,
            "type",
            "veth",
            "peer",
            "name",
            &hosts.b.dev,
            "netns",
            &hosts.b.ns,
        ]);
        for h in [&hosts.a, &hosts.b] {
            let cidr = format!("{}/24", h.ip);
            ip(&["-n", &h.ns, "addr", "add", &cidr, "dev", &h.dev]);
            ip(&["-n", &h.ns, "link", "set", "lo", "up"]);
            ip(&["-n", &h.ns, "link", "set", &h.dev, "up"]);
        }
        hosts
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        for h in [&self.a, &self.b] {
            ip_quietly(&["netns", "del", &h.ns]);
        }
        // Only there if making the pair failed half way.
        ip_quietly(&["link", "del", &self.a.dev]);
    }
}

/// Deletes namespaces `fq-PID-...` of test processes that no longer run
/// (a run killed before its guards could drop).
fn remove_stale_namespaces() {
    let done = run(Command::new("ip").args(["netns", "list"]));
    for line in &done.stdout {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            ip_quietly(&["netns", "del", name]);
        }
    }
}

/// One established TCP connection as `ss -tin` shows it.
#[derive(Debug)]
pub struct Connection {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    /// Bytes received and not yet read by the process (`Recv-Q`).
    pub recv_q: u64,
    pub bytes_received: u64,
}

/// Parses `ss -tinH state STATE` (one state, so no State column): a line with Recv-Q, Send-Q and
/// the addresses, then
/// indented lines with `bytes_received:N` among the details.
pub fn parse_ss(lines: &[String]) -> Vec<Connection> {
    let mut out: Vec<Connection> = Vec::new();
    for line in lines {
        if !line.starts_with(char::is_whitespace) {
            let addrs: Vec<SocketAddr> = line
                .split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect();
            let recv_q = line
                .split_whitespace()
                .next()
                .and_then(|q| q.parse().ok())
                .unwrap_or(0);
            if let [local, peer] = addrs[..] {
                out.push(Connection {
                    local,
                    peer,
                    recv_q,
                    bytes_received: 0,
                });
            }
        } else if let Some(conn) = out.last_mut() {
            for field in line.split_whitespace() {
                if let Some(n) = field.strip_prefix("bytes_received:") {
                    conn.bytes_received = n.parse().unwrap_or(0);
                }
            }
        }
    }
    out
}

// ---- faults ------------------------------------------------------------

impl Host {
    /// Brings this side's veth down or up (`ip link set DEV down|up`).
    /// Down takes the carrier from the other end too: nothing crosses
    /// either way, and no RST or FIN tells either side.
    pub fn set_link(&self, up: bool) {
        let state = if up { "up" } else { "down" };
        ip(&["-n", &self.ns, "link", "set", &self.dev, state]);
    }

    /// Drops `percent` % of the packets coming into this namespace, at
    /// random, with an nftables rule (the kernel has no tc netem here),
    /// after a rule that counts them all: [`Host::incoming`] and
    /// [`Host::dropped`] read the two counters.
    pub fn drop_incoming(&self, percent: u32) {
        require_nft();
        for cmd in [
            "add table inet fq".to_string(),
            "add chain inet fq input { type filter hook input priority 0 ; }".to_string(),
            "add rule inet fq input counter".to_string(),
            format!("add rule inet fq input numgen random mod 100 < {percent} counter drop"),
        ] {
            let args: Vec<&str> = cmd.split(' ').collect();
            let done = run(&mut self.command("nft", &args));
            assert!(done.status.success(), "nft {cmd}: {}", done.err_text());
        }
    }

    /// Removes the [`Host::drop_incoming`] rule (and its table).
    pub fn clear_drops(&self) {
        let done = run(&mut self.command("nft", &["delete", "table", "inet", "fq"]));
        assert!(
            done.status.success(),
            "nft delete table: {}",
            done.err_text()
        );
    }

    /// Packets that came into the namespace since [`Host::drop_incoming`].
    pub fn incoming(&self) -> u64 {
        self.nft_counters()[0]
    }

    /// Packets the [`Host::drop_incoming`] rule has dropped so far.
    pub fn dropped(&self) -> u64 {
        self.nft_counters()[1]
    }

    /// The packet counts of the rules of the `fq` input chain, in order.
    fn nft_counters(&self) -> Vec<u64> {
        let done = run(&mut self.command("nft", &["list", "chain", "inet", "fq", "input"]));
        assert!(done.status.success(), "nft list: {}", done.err_text());
        let counts: Vec<u64> = done
            .stdout
            .iter()
            .filter_map(|l| {
                let mut words = l.split_whitespace().skip_while(|w| *w != "packets");
                words.next()?;
                words.next()?.parse().ok()
            })
            .collect();
        assert_eq!(counts.len(), 2, "two counters in {:?}", done.stdout);
        counts
    }

    /// The established connections of this namespace with `port` at
    /// either end.
    pub fn established(&self, port: u16) -> Vec<Connection> {
        self.connections()
            .into_iter()
            .filter(|c| c.local.port() == port || c.peer.port() == port)
            .collect()
    }
}

/// Fails the test unless `nft` (nftables) is installed; scripts/test
/// installs it.
fn require_nft() {
    let found = Command::new("nft").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "the fault tests need `nft`: apt-get install nftables (scripts/test installs it)"
    );
}

/// Sends `signal` (e.g. "STOP", "CONT") to `proc` with kill(1).
/// `ip netns exec` execs its program, so the pid is fabriq's own.
pub fn signal(proc: &Proc, signal: &str) {
    signal_pid(proc.pid(), signal);
}

/// Sends `signal` to the process `pid` with kill(1).
pub fn signal_pid(pid: u32, signal: &str) {
    let pid = pid.to_string();
    let done = run(Command::new("kill").args([&format!("-{signal}"), &pid]));
    assert!(
        done.status.success(),
        "kill -{signal} {pid}: {}",
        done.err_text()
    );
}

/// Polls `cond` every 20 ms until it holds; returns how long that took.
/// Panics with `what` (and `log()`) after `limit`.
pub fn wait_until(
    what: &str,
    limit: Duration,
    mut cond: impl FnMut() -> bool,
    log: impl Fn() -> String,
) -> Duration {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "{what}: not within {limit:?}\n{}",
            log()
        );
        thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// The port of an endpoint `SCHEME://HOST:PORT`.
pub fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {endpoint:?}"))
}
