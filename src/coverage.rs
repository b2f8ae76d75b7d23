//! Model coverage: what `scripts/model-coverage` reads out of llvm-cov's
//! lcov export of a PR-tier run, and the gate it applies.
//!
//! Per model folder it reports lines covered; it lists the model functions
//! no execution entered, and every *failure exit* (a line that returns
//! early: `return …`, `Err(…)`, `=> return`) no execution reached. An
//! unreached failure exit in the paths the issue names — the path walk and
//! legitimization (`model/src/namei/`), the VFS substrate
//! (`model/src/vfs/`), and SLUB's slow path (`model/src/freelist/slub.rs`)
//! — must be listed in `model/UNREACHED` with the reason no PR-tier
//! scenario reaches it; an unlisted one fails the gate, and so does a
//! listed one that is reached now (the list must not rot).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The folders (and files) whose unreached failure exits must be listed.
pub const GATED: [&str; 3] = [
    "model/src/namei/",
    "model/src/vfs/",
    "model/src/freelist/slub.rs",
];

/// One source file's counts, from its lcov record.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// Execution count per instrumented line.
    pub lines: BTreeMap<u32, u64>,
    /// Functions by their first line, with their call counts.
    pub functions: BTreeMap<u32, u64>,
    /// Lines whose count wrapped below zero: llvm-cov derives a region's
    /// count from counters (entries minus the ways out), and an execution
    /// that ends by unwinding through a region (a violation, loom ending a
    /// blocked thread) leaves the difference negative. The true count is
    /// unknown, so such a line counts as unreached (another record of the
    /// same file still adds its count).
    pub wrapped: BTreeSet<u32>,
}

/// A line count above this is a wrapped difference, not a count.
const WRAPPED: u64 = i64::MAX as u64;

/// Parses an lcov file into per-file counts, keyed by the path from
/// `model/src/` on (files outside the model are dropped).
pub fn parse_lcov(text: &str) -> BTreeMap<String, FileCounts> {
    let mut out: BTreeMap<String, FileCounts> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut fn_lines: BTreeMap<String, u32> = BTreeMap::new();
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("SF:") {
            current = path.find("model/src/").map(|i| path[i..].to_string());
            fn_lines.clear();
            continue;
        }
        let Some(file) = current.as_ref() else {
            continue;
        };
        let counts = out.entry(file.clone()).or_default();
        if let Some(rest) = line.strip_prefix("DA:") {
            let mut it = rest.split(',');
            if let (Some(l), Some(c)) = (it.next(), it.next()) {
                if let (Ok(l), Ok(c)) = (l.parse(), c.parse::<u64>()) {
                    let n = counts.lines.entry(l).or_default();
                    if c > WRAPPED {
                        counts.wrapped.insert(l);
                    } else {
                        *n = n.saturating_add(c);
                    }
                }
            }
        } else if let Some(rest) = line.strip_prefix("FN:") {
            if let Some((l, name)) = rest.split_once(',') {
                if let Ok(l) = l.parse() {
                    fn_lines.insert(name.to_string(), l);
                    counts.functions.entry(l).or_default();
                }
            }
        } else if let Some(rest) = line.strip_prefix("FNDA:") {
            if let Some((c, name)) = rest.split_once(',') {
                if let (Ok(c), Some(l)) = (c.parse::<u64>(), fn_lines.get(name)) {
                    *counts.functions.entry(*l).or_default() += c;
                }
            }
        }
    }
    out
}

/// Whether a source line leaves its function early.
pub fn is_early_return(code: &str) -> bool {
    let t = code.trim();
    t.starts_with("return") || t.contains("=> return")
}

/// Whether a source line leaves its function early on failure: it
/// returns an error, `false`, `None` or a failed outcome, or is a match arm
/// that yields an error.
pub fn is_failure_exit(code: &str) -> bool {
    let t = code.trim();
    let value = t
        .split_once("return")
        .map_or(t, |(_, v)| v)
        .trim()
        .trim_end_matches([';', ','])
        .trim();
    let failed = value.starts_with("Err(")
        || value == "false"
        || value == "None"
        || value.ends_with("::Failed");
    (is_early_return(t) && failed) || t.starts_with("Err(") || t.contains("=> Err(")
}

/// The name of the function a line belongs to: the nearest `fn NAME` at or
/// above it.
pub fn function_of(source: &[&str], line: u32) -> String {
    let upto = (line as usize).min(source.len());
    source[..upto]
        .iter()
        .rev()
        .find_map(|l| {
            let at = l.find("fn ")?;
            let rest = &l[at + 3..];
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
            (end > 0
                && l[..at].split_whitespace().all(|w| {
                    matches!(
                        w,
                        "pub" | "pub(crate)" | "pub(super)" | "const" | "unsafe" | "async"
                    )
                }))
            .then(|| rest[..end].to_string())
        })
        .unwrap_or_else(|| "?".to_string())
}

/// One entry of `model/UNREACHED`: `file | function | exit line | reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub file: String,
    pub function: String,
    pub code: String,
    pub reason: String,
}

