//! How libfabric is opened at run time: the file `FABRIQ_OFI_LIBRARY`
//! names is the one opened, and a library that cannot be opened makes
//! every entry point fail with `Error::Unavailable`, saying why, instead of
//! the program failing to start.
//!
//! The loader runs once per process, so each case runs in a child process
//! (this test binary again, one test, its own environment).

use std::process::Command;

use fabriq_ofi::{getinfo, Error, Hints};

const CASE: &str = "the_library_fabriq_ofi_library_names_is_the_one_opened";

/// In the child this test checks what the environment asks for; run
/// directly (no FABRIQ_OFI_LIBRARY), the default library must open.
#[test]
fn the_library_fabriq_ofi_library_names_is_the_one_opened() {
    if !fabriq_ofi::compiled_in() {
        let err = getinfo(&Hints::new()).unwrap_err();
        assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
        return;
    }
    match std::env::var("FABRIQ_OFI_LIBRARY") {
        Ok(path) if path.contains("no-such-dir") => {
            let err = getinfo(&Hints::new().provider("tcp")).unwrap_err();
            assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
            let text = err.to_string();
            assert!(text.contains("could not be opened at run time"), "{text}");
            assert!(
                text.contains(&path),
                "the error does not name the file: {text}"
            );
            assert!(text.contains("FABRIQ_OFI_LIBRARY"), "{text}");
            assert!(!fabriq_ofi::available());
            assert!(fabriq_ofi::runtime_version().is_err());
            // The outcome is kept: a second call says the same.
            assert_eq!(getinfo(&Hints::new()).unwrap_err().to_string(), text);
        }
        _ => {
            assert!(
                fabriq_ofi::available(),
                "{:?}",
                getinfo(&Hints::new()).err()
            );
            let (major, minor) = fabriq_ofi::runtime_version().unwrap();
            assert!(major >= 1 && (major, minor) >= (1, 9), "{major}.{minor}");
            assert!(!getinfo(&Hints::new().provider("tcp")).unwrap().is_empty());
        }
    }
}

fn child(library: &str) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([CASE, "--exact", "--nocapture", "--test-threads=1"])
        .env("FABRIQ_OFI_LIBRARY", library)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "child with FABRIQ_OFI_LIBRARY={library}:\n{text}"
    );
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}

#[test]
fn a_library_that_cannot_be_opened_is_an_error_not_a_crash() {
    child("/no-such-dir/libfabric.so.1");
}

#[test]
fn the_library_can_be_named_by_its_path() {
    if !fabriq_ofi::compiled_in() {
        return;
    }
    let path = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .map(|dir| format!("{dir}/libfabric.so.1"))
    .find(|p| std::path::Path::new(p).exists());
    let Some(path) = path else {
        panic!("libfabric is compiled in but libfabric.so.1 is in none of the usual directories");
    };
    child(&path);
}
