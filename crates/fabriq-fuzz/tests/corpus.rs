//! Replays every committed corpus file (`fuzz/corpus/<target>/*`: the
//! seeds captured from libzmq and every input that once crashed a target)
//! through the target's body, without libFuzzer: the corpus is a
//! regression suite wherever `cargo test` runs.

use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

#[test]
fn every_target_has_a_corpus_and_every_file_passes() {
    let mut total = 0;
    for (name, body) in fabriq_fuzz::TARGETS {
        let dir = corpus_dir(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: no corpus in {}", dir.display());
        for file in &files {
            let data = std::fs::read(file).expect("a corpus file");
            let run = std::panic::catch_unwind(|| body(&data));
            assert!(run.is_ok(), "{name}: {} fails", file.display());
        }
        total += files.len();
    }
    eprintln!("replayed {total} corpus files");
}

#[test]
fn every_target_has_a_libfuzzer_entry() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    for (name, _) in fabriq_fuzz::TARGETS {
        let file = dir.join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            text.contains(&format!("fabriq_fuzz::{name}(")),
            "{} does not call fabriq_fuzz::{name}",
            file.display()
        );
    }
}

#[test]
fn short_and_empty_inputs_are_fine() {
    for (_, body) in fabriq_fuzz::TARGETS {
        for n in 0..8 {
            body(&vec![0u8; n]);
            body(&vec![0xFFu8; n]);
        }
    }
}
