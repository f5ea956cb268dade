//! The loop of the pattern commands (`pub`, `sub`, `push`, ... `xsub`).
//!
//! One thread does everything: it takes the next outgoing message from its
//! [`Source`], tries to send it without blocking, tries to receive without
//! blocking, and when neither made progress it waits in `fabriq::poll` on
//! the socket and the wake-up channel (stdin lines, Ctrl-C) until the next
//! deadline (`--timeout`, `--rate`).

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq::{Error, PollEvents, PollItem, Socket, DONTWAIT, POLLIN, POLLOUT};

use crate::error::{runtime, CliError, Ending};
use crate::format::hex_encode;
use crate::recv::{recv_message, size, Printer};
use crate::send::{Next, Progress, Source};
use crate::stats::Stats;
use crate::wake::{interrupted, Wake};

/// What the socket does with messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Only sends (pub, push).
    Send,
    /// Only receives (sub, pull).
    Recv,
    /// Sends one request, waits for its reply, and so on (req).
    Req,
    /// Receives a request, answers it, and so on (rep).
    Rep,
    /// Sends and receives independently (dealer, router, pair, xpub, xsub).
    Duplex,
}

/// What a REP socket answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The request itself.
    Echo,
    /// Always this message.
    Fixed(Vec<Bytes>),
}

/// Everything one run needs.
pub struct Job {
    /// The subcommand, for messages.
    pub command: &'static str,
    /// What the socket does.
    pub role: Role,
    /// The socket, bound and connected.
    pub socket: Socket,
    /// Outgoing messages (sending roles).
    pub source: Option<Source>,
    /// Where received messages go (receiving roles).
    pub printer: Option<Printer>,
    /// What REP answers.
    pub reply: Reply,
    /// REQ with ZMQ_REQ_RELAXED: the next request need not wait for the
    /// last one's reply (the socket allows it, so the loop does too).
    pub relaxed: bool,
    /// Messages sent first and not counted (XSUB's subscriptions).
    pub preload: Vec<Vec<Bytes>>,
    /// `-n`.
    pub count: Option<u64>,
    /// When `--timeout` runs out.
    pub deadline: Option<Instant>,
    /// `--quiet`.
    pub quiet: bool,
}

/// Which messages `-n` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Sent,
    Received,
}

/// The loop's state besides the job.
struct State {
    stats: Stats,
    /// Messages waiting to be sent; `true` when they count as sent.
    outbox: VecDeque<(Vec<Bytes>, bool)>,
    /// REQ: a request is out, its reply not yet in.
    awaiting: bool,
    source_done: bool,
    /// Messages taken from the source.
    taken: u64,
}

impl Job {
    fn counted(&self) -> Counted {
        match self.role {
            Role::Send | Role::Rep => Counted::Sent,
            Role::Recv | Role::Req => Counted::Received,
            Role::Duplex if self.synthetic() => Counted::Sent,
            Role::Duplex => Counted::Received,
        }
    }

    fn synthetic(&self) -> bool {
        self.source.as_ref().is_some_and(Source::is_synthetic)
    }

    fn progress(&self, st: &State) -> u64 {
        match self.counted() {
            Counted::Sent => st.stats.sent.msgs,
            Counted::Received => st.stats.received.msgs,
        }
    }

    /// Whether the job is complete.
    fn finished(&self, st: &State) -> bool {
        if self.count.is_some_and(|n| self.progress(st) >= n) {
            return true;
        }
        let drained = st.source_done && st.outbox.is_empty();
        match self.role {
            Role::Send => drained,
            Role::Req => drained && !st.awaiting,
            Role::Duplex => self.synthetic() && drained,
            Role::Recv | Role::Rep => false,
        }
    }

    /// Whether another message may be taken from the source now.
    fn may_take(&self, st: &State) -> bool {
        let below_count = match self.role {
            // Do not read input that will not be sent.
            Role::Send | Role::Req => self.count.map_or(true, |n| st.taken < n),
            _ => true,
        };
        st.outbox.is_empty()
            && !st.source_done
            && below_count
            && !(self.role == Role::Req && st.awaiting && !self.relaxed)
    }

    fn wants_input(&self, st: &State) -> bool {
        match self.role {
            Role::Send => false,
            Role::Recv | Role::Duplex => true,
            Role::Req => st.awaiting,
            Role::Rep => st.outbox.is_empty(),
        }
    }

    /// What `--timeout` cut short, if anything that was asked for.
    fn unmet(&self, st: &State) -> Option<String> {
        if let Some(n) = self.count {
            let done = self.progress(st);
            if done < n {
                let verb = match self.counted() {
                    Counted::Sent => "sent",
                    Counted::Received => "received",
                };
                return Some(format!("{done} of {n} messages {verb}"));
            }
        }
        if self.role == Role::Req && st.awaiting {
            return Some("no reply to the last request".to_string());
        }
        if st.outbox.iter().any(|(_, counted)| *counted) {
            return Some("a message is still waiting for a peer to take it".to_string());
        }
        if let Some(total) = self.source.as_ref().and_then(Source::total) {
            if !st.source_done {
                return Some(format!("{} of {total} messages sent", st.stats.sent.msgs));
            }
        }
        None
    }
}

