//! Sharded runs: the work of one `vfsmc check` as a numbered list of items,
//! a deterministic slice of it per shard, and the merge of the shards' JSON
//! back into one verdict table.
//!
//! An item is one search: a check (variant, scenario, engine) and, for an
//! engine that samples (random, PCT), one seed of the check's seed range
//! (`--seeds K`: seeds S, S+1, … S+K−1). Items are numbered in the order
//! an unsharded run takes them, and shard I of N (1-based) takes the items
//! whose number is I−1 modulo N: neighbouring items (one variant's
//! scenarios, one check's seeds) land on different shards, which spreads
//! the slow ones.
//!
//! A check's items are combined the same way whether they ran in one
//! process or came from several files ([`combine`]): the first seed that
//! violates gives the verdict, the trace and the replay line; executions
//! and seconds add up; the shape is the largest measured.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};
use vfsmc_specs::{Expected, Variant};

use crate::check::{self, Check, Report, Verdict};
use crate::engine::{EngineKind, Knob, Part, Shape};

/// Shard `index` of `count`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The whole run as one shard.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N` with 1 ≤ I ≤ N, as given by `source`.
    pub fn parse(source: &str, text: &str) -> Result<Shard, String> {
        let bad = || format!("{source}={text}: expected I/N with 1 <= I <= N, e.g. 2/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard the environment names: `VFSMC_SHARD=I/N`, or a Kubernetes
    /// indexed job's `JOB_COMPLETION_INDEX` (0-based) with
    /// `VFSMC_SHARDS=N`. `var` stands in for the environment.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
        if let Some(s) = var("VFSMC_SHARD") {
            return Shard::parse("VFSMC_SHARD", &s).map(Some);
        }
        let (Some(index), Some(count)) = (var("JOB_COMPLETION_INDEX"), var("VFSMC_SHARDS")) else {
            return Ok(None);
        };
        let i: usize = index.trim().parse().map_err(|_| {
            format!("JOB_COMPLETION_INDEX={index}: expected a non-negative integer")
        })?;
        let n: usize = count
            .trim()
            .parse()
            .map_err(|_| format!("VFSMC_SHARDS={count}: expected a positive integer"))?;
        if n == 0 || i >= n {
            return Err(format!(
                "JOB_COMPLETION_INDEX={index} with VFSMC_SHARDS={count}: expected an index \
                 in 0..{count}"
            ));
        }
        Ok(Some(Shard {
            index: i + 1,
            count: n,
        }))
    }

    /// Whether item number `item` is this shard's.
    pub fn takes(&self, item: usize) -> bool {
        item % self.count == self.index - 1
    }
}

/// One search of a run: check `check` of the run's list, with `seed`, and
/// for a split search its part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub number: usize,
    pub check: usize,
    pub seed: u64,
    pub part: Option<Part>,
}

/// Whether `engine` samples with its seed, so that more seeds search more.
pub fn samples(engine: EngineKind) -> bool {
    let e = engine.engine();
    e.reads(Knob::Seed) && !e.exhaustive()
}

/// Whether one search of `engine` can be split into parts by its schedule
/// prefix.
pub fn splits(engine: EngineKind) -> bool {
    let e = engine.engine();
    e.reads(Knob::SplitDepth) || e.reads(Knob::OptimalSplitDepth)
}

/// Every item of `checks`, numbered: each sampling check once per seed of
/// its range of `seeds`, each divided check once per part of `split` (when
/// more than 1), any other check once. A check is divided when its engine
/// splits and the run `named` its scenario or the scenario's row asks for it
/// (`Scenario::split`: a search of millions of executions; a part of a
/// smaller one costs more than the whole).
pub fn items(checks: &[Check], seeds: u64, split: usize, named: bool) -> Vec<Item> {
    let mut out = Vec::new();
    for (i, c) in checks.iter().enumerate() {
        let n = if samples(c.engine) { seeds.max(1) } else { 1 };
        let divided = split > 1 && splits(c.engine) && (named || c.scenario.split);
        let parts: Vec<Option<Part>> = if divided {
            (0..split)
                .map(|index| {
                    Some(Part {
                        index,
                        count: split,
                    })
                })
                .collect()
        } else {
            vec![None]
        };
        for k in 0..n {
            for &part in &parts {
                out.push(Item {
                    number: out.len(),
                    check: i,
                    seed: c.budget.seed.wrapping_add(k),
                    part,
                });
            }
        }
    }
    out
}

