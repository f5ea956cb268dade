//! The floor: the same bytes moved by a plain stream socket (TCP on
//! loopback for tcp, a Unix stream socket for ipc), no framing, no queues.
//!
//! Throughput: the sender writes the messages' bytes in large writes and
//! the receiver reads them, counting messages as bytes / size. Latency: a
//! ping-pong of `size` bytes each way.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::scenario::{Pattern, Scenario, Transport};
use crate::sys::Usage;
use crate::worker::{time_round_trips, Gate, Outcome, WorkerSpec, WARM_PAUSE};

/// Write (and read) chunk of the throughput floor.
const CHUNK: usize = 256 * 1024;

/// A connected stream of either kind.
pub enum Stream {
    /// TCP (with TCP_NODELAY).
    Tcp(TcpStream),
    /// Unix stream socket.
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A listener that removes its socket file when dropped.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn listen(transport: Transport) -> Result<(Listener, String), String> {
    match transport {
        Transport::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
            let addr = l.local_addr().map_err(|e| format!("local addr: {e}"))?;
            Ok((Listener::Tcp(l), format!("tcp://{addr}")))
        }
        Transport::Ipc => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = std::env::temp_dir()
                .join(format!("fabriq-bench-{}-{nanos}.sock", std::process::id()));
            let l =
                UnixListener::bind(&path).map_err(|e| format!("bind {}: {e}", path.display()))?;
            let ep = format!("ipc://{}", path.display());
            Ok((Listener::Unix(l, path), ep))
        }
        Transport::Inproc => Err("the raw floor has no inproc variant".into()),
        Transport::OfiTcp | Transport::OfiShm => {
            Err("the fabric's floor is fi_pingpong, not the raw stream".into())
        }
    }
}

fn accept(l: &Listener) -> Result<Stream, String> {
    match l {
        Listener::Tcp(l) => {
            let (s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
            s.set_nodelay(true).map_err(|e| format!("nodelay: {e}"))?;
            Ok(Stream::Tcp(s))
        }
        Listener::Unix(l, _) => {
            let (s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
            Ok(Stream::Unix(s))
        }
    }
}

/// Connects to `tcp://ADDR` or `ipc://PATH`, retrying for a few seconds.
fn connect(ep: &str) -> Result<Stream, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = if let Some(addr) = ep.strip_prefix("tcp://") {
            TcpStream::connect(addr).and_then(|s| {
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            })
        } else if let Some(path) = ep.strip_prefix("ipc://") {
            UnixStream::connect(path).map(Stream::Unix)
        } else {
            return Err(format!("unsupported endpoint {ep}"));
        };
        match r {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() > deadline => return Err(format!("connect {ep}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn io_err(what: &'static str) -> impl Fn(std::io::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// Writes `total` bytes to every stream in chunks, round-robin.
fn write_all_streams(streams: &mut [Stream], total: u64, fill: u8) -> Result<(), String> {
    let buf = vec![fill; CHUNK];
    let mut left = total;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        for s in streams.iter_mut() {
            s.write_all(&buf[..n]).map_err(io_err("write"))?;
        }
        left -= n as u64;
    }
    Ok(())
}

fn warm_bytes(sc: &Scenario) -> u64 {
    sc.warm * sc.size as u64
}

/// Writes the warm-up bytes, waits for `go`, writes the timed bytes, waits
/// for `done`.
pub fn sender(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let mut streams = spec
        .endpoints
        .iter()
        .map(|ep| connect(ep))
        .collect::<Result<Vec<_>, _>>()?;
    write_all_streams(&mut streams, warm_bytes(sc), b'W')?;
    while !gate.go()? {
        std::thread::sleep(WARM_PAUSE);
    }
    let total = sc.count * sc.size as u64;
    let before = Usage::now();
    let start = Instant::now();
    write_all_streams(&mut streams, total, b'T')?;
    let elapsed_s = start.elapsed().as_secs_f64();
    gate.wait_done()?;
    let usage = Usage::now().since(&before);
    Ok(Outcome::sent(sc, elapsed_s, usage))
}

/// Reads exactly the warm-up bytes, says `READY`, then times reading
/// exactly the timed bytes.
pub fn receiver(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let (listener, ep) = listen(sc.transport)?;
    gate.bound(&ep);
    let mut s = accept(&listener)?;
    let mut buf = vec![0u8; CHUNK];
    let mut left = warm_bytes(sc);
    while left > 0 {
        let n = s
            .read(&mut buf[..left.min(CHUNK as u64) as usize])
            .map_err(io_err("read"))?;
        if n == 0 {
            return Err("sender closed during warm-up".into());
        }
        left -= n as u64;
    }
    gate.ready();
    let total = sc.count * sc.size as u64;
    let first = s
        .read(&mut buf[..total.min(CHUNK as u64) as usize])
        .map_err(io_err("read"))?;
    if first == 0 {
        return Err("sender closed before the timed bytes".into());
    }
    let before = Usage::now();
    let start = Instant::now();
    let started_at = crate::worker::wall_now();
    let mut got = first as u64;
    while got < total {
        let n = s
            .read(&mut buf[..(total - got).min(CHUNK as u64) as usize])
            .map_err(io_err("read"))?;
        if n == 0 {
            return Err(format!("sender closed after {got} of {total} bytes"));
        }
        got += n as u64;
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    let span = Some((started_at, crate::worker::wall_now()));
    let usage = Usage::now().since(&before);
    // The clock started at the first read: count the messages after it.
    let timed_msgs = (total - first as u64) as f64 / sc.size as f64;
    Ok(Outcome {
        messages: sc.count,
        bytes: total,
        elapsed_s,
        rate: timed_msgs.max(1.0) / elapsed_s.max(1e-9),
        usage,
        span,
        ..Outcome::default()
    })
}

/// Ping-pong client: `size` bytes out, `size` bytes back.
pub fn client(spec: &WorkerSpec) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    let mut s = connect(&spec.endpoints[0])?;
    let out = vec![b'R'; sc.size];
    let mut back = vec![0u8; sc.size];
    time_round_trips(sc, || {
        s.write_all(&out).map_err(io_err("write"))?;
        s.read_exact(&mut back).map_err(io_err("read"))
    })
}

/// Ping-pong server: echoes exactly warm + count requests.
pub fn server(spec: &WorkerSpec, gate: &dyn Gate) -> Result<Outcome, String> {
    let sc = &spec.scenario;
    debug_assert_eq!(sc.pattern, Pattern::Reqrep);
    let (listener, ep) = listen(sc.transport)?;
    gate.bound(&ep);
    let mut s = accept(&listener)?;
    let mut buf = vec![0u8; sc.size];
    let mut before = Usage::now();
    let mut start = Instant::now();
    for i in 0..sc.warm + sc.count {
        s.read_exact(&mut buf).map_err(io_err("read"))?;
        if i == sc.warm {
            before = Usage::now();
            start = Instant::now();
        }
        s.write_all(&buf).map_err(io_err("write"))?;
    }
    Ok(Outcome::round_trips(sc, start, &before, None))
}
