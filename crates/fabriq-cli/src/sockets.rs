//! Making a socket from the command line: type, options, endpoints.

use fabriq::{Context, Error, Socket, SocketType};

use crate::args::{Attach, Tuning, ENDPOINT_FORMS};
use crate::error::{describe, runtime, CliError};
use crate::format::parse_identity;

/// A new socket of type `kind` with the options given on the command line
/// (`linger`: `None` leaves the library's default).
pub fn open(
    ctx: &Context,
    kind: SocketType,
    tuning: &Tuning,
    linger: Option<i32>,
    identity: Option<&str>,
) -> Result<Socket, CliError> {
    let socket = ctx
        .socket(kind)
        .map_err(|e| runtime("cannot create the socket", e))?;
    let option = |name: &str, result: fabriq::Result<()>| {
        result.map_err(|e| CliError::Usage(format!("{name}: {}", describe(e))))
    };
    if let Some(hwm) = tuning.hwm {
        option("--hwm", socket.set_sndhwm(hwm))?;
        option("--hwm", socket.set_rcvhwm(hwm))?;
    }
    if let Some(linger) = linger {
        option("--linger", socket.set_linger(linger))?;
    }
    if let Some(ivl) = tuning.reconnect_ivl {
        option("--reconnect-ivl", socket.set_reconnect_ivl(ivl))?;
    }
    if let Some(ivl) = tuning.heartbeat_ivl {
        option("--heartbeat-ivl", socket.set_heartbeat_ivl(ivl))?;
    }
    if let Some(timeout) = tuning.heartbeat_timeout {
        option("--heartbeat-timeout", socket.set_heartbeat_timeout(timeout))?;
    }
    if let Some(id) = identity {
        let bytes = parse_identity(id.as_bytes())
            .map_err(|e| CliError::Usage(format!("--identity: {e}")))?;
        option("--identity", socket.set_identity(&bytes))?;
    }
    Ok(socket)
}

/// One endpoint to attach, with the option it came from (for messages).
#[derive(Debug, Clone)]
pub struct Target {
    /// Bind or connect.
    pub how: Attach,
    /// The endpoint text.
    pub endpoint: String,
    /// The command-line option that named it, e.g. `--bind`.
    pub option: &'static str,
}

impl Target {
    /// The `--bind` and `--connect` endpoints, binds first.
    pub fn from_lists(bind: &[String], connect: &[String]) -> Vec<Target> {
        let binds = bind.iter().map(|e| Target {
            how: Attach::Bind,
            endpoint: e.clone(),
            option: "--bind",
        });
        let connects = connect.iter().map(|e| Target {
            how: Attach::Connect,
            endpoint: e.clone(),
            option: "--connect",
        });
        binds.chain(connects).collect()
    }
}

/// Binds and connects `socket`; prints `bound [LABEL ]ENDPOINT` on stderr
/// for each bind (with the port the system chose for `*`) unless `quiet`.
pub fn attach(
    socket: &Socket,
    targets: &[Target],
    label: &str,
    quiet: bool,
) -> Result<(), CliError> {
    for t in targets {
        let ep = t.endpoint.as_str();
        if ep.starts_with("inproc://") {
            return Err(CliError::Usage(format!(
                "{} {ep}: inproc endpoints only reach sockets in the same process; \
                 use one of {ENDPOINT_FORMS}",
                t.option
            )));
        }
        let result = match t.how {
            Attach::Bind => socket.bind(ep),
            Attach::Connect => socket.connect(ep),
        };
        if let Err(e) = result {
            return Err(endpoint_error(t, e));
        }
        if t.how == Attach::Bind && !quiet {
            let resolved = socket
                .get_last_endpoint()
                .ok()
                .and_then(Result::ok)
                .unwrap_or_else(|| ep.to_string());
            eprintln!("bound {label}{resolved}");
        }
    }
    Ok(())
}

/// A failed bind or connect: a usage error when the endpoint itself is
/// malformed or does not suit the socket type (`udp://` on a SUB), a
/// runtime error otherwise (address in use, no permission).
fn endpoint_error(t: &Target, e: Error) -> CliError {
    let detail = describe(e);
    let verb = match t.how {
        Attach::Bind => "bind",
        Attach::Connect => "connect to",
    };
    match e {
        Error::EINVAL
        | Error::EPROTONOSUPPORT
        | Error::ENOCOMPATPROTO
        | Error::ENODEV
        | Error::ENAMETOOLONG => {
            let forms = if detail.contains("accepted forms") {
                String::new()
            } else {
                format!("; accepted forms: {ENDPOINT_FORMS}")
            };
            CliError::Usage(format!(
                "bad endpoint {:?} for {}: {detail}{forms}",
                t.endpoint, t.option
            ))
        }
        _ => CliError::Runtime(format!("cannot {verb} {}: {detail}", t.endpoint)),
    }
}
