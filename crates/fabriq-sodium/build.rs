//! Links the system libsodium, found with pkg-config (Debian and Ubuntu:
//! `apt-get install libsodium-dev pkg-config`). 1.0.18 is the oldest
//! release tried (Debian 11 and 12, Ubuntu 20.04-24.04 ship it or newer);
//! every function bound in `src/ffi.rs` is older than that.

fn main() {
    if let Err(e) = pkg_config::Config::new()
        .atleast_version("1.0.18")
        .probe("libsodium")
    {
        panic!(
            "fabriq-sodium links libsodium >= 1.0.18, found with pkg-config; \
             on Debian or Ubuntu: apt-get install libsodium-dev pkg-config \
             (scripts/test installs them). pkg-config said: {e}"
        );
    }
}