/// Runs `job` to its end; returns how it ended and the counts.
pub fn run(mut job: Job, wake: &Wake) -> Result<(Ending, Stats), CliError> {
    let mut st = State {
        stats: Stats::default(),
        outbox: job.preload.drain(..).map(|m| (m, false)).collect(),
        awaiting: false,
        source_done: job.source.is_none(),
        taken: 0,
    };
    let mut progress = Progress::new(job.source.as_ref().and_then(Source::total), job.quiet);
    // POLLOUT was reported but the send still said EAGAIN (a ROUTER peer
    // that is full): wait a little instead of spinning.
    let mut writable_reported = false;
    let mut stalled = false;

    let ending = loop {
        if interrupted() {
            break Ending::Interrupted;
        }
        if job.finished(&st) {
            break Ending::Done;
        }
        let now = Instant::now();
        if job.deadline.is_some_and(|d| now >= d) {
            break Ending::TimedOut {
                unmet: job.unmet(&st),
            };
        }
        let mut wait_until = job.deadline;

        if job.may_take(&st) {
            if let Some(source) = job.source.as_mut() {
                match source.next(now) {
                    Next::Msg(msg) => {
                        st.outbox.push_back((msg, true));
                        st.taken += 1;
                    }
                    Next::Later(t) => wait_until = Some(wait_until.map_or(t, |d| d.min(t))),
                    Next::Pending => {}
                    Next::End => {
                        st.source_done = true;
                        continue;
                    }
                    Next::Skip(why) => {
                        eprintln!("fabriq {}: {why}; skipped", job.command);
                        continue;
                    }
                }
            }
        }

        let mut progressed = false;
        if let Some((msg, counted)) = st.outbox.front() {
            match job.socket.send_multipart(msg.iter().cloned(), DONTWAIT) {
                Ok(()) => {
                    if *counted {
                        st.stats.sent.add(size(msg));
                    }
                    if job.role == Role::Req {
                        st.awaiting = true;
                    }
                    st.outbox.pop_front();
                    progress.update(st.stats.sent.msgs);
                    progressed = true;
                    writable_reported = false;
                }
                // EAGAIN right after poll said POLLOUT: back off.
                Err(Error::EAGAIN) => stalled = writable_reported,
                Err(Error::EHOSTUNREACH) => {
                    let id = msg.first().map(|f| &f[..]).unwrap_or_default();
                    eprintln!(
                        "fabriq {}: no peer with routing id {}; message dropped",
                        job.command,
                        show_id(id)
                    );
                    st.outbox.pop_front();
                    progressed = true;
                }
                Err(e) => return Err(runtime("cannot send", e)),
            }
        }

        if job.wants_input(&st) {
            match recv_message(&job.socket, DONTWAIT) {
                Ok(frames) => {
                    st.stats.received.add(size(&frames));
                    if let Some(printer) = job.printer.as_mut() {
                        if let Err(e) = printer.print(&frames) {
                            break stdout_closed(e)?;
                        }
                    }
                    match job.role {
                        Role::Req => st.awaiting = false,
                        Role::Rep => {
                            let answer = match &job.reply {
                                Reply::Echo => frames,
                                Reply::Fixed(msg) => msg.clone(),
                            };
                            st.outbox.push_back((answer, true));
                        }
                        _ => {}
                    }
                    progressed = true;
                }
                Err(Error::EAGAIN) => {}
                Err(e) => return Err(runtime("cannot receive", e)),
            }
        }
        if progressed {
            continue;
        }

        // Nothing to do now: flush, then sleep until something happens.
        if let Some(printer) = job.printer.as_mut() {
            if let Err(e) = printer.flush() {
                break stdout_closed(e)?;
            }
        }
        let mut events = PollEvents::empty();
        if job.wants_input(&st) {
            events |= POLLIN;
        }
        if !st.outbox.is_empty() {
            if stalled {
                let retry = now + Duration::from_millis(10);
                wait_until = Some(wait_until.map_or(retry, |d| d.min(retry)));
            } else {
                events |= POLLOUT;
            }
        }
        let mut items = [
            job.socket.as_poll_item(events),
            PollItem::from_fd(wake.fd(), POLLIN),
        ];
        fabriq::poll(&mut items, timeout_ms(wait_until, now))
            .map_err(|e| runtime("cannot wait for the socket", e))?;
        writable_reported = items[0].is_writable();
        stalled = false;
        if items[1].is_readable() {
            wake.drain();
        }
    };

    progress.finish();
    if let Some(printer) = job.printer.as_mut() {
        // A closed stdout at the very end loses nothing worth an error.
        let _ = printer.flush();
    }
    if ending != Ending::Done {
        // Giving up: do not wait for queued messages at exit.
        let _ = job.socket.set_linger(0);
    }
    Ok((ending, st.stats))
}

/// Milliseconds from `now` to `until`, rounded up (-1: no limit).
fn timeout_ms(until: Option<Instant>, now: Instant) -> i64 {
    match until {
        None => -1,
        Some(t) => {
            let micros = t.saturating_duration_since(now).as_micros();
            i64::try_from(micros.div_ceil(1000)).unwrap_or(i64::MAX)
        }
    }
}

/// A closed stdout (`fabriq sub ... | head -3`) ends the run normally;
/// other write errors are failures.
fn stdout_closed(e: io::Error) -> Result<Ending, CliError> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(Ending::Done)
    } else {
        Err(CliError::Runtime(format!("cannot write to stdout: {e}")))
    }
}

/// A routing id for a message: text if printable, else 0x and hex.
fn show_id(id: &[u8]) -> String {
    match std::str::from_utf8(id) {
        Ok(s) if !s.is_empty() && !s.chars().any(char::is_control) => format!("{s:?}"),
        _ => format!("0x{}", hex_encode(id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up() {
        let now = Instant::now();
        assert_eq!(timeout_ms(None, now), -1);
        assert_eq!(timeout_ms(Some(now), now), 0);
        assert_eq!(timeout_ms(Some(now + Duration::from_micros(1)), now), 1);
        assert_eq!(timeout_ms(Some(now + Duration::from_millis(250)), now), 250);
    }

    #[test]
    fn ids() {
        assert_eq!(show_id(b"alice"), "\"alice\"");
        assert_eq!(show_id(b"\x00\x01"), "0x0001");
    }
}
