//! Helpers for the CLI tests: spawning `fabriq` and Python (pyzmq)
//! processes with bounded waits, reading their output line by line as it
//! comes, and killing whatever is left when a test ends.

#![allow(dead_code)]

pub mod netns;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// The longest any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A `fabriq` command.
pub fn fabriq(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fabriq"));
    cmd.args(args);
    cmd
}

/// The Python interpreter with pyzmq: `$FABRIQ_PYTHON`, else
/// `target/pyenv/bin/python` in the workspace. Panics (failing the test)
/// when there is none: these tests must not pass silently without their
/// libzmq peer.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let advice = "Run scripts/python-env (it creates target/pyenv with pyzmq), \
                      or set FABRIQ_PYTHON to a Python that has pyzmq.";
        let path = match std::env::var_os("FABRIQ_PYTHON").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python"),
        };
        assert!(
            path.exists(),
            "no Python for the pyzmq interop tests: {} does not exist. {advice}",
            path.display()
        );
        let check = Command::new(&path)
            .args(["-c", "import zmq"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}. {advice}", path.display()));
        assert!(
            check.status.success(),
            "{} cannot import zmq: {}. {advice}",
            path.display(),
            String::from_utf8_lossy(&check.stderr)
        );
        path
    })
}

/// A Python command running `script` (with `sys.argv[1:]` = `args`).
pub fn py(script: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg("-c").arg(script).args(args);
    cmd.env("PYTHONUNBUFFERED", "1");
    cmd
}

/// Lines of one output stream, as they arrive, and all of them so far.
struct Lines {
    rx: Receiver<String>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Lines {
    fn read(stream: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if buf.last() == Some(&b'\n') {
                            buf.pop();
                        }
                        let line = String::from_utf8_lossy(&buf).into_owned();
                        log.lock().unwrap().push(line.clone());
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Lines { rx, seen }
    }

    fn all(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// A running process whose stdout and stderr are read line by line.
pub struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<Lines>,
    stderr: Lines,
}

/// What a process printed, once it has exited.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Finished {
    /// The stderr text, for assertions.
    pub fn err_text(&self) -> String {
        self.stderr.join("\n")
    }
}

impl Proc {
    /// Starts `cmd` with stdin, stdout and stderr piped.
    pub fn start(name: &str, cmd: &mut Command) -> Proc {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut p = Proc::start_raw(name, cmd);
        let out = p.child.stdout.take().expect("stdout is piped");
        p.stdout = Some(Lines::read(out));
        p
    }

    /// Starts `cmd` with stdin and stdout as configured by the caller
    /// (stderr piped); returns its stdout pipe if it has one, unread.
    pub fn start_with_stdout(name: &str, cmd: &mut Command) -> (Proc, Option<ChildStdout>) {
        let mut p = Proc::start_raw(name, cmd);
        let out = p.child.stdout.take();
        (p, out)
    }

    fn start_raw(name: &str, cmd: &mut Command) -> Proc {
        cmd.stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stderr = Lines::read(child.stderr.take().expect("stderr is piped"));
        Proc {
            name: name.to_string(),
            stdin: child.stdin.take(),
            child,
            stdout: None,
            stderr,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything printed so far, for failure messages.
    pub fn log(&self) -> String {
        let out = self.stdout.as_ref().map(Lines::all).unwrap_or_default();
        format!(
            "{}: stdout {:?}\n{}: stderr {:?}",
            self.name,
            out,
            self.name,
            self.stderr.all()
        )
    }

    /// The next stdout line, waiting at most `WAIT`.
    pub fn line(&self) -> String {
        self.line_within(WAIT)
            .unwrap_or_else(|| panic!("no output line within {WAIT:?}\n{}", self.log()))
    }

    /// The next stdout line if one comes within `wait`.
    pub fn line_within(&self, wait: Duration) -> Option<String> {
        let lines = self.stdout.as_ref().expect("stdout is read");
        lines.rx.recv_timeout(wait).ok()
    }

    /// The first stderr line starting with `prefix` (after any read so far).
    pub fn err_line(&self, prefix: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.rx.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(_) => panic!("no stderr line starting {prefix:?}\n{}", self.log()),
            }
        }
    }

