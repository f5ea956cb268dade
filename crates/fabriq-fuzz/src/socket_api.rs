//! What an application hands a socket as bytes or text: endpoint strings
//! ([`endpoint`]) and the socket options that parse them
//! ([`socket_options`]).

/// Endpoint strings as `bind` (`data[0]` odd) and `connect` check them:
/// an accepted endpoint reads back as `scheme://address`, a refused one
/// fails with EINVAL, EPROTONOSUPPORT or ENAMETOOLONG.
pub fn endpoint(data: &[u8]) {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    match fabriq::fuzzing::parse_endpoint(&text, mode & 1 != 0) {
        Ok((scheme, address)) => assert_eq!(format!("{scheme}://{address}"), text),
        Err(e) => assert!(
            matches!(
                e,
                fabriq::Error::EINVAL
                    | fabriq::Error::EPROTONOSUPPORT
                    | fabriq::Error::ENAMETOOLONG
            ),
            "{text:?}: {e:?}"
        ),
    }
}

thread_local! {
    static CONTEXT: &'static fabriq::Context = Box::leak(Box::new(fabriq::Context::new()));
}

/// Socket options that parse bytes or text, on a fresh socket each run:
/// the CURVE keys (32 bytes or Z85), identity, subscriptions, PLAIN
/// credentials, ZAP domain, metadata, XPUB welcome message; and Z85.
/// A setter that accepts a value must give it back from its getter;
/// Z85 round-trips both ways.
///
/// Input: `[option, value...]`, option `% 10`.
pub fn socket_options(data: &[u8]) {
    let Some((&which, value)) = data.split_first() else {
        return;
    };
    let text = std::str::from_utf8(value).ok();
    let ty = match which % 10 {
        3 => fabriq::SUB,
        9 => fabriq::XPUB,
        _ => fabriq::DEALER,
    };
    let socket = CONTEXT.with(|c| c.socket(ty)).expect("a socket");
    match which % 10 {
        k @ 0..=2 => {
            type Set = fn(&fabriq::Socket, &[u8]) -> fabriq::Result<()>;
            type Get = fn(&fabriq::Socket) -> fabriq::Result<Vec<u8>>;
            let (set, get): (Set, Get) = match k {
                0 => (
                    fabriq::Socket::set_curve_publickey,
                    fabriq::Socket::get_curve_publickey,
                ),
                1 => (
                    fabriq::Socket::set_curve_secretkey,
                    fabriq::Socket::get_curve_secretkey,
                ),
                _ => (
                    fabriq::Socket::set_curve_serverkey,
                    fabriq::Socket::get_curve_serverkey,
                ),
            };
            let want: Option<Vec<u8>> = match value.len() {
                32 => Some(value.to_vec()),
                40 | 41 if value.len() == 40 || value[40] == 0 => std::str::from_utf8(&value[..40])
                    .ok()
                    .and_then(|t| fabriq::z85_decode(t).ok()),
                _ => None,
            };
            match set(&socket, value) {
                Ok(()) => {
                    assert_eq!(Some(get(&socket).expect("get")), want);
                    assert_eq!(socket.get_mechanism(), Ok(fabriq::Mechanism::ZMQ_CURVE));
                }
                Err(e) => {
                    assert_eq!(e, fabriq::Error::EINVAL);
                    assert_eq!(want, None, "a valid key refused");
                }
            }
        }
        3 => {
            assert_eq!(socket.set_subscribe(value), Ok(()));
            assert_eq!(socket.set_unsubscribe(value), Ok(()));
        }
        4 => {
            let valid = (1..=255).contains(&value.len()) && value[0] != 0;
            match socket.set_identity(value) {
                Ok(()) => {
                    assert!(valid);
                    assert_eq!(socket.get_identity(), Ok(value.to_vec()));
                }
                Err(e) => assert!(!valid && e == fabriq::Error::EINVAL),
            }
        }
        5 | 6 => {
            let Some(text) = text else { return };
            type Set = fn(&fabriq::Socket, Option<&str>) -> fabriq::Result<()>;
            type Get = fn(&fabriq::Socket) -> fabriq::Result<Result<String, Vec<u8>>>;
            let (set, get): (Set, Get) = if which % 10 == 5 {
                (
                    fabriq::Socket::set_plain_username,
                    fabriq::Socket::get_plain_username,
                )
            } else {
                (
                    fabriq::Socket::set_plain_password,
                    fabriq::Socket::get_plain_password,
                )
            };
            match set(&socket, Some(text)) {
                Ok(()) => {
                    assert!((1..=255).contains(&text.len()));
                    assert_eq!(get(&socket), Ok(Ok(text.to_string())));
                }
                Err(e) => assert!(e == fabriq::Error::EINVAL && !(1..=255).contains(&text.len())),
            }
        }
        7 => {
            let Some(text) = text else { return };
            match socket.set_zap_domain(text) {
                Ok(()) => assert_eq!(socket.get_zap_domain(), Ok(Ok(text.to_string()))),
                Err(e) => assert!(e == fabriq::Error::EINVAL && text.len() > 255),
            }
            let (name, value) = text.split_once('=').unwrap_or((text, ""));
            let _ = socket.set_metadata(name, value.as_bytes());
        }
        8 => {
            if let Some(text) = text {
                if let Ok(bytes) = fabriq::z85_decode(text) {
                    assert_eq!(fabriq::z85_encode(&bytes).ok().as_deref(), Some(text));
                }
            }
            match fabriq::z85_encode(value) {
                Ok(t) => assert_eq!(fabriq::z85_decode(&t).ok().as_deref(), Some(value)),
                Err(_) => assert_ne!(value.len() % 4, 0),
            }
        }
        _ => {
            let _ = socket.set_xpub_welcome_msg(text);
        }
    }
}
