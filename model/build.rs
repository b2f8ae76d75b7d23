//! Writes the table of variant sites (`patch::SITES`): every place in
//! `src/` where a variant's code differs from its base, found by the calls
//! that select it (`.has(Enum::Name)`, `.is(Enum::Name)`,
//! `.is_any(&[Enum::Name, …])`) and every exit a variant marks inside its
//! changed region (`.exit(Enum::Name, "label")`). The runtime records the
//! same calls by their `#[track_caller]` location; the review lists the
//! table's sites that no execution reached.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const CALLS: [(&str, &str); 4] = [
    (".has(", "site"),
    (".is(", "site"),
    (".is_any(", "site"),
    (".exit(", "exit"),
];

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    collect(Path::new("src"), &mut files);
    files.sort();
    let mut out = String::from("pub static SITES: &[Site] = &[\n");
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a readable source file");
        let name = f.to_string_lossy().replace('\\', "/");
        for site in scan(&text) {
            let _ = writeln!(
                out,
                "    Site {{ file: {name:?}, line: {}, keys: &{:?}, exit: {:?} }},",
                site.line, site.keys, site.label
            );
        }
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("sites.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

fn collect(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            collect(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

struct Found {
    line: usize,
    keys: Vec<String>,
    label: Option<String>,
}

/// The variant calls of one file, with the line of each method name.
fn scan(text: &str) -> Vec<Found> {
    let code = strip_comments(text);
    let mut found = Vec::new();
    for (call, kind) in CALLS {
        let mut from = 0;
        while let Some(at) = code[from..].find(call) {
            let start = from + at;
            from = start + call.len();
            let args = arguments(&code[from..]);
            let keys = paths(args);
            if keys.is_empty() {
                continue;
            }
            let line = code[..start + 1].matches('\n').count() + 1;
            let label = (kind == "exit").then(|| literal(args)).flatten();
            found.push(Found { line, keys, label });
        }
    }
    found.sort_by_key(|f| f.line);
    found
}

/// The text with `//` comments blanked (newlines kept, so lines still
/// count), leaving string literals alone.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| {
            let mut in_str = false;
            let bytes = l.as_bytes();
            let mut cut = l.len();
            for i in 0..bytes.len() {
                match bytes[i] {
                    b'"' if i == 0 || bytes[i - 1] != b'\\' => in_str = !in_str,
                    b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => {
                        cut = i;
                        break;
                    }
                    _ => {}
                }
            }
            &l[..cut]
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text up to the parenthesis that closes the call.
fn arguments(rest: &str) -> &str {
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[..i];
                }
            }
            _ => {}
        }
    }
    rest
}

/// Every `Enum::Name` path in `args` (its last two segments).
fn paths(args: &str) -> Vec<String> {
    let words: Vec<&str> = args
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| w.contains("::"))
        .collect();
    words
        .iter()
        .filter_map(|w| {
            let segs: Vec<&str> = w.split("::").filter(|s| !s.is_empty()).collect();
            let [.., e, n] = segs[..] else { return None };
            let upper = |s: &str| s.chars().next().is_some_and(char::is_uppercase);
            (upper(e) && upper(n)).then(|| format!("{e}::{n}"))
        })
        .collect()
}

/// The first string literal in `args`.
fn literal(args: &str) -> Option<String> {
    let start = args.find('"')? + 1;
    let len = args[start..].find('"')?;
    Some(args[start..start + len].to_string())
}
