//! An shm endpoint opens even where a dead process left its region under
//! the name libfabric would give ours.
//!
//! libfabric 1.17 names an shm endpoint's region in /dev/shm
//! `PID:DOMAIN:ENDPOINT`; a process that does not close its endpoint
//! (killed, crashed) leaves the region there, and a later process with the
//! same pid (pids wrap at `kernel.pid_max`) failed `fi_enable` with
//! `EBUSY`. fabriq-ofi names its shm endpoints itself (`Endpoint::open`).
//! The child process below squats the default names of its own pid before
//! it opens any endpoint, then opens two and moves a message between them.
//! Without fabriq-ofi's own names it died of SIGBUS (libfabric mapped the
//! squatting empty file); a region a dead process left gave `EBUSY`.

mod common;

use std::path::PathBuf;

use common::{deadline, need_fabric, pair, poll_until};
use fabriq_ofi::{Event, PagedConfig};

/// Set in the child's environment: run the squatting case.
const CHILD: &str = "FABRIQ_OFI_TEST_SQUAT_CHILD";

/// The default names of this process's first endpoints (domains and
/// endpoints numbered from 0), as empty files in /dev/shm: what a dead
/// process with our pid would have left.
struct Squat(Vec<PathBuf>);

/// The default names of the first endpoints of process `pid` (domains
/// and endpoints numbered from 0), as paths in /dev/shm.
fn default_names(pid: u32) -> impl Iterator<Item = PathBuf> {
    (0..4).flat_map(move |domain| {
        (0..4).map(move |ep| PathBuf::from(format!("/dev/shm/{pid}:{domain}:{ep}")))
    })
}

impl Squat {
    fn our_default_names() -> Squat {
        // create_new: never take over a file that is someone's.
        let made = default_names(std::process::id())
            .filter(|path| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .is_ok()
            })
            .collect();
        Squat(made)
    }
}

impl Drop for Squat {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The child's side (a no-op unless run by the test below).
#[test]
fn squatted_child() {
    if std::env::var_os(CHILD).is_none() || !need_fabric() {
        return;
    }
    let squat = Squat::our_default_names();
    assert!(!squat.0.is_empty(), "could not squat any name in /dev/shm");
    let (mut a, mut b) = pair("shm", 4, 4096, PagedConfig::default());
    let page = b.pool.get().unwrap();
    b.ep.post_recv(page).unwrap();
    let mut page = a.pool.get().unwrap();
    page.fill(b"through a squatted /dev/shm").unwrap();
    let to_b = a.peer;
    common::send_retry(&mut a, &mut b, page, to_b, deadline(10));
    let got = poll_until(&mut b, deadline(10), "the message", |e| match e {
        Event::Received { .. } => Some(e),
        _ => None,
    });
    let Event::Received { page, .. } = got else {
        unreachable!()
    };
    assert_eq!(page.as_slice(), b"through a squatted /dev/shm");
    drop(squat);
}

#[test]
fn an_shm_endpoint_opens_where_a_dead_process_left_its_region() {
    if !need_fabric() || std::env::var_os(CHILD).is_some() {
        return;
    }
    let run = common::run_case(
        &std::env::current_exe().unwrap(),
        "squatted_child",
        &[(CHILD, "1")],
    );
    // A child that died (libfabric 1.17 took SIGBUS on a squatted name
    // before the fix) left its squats: take away the empty files it made.
    for path in default_names(run.pid) {
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&path);
        }
    }
    let text = run.text;
    assert!(run.ok, "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran nothing:\n{text}");
}
