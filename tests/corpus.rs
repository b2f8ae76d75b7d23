//! Corpus files as files: a stale fingerprint fails loudly, rendering then
//! parsing gives the same entry, traces fit 80 columns, and every file
//! belongs to a model (each model's own test file replays its seeds).

use std::path::Path;

use vfsmc::corpus::{self, Entry};

#[test]
fn every_corpus_file_parses_and_names_a_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let files = corpus::files(&dir).expect("corpus/ is readable");
    assert!(!files.is_empty(), "corpus/ holds no .vfsmc file");
    for f in &files {
        let name = f.display().to_string();
        let e = Entry::parse(&name, &std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            vfsmc_specs::model(&e.model).is_some(),
            "{name}: unknown model {}",
            e.model
        );
    }
}

#[test]
fn a_stale_fingerprint_fails_loudly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let f = &corpus::files(&dir).unwrap()[0];
    let mut e = Entry::parse("f", &std::fs::read_to_string(f).unwrap()).unwrap();
    e.fingerprint = "0000000000000000".to_string();
    match corpus::replay("f", &e) {
        Err(corpus::ReplayError::Stale(msg)) => assert!(msg.contains("stale seed"), "{msg}"),
        other => panic!("a wrong fingerprint must be reported as stale, got {other:?}"),
    }
}

#[test]
fn rendering_then_parsing_gives_the_same_entry() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for f in corpus::files(&dir).unwrap() {
        let e = Entry::parse("f", &std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(
            Entry::parse("g", &e.render()).unwrap(),
            e,
            "{}",
            f.display()
        );
    }
}

/// Traces are pasted into plain-text mail: no line may exceed 80 columns,
/// in the corpus or in any reviewed snapshot.
#[test]
fn recorded_traces_fit_80_columns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = corpus::files(&root.join("corpus")).unwrap();
    if let Ok(dir) = std::fs::read_dir(root.join("tests/snapshots")) {
        files.extend(dir.filter_map(|e| e.ok().map(|e| e.path())));
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let trace = text
            .split_once("--- trace\n")
            .map_or(text.as_str(), |(_, t)| t);
        let trace = trace.split_once("\n---\n").map_or(trace, |(_, t)| t);
        for (i, line) in trace.lines().enumerate() {
            assert!(
                line.chars().count() <= vfsmc::render::WIDTH,
                "{}: trace line {} is wider than 80 columns: {line}",
                f.display(),
                i + 1
            );
        }
    }
}
