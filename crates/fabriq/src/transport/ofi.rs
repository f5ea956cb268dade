//! `ofi+PROVIDER://HOST:PORT` and `ofi://HOST:PORT`: RDMA fabrics through
//! libfabric. `HOST:PORT` is a TCP control connection (ZMTP's greeting,
//! handshake, heartbeats and the exchange of fabric addresses); messages
//! move through a libfabric RDM endpoint of the provider, in registered
//! pages, driven by the fabric engine (`reactor/engine/fabric/`). `ofi://`
//! takes the first RDM provider `fi_getinfo` offers.

use std::io;

use super::{tcp, Address, DataPath, Listener, Role, Stream, Transport};
use crate::error::{err, Error, Result};
use crate::options::Options;

/// The `ofi` family of transports.
pub(crate) struct Ofi;

/// The provider an `ofi` scheme names: `None` for plain `ofi`.
pub(crate) fn provider(scheme: &str) -> Option<&str> {
    scheme.strip_prefix("ofi+")
}

/// What fabriq asks `fi_getinfo` for: a reliable datagram endpoint
/// (`FI_EP_RDM`) with two-sided messages and remote CQ data (the page
/// sequence numbers), of `provider` if named.
pub(crate) fn hints(provider: Option<&str>) -> fabriq_ofi::Hints {
    let hints = fabriq_ofi::Hints::new()
        .ep_type(fabriq_ofi::EpType::Rdm)
        .caps(fabriq_ofi::Caps::MSG);
    match provider {
        Some(p) => hints.provider(p),
        None => hints,
    }
}

/// Checks that libfabric offers what `scheme` asks for, with an error that
/// names the provider and libfabric's reason.
fn check_provider(scheme: &str) -> Result<()> {
    let name = provider(scheme);
    match fabriq_ofi::getinfo(&hints(name)) {
        Ok(infos) if !infos.is_empty() => Ok(()),
        Ok(_) => err(
            Error::EPROTONOSUPPORT,
            format!(
                "{scheme}://: libfabric offers no RDM endpoint{}",
                name.map(|n| format!(" for provider {n:?}"))
                    .unwrap_or_default()
            ),
        ),
        Err(e) => err(Error::EPROTONOSUPPORT, format!("{scheme}://: {e}")),
    }
}

/// `fabric_encrypt` needs CURVE: the page keys travel inside its boxes
/// on the control connection, and NULL or PLAIN would carry them in
/// clear. Checked where the options are final for the endpoint (bind,
/// connect), so the error reaches the caller rather than a monitor.
fn check_encrypt(opts: &Options) -> Result<()> {
    if opts.fabric.encrypt && opts.security.mechanism != crate::mechanism::Mechanism::ZMQ_CURVE {
        return err(
            Error::EINVAL,
            format!(
                "fabric_encrypt needs CURVE (set_curve_server or set_curve_serverkey): the page keys travel inside CURVE's encryption on the control connection, and the {:?} mechanism has none",
                opts.security.mechanism
            ),
        );
    }
    Ok(())
}

impl Transport for Ofi {
    fn parse(&self, text: &str, address: &Address, role: Role) -> Result<()> {
        if provider(&address.scheme).is_some_and(str::is_empty) {
            return err(
                Error::EINVAL,
                format!("endpoint {text:?} names no provider: write ofi+PROVIDER://HOST:PORT (e.g. ofi+tcp, ofi+verbs) or ofi://HOST:PORT"),
            );
        }
        tcp::parse(text, &address.address, role)
    }

    fn bind(&self, address: &Address, opts: &Options) -> Result<(Box<dyn Listener>, String)> {
        check_encrypt(opts)?;
        check_provider(&address.scheme)?;
        let (listener, text) = tcp::bind_text(&address.address, opts)?;
        let text = text.replacen("tcp", &address.scheme, 1);
        Ok((Box::new(listener), text))
    }

    fn check_connect(&self, address: &Address, opts: &Options) -> Result<()> {
        check_encrypt(opts)?;
        check_provider(&address.scheme)?;
        tcp::check_connect(&address.address, opts)
    }

    fn connect(&self, address: &Address, opts: &Options) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(tcp::connect(&address.address, opts)?))
    }

    fn data_path(&self, address: &Address) -> DataPath {
        DataPath::Fabric {
            provider: provider(&address.scheme).map(str::to_string),
        }
    }
}
