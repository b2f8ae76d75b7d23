//! Corpus files: one failing seed per file, self-describing like a kernel
//! litmus test, replayed by CI and by `vfsmc replay FILE`.
//!
//! ```text
//! # comment lines start with '#'
//! model: fdtable
//! variant: fget-no-slot-recheck
//! scenario: close-vs-fget
//! engine: pct                      (loom | random | pct | dfs)
//! seed: 7                          (shuttle search seed, informational)
//! schedule: 91021c…                (shuttle engines: the schedule that replays it)
//! max-preemptions: 1               (loom: the bound it was found under)
//! input: 0a1b…                     (generated scenarios: the scenario bytes, hex)
//! expect: violates:F9_fget         (or `holds` for a fixed bug's regression)
//! fingerprint: 3f2a…               (the model's scheduling points when recorded)
//! kernel: fs/file.c:__fget_files_rcu (v5.15), fixed by 054aa8d439b9
//! why: one sentence on why it matters
//! --- trace
//! (the rendered trace; a replay must reproduce it byte for byte)
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use vfsmc_specs::Run;

use crate::check::{self, Check, Report, Verdict};
use crate::engine::{Budget, CorpusKey, EngineKind, Replay, ScheduleError};
use crate::render;

const TRACE_MARKER: &str = "--- trace";
const KEYS: [&str; 13] = [
    "model",
    "variant",
    "scenario",
    "engine",
    "seed",
    "schedule",
    "max-preemptions",
    "pct-depth",
    "input",
    "expect",
    "fingerprint",
    "kernel",
    "why",
];

/// A parsed corpus file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub model: String,
    pub variant: String,
    pub scenario: String,
    pub engine: EngineKind,
    pub seed: u64,
    pub schedule: Option<String>,
    pub max_preemptions: Option<usize>,
    pub pct_depth: usize,
    pub input: Vec<u8>,
    /// `holds` or `violates:INVARIANT`, as written.
    pub expect: String,
    pub fingerprint: String,
    pub kernel: String,
    pub why: String,
    pub trace: Option<String>,
}

/// A malformed file: which file, which line, what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(file: &str, line: usize, msg: impl std::fmt::Display) -> ParseError {
    if line == 0 {
        ParseError(format!("{file}: {msg}"))
    } else {
        ParseError(format!("{file}:{line}: {msg}"))
    }
}

fn parse_num<T: std::str::FromStr>(
    file: &str,
    line: usize,
    key: &str,
    v: &str,
) -> Result<T, ParseError> {
    v.parse().map_err(|_| {
        err(
            file,
            line,
            format!("'{key}' must be a non-negative integer, found '{v}'"),
        )
    })
}

fn check_expect(file: &str, line: usize, v: &str) -> Result<(), ParseError> {
    match v.strip_prefix("violates:") {
        Some(inv) if !inv.is_empty() => Ok(()),
        None if v == "holds" => Ok(()),
        _ => Err(err(
            file,
            line,
            format!("'expect' must be 'holds' or 'violates:INVARIANT', found '{v}'"),
        )),
    }
}

