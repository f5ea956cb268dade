//! Gives the cdylib libzmq's soname, so programs linked against it record
//! `libzmq.so.5` as libzmq-linked programs do.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzmq.so.5");
    println!("cargo:rerun-if-changed=build.rs");
}
