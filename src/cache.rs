//! The reviewer's cache: the report of a search that proved something,
//! kept on disk under a fingerprint of everything that decides it (this
//! binary, model, variant, scenario, engine, budget, scenario bytes), so a
//! second review of the same base re-proves nothing.
//!
//! Only reports without a trace are kept (holds, unreached): a violation's
//! trace is model data that does not round-trip through a file, and
//! finding it again is cheap next to a proof. The binary is part of the
//! key, so a rebuilt model (a reviewer's new variant) misses the cache:
//! a cached proof is never a proof of other code.
//!
//! An entry that cannot be read is a miss (with a note on stderr) and is
//! written again; nothing here can fail a review.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::check::{fnv1a, Check, Report, Verdict};
use crate::shard;

/// The variable that places the cache (`off` turns it off).
pub const VARIABLE: &str = "VFSMC_CACHE";

/// Where the cache lives: `VFSMC_CACHE` if set (`off` or empty: nowhere),
/// else `$XDG_CACHE_HOME/vfsmc`, else `$HOME/.cache/vfsmc`.
pub fn default_dir() -> Option<PathBuf> {
    match std::env::var_os(VARIABLE) {
        Some(v) if v.is_empty() || v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(|d| PathBuf::from(d).join("vfsmc"))
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vfsmc"))
            }),
    }
}

/// A fingerprint of the running executable's bytes, computed once.
fn binary() -> u64 {
    static BINARY: OnceLock<u64> = OnceLock::new();
    *BINARY.get_or_init(|| {
        std::env::current_exe()
            .and_then(fs::read)
            .map_or(0, |bytes| fnv1a(&bytes))
    })
}

/// Everything that decides a search's outcome, as text: the key's
/// preimage, kept in the entry so a hash collision is a miss.
fn key_text(c: &Check) -> String {
    format!(
        "binary {:016x}\nmodel {}\nvariant {}\nscenario {}\nengine {}\nbudget {:?}\ninput {}\nconfidence {:?}\n",
        binary(),
        c.model.name(),
        c.variant.name,
        c.scenario.name,
        c.engine.name(),
        c.budget,
        crate::check::hex(&c.input),
        c.confidence,
    )
}

fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{:016x}.json", fnv1a(key.as_bytes())))
}

/// The cached report of `c`, if `dir` holds one; `Err` with the warning
/// to print (by the caller, once no search mutes stderr) when the entry
/// cannot be read.
pub fn load(dir: &Path, c: &Check) -> Result<Option<Report>, String> {
    let key = key_text(c);
    let path = entry_path(dir, &key);
    let Ok(text) = fs::read_to_string(&path) else {
        return Ok(None);
    };
    match parse(&text, &key) {
        Ok(Some(mut r)) => {
            r.expected = c.variant.expected;
            r.cached = true;
            Ok(Some(r))
        }
        Ok(None) => Ok(None),
        Err(why) => Err(format!(
            "vfsmc: ignoring unreadable cache entry {}: {why}",
            path.display()
        )),
    }
}

/// The entry's report, `None` when it is another key's.
fn parse(text: &str, key: &str) -> Result<Option<Report>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("key").and_then(Value::as_str) != Some(key) {
        return Ok(None);
    }
    let report = v.get("report").ok_or("no 'report'")?;
    let mut r = shard::report_from_json(report)?;
    r.fingerprints = match v.get("fingerprints") {
        None | Some(Value::Null) => None,
        Some(f) => Some(
            f.as_array()
                .ok_or("'fingerprints' is not an array")?
                .iter()
                .map(|x| x.as_u64().ok_or("a fingerprint is not a number"))
                .collect::<Result<BTreeSet<u64>, _>>()?,
        ),
    };
    Ok(Some(r))
}

/// Whether `r` is worth keeping: a finished proof with no trace to lose.
fn keeps(r: &Report) -> bool {
    matches!(r.verdict, Verdict::Holds | Verdict::Unreached) && r.record.is_none()
}

/// Keeps `r`, the report of `c`, in `dir` (written whole, then renamed, so
/// a reader never sees half an entry). A write that fails is a note on
/// stderr: the review has its report either way.
/// Keeps `r` for `c` in `dir` if it is a proof; `Err` with the warning to
/// print when it cannot be written.
pub fn store(dir: &Path, c: &Check, r: &Report) -> Result<(), String> {
    if !keeps(r) {
        return Ok(());
    }
    let key = key_text(c);
    let entry = json!({
        "key": key,
        "report": r.json(),
        "fingerprints": r.fingerprints,
    });
    let path = entry_path(dir, &key);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = fs::create_dir_all(dir)
        .and_then(|()| fs::File::create(&tmp))
        .and_then(|mut f| f.write_all(entry.to_string().as_bytes()))
        .and_then(|()| fs::rename(&tmp, &path));
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("vfsmc: could not write cache entry {}: {e}", path.display())
    })
}
