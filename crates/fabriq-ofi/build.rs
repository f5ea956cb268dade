//! Probes for libfabric with pkg-config. When found, compiles the C shim
//! (`csrc/shim.c`), links libfabric and sets `cfg(fabriq_ofi_libfabric)`.
//! When not found (or when `FABRIQ_OFI_DISABLE=1`), compiles nothing: the
//! crate then builds without libfabric and every constructor returns
//! `Error::Unavailable`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fabriq_ofi_libfabric)");
    println!("cargo::rerun-if-changed=csrc/shim.c");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FABRIQ_OFI_DISABLE");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");

    if std::env::var("FABRIQ_OFI_DISABLE").is_ok_and(|v| v == "1") {
        println!("cargo::warning=fabriq-ofi: FABRIQ_OFI_DISABLE=1, building without libfabric");
        return;
    }

    let lib = match pkg_config::Config::new()
        .atleast_version("1.9")
        .cargo_metadata(false)
        .probe("libfabric")
    {
        Ok(lib) => lib,
        Err(e) => {
            println!(
                "cargo::warning=fabriq-ofi: libfabric not found by pkg-config ({}); \
                 building without fabric support (install libfabric-dev or libfabric-devel)",
                e.to_string().lines().next().unwrap_or("")
            );
            return;
        }
    };

    let mut build = cc::Build::new();
    build
        .file("csrc/shim.c")
        .warnings(true)
        .extra_warnings(true);
    for path in &lib.include_paths {
        build.include(path);
    }
    build.compile("fabriq_ofi_shim");
    // Linked after the shim archive, which is what references it.
    for path in &lib.link_paths {
        println!("cargo::rustc-link-search=native={}", path.display());
    }
    for name in &lib.libs {
        println!("cargo::rustc-link-lib={name}");
    }
    println!("cargo::rustc-cfg=fabriq_ofi_libfabric");
}
