//! The drop-in acceptance test: one program written against the `zmq`
//! crate's API (`dropin/program.rs`), compiled twice: once against the
//! real `zmq` crate (libzmq) and once with `use fabriq as zmq;`. Both
//! must pass unchanged.
//!
//! Every scenario in `program.rs` is a `#[test]`, so it shows up twice:
//! `with_libzmq::<scenario>` and `with_fabriq::<scenario>`.

/// The reference: the `zmq` crate over the real libzmq.
mod with_libzmq {
    // Redundant (the crate is in the extern prelude), kept to mirror
    // `with_fabriq` below.
    #[allow(clippy::single_component_path_imports)]
    use zmq;

    include!("dropin/program.rs");
}

/// The same program with fabriq in place of the `zmq` crate.
mod with_fabriq {
    use fabriq as zmq;

    include!("dropin/program.rs");
}