/// The reports of one check's items, in seed order, as one report.
///
/// # Panics
/// On no report: every check has at least one item.
pub fn combine(mut reports: Vec<Report>) -> Report {
    reports.sort_by_key(|r| (r.seed, r.part.map(|p| p.index)));
    let executions = reports.iter().map(|r| r.executions).sum();
    let probes = reports.iter().map(|r| r.probes).sum();
    let seconds = reports.iter().map(|r| r.seconds).sum();
    let seeds = reports
        .iter()
        .filter(|r| r.part.is_none_or(|p| p.index == 0))
        .map(|r| r.seeds)
        .sum();
    let parts = reports.iter().filter(|r| r.part.is_some()).count().max(1);
    let exhaustive = reports.iter().all(|r| r.exhaustive);
    let shape = reports.iter().filter_map(|r| r.shape).reduce(|a, b| Shape {
        threads: a.threads.max(b.threads),
        steps: a.steps.max(b.steps),
    });
    let mut goals_hit: Vec<String> = Vec::new();
    for g in reports.iter().flat_map(|r| &r.goals_hit) {
        if !goals_hit.contains(g) {
            goals_hit.push(g.clone());
        }
    }
    let mut unreached: Vec<String> = Vec::new();
    for g in reports.iter().flat_map(|r| &r.unreached) {
        if !goals_hit.contains(g) && !unreached.contains(g) {
            unreached.push(g.clone());
        }
    }
    let mut reach = check::Reach::default();
    for r in &reports {
        reach.join(&r.reach);
    }
    let judged_unreached = reports.iter().any(|r| r.verdict == Verdict::Unreached);
    let first = deciding(&reports);
    let mut out = reports.swap_remove(first.unwrap_or(0));
    if first.is_none() {
        // A goal one part (or seed) missed and another reached is reached.
        out.verdict = if judged_unreached && !unreached.is_empty() {
            Verdict::Unreached
        } else {
            Verdict::Holds
        };
        out.unreached = unreached;
        out.exhaustive = exhaustive;
    }
    out.executions = executions;
    out.probes = probes;
    out.parts = parts;
    out.seconds = seconds;
    out.seeds = seeds;
    out.shape = shape;
    out.goals_hit = goals_hit;
    out.reach = reach;
    out
}

/// The report that gives a combined verdict, if one violates or crashed: the
/// first seed's, and among the parts of one split search the violation at
/// the fewest preemptions (each part stops at its first failing bound),
/// the lowest part on a tie.
fn deciding(reports: &[Report]) -> Option<usize> {
    let failing = |r: &&Report| matches!(r.verdict, Verdict::Violates | Verdict::Crashed);
    let seed = reports.iter().find(failing)?.seed;
    reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.seed == seed && failing(r))
        .min_by_key(|(_, r)| {
            (
                r.max_preemptions.unwrap_or(usize::MAX),
                r.part.map(|p| p.index),
            )
        })
        .map(|(i, _)| i)
}

/// What one line of a `--format json` run says about its item.
pub enum Line {
    /// The item ran: its report (without its trace).
    Ran(Box<Report>),
    /// Its engine cannot judge its variant (registry mode): why.
    NotJudged { reason: String },
}

/// The fields a JSON item line adds to its report: its number, the run's
/// item count and shard, and whether the run compares with the registry.
pub fn item_json(mut v: Value, item: &Item, total: usize, shard: Shard, registry: bool) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("item".into(), json!(item.number));
        o.insert("items".into(), json!(total));
        o.insert("shard".into(), json!(shard.to_string()));
        o.insert("registry".into(), json!(registry));
    }
    v
}

