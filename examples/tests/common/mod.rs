//! The harness for the zguide tests: runs the example programs (and
//! pyzmq peers) as processes, reads their output line by line with bounded
//! waits, and kills whatever is left when a test ends.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// The longest any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(30);

/// A free tcp port on loopback for a bind.
pub const TCP: &str = "tcp://127.0.0.1:*";

/// The command for one example program, by its binary's name.
macro_rules! example {
    ($name:literal) => {
        std::process::Command::new(env!(concat!("CARGO_BIN_EXE_", $name)))
    };
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
            let reader = BufReader::new(stream);
            for line in reader.split(b'\n') {
                let Ok(line) = line else { return };
                let line = String::from_utf8_lossy(&line).into_owned();
                log.lock().unwrap().push(line.clone());
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Lines { rx, seen }
    }

    fn all(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// The next line that `pred` accepts, within `wait`.
    fn find(&self, wait: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) if pred(&line) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Waits until the stream ends (the process closed it, usually by
    /// exiting); false if it did not within `wait`.
    fn ended(&self, deadline: Instant) -> bool {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => return true,
                Err(RecvTimeoutError::Timeout) => return false,
            }
        }
    }
}

/// A running process whose stdout and stderr are read line by line.
pub struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines,
    stderr: Lines,
    /// The stderr lines `bound` has returned.
    claimed: RefCell<HashSet<usize>>,
}

/// What a process printed, once it has exited.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Finished {
    /// The stdout lines that start with `prefix`.
    pub fn lines_starting(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// Whether some stdout line is exactly `line`.
    pub fn has_line(&self, line: &str) -> bool {
        self.stdout.iter().any(|l| l == line)
    }
}

impl Proc {
    /// Starts `cmd` with `args`, its stdin, stdout and stderr piped.
    pub fn start(name: &str, cmd: &mut Command, args: &[&str]) -> Proc {
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name: name.to_string(),
            stdin: child.stdin.take(),
            stdout: Lines::read(child.stdout.take().expect("stdout is piped")),
            stderr: Lines::read(child.stderr.take().expect("stderr is piped")),
            claimed: RefCell::new(HashSet::new()),
            child,
        }
    }

    /// Everything printed so far, for failure messages.
    pub fn log(&self) -> String {
        format!(
            "{}: stdout {:?}\n{}: stderr {:?}",
            self.name,
            self.stdout.all(),
            self.name,
            self.stderr.all()
        )
    }

    /// The endpoint of the `bound [LABEL ]ENDPOINT` line the example
    /// prints on stderr after a bind (in whatever order the binds came;
    /// each line is returned once, so two unlabelled binds give their
    /// endpoints in turn).
    pub fn bound(&self, label: &str) -> String {
        let prefix = if label.is_empty() {
            "bound ".to_string()
        } else {
            format!("bound {label} ")
        };
        let deadline = Instant::now() + WAIT;
        loop {
            let lines = self.stderr.all();
            let mut claimed = self.claimed.borrow_mut();
            let found =
                (0..lines.len()).find(|i| !claimed.contains(i) && lines[*i].starts_with(&prefix));
            if let Some(i) = found {
                claimed.insert(i);
                return lines[i][prefix.len()..].trim().to_string();
            }
            drop(claimed);
            // Wait for the next line (it is in `all()` by then).
            let left = deadline.saturating_duration_since(Instant::now());
            if self.stderr.rx.recv_timeout(left).is_err() {
                panic!("no {prefix:?} line within {WAIT:?}\n{}", self.log());
            }
        }
    }

    /// The next stdout line that `pred` accepts (waiting at most `WAIT`).
    pub fn line_where(&self, pred: impl Fn(&str) -> bool) -> String {
        self.stdout
            .find(WAIT, pred)
            .unwrap_or_else(|| panic!("no matching line within {WAIT:?}\n{}", self.log()))
    }

    /// The next stdout line (waiting at most `WAIT`).
    pub fn line(&self) -> String {
        self.line_where(|_| true)
    }

    /// Writes one line to stdin.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot write to {}: {e}\n{}", self.name, self.log()));
    }

    /// Sends a signal (`INT`, `TERM`, ...) with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill(1) runs");
        assert!(status.success(), "kill -{signal} {} failed", self.name);
    }

    /// Waits (at most `WAIT`) for the process to close its output and
    /// exit on its own.
    pub fn finish(mut self) -> Finished {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        if !(self.stdout.ended(deadline) && self.stderr.ended(deadline)) {
            panic!("{} did not exit within {WAIT:?}\n{}", self.name, self.log());
        }
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("cannot wait for {}: {e}", self.name));
        Finished {
            status,
            stdout: self.stdout.all(),
            stderr: self.stderr.all(),
        }
    }

    /// Waits for a successful exit; returns the output.
    pub fn success(self) -> Finished {
        let name = self.name.clone();
        let done = self.finish();
        assert!(done.status.success(), "{name} failed: {done:#?}");
        done
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The Python interpreter with pyzmq: `$FABRIQ_PYTHON`, else
/// `target/pyenv/bin/python` in the workspace (scripts/python-env makes
/// it). Panics, failing the test, when there is none: the mixed tests must
/// not pass without their libzmq peer.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let advice = "Run scripts/python-env (it creates target/pyenv with pyzmq), \
                      or set FABRIQ_PYTHON to a Python that has pyzmq.";
        let path = match std::env::var_os("FABRIQ_PYTHON").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python"),
        };
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

/// A pyzmq program: `script` with `sys.argv[1:]` = the args given to
/// `Proc::start`.
pub fn py(script: &str) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg("-c").arg(script);
    cmd.env("PYTHONUNBUFFERED", "1");
    cmd
}
