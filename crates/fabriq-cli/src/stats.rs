//! Message and byte counts, and the summary line printed at the end.

use std::time::{Duration, Instant};

/// Counts for one direction.
#[derive(Debug, Clone, Default)]
pub struct Counter {
    /// Messages.
    pub msgs: u64,
    /// Bytes in all frames.
    pub bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Counter {
    /// Counts one message of `bytes` bytes.
    pub fn add(&mut self, bytes: usize) {
        let now = Instant::now();
        self.msgs += 1;
        self.bytes += bytes as u64;
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// `sent 3 messages (15 B)`, with rates when there were several
    /// messages: `sent 1000 messages (1.00 MB; 1923 msg/s, 1.92 MB/s)`.
    pub fn describe(&self, verb: &str) -> String {
        let noun = if self.msgs == 1 {
            "message"
        } else {
            "messages"
        };
        let mut text = format!("{verb} {} {noun} ({}", self.msgs, human_bytes(self.bytes));
        if let (Some(first), Some(last)) = (self.first, self.last) {
            let window = last.duration_since(first).as_secs_f64();
            if self.msgs >= 2 && window > 0.0 {
                let per_s = (self.msgs - 1) as f64 / window;
                let bytes_per_s = self.bytes as f64 * per_s / self.msgs as f64;
                text += &format!(
                    "; {} msg/s, {}/s",
                    human_rate(per_s),
                    human_bytes(bytes_per_s as u64)
                );
            }
        }
        text + ")"
    }
}

/// The counts of one run.
#[derive(Debug, Clone)]
pub struct Stats {
    /// When the run started.
    pub started: Instant,
    /// Messages sent.
    pub sent: Counter,
    /// Messages received.
    pub received: Counter,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            started: Instant::now(),
            sent: Counter::default(),
            received: Counter::default(),
        }
    }
}

impl Stats {
    /// The summary: `fabriq push: sent 3 messages (15 B) in 0.01 s`.
    /// `show_sent`/`show_received` pick the directions this socket type has.
    pub fn summary(&self, command: &str, show_sent: bool, show_received: bool) -> String {
        let mut parts = Vec::new();
        if show_sent {
            parts.push(self.sent.describe("sent"));
        }
        if show_received {
            parts.push(self.received.describe("received"));
        }
        format!(
            "fabriq {command}: {} in {}",
            parts.join(", "),
            human_duration(self.started.elapsed())
        )
    }
}

/// `15 B`, `1.50 kB`, `2.00 MB`, `1.20 GB` (decimal units).
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{:.2} kB", b / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} MB", b / 1e6),
        _ => format!("{:.2} GB", b / 1e9),
    }
}

/// A rate with a sensible number of digits.
fn human_rate(per_s: f64) -> String {
    if per_s >= 100.0 {
        format!("{per_s:.0}")
    } else {
        format!("{per_s:.1}")
    }
}

/// `0.012 s`, `3.40 s`, `95 s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{s:.3} s")
    } else if s < 60.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.0} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_bytes(15), "15 B");
        assert_eq!(human_bytes(1500), "1.50 kB");
        assert_eq!(human_bytes(2_000_000), "2.00 MB");
        assert_eq!(human_duration(Duration::from_millis(12)), "0.012 s");
    }

    #[test]
    fn summary_names_the_directions() {
        let mut s = Stats::default();
        s.sent.add(5);
        let line = s.summary("push", true, false);
        assert!(
            line.starts_with("fabriq push: sent 1 message (5 B) in "),
            "{line}"
        );
        let line = s.summary("req", true, true);
        assert!(line.contains("received 0 messages (0 B)"), "{line}");
    }
}