/// Parses `model/UNREACHED`; an error names the line and what it expected.
pub fn parse_list(name: &str, text: &str) -> Result<Vec<Listed>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = t.splitn(4, " | ").map(str::trim).collect();
        let [file, function, code, reason] = cols[..] else {
            return Err(format!(
                "{name}:{}: expected `file | function | exit line | reason`, got `{t}`",
                i + 1
            ));
        };
        if reason.is_empty() {
            return Err(format!("{name}:{}: the entry gives no reason", i + 1));
        }
        out.push(Listed {
            file: file.to_string(),
            function: function.to_string(),
            code: code.to_string(),
            reason: reason.to_string(),
        });
    }
    Ok(out)
}

/// An unreached failure exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub file: String,
    pub line: u32,
    pub function: String,
    pub code: String,
}

/// The report and whether the gate passes: per folder line coverage, the
/// functions never entered, the unreached failure exits (listed ones with
/// their reason), and the gated exits missing from the list or listed but
/// reached.
pub fn report(
    counts: &BTreeMap<String, FileCounts>,
    source: impl Fn(&str) -> Option<String>,
    listed: &[Listed],
) -> (String, bool) {
    let mut out = String::new();
    let mut folders: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut gaps = Vec::new();
    let mut never_entered = Vec::new();
    let mut reached_exits: Vec<(String, String, String)> = Vec::new();
    let mut other_returns = Vec::new();
    for (file, c) in counts {
        let folder = file
            .rsplit_once('/')
            .map_or(file.as_str(), |(d, _)| d)
            .to_string();
        let e = folders.entry(folder).or_default();
        e.0 += c.lines.values().filter(|n| **n > 0).count();
        e.1 += c.lines.len();
        let Some(text) = source(file) else { continue };
        let src: Vec<&str> = text.lines().collect();
        for (l, n) in &c.functions {
            if *n == 0 {
                never_entered.push(format!("{file}:{l} {}", function_of(&src, *l + 1)));
            }
        }
        for (l, n) in &c.lines {
            let Some(code) = src.get(*l as usize - 1) else {
                continue;
            };
            if !is_failure_exit(code) {
                if *n == 0 && is_early_return(code) {
                    let function = function_of(&src, *l);
                    other_returns.push(format!("{file}:{l} {function}: {}", code.trim()));
                }
                continue;
            }
            let function = function_of(&src, *l);
            if *n == 0 {
                gaps.push(Gap {
                    file: file.clone(),
                    line: *l,
                    function,
                    code: code.trim().to_string(),
                });
            } else {
                reached_exits.push((file.clone(), function, code.trim().to_string()));
            }
        }
    }
    let _ = writeln!(out, "\nLine coverage of model/ by folder:");
    let (mut hit, mut all) = (0, 0);
    for (f, (h, n)) in &folders {
        hit += h;
        all += n;
        let _ = writeln!(out, "  {f:<28} {:>5.1} %  ({h} of {n} lines)", pct(*h, *n));
    }
    let _ = writeln!(
        out,
        "  {:<28} {:>5.1} %  ({hit} of {all} lines)",
        "model/ (all)",
        pct(hit, all)
    );
    let _ = writeln!(
        out,
        "\nModel functions no execution entered ({}):",
        never_entered.len()
    );
    for f in &never_entered {
        let _ = writeln!(out, "  {f}");
    }
    let wrapped: Vec<String> = counts
        .iter()
        .flat_map(|(file, c)| c.wrapped.iter().map(move |l| format!("{file}:{l}")))
        .collect();
    let _ = writeln!(
        out,
        "\nLines whose count wrapped below zero (llvm-cov's counter arithmetic where executions \
         unwound through the region), counted unreached ({}):",
        wrapped.len()
    );
    for w in &wrapped {
        let _ = writeln!(out, "  {w}");
    }
    let n = other_returns.len();
    let _ = writeln!(out, "\nOther early returns no scenario reached ({n}):");
    for r in &other_returns {
        let _ = writeln!(out, "  {r}");
    }
    let is_listed = |g: &Gap| {
        listed
            .iter()
            .find(|e| e.file == g.file && e.function == g.function && e.code == g.code)
    };
    let _ = writeln!(out, "\nFailure exits no scenario reached ({}):", gaps.len());
    let mut pass = true;
    for g in &gaps {
        let gated = GATED.iter().any(|p| g.file.starts_with(p));
        let why = match is_listed(g) {
            Some(e) => format!("listed: {}", e.reason),
            None if gated => {
                pass = false;
                "NOT LISTED in model/UNREACHED (gated: add a scenario or an entry)".to_string()
            }
            None => "not gated".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}:{} {}: {}\n      {why}",
            g.file, g.line, g.function, g.code
        );
    }
    for e in listed {
        let reached = reached_exits
            .iter()
            .any(|(f, func, code)| *f == e.file && *func == e.function && *code == e.code);
        let unreached = gaps
            .iter()
            .any(|g| g.file == e.file && g.function == e.function && g.code == e.code);
        if reached && !unreached {
            pass = false;
            let _ = writeln!(
                out,
                "  LISTED BUT REACHED: {} {}: {} (remove it from model/UNREACHED)",
                e.file, e.function, e.code
            );
        } else if !reached && !unreached {
            pass = false;
            let _ = writeln!(
                out,
                "  LISTED BUT NOT FOUND: {} {}: {} (the line changed: update model/UNREACHED)",
                e.file, e.function, e.code
            );
        }
    }
    (out, pass)
}