impl Entry {
    /// Parses `text` (the contents of `file`, used in error messages).
    pub fn parse(file: &str, text: &str) -> Result<Entry, ParseError> {
        let mut fields: Vec<(&str, String, usize)> = Vec::new();
        let mut trace = None;
        let mut lines = text.lines().enumerate();
        for (i, raw) in lines.by_ref() {
            let n = i + 1;
            let line = raw.trim();
            if line == TRACE_MARKER {
                break;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or_else(|| err(file, n, format!("expected 'key: value', found '{line}'")))?;
            let key = key.trim();
            let Some(&known) = KEYS.iter().find(|k| **k == key) else {
                return Err(err(
                    file,
                    n,
                    format!("unknown key '{key}' (expected one of: {})", KEYS.join(", ")),
                ));
            };
            if fields.iter().any(|(k, _, _)| *k == known) {
                return Err(err(file, n, format!("duplicate key '{key}'")));
            }
            fields.push((known, value.trim().to_string(), n));
        }
        let rest: Vec<&str> = lines.map(|(_, l)| l).collect();
        if !rest.is_empty() {
            trace = Some(rest.join("\n") + "\n");
        }
        let get = |k: &str| fields.iter().find(|(key, _, _)| *key == k);
        let required = |k: &str| {
            get(k)
                .map(|(_, v, n)| (v.clone(), *n))
                .ok_or_else(|| err(file, 0, format!("missing required key '{k}'")))
        };
        let (engine_s, engine_line) = required("engine")?;
        let engine: EngineKind = engine_s
            .parse()
            .map_err(|e: String| err(file, engine_line, e))?;
        if engine.engine().replay() == Replay::Never {
            return Err(err(
                file,
                engine_line,
                format!("{engine} failures do not replay; record a loom or shuttle seed"),
            ));
        }
        check_engine_keys(file, engine, &fields)?;
        let (expect, expect_line) = required("expect")?;
        check_expect(file, expect_line, &expect)?;
        let schedule = get("schedule").map(|(_, v, _)| v.clone());
        if engine.engine().replay() == Replay::Schedule && schedule.is_none() && expect != "holds" {
            return Err(err(
                file,
                0,
                format!("engine '{engine}' needs a 'schedule' to replay"),
            ));
        }
        let number = |k: &str| -> Result<Option<u64>, ParseError> {
            get(k)
                .map(|(_, v, n)| parse_num(file, *n, k, v))
                .transpose()
        };
        let input = match get("input") {
            Some((_, v, n)) => {
                check::unhex(v).map_err(|e| err(file, *n, format!("'input': {e}")))?
            }
            None => Vec::new(),
        };
        Ok(Entry {
            model: required("model")?.0,
            variant: required("variant")?.0,
            scenario: required("scenario")?.0,
            engine,
            seed: number("seed")?.unwrap_or(Budget::default().seed),
            schedule,
            max_preemptions: number("max-preemptions")?.map(|n| n as usize),
            pct_depth: number("pct-depth")?.map_or(Budget::default().pct_depth, |n| n as usize),
            input,
            expect,
            fingerprint: required("fingerprint")?.0,
            kernel: required("kernel")?.0,
            why: required("why")?.0,
            trace,
        })
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str("# vfsmc corpus file: one failing seed. Replay: vfsmc replay THIS_FILE\n");
        let _ = writeln!(s, "model: {}", self.model);
        let _ = writeln!(s, "variant: {}", self.variant);
        let _ = writeln!(s, "scenario: {}", self.scenario);
        let _ = writeln!(s, "engine: {}", self.engine);
        let _ = writeln!(s, "seed: {}", self.seed);
        for key in self.engine.engine().corpus_keys() {
            if let Some(value) = self.value_of(*key) {
                let _ = writeln!(s, "{}: {value}", key.name());
            }
        }
        if !self.input.is_empty() {
            let _ = writeln!(s, "input: {}", check::hex(&self.input));
        }
        let _ = writeln!(s, "expect: {}", self.expect);
        let _ = writeln!(s, "fingerprint: {}", self.fingerprint);
        let _ = writeln!(s, "kernel: {}", self.kernel);
        let _ = writeln!(s, "why: {}", self.why);
        if let Some(t) = &self.trace {
            let _ = writeln!(s, "{TRACE_MARKER}");
            s.push_str(t);
        }
        s
    }

    /// The value this entry records under an engine-specific key.
    fn value_of(&self, key: CorpusKey) -> Option<String> {
        match key {
            CorpusKey::MaxPreemptions => self.max_preemptions.map(|n| n.to_string()),
            CorpusKey::PctDepth => Some(self.pct_depth.to_string()),
            CorpusKey::Schedule => self.schedule.clone(),
        }
    }

    /// The corpus entry for a failing report.
    pub fn from_report(r: &Report, check: &Check) -> Entry {
        Entry {
            model: r.model.clone(),
            variant: r.variant.clone(),
            scenario: r.scenario.clone(),
            engine: r.engine,
            seed: r.seed,
            schedule: r
                .schedule
                .clone()
                .filter(|_| records(r.engine, CorpusKey::Schedule)),
            max_preemptions: r
                .max_preemptions
                .filter(|_| records(r.engine, CorpusKey::MaxPreemptions)),
            pct_depth: check.budget.pct_depth,
            input: r.input.clone(),
            expect: match &r.invariant {
                Some(inv) => format!("violates:{inv}"),
                None => "holds".to_string(),
            },
            fingerprint: check::fingerprint(check.model, &check_run(check)),
            kernel: check.variant.kernel.to_string(),
            why: check.variant.about.to_string(),
            trace: r.record.as_ref().map(render::text_trace),
        }
    }
}

/// Whether a corpus file for `engine` records `key`.
fn records(engine: EngineKind, key: CorpusKey) -> bool {
    engine.engine().corpus_keys().contains(&key)
}

/// Rejects an engine-specific key the file's engine does not record: a
/// `schedule` on a loom seed would be silently ignored otherwise.
fn check_engine_keys(
    file: &str,
    engine: EngineKind,
    fields: &[(&str, String, usize)],
) -> Result<(), ParseError> {
    for key in CorpusKey::ALL.into_iter().filter(|k| !records(engine, *k)) {
        if let Some((_, _, line)) = fields.iter().find(|(k, _, _)| *k == key.name()) {
            return Err(err(
                file,
                *line,
                format!(
                    "'{}' does not apply to engine '{engine}' (it records: {})",
                    key.name(),
                    recorded_keys(engine)
                ),
            ));
        }
    }
    Ok(())
}

fn recorded_keys(engine: EngineKind) -> String {
    let keys: Vec<&str> = engine
        .engine()
        .corpus_keys()
        .iter()
        .map(|k| k.name())
        .collect();
    keys.join(", ")
}

fn check_run(c: &Check) -> Run {
    Run {
        variant: c.variant.name.to_string(),
        scenario: c.scenario.name.to_string(),
        input: c.input.clone(),
    }
}

/// Writes `entry` into `dir` under a fresh name; returns the path.
pub fn save(dir: &Path, entry: &Entry) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let base = format!(
        "{}-{}-{}-{}",
        entry.model, entry.variant, entry.scenario, entry.engine
    )
    .replace(
        |c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'),
        "_",
    );
    for n in 1.. {
        let name = if n == 1 {
            format!("{base}.vfsmc")
        } else {
            format!("{base}-{n}.vfsmc")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(entry.render().as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("an unbounded counter always finds a free name")
}

/// Why a replay did not reproduce the recorded outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// The file names a model, variant or scenario that does not exist, or
    /// a schedule that does not parse: bad input (exit 2).
    Input(String),
    /// The model changed since the seed was recorded (exit 1).
    Stale(String),
    /// The replay ran but gave another outcome or trace (exit 1).
    Mismatch(String),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Input(m) | ReplayError::Stale(m) | ReplayError::Mismatch(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The check a corpus entry describes.
pub fn check_of(file: &str, e: &Entry) -> Result<Check, ReplayError> {
    let model = vfsmc_specs::model(&e.model)
        .ok_or_else(|| ReplayError::Input(format!("{file}: unknown model '{}'", e.model)))?;
    let variant = model.variant(&e.variant).ok_or_else(|| {
        ReplayError::Input(format!(
            "{file}: model '{}' has no variant '{}'",
            e.model, e.variant
        ))
    })?;
    let scenario = model.scenario(&e.scenario).ok_or_else(|| {
        ReplayError::Input(format!(
            "{file}: model '{}' has no scenario '{}'",
            e.model, e.scenario
        ))
    })?;
    let mut c = Check::new(model, variant, scenario, e.engine);
    c.input = e.input.clone();
    c.budget.seed = e.seed;
    c.budget.pct_depth = e.pct_depth;
    if records(e.engine, CorpusKey::MaxPreemptions) {
        c.budget.max_preemptions = e.max_preemptions;
    }
    c.schedule = e.schedule.clone();
    Ok(c)
}

fn outcome(r: &Report) -> String {
    match (r.verdict, &r.invariant) {
        (Verdict::Violates, Some(inv)) => format!("violates:{inv}"),
        (v, _) => v.to_string(),
    }
}

/// Replays `e` twice: the recorded outcome must come back, with the recorded
/// trace (when the file has one), byte-identical on both replays.
pub fn replay(file: &str, e: &Entry) -> Result<Report, ReplayError> {
    let c = check_of(file, e)?;
    let now = check::fingerprint(c.model, &check_run(&c));
    if now != e.fingerprint {
        return Err(ReplayError::Stale(format!(
            "{file}: stale seed: the model's scheduling points changed (recorded fingerprint {}, now {now}); \
             re-record it with `vfsmc check {} --variant {} --scenario {} --engine {} --save-corpus`",
            e.fingerprint, e.model, e.variant, e.scenario, e.engine
        )));
    }
    let input = |e: ScheduleError| ReplayError::Input(e.to_string());
    let first = c.run().map_err(input)?;
    let second = c.run().map_err(input)?;
    let got = outcome(&first);
    if got != e.expect {
        return Err(ReplayError::Mismatch(format!(
            "{file}: expected {}, replay gave {got}",
            e.expect
        )));
    }
    let text = |r: &Report| r.record.as_ref().map(render::text_trace);
    if text(&first) != text(&second) {
        return Err(ReplayError::Mismatch(format!(
            "{file}: two replays gave different traces"
        )));
    }
    if let (Some(recorded), Some(now)) = (&e.trace, text(&first)) {
        if *recorded != now {
            return Err(ReplayError::Mismatch(format!(
                "{file}: the replayed trace differs from the recorded one:\n--- recorded\n{recorded}--- replayed\n{now}"
            )));
        }
    }
    Ok(first)
}

/// Whether an entry's expectation is the one the registry states for its
/// variant (a corpus file must not contradict the manifest).
pub fn registry_agrees(e: &Entry) -> bool {
    vfsmc_specs::model(&e.model)
        .and_then(|m| m.variant(&e.variant))
        .is_some_and(|v| v.expected.to_string() == e.expect)
}

/// Every corpus file under `dir`, sorted by name.
pub fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "vfsmc"))
        .collect();
    v.sort();
    Ok(v)
}