/// The JSON line of an item whose engine cannot judge its variant.
pub fn not_judged_json(c: &Check, seed: u64, why: &str) -> Value {
    json!({
        "model": c.model.name(),
        "variant": c.variant.name,
        "scenario": c.scenario.name,
        "engine": c.engine.name(),
        "verdict": "n/a",
        "expected": c.variant.expected.to_string(),
        "seed": seed,
        "reason": why,
    })
}

/// Which check an item belongs to: model, variant, scenario, engine.
pub type Key = (String, String, String, EngineKind);

/// One item line of a shard's JSON, parsed.
pub struct Parsed {
    pub number: usize,
    pub total: usize,
    pub registry: bool,
    pub key: Key,
    pub expected: Expected,
    pub line: Line,
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("no '{key}'"))
}

fn string(v: &Value, key: &str) -> Result<String, String> {
    field(v, key)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("'{key}' is not a string"))
}

fn uint(v: &Value, key: &str) -> Result<u64, String> {
    field(v, key)?
        .as_u64()
        .ok_or_else(|| format!("'{key}' is not a non-negative integer"))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Parses one item line of `vfsmc check --format json`.
pub fn parse_line(text: &str) -> Result<Parsed, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let number = usize::try_from(uint(&v, "item")?).map_err(|e| e.to_string())?;
    let total = usize::try_from(uint(&v, "items")?).map_err(|e| e.to_string())?;
    let registry = field(&v, "registry")?
        .as_bool()
        .ok_or("'registry' is not a boolean")?;
    let (_, variant) = variant_of(&v)?;
    let key = (
        string(&v, "model")?,
        string(&v, "variant")?,
        string(&v, "scenario")?,
        string(&v, "engine")?.parse()?,
    );
    let parsed = |line| Parsed {
        number,
        total,
        registry,
        key: key.clone(),
        expected: variant.expected,
        line,
    };
    if string(&v, "verdict")? == "n/a" {
        return Ok(parsed(Line::NotJudged {
            reason: string(&v, "reason")?,
        }));
    }
    Ok(parsed(Line::Ran(Box::new(report_from_json(&v)?))))
}

/// The registered variant a report's JSON names, with its model.
fn variant_of(v: &Value) -> Result<(&'static dyn vfsmc_specs::Model, &'static Variant), String> {
    let model_name = string(v, "model")?;
    let model =
        vfsmc_specs::model(&model_name).ok_or_else(|| format!("unknown model '{model_name}'"))?;
    let variant_name = string(v, "variant")?;
    let variant = model
        .variant(&variant_name)
        .ok_or_else(|| format!("model '{model_name}' has no variant '{variant_name}'"))?;
    Ok((model, variant))
}

/// A report as [`Report::json`] wrote it, without its trace (a shard's
/// item, a cache entry).
pub fn report_from_json(v: &Value) -> Result<Report, String> {
    let (_, variant) = variant_of(v)?;
    let engine: EngineKind = string(v, "engine")?.parse()?;
    let verdict = match string(v, "verdict")?.as_str() {
        "holds" => Verdict::Holds,
        "violates" => Verdict::Violates,
        "unreached" => Verdict::Unreached,
        "crashed" => Verdict::Crashed,
        other => return Err(format!("unknown verdict '{other}'")),
    };
    let opt_usize = |key: &str| v.get(key).and_then(Value::as_u64).map(|n| n as usize);
    let shape = v.get("shape").filter(|s| !s.is_null()).map(|s| Shape {
        threads: s.get("threads").and_then(Value::as_u64).unwrap_or(0) as usize,
        steps: s.get("steps").and_then(Value::as_u64).unwrap_or(0) as usize,
    });
    let target = v
        .get("confidence_target")
        .filter(|t| !t.is_null())
        .and_then(|t| Some((t.get("level")?.as_f64()?, t.get("runs")?.as_u64()?)));
    let input = match v.get("input").and_then(Value::as_str) {
        Some(h) => check::unhex(h)?,
        None => Vec::new(),
    };
    Ok(Report {
        model: string(v, "model")?,
        variant: string(v, "variant")?,
        scenario: string(v, "scenario")?,
        engine,
        verdict,
        invariant: v
            .get("invariant")
            .and_then(Value::as_str)
            .map(str::to_string),
        executions: uint(v, "executions")? as usize,
        exhaustive: field(v, "exhaustive")?.as_bool().unwrap_or(false),
        max_preemptions: opt_usize("max_preemptions"),
        seed: uint(v, "seed")?,
        schedule: v
            .get("schedule")
            .and_then(Value::as_str)
            .map(str::to_string),
        input,
        record: None,
        unreached: strings(v, "unreached_goals"),
        goals_hit: strings(v, "goals_hit"),
        expected: variant.expected,
        shape,
        pct_depth: opt_usize("pct_depth").unwrap_or(0),
        seconds: v.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
        target,
        seeds: v.get("seeds").and_then(Value::as_u64).unwrap_or(1),
        error: v.get("error").and_then(Value::as_str).map(str::to_string),
        part: v
            .get("part")
            .filter(|p| !p.is_null())
            .map(|p| -> Result<Part, String> {
                Ok(Part {
                    index: uint(p, "index")? as usize,
                    count: uint(p, "count")? as usize,
                })
            })
            .transpose()?,
        parts: 1,
        probes: opt_usize("probes").unwrap_or(0),
        subtrees: opt_usize("subtrees").unwrap_or(0),
        reach: check::Reach::parse(v.get("reach")),
        fingerprints: None,
        cached: false,
    })
}

