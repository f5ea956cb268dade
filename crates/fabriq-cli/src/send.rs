//! Where outgoing messages come from: stdin lines (read by a thread, one
//! message per line, handed over as soon as each is read), a fixed
//! message repeated (`--data`), or synthetic payloads (`--size`); paced
//! by `--rate`, with a progress bar for long synthetic runs.

use std::io::{self, BufRead, IsTerminal};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use indicatif::{ProgressBar, ProgressStyle};

use crate::format::Codec;
use crate::wake::Waker;

/// What a [`Source`] has to offer now.
#[derive(Debug)]
pub enum Next {
    /// A message to send.
    Msg(Vec<Bytes>),
    /// Nothing before this instant (rate limit).
    Later(Instant),
    /// Nothing yet; the wake-up channel says when there is.
    Pending,
    /// No more messages.
    End,
    /// An input line could not be read as a message (the text says why);
    /// it is skipped.
    Skip(String),
}

/// One read from stdin.
enum Line {
    Data(Vec<u8>),
    Eof,
    Failed(io::Error),
}

enum Kind {
    Stdin {
        lines: Receiver<Line>,
        line_no: u64,
        codec: Codec,
    },
    Repeat {
        msg: Vec<Bytes>,
        total: u64,
    },
}

/// A stream of outgoing messages.
pub struct Source {
    kind: Kind,
    /// Prepended to the first frame of every message (`pub --topic`).
    prefix: Option<Bytes>,
    rate: Option<f64>,
    started: Option<Instant>,
    produced: u64,
}

impl Source {
    /// Messages from stdin, one per line, read by a background thread that
    /// wakes the main loop through `waker` whenever a line is ready.
    pub fn stdin(codec: Codec, waker: Waker) -> Source {
        // A small bound: a socket that cannot send holds stdin back
        // instead of buffering all of it.
        let (tx, rx) = mpsc::sync_channel(64);
        thread::spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let line = match input.read_until(b'\n', &mut buf) {
                    Ok(0) => Line::Eof,
                    Ok(_) => {
                        if buf.last() == Some(&b'\n') {
                            buf.pop();
                            if buf.last() == Some(&b'\r') {
                                buf.pop();
                            }
                        }
                        Line::Data(std::mem::take(&mut buf))
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Line::Failed(e),
                };
                let last = !matches!(line, Line::Data(_));
                if tx.send(line).is_err() {
                    return;
                }
                waker.wake();
                if last {
                    return;
                }
            }
        });
        Source::new(Kind::Stdin {
            lines: rx,
            line_no: 0,
            codec,
        })
    }

    /// `msg`, `total` times.
    pub fn repeat(msg: Vec<Bytes>, total: u64) -> Source {
        Source::new(Kind::Repeat { msg, total })
    }

    /// `total` messages of `size` bytes of printable filler.
    pub fn synthetic(size: usize, total: u64) -> Source {
        let payload: Vec<u8> = b"abcdefghijklmnopqrstuvwxyz"
            .iter()
            .copied()
            .cycle()
            .take(size)
            .collect();
        Source::repeat(vec![Bytes::from(payload)], total)
    }

    fn new(kind: Kind) -> Source {
        Source {
            kind,
            prefix: None,
            rate: None,
            started: None,
            produced: 0,
        }
    }

    /// Prefixes every message's first frame with `prefix`.
    pub fn with_prefix(mut self, prefix: Option<Bytes>) -> Source {
        self.prefix = prefix.filter(|p| !p.is_empty());
        self
    }

    /// Sends at most `rate` messages per second.
    pub fn with_rate(mut self, rate: Option<f64>) -> Source {
        self.rate = rate;
        self
    }

    /// How many messages there will be, when that is known.
    pub fn total(&self) -> Option<u64> {
        match &self.kind {
            Kind::Repeat { total, .. } => Some(*total),
            Kind::Stdin { .. } => None,
        }
    }

    /// Whether the messages are made up (`--data`, `--size`), not read.
    pub fn is_synthetic(&self) -> bool {
        matches!(self.kind, Kind::Repeat { .. })
    }

    /// The next message, if there is one now.
    pub fn next(&mut self, now: Instant) -> Next {
        if let Some(rate) = self.rate {
            let started = *self.started.get_or_insert(now);
            let offset = Duration::try_from_secs_f64(self.produced as f64 / rate).ok();
            match offset.and_then(|o| started.checked_add(o)) {
                Some(due) if due > now => return Next::Later(due),
                Some(_) => {}
                // So slow that the next message is never due.
                None => return Next::Later(now + Duration::from_secs(3600)),
            }
        }
        let msg = match &mut self.kind {
            Kind::Repeat { msg, total } => {
                if self.produced >= *total {
                    return Next::End;
                }
                msg.clone()
            }
            Kind::Stdin {
                lines,
                line_no,
                codec,
            } => match lines.try_recv() {
                Ok(Line::Data(line)) => {
                    *line_no += 1;
                    match codec.decode(&line) {
                        Ok(frames) => frames,
                        Err(e) => return Next::Skip(format!("stdin line {line_no}: {e}")),
                    }
                }
                Ok(Line::Failed(e)) => return Next::Skip(format!("cannot read stdin: {e}")),
                Ok(Line::Eof) | Err(TryRecvError::Disconnected) => return Next::End,
                Err(TryRecvError::Empty) => return Next::Pending,
            },
        };
        self.produced += 1;
        Next::Msg(self.prefixed(msg))
    }

    fn prefixed(&self, mut msg: Vec<Bytes>) -> Vec<Bytes> {
        if let Some(prefix) = &self.prefix {
            match msg.first_mut() {
                Some(first) => {
                    let mut joined = BytesMut::with_capacity(prefix.len() + first.len());
                    joined.extend_from_slice(prefix);
                    joined.extend_from_slice(first);
                    *first = joined.freeze();
                }
                None => msg.push(prefix.clone()),
            }
        }
        msg
    }
}