/// The per-file table `model/COVERAGE` keeps: a header, then `file hit
/// total` per model file.
pub fn table(counts: &BTreeMap<String, FileCounts>) -> String {
    let mut out = String::from(
        "# Lines of model/ reached by the PR tier's scenario searches (cargo test --release\n\
         # but the sequential references), per file: file, lines reached, lines\n\
         # instrumented. Written by scripts/model-coverage; vfsmc show sums each model's\n\
         # files (Spec::CODE).\n",
    );
    for (file, c) in counts {
        let hit = c.lines.values().filter(|n| **n > 0).count();
        let _ = writeln!(out, "{file} {hit} {}", c.lines.len());
    }
    out
}

/// The lines reached and instrumented of the files under `code` (paths or
/// folders ending in `/`), from a [`table`].
pub fn figure(table: &str, code: &[&str]) -> Option<(usize, usize)> {
    let mut sum = None;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.split_whitespace();
        let (Some(file), Some(hit), Some(all)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let mine = code.iter().any(|c| {
            if c.ends_with('/') {
                file.starts_with(c)
            } else {
                file == *c
            }
        });
        if let (true, Ok(h), Ok(n)) = (mine, hit.parse::<usize>(), all.parse::<usize>()) {
            let (sh, sn) = sum.unwrap_or((0, 0));
            sum = Some((sh + h, sn + n));
        }
    }
    sum
}

/// A percentage of `h` in `n`.
pub fn pct(h: usize, n: usize) -> f64 {
    if n == 0 {
        100.0
    } else {
        100.0 * h as f64 / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LCOV: &str = "SF:/repo/model/src/vfs/x.rs\nFN:1,_RNvx\nFNDA:3,_RNvx\nFN:7,_RNvy\nFNDA:0,_RNvy\n\
                        DA:2,3\nDA:3,0\nDA:4,3\nDA:8,0\nend_of_record\nSF:/repo/src/cli.rs\nDA:1,1\nend_of_record\n";
    const SRC: &str =
        "fn x(a: bool) -> bool {\n    if a {\n        return false;\n    }\n    true\n}\n\
                       pub(crate) fn y() -> Result<(), ()> {\n    Err(())\n}\n";

    #[test]
    fn an_unlisted_unreached_exit_fails_the_gate_and_a_listed_one_passes() {
        let counts = parse_lcov(LCOV);
        assert_eq!(counts.keys().collect::<Vec<_>>(), ["model/src/vfs/x.rs"]);
        let src = |_: &str| Some(SRC.to_string());
        let (text, pass) = report(&counts, src, &[]);
        assert!(!pass, "{text}");
        assert!(
            text.contains("model/src/vfs/x.rs:3 x: return false;"),
            "{text}"
        );
        assert!(text.contains("model/src/vfs/x.rs:8 y: Err(())"), "{text}");
        assert!(
            text.contains("model/src/vfs/x.rs:7 y"),
            "never entered:\n{text}"
        );
        let list = parse_list(
            "UNREACHED",
            "model/src/vfs/x.rs | x | return false; | no caller passes true\n\
             model/src/vfs/x.rs | y | Err(()) | never called\n",
        )
        .unwrap();
        let (text, pass) = report(&counts, src, &list);
        assert!(pass, "{text}");
    }

    #[test]
    fn a_wrapped_count_is_no_proof_that_a_failure_exit_ran() {
        let lcov = LCOV.replace("DA:3,0", "DA:3,18446744073709551546");
        let counts = parse_lcov(&lcov);
        let (text, pass) = report(&counts, |_| Some(SRC.to_string()), &[]);
        assert!(!pass, "{text}");
        assert!(
            text.contains("model/src/vfs/x.rs:3 x: return false;"),
            "{text}"
        );
        assert!(
            text.contains("counted unreached (1):\n  model/src/vfs/x.rs:3\n"),
            "{text}"
        );
    }

    #[test]
    fn a_listed_exit_that_is_reached_now_fails_the_gate() {
        let lcov = LCOV.replace("DA:3,0", "DA:3,1").replace("DA:8,0", "DA:8,1");
        let list = parse_list(
            "UNREACHED",
            "model/src/vfs/x.rs | x | return false; | stale\n",
        )
        .unwrap();
        let (text, pass) = report(&parse_lcov(&lcov), |_| Some(SRC.to_string()), &list);
        assert!(!pass && text.contains("LISTED BUT REACHED"), "{text}");
    }

    #[test]
    fn a_malformed_list_line_names_its_line() {
        let e = parse_list("model/UNREACHED", "# c\nmodel/src/a.rs | f\n").unwrap_err();
        assert!(e.starts_with("model/UNREACHED:2: expected"), "{e}");
    }
}
