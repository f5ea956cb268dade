//! Probes for libfabric with pkg-config. When found, compiles the C shim
//! (`csrc/shim.c`) against its headers and sets `cfg(fabriq_ofi_libfabric)`.
//! When not found (or when `FABRIQ_OFI_DISABLE=1`), compiles nothing: the
//! crate then builds without libfabric and every constructor returns
//! `Error::Unavailable`.
//!
//! libfabric is not linked: the shim opens it at run time, the first time
//! it is needed (see `csrc/shim.c`). What the build still takes from the
//! library is the symbol version the linker binds for each function the
//! shim calls, found by linking a small probe program against it and
//! reading the probe's dynamic symbols back (`readelf`, from binutils,
//! which the C compiler needs anyway). If that fails the shim looks the
//! symbols up at their default versions, which is what linking would have
//! done with the library found here.

use std::path::Path;
use std::process::Command;

/// The libfabric functions with real symbols that the shim calls.
const SYMBOLS: [&str; 7] = [
    "fi_version",
    "fi_strerror",
    "fi_getinfo",
    "fi_freeinfo",
    "fi_dupinfo",
    "fi_fabric",
    "fi_tostr",
];

const PROBE: &str = r#"
#include <rdma/fabric.h>
int main(void) {
    struct fi_info *i = fi_dupinfo(NULL);
    struct fid_fabric *f;
    int r = fi_getinfo(fi_version(), NULL, NULL, 0, i, &i);
    r += fi_fabric(NULL, &f, NULL);
    fi_freeinfo(i);
    return r + (fi_strerror(r) != NULL) + (fi_tostr(i, FI_TYPE_INFO) != NULL);
}
"#;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fabriq_ofi_libfabric)");
    println!("cargo::rerun-if-changed=csrc/shim.c");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FABRIQ_OFI_DISABLE");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_LIBDIR");

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
            // Installing libfabric later adds its .pc file to one of these
            // folders, which changes the folder's modification time (the
            // file itself keeps its package's): the next build probes
            // again, with no `cargo clean`.
            for dir in pkg_config_dirs() {
                println!("cargo::rerun-if-changed={}", dir.display());
            }
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
    for (name, version) in symbol_versions(&build, &lib) {
        build.define(
            &format!("FABRIQ_OFI_VER_{name}"),
            Some(&*format!("\"{version}\"")),
        );
    }
    if let Some(dir) = lib.link_paths.first() {
        build.define(
            "FABRIQ_OFI_LIBDIR",
            Some(&*format!("{:?}", dir.display().to_string())),
        );
    }
    build.compile("fabriq_ofi_shim");
    // dlopen and dlvsym: in libc since glibc 2.34, in libdl before.
    println!("cargo::rustc-link-lib=dl");
    println!("cargo::rustc-cfg=fabriq_ofi_libfabric");
}

/// The folders pkg-config searches: `PKG_CONFIG_PATH`'s, then
/// `PKG_CONFIG_LIBDIR`'s or pkg-config's own default list; those that
/// exist.
fn pkg_config_dirs() -> Vec<std::path::PathBuf> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let default = || {
        Command::new("pkg-config")
            .args(["--variable", "pc_path", "pkg-config"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for list in [
        env("PKG_CONFIG_PATH"),
        env("PKG_CONFIG_LIBDIR").or_else(default),
    ]
    .into_iter()
    .flatten()
    {
        dirs.extend(std::env::split_paths(&list).filter(|d| d.is_dir()));
    }
    dirs
}

/// The version (`FABRIC_1.3`...) the linker binds for each of [`SYMBOLS`],
/// for those it versions; empty if the probe cannot be linked or read.
fn symbol_versions(build: &cc::Build, lib: &pkg_config::Library) -> Vec<(String, String)> {
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    let dir = Path::new(&out);
    let (src, exe) = (dir.join("probe.c"), dir.join("probe"));
    if std::fs::write(&src, PROBE).is_err() {
        return Vec::new();
    }
    let mut link = build.get_compiler().to_command();
    link.arg(&src).arg("-o").arg(&exe);
    for path in &lib.link_paths {
        link.arg(format!("-L{}", path.display()));
    }
    for name in &lib.libs {
        link.arg(format!("-l{name}"));
    }
    let linked = link.output().map(|o| o.status.success()).unwrap_or(false);
    let symbols = linked
        .then(|| {
            Command::new("readelf")
                .args(["--dyn-syms", "-W"])
                .arg(&exe)
                .output()
                .ok()
        })
        .flatten()
        .filter(|o| o.status.success());
    let Some(symbols) = symbols else {
        println!(
            "cargo::warning=fabriq-ofi: could not read the libfabric symbol versions \
             (probe link or readelf failed); the shim uses the default versions"
        );
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&symbols.stdout);
    let mut found = Vec::new();
    for word in text.split_whitespace() {
        // "fi_getinfo@FABRIC_1.3" (readelf may add " (2)" after it).
        if let Some((name, version)) = word.split_once('@') {
            if SYMBOLS.contains(&name) && !found.iter().any(|(n, _): &(String, String)| n == name) {
                found.push((
                    name.to_string(),
                    version.trim_start_matches('@').to_string(),
                ));
            }
        }
    }
    found
}
