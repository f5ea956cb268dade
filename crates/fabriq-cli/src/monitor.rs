//! `fabriq monitor`: makes a socket of the given type, attaches it to an
//! endpoint and prints the socket's monitor events, read from a PAIR
//! socket in libzmq's two-frame format (6 bytes: event u16 LE and value
//! u32 LE; then the endpoint).

use std::io::{self, Write};
use std::time::Instant;

use bytes::Bytes;
use fabriq::{Error, PollItem, SocketEvent, DONTWAIT, POLLIN};
use serde_json::json;

use crate::args::{split_attach, Attach, EventFormat, MonitorArgs};
use crate::error::{runtime, CliError, Ending};
use crate::recv::recv_message;
use crate::sockets::{self, Target};
use crate::stats::human_duration;
use crate::wake::{interrupted, Wake};

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Event number (`SocketEvent` bits).
    pub number: u16,
    /// The event's value: a descriptor, an errno, an interval...
    pub value: u32,
    /// The endpoint it concerns.
    pub endpoint: String,
}

impl Event {
    /// Decodes the two frames of a monitor message.
    pub fn decode(frames: &[Bytes]) -> Option<Event> {
        let [head, endpoint] = frames else {
            return None;
        };
        let head: &[u8; 6] = head.as_ref().try_into().ok()?;
        Some(Event {
            number: u16::from_le_bytes([head[0], head[1]]),
            value: u32::from_le_bytes([head[2], head[3], head[4], head[5]]),
            endpoint: String::from_utf8_lossy(endpoint).into_owned(),
        })
    }

    /// libzmq's name without `ZMQ_EVENT_`, e.g. `HANDSHAKE_SUCCEEDED`.
    pub fn name(&self) -> String {
        match SocketEvent::from_raw(self.number) {
            SocketEvent::ALL => format!("UNKNOWN_0x{:04x}", self.number),
            known => format!("{known:?}"),
        }
    }

    /// The value, explained where it is an error number or code.
    pub fn value_text(&self) -> String {
        use SocketEvent::*;
        match SocketEvent::from_raw(self.number) {
            BIND_FAILED | ACCEPT_FAILED | CLOSE_FAILED | HANDSHAKE_FAILED_NO_DETAIL => {
                let error = Error::from_raw(self.value as i32);
                format!("value={} ({})", self.value, error.message())
            }
            HANDSHAKE_FAILED_PROTOCOL | HANDSHAKE_FAILED_AUTH => {
                format!("value=0x{:08x}", self.value)
            }
            CONNECT_RETRIED => format!("value={} (ms)", self.value),
            _ => format!("value={}", self.value),
        }
    }

    /// One output line (without the newline).
    pub fn line(&self, format: EventFormat) -> String {
        match format {
            EventFormat::Text => {
                format!("{} {} {}", self.name(), self.endpoint, self.value_text())
            }
            EventFormat::Json => json!({
                "event": self.name(),
                "value": self.value,
                "endpoint": self.endpoint,
            })
            .to_string(),
        }
    }
}

/// Runs the monitor until `-n` events, `--timeout` or Ctrl-C.
pub fn run(args: &MonitorArgs, wake: &Wake) -> Result<Ending, CliError> {
    let started = Instant::now();
    let deadline = args.timeout.map(|t| started + t);
    let ctx = fabriq::Context::new();
    let socket = sockets::open(
        &ctx,
        args.socket_type.socket_type(),
        &args.tuning,
        Some(0),
        args.identity.as_deref(),
    )?;
    let name = format!("inproc://fabriq-monitor-{}", std::process::id());
    socket
        .monitor(&name, i32::from(SocketEvent::ALL.to_raw()))
        .map_err(|e| runtime("cannot monitor the socket", e))?;
    let events = ctx
        .socket(fabriq::PAIR)
        .map_err(|e| runtime("cannot create the event socket", e))?;
    events
        .connect(&name)
        .map_err(|e| runtime("cannot read the socket's events", e))?;
    let (how, endpoint) = split_attach(&args.endpoint, Attach::Connect);
    let target = Target {
        how,
        endpoint: endpoint.to_string(),
        option: "EP",
    };
    sockets::attach(&socket, &[target], "", args.quiet)?;

    let mut out = io::stdout().lock();
    let mut seen = 0u64;
    let ending = loop {
        if interrupted() {
            break Ending::Interrupted;
        }
        if args.count.is_some_and(|n| seen >= n) {
            break Ending::Done;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            let unmet = args.count.map(|n| format!("{seen} of {n} events seen"));
            break Ending::TimedOut { unmet };
        }
        match recv_message(&events, DONTWAIT) {
            Ok(frames) => {
                let Some(event) = Event::decode(&frames) else {
                    eprintln!("fabriq monitor: malformed event message skipped");
                    continue;
                };
                seen += 1;
                let written =
                    writeln!(out, "{}", event.line(args.format)).and_then(|_| out.flush());
                if let Err(e) = written {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        break Ending::Done;
                    }
                    return Err(CliError::Runtime(format!("cannot write to stdout: {e}")));
                }
                continue;
            }
            Err(Error::EAGAIN) => {}
            Err(e) => return Err(runtime("cannot read events", e)),
        }
        let timeout = deadline.map_or(-1, |d| {
            let micros = d.saturating_duration_since(now).as_micros();
            i64::try_from(micros.div_ceil(1000)).unwrap_or(i64::MAX)
        });
        let mut items = [
            events.as_poll_item(POLLIN),
            PollItem::from_fd(wake.fd(), POLLIN),
        ];
        fabriq::poll(&mut items, timeout).map_err(|e| runtime("cannot wait for events", e))?;
        if items[1].is_readable() {
            wake.drain();
        }
    };
    drop(socket);
    drop(events);
    drop(ctx);
    if let Ending::TimedOut { unmet: Some(what) } = &ending {
        eprintln!(
            "fabriq monitor: timed out after {}: {what}",
            human_duration(started.elapsed())
        );
    }
    if !args.quiet {
        let noun = if seen == 1 { "event" } else { "events" };
        eprintln!(
            "fabriq monitor: {seen} {noun} in {}",
            human_duration(started.elapsed())
        );
    }
    Ok(ending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_libzmq_event_frames() {
        let head = Bytes::from_static(&[0x00, 0x10, 0, 0, 0, 0]);
        let ep = Bytes::from_static(b"tcp://127.0.0.1:5555");
        let event = Event::decode(&[head, ep]).unwrap();
        assert_eq!(event.name(), "HANDSHAKE_SUCCEEDED");
        assert_eq!(
            event.line(EventFormat::Text),
            "HANDSHAKE_SUCCEEDED tcp://127.0.0.1:5555 value=0"
        );
        assert_eq!(
            event.line(EventFormat::Json),
            r#"{"endpoint":"tcp://127.0.0.1:5555","event":"HANDSHAKE_SUCCEEDED","value":0}"#
        );
        assert!(Event::decode(&[Bytes::from_static(b"short")]).is_none());
        let retry = Event {
            number: 0x4,
            value: 200,
            endpoint: String::new(),
        };
        assert_eq!(retry.value_text(), "value=200 (ms)");
    }
}
