//! Counterexample diagrams: every corpus file's trace, drawn as SVG, parses
//! as XML with one lane per thread that took a step, one row per step in
//! trace order on its thread's lane, a bar per lock acquisition and the
//! violated invariant at the bottom; the Mermaid form has the same lanes,
//! rows and lock spans.

use std::path::Path;
use std::sync::OnceLock;

use vfsmc::corpus::{self, Entry};
use vfsmc::diagram::{self, Diagram};
use vfsmc::pool;
use vfsmc_model::driver::Record;
use vfsmc_model::trace::Effect;

/// Every corpus file's replayed trace, with the file's name: replayed once
/// per process on the pool (both tests draw the same traces).
fn traces() -> &'static [(String, Record)] {
    static TRACES: OnceLock<Vec<(String, Record)>> = OnceLock::new();
    TRACES.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let files = corpus::files(&dir).expect("corpus/ is readable");
        assert!(!files.is_empty(), "corpus/ holds no file");
        let jobs = pool::jobs(None).unwrap_or_else(|e| panic!("{e}"));
        pool::all(jobs, files.len(), |i| replayed(&files[i]))
    })
}

fn replayed(f: &Path) -> (String, Record) {
    let name = f.display().to_string();
    let text = std::fs::read_to_string(f).unwrap();
    let entry = Entry::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
    // One run: the files' replays (fingerprint, outcome, the same trace
    // twice) are each model's corpus test.
    let check = corpus::check_of(&name, &entry).unwrap_or_else(|e| panic!("{e}"));
    let report = check.run().unwrap_or_else(|e| panic!("{name}: {e}"));
    (name, report.record.expect("a corpus seed fails"))
}

fn thread_names_with_steps(r: &Record) -> Vec<&'static str> {
    let mut names = Vec::new();
    for s in &r.steps {
        let n = r.threads[usize::from(s.thread)];
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names.sort_unstable();
    names
}

fn acquisitions(r: &Record) -> usize {
    r.steps
        .iter()
        .filter(|s| matches!(s.effect, Effect::Lock { op, .. } if op.acquires()))
        .count()
}

fn class<'a>(doc: &'a roxmltree::Document, name: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(name))
        .collect()
}

fn attr(n: &roxmltree::Node, a: &str) -> String {
    n.attribute(a)
        .unwrap_or_else(|| panic!("no {a} on {n:?}"))
        .to_string()
}

#[test]
fn every_corpus_trace_draws_as_svg_with_its_lanes_and_rows() {
    for (name, rec) in traces() {
        let svg = diagram::svg(&Diagram::of(name, rec));
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{name}: the SVG is not XML: {e}\n{svg}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");

        let lanes = class(&doc, "lane");
        let mut threads: Vec<String> = lanes.iter().map(|l| attr(l, "data-thread")).collect();
        threads.sort_unstable();
        assert_eq!(threads, thread_names_with_steps(rec), "{name}: lanes");
        for l in &lanes {
            assert!(!attr(l, "data-context").is_empty(), "{name}: lane context");
        }

        let rows = class(&doc, "step");
        assert_eq!(rows.len(), rec.steps.len(), "{name}: one row per step");
        let mut last_y = 0.0;
        for (i, (row, step)) in rows.iter().zip(&rec.steps).enumerate() {
            assert_eq!(attr(row, "data-step"), (i + 1).to_string(), "{name}");
            let lane: usize = attr(row, "data-lane").parse().unwrap();
            assert_eq!(
                attr(&lanes[lane], "data-thread"),
                rec.threads[usize::from(step.thread)],
                "{name}: step {} is on its thread's lane",
                i + 1
            );
            let y: f64 = row
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .map(|t| attr(&t, "y").parse::<f64>().unwrap())
                .fold(f64::INFINITY, f64::min);
            assert!(y > last_y, "{name}: row {} is not below the last", i + 1);
            last_y = y;
        }

        assert_eq!(
            class(&doc, "lock").len(),
            acquisitions(rec),
            "{name}: lock bars"
        );
        let violation = class(&doc, "violation");
        let v = rec.violation.as_ref().expect("a corpus seed violates");
        assert_eq!(violation.len(), 1, "{name}: the violation");
        let text: String = violation[0]
            .descendants()
            .filter_map(|n| n.text())
            .collect();
        assert!(
            text.contains(&format!("VIOLATED {}", v.invariant)),
            "{name}: {text}"
        );
        let bottom: f64 = violation[0]
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|t| attr(&t, "y").parse::<f64>().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(bottom > last_y, "{name}: the violation is below every row");
    }
}

/// `text` with Mermaid's `#code;` entities taken out.
fn without_entities(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('#') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(';') {
            rest = &tail[digits + 1..];
        } else {
            out.push('#');
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn every_corpus_trace_draws_as_mermaid_with_its_lanes_and_rows() {
    for (name, rec) in traces() {
        let d = Diagram::of(name, rec);
        let m = diagram::mermaid(&d);
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(lines[0], "sequenceDiagram", "{name}");
        let count = |prefix: &str| {
            lines
                .iter()
                .filter(|l| l.trim_start().starts_with(prefix))
                .count()
        };
        assert_eq!(
            count("participant "),
            thread_names_with_steps(rec).len(),
            "{name}"
        );
        assert_eq!(
            count("Note over "),
            rec.steps.len() + d.violation.len(),
            "{name}: a note per step and per violation line"
        );
        assert_eq!(count("activate "), acquisitions(rec), "{name}: lock spans");
        assert!(count("deactivate ") <= count("activate "), "{name}");
        for l in lines.iter().filter(|l| l.contains("Note over")) {
            let text = without_entities(l.split_once(": ").map_or("", |x| x.1));
            for c in [';', '<', '>', '#', '%'] {
                assert!(!text.contains(c), "{name}: a raw '{c}' in {l}");
            }
        }
    }
}
