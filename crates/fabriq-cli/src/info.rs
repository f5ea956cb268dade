//! `fabriq info`: what libfabric offers on this machine, for `ofi+`
//! endpoints.

use fabriq_ofi::{getinfo, Caps, EpType, Hints, Progress};

use crate::args::InfoArgs;
use crate::error::{CliError, Ending};

/// Lists the RDM endpoints `fi_getinfo` offers (the kind `ofi+PROVIDER://`
/// endpoints use), one line each, or one provider's in full.
pub fn run(args: &InfoArgs) -> Result<Ending, CliError> {
    let mut hints = Hints::new().ep_type(EpType::Rdm).caps(Caps::MSG);
    if let Some(p) = &args.provider {
        hints = hints.provider(p);
    }
    let infos = getinfo(&hints).map_err(|e| CliError::Runtime(e.to_string()))?;
    if infos.is_empty() {
        return Err(CliError::Runtime(
            "libfabric offers no RDM endpoint on this machine".into(),
        ));
    }
    if let Ok((major, minor)) = fabriq_ofi::runtime_version() {
        println!("libfabric {major}.{minor}");
    }
    println!(
        "{:<16} {:<20} {:<14} {:<8} {:<8} {:<10} endpoint",
        "provider", "fabric", "domain", "data", "control", "tagged/rma"
    );
    // fi_getinfo repeats a provider for every address and mode; one line
    // per distinct description.
    let mut seen = std::collections::HashSet::new();
    for info in &infos {
        let progress = |p: Progress| match p {
            Progress::Auto => "auto",
            Progress::Manual => "manual",
            Progress::Unspec => "unspec",
        };
        let caps = info.caps();
        let extra = match (caps.contains(Caps::TAGGED), caps.contains(Caps::RMA)) {
            (true, true) => "both",
            (true, false) => "tagged",
            (false, true) => "rma",
            (false, false) => "-",
        };
        let name = info.provider();
        let scheme = name.split(';').next().unwrap_or(&name).to_string();
        let line = format!(
            "{:<16} {:<20} {:<14} {:<8} {:<8} {:<10} ofi+{scheme}://HOST:PORT",
            name,
            info.fabric_name(),
            info.domain_name(),
            progress(info.data_progress()),
            progress(info.control_progress()),
            extra,
        );
        if !seen.insert(line.clone()) {
            continue;
        }
        println!("{line}");
        if args.verbose {
            println!("{}", info.dump());
        }
    }
    Ok(Ending::Done)
}