/// A progress bar for synthetic load that takes more than a few seconds;
/// shown only when stderr is a terminal.
pub struct Progress {
    total: Option<u64>,
    enabled: bool,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Shows no bar before this much time has passed.
    const DELAY: Duration = Duration::from_secs(2);

    /// Progress towards `total` messages (no bar without a total).
    pub fn new(total: Option<u64>, quiet: bool) -> Progress {
        Progress {
            total,
            enabled: !quiet && total.is_some() && io::stderr().is_terminal(),
            started: Instant::now(),
            bar: None,
        }
    }

    /// Notes that `done` messages have been sent.
    pub fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            let Some(total) = self.total else { return };
            if done >= total || self.started.elapsed() < Self::DELAY {
                return;
            }
            let bar = ProgressBar::new(total)
                .with_position(done)
                .with_elapsed(self.started.elapsed());
            if let Ok(style) =
                ProgressStyle::with_template("{pos}/{len} messages [{bar:40}] {percent}% {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            // indicatif's own estimate starts from the bar's creation;
            // this one covers the whole run.
            let elapsed = self.started.elapsed().as_secs_f64();
            if let (Some(total), true) = (self.total, done > 0) {
                let left = total.saturating_sub(done) as f64 * elapsed / done as f64;
                bar.set_message(format!("{elapsed:.0} s so far, about {left:.0} s left"));
            }
        }
    }

    /// Removes the bar (before the summary is printed).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_counts_and_prefixes() {
        let mut s = Source::repeat(vec![Bytes::from_static(b"x")], 2)
            .with_prefix(Some(Bytes::from_static(b"t.")));
        let now = Instant::now();
        for _ in 0..2 {
            match s.next(now) {
                Next::Msg(m) => assert_eq!(m, vec![Bytes::from_static(b"t.x")]),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(s.next(now), Next::End));
    }

    #[test]
    fn rate_spaces_messages() {
        let mut s = Source::synthetic(3, 10).with_rate(Some(10.0));
        let now = Instant::now();
        assert!(matches!(s.next(now), Next::Msg(m) if m[0] == "abc"));
        match s.next(now) {
            Next::Later(t) => assert_eq!(t - now, Duration::from_millis(100)),
            other => panic!("{other:?}"),
        }
    }
}
