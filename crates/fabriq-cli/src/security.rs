//! CURVE and PLAIN from the command line: `fabriq keygen`, and the
//! `--curve-*` / `--plain-*` options of the pattern commands, with a ZAP
//! authenticator when the server side names who may in.

use fabriq::auth::{Authenticator, CurveKeys};
use fabriq::{Context, CurveKeyPair, Socket};

use crate::args::SecurityOpts;
use crate::error::{describe, runtime, CliError, Ending};

/// `fabriq keygen`: a new key pair, `public: KEY` then `secret: KEY`.
pub fn keygen() -> Result<Ending, CliError> {
    let pair = CurveKeyPair::new().map_err(|e| runtime("cannot make a key pair", e))?;
    let z85 = |k: &[u8; 32]| fabriq::z85_encode(k).expect("32 bytes are a multiple of 4");
    println!("public: {}", z85(&pair.public_key));
    println!("secret: {}", z85(&pair.secret_key));
    Ok(Ending::Done)
}

/// A key given on the command line: exactly 40 Z85 characters.
fn key(option: &str, text: &str) -> Result<[u8; 32], CliError> {
    let usage = |why: String| {
        CliError::Usage(format!(
            "{option}: {why}; a key is 40 characters of Z85, as `fabriq keygen` prints it"
        ))
    };
    if text.len() != 40 {
        return Err(usage(format!("got {} characters", text.len())));
    }
    let bytes = fabriq::z85_decode(text).map_err(|e| usage(e.to_string()))?;
    bytes
        .try_into()
        .map_err(|_| usage("not a 32-byte key".into()))
}

/// Applies the security options to `socket` (before it binds or
/// connects). When the server side lists who may in (`--curve-allow`,
/// `--curve-allow-dir`, `--plain-user`), starts a ZAP authenticator in
/// `ctx`, which the caller keeps for the run.
pub fn secure(
    ctx: &Context,
    socket: &Socket,
    opts: &SecurityOpts,
) -> Result<Option<Authenticator>, CliError> {
    let option = |name: &str, result: fabriq::Result<()>| {
        result.map_err(|e| CliError::Usage(format!("{name}: {}", describe(e))))
    };
    if let Some(secret) = &opts.curve_server {
        let secret = key("--curve-server", secret)?;
        option("--curve-server", socket.set_curve_server(true))?;
        option("--curve-server", socket.set_curve_secretkey(&secret))?;
        let mut allowed = Vec::new();
        for k in &opts.curve_allow {
            allowed.push(key("--curve-allow", k)?);
        }
        if let Some(dir) = &opts.curve_allow_dir {
            let found = fabriq::auth::load_public_keys(dir).map_err(|e| {
                CliError::Usage(format!("--curve-allow-dir {}: {e}", dir.display()))
            })?;
            if found.is_empty() {
                return Err(CliError::Usage(format!(
                    "--curve-allow-dir {}: no public certificates (zcert files with \
                     curve / public-key) in it",
                    dir.display()
                )));
            }
            allowed.extend(found);
        }
        if opts.curve_allow.is_empty() && opts.curve_allow_dir.is_none() {
            // Any client that knows our public key (no ZAP handler).
            return Ok(None);
        }
        let auth = start(ctx)?;
        auth.configure_curve("*", CurveKeys::Only(allowed.into_iter().collect()));
        return Ok(Some(auth));
    }
    if let (Some(server), Some(secret)) = (&opts.curve_serverkey, &opts.curve_secretkey) {
        let server = key("--curve-serverkey", server)?;
        let pair = CurveKeyPair::from_secret_key(&key("--curve-secretkey", secret)?);
        option("--curve-serverkey", socket.set_curve_serverkey(&server))?;
        option(
            "--curve-secretkey",
            socket.set_curve_secretkey(&pair.secret_key),
        )?;
        option(
            "--curve-secretkey",
            socket.set_curve_publickey(&pair.public_key),
        )?;
    }
    if opts.plain_server {
        let mut users = Vec::new();
        for entry in &opts.plain_user {
            let Some((user, pass)) = entry.split_once(':') else {
                return Err(CliError::Usage(format!(
                    "--plain-user {entry:?}: write USER:PASS"
                )));
            };
            if user.is_empty() {
                return Err(CliError::Usage(format!(
                    "--plain-user {entry:?}: the user name is empty"
                )));
            }
            users.push((user.to_string(), pass.to_string()));
        }
        option("--plain-server", socket.set_plain_server(true))?;
        let auth = start(ctx)?;
        auth.configure_plain("*", users);
        return Ok(Some(auth));
    }
    if let (Some(user), Some(pass)) = (&opts.plain_username, &opts.plain_password) {
        option("--plain-username", socket.set_plain_username(Some(user)))?;
        option("--plain-password", socket.set_plain_password(Some(pass)))?;
    }
    Ok(None)
}

fn start(ctx: &Context) -> Result<Authenticator, CliError> {
    Authenticator::start(ctx).map_err(|e| runtime("cannot start the ZAP authenticator", e))
}
