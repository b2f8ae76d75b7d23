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

/// Replay determinism (issue 16, item 6): every corpus schedule with every
/// other value of its last byte, and with a byte appended, replayed twice in
/// one process, gives the same trace twice or a clean "diverged" twice —
/// never a second replay that differs from the first (state surviving from
/// one shuttle execution to the next), and never "reproduced" for a
/// schedule with bytes vfsmc did not print; after each, the recorded
/// schedule still gives its first trace.
#[test]
fn edited_schedules_replay_the_same_twice_or_diverge() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let entries: Vec<(String, Entry)> = corpus::files(&dir)
        .unwrap()
        .into_iter()
        .map(|f| {
            let name = f.display().to_string();
            let e = Entry::parse(&name, &std::fs::read_to_string(&f).unwrap()).unwrap();
            (name, e)
        })
        .filter(|(_, e)| e.schedule.is_some())
        .collect();
    assert!(!entries.is_empty(), "no corpus file has a schedule");
    let jobs = vfsmc::pool::jobs(None).unwrap();
    let failures: Vec<String> = vfsmc::pool::all(jobs, entries.len(), |i| {
        edited_schedule_failures(&entries[i].0, &entries[i].1)
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The edits of one file's schedule (each file on one worker, its edits one
/// after another, so state surviving an execution would show).
fn edited_schedule_failures(name: &str, e: &Entry) -> Vec<String> {
    use vfsmc::engine::ScheduleError;
    let schedule = e.schedule.clone().expect("a file with a schedule");
    let mut failures = Vec::new();
    let mut c = corpus::check_of(name, e).unwrap();
    let (head, last) = schedule.split_at(schedule.len() - 2);
    let mut edits: Vec<(String, bool)> = (0..=255u8)
        .map(|b| format!("{head}{b:02x}"))
        .filter(|s| *s != schedule)
        .map(|s| (s, false))
        .collect();
    edits.push((format!("{head}{last}00"), true));
    let trace = |c: &vfsmc::check::Check| {
        c.run()
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .record
            .as_ref()
            .map(vfsmc::render::text_trace)
    };
    let original = trace(&c);
    for (s, must_diverge) in edits {
        c.schedule = Some(s.clone());
        let text = |r: Result<vfsmc::check::Report, ScheduleError>| match r {
            Ok(r) => Ok(r.record.as_ref().map(vfsmc::render::text_trace)),
            Err(ScheduleError::Diverged { .. }) => Err(()),
            Err(e) => panic!("{name}: schedule {s}: {e}"),
        };
        let (a, b) = (text(c.run()), text(c.run()));
        if a != b {
            failures.push(format!("{name}: schedule {s}: two replays differ"));
        } else if must_diverge && a.is_ok() {
            failures.push(format!("{name}: schedule {s} (a byte appended) reproduced"));
        }
        c.schedule = Some(schedule.clone());
        if trace(&c) != original {
            failures.push(format!(
                "{name}: after replaying {s}, the recorded schedule gives another trace"
            ));
        }
    }
    failures
}
