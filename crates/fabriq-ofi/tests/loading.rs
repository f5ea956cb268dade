//! How libfabric is opened at run time: the file `FABRIQ_OFI_LIBRARY`
//! names is the one opened, and a library that cannot be opened makes
//! every entry point fail with `Error::Unavailable`, saying why, instead of
//! the program failing to start.
//!
//! The loader runs once per process, so each case runs in a child process
//! (this test binary again, one test, its own environment).

mod common;

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
    // SAFETY: getauxval reads the process's auxiliary vector.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    eprintln!("AT_SECURE={}", u8::from(secure));
    match std::env::var("FABRIQ_OFI_LIBRARY") {
        // A set-user-ID or set-group-ID program does not take the library
        // from its environment (secure_getenv): the default one opens.
        Ok(path) if path.contains("no-such-dir") && !secure => {
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
    child_of(&std::env::current_exe().unwrap(), library);
}

/// Runs [`CASE`] in `exe` with `FABRIQ_OFI_LIBRARY=library`; its output.
fn child_of(exe: &std::path::Path, library: &str) -> String {
    let run = common::run_case(exe, CASE, &[("FABRIQ_OFI_LIBRARY", library)]);
    let text = run.text;
    assert!(run.ok, "child with FABRIQ_OFI_LIBRARY={library}:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
    text
}

/// A set-group-ID copy of this test binary (AT_SECURE) is given a library
/// that cannot be opened through FABRIQ_OFI_LIBRARY: it must not take it
/// (whoever starts a privileged program must not choose what it loads),
/// and opens the default library.
#[test]
fn a_privileged_program_does_not_take_the_library_from_its_environment() {
    use std::os::unix::fs::PermissionsExt;
    if !fabriq_ofi::compiled_in() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot make a set-group-ID program here; not checked");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let copy = exe.with_file_name(format!("loading-setgid-{}", std::process::id()));
    std::fs::copy(&exe, &copy).unwrap();
    // Group nogroup: the copy runs with another effective group than ours.
    std::os::unix::fs::chown(&copy, Some(0), Some(65534)).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o2755)).unwrap();
    let text = child_of(&copy, "/no-such-dir/libfabric.so.1");
    std::fs::remove_file(&copy).unwrap();
    if text.contains("AT_SECURE=0") {
        eprintln!("the file system ignores set-group-ID bits; not checked");
        return;
    }
    assert!(text.contains("AT_SECURE=1"), "{text}");
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
