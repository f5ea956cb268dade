//! Builds libzmq 4.3.4 (vendored in zeromq-src) with ZMQ_BUILD_DRAFT_API
//! and links it statically. No libsodium: the draft tests use NULL.
fn main() {
    // libzmq's own compiler warnings would be shown for every build of
    // this (local) crate; they are libzmq's business, not ours.
    if std::env::var_os("CXXFLAGS").is_none() {
        std::env::set_var("CXXFLAGS", "-w");
    }
    zeromq_src::Build::new().enable_draft(true).build();
    // libzmq is C++.
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