    /// The endpoint of a `bound [LABEL ]ENDPOINT` line on stderr.
    pub fn bound(&self, label: &str) -> String {
        let prefix = format!("bound {label}");
        self.err_line(&prefix)[prefix.len()..].trim().to_string()
    }

    /// Writes one line to stdin.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot write to {}: {e}\n{}", self.name, self.log()));
    }

    /// Closes stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits (at most `WAIT`) for the process to exit on its own.
    pub fn finish(mut self) -> Finished {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => panic!("{} did not exit within {WAIT:?}\n{}", self.name, self.log()),
                Err(e) => panic!("cannot wait for {}: {e}", self.name),
            }
        };
        let stdout = self.stdout.take().map(drain).unwrap_or_default();
        let stderr = drain(std::mem::replace(
            &mut self.stderr,
            Lines::read(std::io::empty()),
        ));
        Finished {
            status,
            stdout,
            stderr,
        }
    }

    /// Waits for a successful exit; returns the output.
    pub fn success(self) -> Finished {
        let name = self.name.clone();
        let done = self.finish();
        assert!(done.status.success(), "{name} failed: {done:#?}");
        done
    }

    /// Stops the process now, and removes the shared-memory regions its
    /// `ofi+shm` endpoints leave behind (a killed process cannot unlink
    /// them: `/dev/shm/fabriq-PID-*`, docs/fabric.md).
    pub fn kill(mut self) {
        let pid = self.child.id();
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove_shm_regions(pid);
    }
}

/// Removes the shm regions of `pid`, a process that has ended.
fn remove_shm_regions(pid: u32) {
    let prefix = format!("fabriq-{pid}-");
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// All lines of a stream that has ended (or ends within `WAIT`).
fn drain(lines: Lines) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        match lines
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(_) => {}
            Err(_) => break,
        }
    }
    lines.all()
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A tcp endpoint on loopback where nothing listens (a port the system
/// just handed out and took back).
pub fn closed_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    format!("tcp://127.0.0.1:{port}")
}

/// Calls `send` (one round of publishing) until `receiver` prints a line;
/// returns that line. For PUB/SUB, where messages sent before the
/// subscription reaches the publisher are dropped.
pub fn publish_until_received(mut send: impl FnMut(u32), receiver: &Proc) -> String {
    let deadline = Instant::now() + WAIT;
    let mut round = 0;
    while Instant::now() < deadline {
        send(round);
        round += 1;
        if let Some(line) = receiver.line_within(Duration::from_millis(50)) {
            return line;
        }
    }
    panic!(
        "nothing arrived after {round} rounds of publishing\n{}",
        receiver.log()
    );
}

/// PUB/SUB after the subscription is in: `sub` has printed every line
/// before `expect`, and the publisher has sent every one before `sent`.
/// Publishes up to `last` in batches of 100, each read to its end before
/// the next is sent (so queues stay far below the high-water mark), and
/// asserts that the subscriber prints `line(expect)`, `line(expect + 1)`
/// ... in order: nothing lost, repeated or reordered. Returns those lines.
pub fn publish_in_order(
    publisher: &mut Proc,
    sub: &Proc,
    line: impl Fn(u32) -> String,
    mut expect: u32,
    mut sent: u32,
    last: u32,
) -> Vec<String> {
    let mut received = Vec::new();
    loop {
        while expect < sent {
            let got = sub.line();
            assert_eq!(got, line(expect), "{}", sub.log());
            received.push(got);
            expect += 1;
        }
        if sent >= last {
            return received;
        }
        let batch_end = (sent + 100).min(last);
        for i in sent..batch_end {
            publisher.send_line(&line(i));
        }
        sent = batch_end;
    }
}

/// The number in a line `PREFIX NUMBER ...`.
pub fn number_in(line: &str, prefix: &str) -> u32 {
    line.strip_prefix(prefix)
        .and_then(|t| t.trim_start().split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a line {prefix:?} N: {line:?}"))
}
