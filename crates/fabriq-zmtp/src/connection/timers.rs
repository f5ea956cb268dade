//! Time: the handshake deadline, heartbeats, and the peer's TTL.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::command::Command;
use crate::error::ProtocolError;

use super::{Connection, State};

impl Connection {
    fn heartbeat_timeout(&self) -> Option<Duration> {
        self.config.heartbeat_timeout.or(self.config.heartbeat_ivl)
    }

    /// The next instant at which [`Connection::handle_timeout`] must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.state, State::Failed(_)) {
            return None;
        }
        [
            self.handshake_deadline,
            self.next_ping,
            self.ping_unanswered_since
                .zip(self.heartbeat_timeout())
                .map(|(t, d)| t + d),
            self.peer_ttl.map(|ttl| self.last_rx + ttl),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the timers due at `now`: sends PINGs, and fails the connection
    /// if the handshake or the peer's liveness ran out of time.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        let expired = if self.handshake_deadline.is_some_and(|d| now >= d) {
            Some(ProtocolError::HandshakeTimeout)
        } else if self
            .ping_unanswered_since
            .zip(self.heartbeat_timeout())
            .is_some_and(|(t, d)| now >= t + d)
        {
            Some(ProtocolError::HeartbeatExpired("timeout"))
        } else if self.peer_ttl.is_some_and(|ttl| now >= self.last_rx + ttl) {
            Some(ProtocolError::HeartbeatExpired("TTL"))
        } else {
            None
        };
        if let Some(error) = expired {
            self.fail(error.clone());
            return Err(error);
        }
        if let (Some(due), Some(ivl)) = (self.next_ping, self.config.heartbeat_ivl) {
            if now >= due {
                let ttl = self.config.heartbeat_ttl.map_or(0, |t| {
                    u16::try_from(t.as_millis() / 100).unwrap_or(u16::MAX)
                });
                let ping = Command::Ping {
                    ttl,
                    context: Bytes::new(),
                };
                if let Err(e) = self.queue_command(&ping) {
                    self.fail(e.clone());
                    return Err(e);
                }
                self.next_ping = Some(now + ivl);
                if self.ping_unanswered_since.is_none() {
                    self.ping_unanswered_since = Some(now);
                }
            }
        }
        Ok(())
    }
}
