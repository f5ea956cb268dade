//! Builds libzmq 4.3.4 (vendored in zeromq-src) with ZMQ_BUILD_DRAFT_API
//! and links it statically. No libsodium: the draft tests use NULL.
fn main() {
    zeromq_src::Build::new().enable_draft(true).build();
    // libzmq is C++.
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