/// One check of a merged run: its items' lines, combined.
pub enum Merged {
    Ran(Box<Report>),
    NotJudged {
        key: Key,
        expected: Expected,
        reason: String,
    },
}

/// What the merged item lines of a whole run make: the checks in run order,
/// and whether the run compared with the registry.
pub struct MergedRun {
    pub checks: Vec<Merged>,
    pub registry: bool,
}

/// Merges the item lines of every shard of one run (`whence` names each
/// line's file and line). An error names a missing item, a duplicated one,
/// or shards of different runs.
pub fn merge(lines: Vec<(String, Parsed)>) -> Result<MergedRun, String> {
    let Some(total) = lines.first().map(|(_, p)| p.total) else {
        return Err("no item lines: expected the output of `vfsmc check --format json`".into());
    };
    let registry = lines[0].1.registry;
    let mut by_number: BTreeMap<usize, (String, Parsed)> = BTreeMap::new();
    for (whence, p) in lines {
        if p.total != total || p.registry != registry {
            return Err(format!(
                "{whence}: item {} belongs to another run ({} items, not {total}, or a \
                 different mode)",
                p.number, p.total
            ));
        }
        if p.number >= total {
            return Err(format!("{whence}: item {} of only {total}", p.number));
        }
        if let Some((first, _)) = by_number.get(&p.number) {
            return Err(format!(
                "{whence}: item {} is also in {first}: the shards overlap",
                p.number
            ));
        }
        by_number.insert(p.number, (whence, p));
    }
    let missing: Vec<String> = (0..total)
        .filter(|n| !by_number.contains_key(n))
        .map(|n| n.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "item(s) {} of {total} missing: is a shard's file left out?",
            missing.join(", ")
        ));
    }
    let mut order: Vec<Key> = Vec::new();
    let mut groups: BTreeMap<Key, Vec<Parsed>> = BTreeMap::new();
    for (_, (_, p)) in by_number {
        if !order.contains(&p.key) {
            order.push(p.key.clone());
        }
        groups.entry(p.key.clone()).or_default().push(p);
    }
    let checks = order
        .into_iter()
        .map(|k| {
            let items = groups.remove(&k).unwrap_or_default();
            let expected = items[0].expected;
            let mut reports = Vec::new();
            let mut reason = None;
            for p in items {
                match p.line {
                    Line::Ran(r) => reports.push(*r),
                    Line::NotJudged { reason: why } => reason = Some(why),
                }
            }
            match reason {
                Some(reason) => Merged::NotJudged {
                    key: k,
                    expected,
                    reason,
                },
                None => Merged::Ran(Box::new(combine(reports))),
            }
        })
        .collect();
    Ok(MergedRun { checks, registry })
}
