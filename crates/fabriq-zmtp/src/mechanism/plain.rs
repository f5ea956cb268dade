//! The PLAIN mechanism (RFC 24 / RFC 23): user name and password in clear.
//!
//! ```text
//! C: HELLO    username-len username password-len password
//! S: WELCOME  (empty)                  or ERROR
//! C: INITIATE metadata
//! S: READY    metadata                 or ERROR
//! ```
//!
//! The server asks its owner about the user name and password when HELLO
//! arrives, before WELCOME, as libzmq's `plain_server_t` asks its ZAP
//! handler. Frames after the handshake travel as they are.

use bytes::{BufMut, Bytes, BytesMut};
use zeroize::Zeroizing;

use super::{peer_error, Mechanism};
use crate::auth::AuthRequest;
use crate::command::Command;
use crate::error::ProtocolError;
use crate::greeting::MechanismName;
use crate::properties::Properties;

const HELLO: &[u8] = b"HELLO";
const WELCOME: &[u8] = b"WELCOME";
const INITIATE: &[u8] = b"INITIATE";

fn other(name: &'static [u8], body: Bytes) -> Command {
    Command::Other {
        name: Bytes::from_static(name),
        body,
    }
}

fn unexpected(cmd: &Command) -> ProtocolError {
    ProtocolError::UnexpectedCommand(cmd.display_name())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientState {
    Start,
    ExpectWelcome,
    ExpectReady,
    Done,
}

/// The client side of PLAIN.
pub struct PlainClient {
    ours: Properties,
    username: Vec<u8>,
    password: Zeroizing<Vec<u8>>,
    state: ClientState,
}

impl std::fmt::Debug for PlainClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainClient")
            .field("username", &String::from_utf8_lossy(&self.username))
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl PlainClient {
    /// A client that logs in as `username` and announces `ours` in
    /// INITIATE. Both credentials must be at most 255 bytes (checked by
    /// [`Connection::new`](crate::Connection::new)).
    pub fn new(ours: Properties, username: Vec<u8>, password: Zeroizing<Vec<u8>>) -> Self {
        PlainClient {
            ours,
            username,
            password,
            state: ClientState::Start,
        }
    }
}

impl Mechanism for PlainClient {
    fn start(&mut self, out: &mut Vec<Command>) -> Result<(), ProtocolError> {
        if self.state != ClientState::Start {
            return Ok(());
        }
        // Lengths are checked when the connection is made.
        let mut body = BytesMut::with_capacity(2 + self.username.len() + self.password.len());
        body.put_u8(self.username.len() as u8);
        body.put_slice(&self.username);
        body.put_u8(self.password.len() as u8);
        body.put_slice(&self.password);
        out.push(other(HELLO, body.freeze()));
        self.state = ClientState::ExpectWelcome;
        Ok(())
    }

    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match (self.state, cmd) {
            (ClientState::ExpectWelcome | ClientState::ExpectReady, Command::Error(reason)) => {
                Err(peer_error(reason))
            }
            (ClientState::ExpectWelcome, Command::Other { name, body }) if name == WELCOME => {
                if !body.is_empty() {
                    return Err(ProtocolError::MalformedCommand {
                        command: "WELCOME".into(),
                        reason: "a PLAIN WELCOME has no body",
                    });
                }
                let mut meta = BytesMut::with_capacity(self.ours.encoded_len());
                self.ours.encode(&mut meta);
                out.push(other(INITIATE, meta.freeze()));
                self.state = ClientState::ExpectReady;
                Ok(None)
            }
            (ClientState::ExpectReady, Command::Ready(props)) => {
                self.state = ClientState::Done;
                Ok(Some(props))
            }
            (_, cmd) => Err(unexpected(&cmd)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerState {
    ExpectHello,
    WaitAuth,
    ExpectInitiate,
    Done,
}

/// The server side of PLAIN.
#[derive(Debug)]
pub struct PlainServer {
    ours: Properties,
    authenticate: bool,
    state: ServerState,
    auth_request: Option<AuthRequest>,
}

impl PlainServer {
    /// A server that announces `ours` in READY. With `authenticate` it
    /// asks its owner about every HELLO; without, it refuses every client
    /// ([`ProtocolError::NoAuthenticator`]), as libzmq 4.3 does when no
    /// ZAP handler is running.
    pub fn new(ours: Properties, authenticate: bool) -> Self {
        PlainServer {
            ours,
            authenticate,
            state: ServerState::ExpectHello,
            auth_request: None,
        }
    }
}

/// Splits a PLAIN HELLO body into user name and password, with libzmq's
/// checks (each length within the body, nothing after the password).
fn parse_hello(body: &Bytes) -> Result<(Bytes, Bytes), ProtocolError> {
    let bad = |reason| ProtocolError::MalformedCommand {
        command: "HELLO".into(),
        reason,
    };
    let ulen = usize::from(*body.first().ok_or(bad("no user name"))?);
    let rest = body.len() - 1;
    if rest < ulen {
        return Err(bad("user name runs past the end"));
    }
    let username = body.slice(1..1 + ulen);
    let plen_at = 1 + ulen;
    let plen = usize::from(*body.get(plen_at).ok_or(bad("no password"))?);
    if body.len() - plen_at - 1 != plen {
        return Err(bad("password length does not match the body"));
    }
    let password = body.slice(plen_at + 1..);
    Ok((username, password))
}

impl Mechanism for PlainServer {
    fn start(&mut self, _out: &mut Vec<Command>) -> Result<(), ProtocolError> {
        Ok(())
    }

    fn on_command(
        &mut self,
        cmd: Command,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        match (self.state, cmd) {
            (_, Command::Error(reason)) => Err(peer_error(reason)),
            (ServerState::ExpectHello, Command::Other { name, body }) if name == HELLO => {
                let (username, password) = parse_hello(&body)?;
                if !self.authenticate {
                    return Err(ProtocolError::NoAuthenticator(MechanismName::Plain));
                }
                self.auth_request = Some(AuthRequest {
                    mechanism: MechanismName::Plain,
                    credentials: vec![username, password],
                });
                self.state = ServerState::WaitAuth;
                Ok(None)
            }
            (ServerState::ExpectInitiate, Command::Other { name, body }) if name == INITIATE => {
                let props = Properties::decode(&body)?;
                out.push(Command::Ready(self.ours.clone()));
                self.state = ServerState::Done;
                Ok(Some(props))
            }
            (_, cmd) => Err(unexpected(&cmd)),
        }
    }

    fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.auth_request.take()
    }

    fn auth_allowed(
        &mut self,
        out: &mut Vec<Command>,
    ) -> Result<Option<Properties>, ProtocolError> {
        if self.state == ServerState::WaitAuth {
            out.push(other(WELCOME, Bytes::new()));
            self.state = ServerState::ExpectInitiate;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_parsing_follows_libzmq() {
        let ok = Bytes::from_static(b"\x05admin\x06secret");
        assert_eq!(
            parse_hello(&ok).unwrap(),
            (Bytes::from_static(b"admin"), Bytes::from_static(b"secret"))
        );
        assert_eq!(
            parse_hello(&Bytes::from_static(b"\x00\x00")).unwrap(),
            (Bytes::new(), Bytes::new())
        );
        for bad in [
            &b""[..],
            b"\x05adm",
            b"\x05admin",
            b"\x05admin\x06secre",
            b"\x05admin\x06secrets",
        ] {
            assert!(
                matches!(
                    parse_hello(&Bytes::copy_from_slice(bad)),
                    Err(ProtocolError::MalformedCommand { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
