//! The compat matrix (harness = false): every scenario on libzmq, fabriq
//! and both mixed ways; writes docs/compat.md; fails if any cell differs
//! from the expectations in `src/expect.rs`.

fn main() {
    std::process::exit(fabriq_compat_tests::runner::main());
}
