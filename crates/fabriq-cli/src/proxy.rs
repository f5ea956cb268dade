//! `fabriq proxy`: forwards messages both ways between a frontend and a
//! backend socket, like `zmq_proxy`, optionally copying every message to
//! a capture socket.
//!
//! The loop is this module's own rather than `fabriq::proxy` so that it
//! can count what it forwards (for the summary) and stop cleanly on
//! `--timeout` or Ctrl-C; it forwards exactly as `fabriq::proxy` does:
//! whole messages, the capture copy sent without ever blocking.

use std::time::{Duration, Instant};

use fabriq::{Error, PollItem, Socket, DONTWAIT, POLLIN, POLLOUT};

use crate::args::{split_attach, Attach, CaptureType, ProxyArgs, ProxyKind};
use crate::error::{runtime, CliError, Ending};
use crate::recv::{recv_message, size};
use crate::sockets::{self, Target};
use crate::stats::{human_duration, Counter};
use crate::wake::{interrupted, Wake};

/// Messages moved per turn from one side before looking at the other.
const BATCH: usize = 256;

/// Runs the proxy until `--timeout`, Ctrl-C or an error.
pub fn run(args: &ProxyArgs, wake: &Wake) -> Result<Ending, CliError> {
    let started = Instant::now();
    let deadline = args.timeout.map(|t| started + t);
    let (front_type, back_type) = match args.kind {
        ProxyKind::XsubXpub => (fabriq::XSUB, fabriq::XPUB),
        ProxyKind::RouterDealer => (fabriq::ROUTER, fabriq::DEALER),
        ProxyKind::PullPush => (fabriq::PULL, fabriq::PUSH),
    };
    let ctx = fabriq::Context::new();
    let open = |kind, list: &[String], option: &'static str, label: &str| {
        let socket = sockets::open(&ctx, kind, &args.tuning, Some(0), None)?;
        sockets::attach(&socket, &targets(list, option), label, args.quiet)?;
        Ok::<Socket, CliError>(socket)
    };
    let front = open(front_type, &args.frontend, "--frontend", "frontend ")?;
    let back = open(back_type, &args.backend, "--backend", "backend ")?;
    let capture = if args.capture.is_empty() {
        None
    } else {
        let kind = match args.capture_type {
            CaptureType::Pub => fabriq::PUB,
            CaptureType::Push => fabriq::PUSH,
        };
        Some(open(kind, &args.capture, "--capture", "capture ")?)
    };

    let mut to_back = Counter::default();
    let mut to_front = Counter::default();
    let ending = loop {
        if interrupted() {
            break Ending::Interrupted;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break Ending::TimedOut { unmet: None };
        }
        let mut items = [
            front.as_poll_item(POLLIN),
            back.as_poll_item(POLLIN),
            PollItem::from_fd(wake.fd(), POLLIN),
        ];
        fabriq::poll(&mut items, timeout_ms(deadline, now))
            .map_err(|e| runtime("cannot wait for the sockets", e))?;
        let (front_ready, back_ready) = (items[0].is_readable(), items[1].is_readable());
        if items[2].is_readable() {
            wake.drain();
        }
        let way = Way {
            capture: capture.as_ref(),
            deadline,
            wake,
        };
        if front_ready {
            if let Some(end) = way.forward(&front, &back, &mut to_back)? {
                break end;
            }
        }
        if back_ready {
            if let Some(end) = way.forward(&back, &front, &mut to_front)? {
                break end;
            }
        }
    };
    // Linger is 0: a stopped proxy drops what it still holds.
    drop((front, back, capture));
    drop(ctx);
    if !args.quiet {
        eprintln!(
            "fabriq proxy: {}, {} in {}",
            to_back.describe("frontend->backend"),
            to_front.describe("backend->frontend"),
            human_duration(started.elapsed())
        );
    }
    Ok(ending)
}

/// The proxy's endpoints: bound unless written `connect:EP`.
fn targets(list: &[String], option: &'static str) -> Vec<Target> {
    list.iter()
        .map(|text| {
            let (how, endpoint) = split_attach(text, Attach::Bind);
            Target {
                how,
                endpoint: endpoint.to_string(),
                option,
            }
        })
        .collect()
}

/// What forwarding needs besides the two sockets.
struct Way<'a> {
    capture: Option<&'a Socket>,
    deadline: Option<Instant>,
    wake: &'a Wake,
}

impl Way<'_> {
    /// Moves up to [`BATCH`] whole messages from `from` to `to`. A full
    /// `to` holds the proxy back (as zmq_proxy does) until it has room,
    /// the deadline passes or Ctrl-C is pressed; those end the run.
    fn forward(
        &self,
        from: &Socket,
        to: &Socket,
        counter: &mut Counter,
    ) -> Result<Option<Ending>, CliError> {
        for _ in 0..BATCH {
            let frames = match recv_message(from, DONTWAIT) {
                Ok(frames) => frames,
                Err(Error::EAGAIN) => return Ok(None),
                Err(e) => return Err(runtime("cannot receive", e)),
            };
            if let Some(capture) = self.capture {
                // A slow capture socket must not stall the proxy.
                let _ = capture.send_multipart(frames.iter().cloned(), DONTWAIT);
            }
            loop {
                match to.send_multipart(frames.iter().cloned(), DONTWAIT) {
                    Ok(()) => {
                        counter.add(size(&frames));
                        break;
                    }
                    Err(Error::EAGAIN) => {
                        if interrupted() {
                            return Ok(Some(Ending::Interrupted));
                        }
                        let now = Instant::now();
                        if self.deadline.is_some_and(|d| now >= d) {
                            return Ok(Some(Ending::TimedOut { unmet: None }));
                        }
                        // Wake up now and then: a ROUTER or DEALER may
                        // report room it does not have for this peer.
                        let until = now + Duration::from_millis(100);
                        let until = self.deadline.map_or(until, |d| d.min(until));
                        let mut items = [
                            to.as_poll_item(POLLOUT),
                            PollItem::from_fd(self.wake.fd(), POLLIN),
                        ];
                        fabriq::poll(&mut items, timeout_ms(Some(until), now))
                            .map_err(|e| runtime("cannot wait for the sockets", e))?;
                        if items[1].is_readable() {
                            self.wake.drain();
                        }
                    }
                    Err(e) => return Err(runtime("cannot forward", e)),
                }
            }
        }
        Ok(None)
    }
}

/// Milliseconds from `now` to `until`, rounded up (-1: no limit).
fn timeout_ms(until: Option<Instant>, now: Instant) -> i64 {
    until.map_or(-1, |t| {
        let micros = t.saturating_duration_since(now).as_micros();
        i64::try_from(micros.div_ceil(1000)).unwrap_or(i64::MAX)
    })
}
