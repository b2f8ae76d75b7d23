//! The `vfsmc` command line. Exit codes: 0 every invariant held (or every
//! verdict matched the registry), 1 a violation (or a mismatch, or a replay
//! that did not reproduce), 2 bad input — always with a message naming the
//! argument, file or line and what was expected, never a panic.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use vfsmc_model::driver::OpCost;
use vfsmc_model::exec::Counter;
use vfsmc_specs::{Expected, Model, Run, Scenario, Tier, Variant};

use crate::check::{self, Check, Report, Verdict};
use crate::corpus::{self, Entry, ReplayError};
use crate::engine::{Budget, Engine, EngineKind, Knob, Replay};

#[derive(Parser)]
#[command(
    name = "vfsmc",
    version,
    about = "Model checker for the Linux open(2) hot path"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum TierArg {
    Pr,
    Deep,
}

impl TierArg {
    fn tier(self) -> Tier {
        match self {
            TierArg::Pr => Tier::Pr,
            TierArg::Deep => Tier::Deep,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// One line per model variant: MODEL VARIANT EXPECTED.
    List,
    /// A model's variants (with kernel references), scenarios (with goals and
    /// loom bounds) and invariants.
    Show { model: String },
    /// Check variants; with no MODEL, check the whole registry against its
    /// expected verdicts.
    #[command(after_help = crate::engine::help())]
    Check(CheckArgs),
    /// Replay corpus files; exit 0 when each reproduces its recorded outcome.
    Replay {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Executions per second, executions explored, runs and time to first
    /// failure, per engine. Numbers are printed, never asserted.
    Bench(BenchArgs),
    /// Side-by-side cost counters of two variants (sequential execution).
    Diff {
        model: String,
        a: String,
        b: String,
        #[arg(long)]
        scenario: Option<String>,
    },
}

#[derive(clap::Args)]
struct CheckArgs {
    model: Option<String>,
    #[arg(long)]
    variant: Option<String>,
    #[arg(long)]
    scenario: Option<String>,
    /// Engine(s): loom, random, pct, dfs, stress, a comma-separated list, or all.
    #[arg(long, default_value = "loom,pct")]
    engine: String,
    /// Executions for random/pct/dfs/stress (a cap for loom) [env: VFSMC_ITERATIONS].
    #[arg(long)]
    iterations: Option<u64>,
    /// Seed of random and PCT [env: VFSMC_SEED].
    #[arg(long)]
    seed: Option<u64>,
    /// loom: largest preemption bound (default: the scenario's PR-tier bound)
    /// [env: VFSMC_MAX_PREEMPTIONS].
    #[arg(long)]
    max_preemptions: Option<u64>,
    /// PCT depth (preemptions the bug needs + 1) [env: VFSMC_PCT_DEPTH].
    #[arg(long)]
    pct_depth: Option<u64>,
    /// Replay this shuttle schedule (as printed by a failing check).
    #[arg(long)]
    schedule: Option<String>,
    /// Scenario bytes (hex) of a generated scenario.
    #[arg(long)]
    input: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Which scenarios a holding variant is checked on by default: the PR
    /// tier (every push) or the deep tier (nightly: longer searches).
    #[arg(long, value_enum, default_value = "pr")]
    tier: TierArg,
    /// Write a corpus file for each violation (into DIR, default corpus/).
    #[arg(long, num_args = 0..=1, default_missing_value = "corpus")]
    save_corpus: Option<PathBuf>,
}

#[derive(clap::Args)]
struct BenchArgs {
    model: Option<String>,
    #[arg(long)]
    variant: Option<String>,
    /// Seeds per random/PCT measurement (the median is reported).
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Cap on executions per search (default 100000) [env: VFSMC_ITERATIONS].
    #[arg(long)]
    iterations: Option<u64>,
    /// Executions per throughput measurement, at most the cap.
    #[arg(long, default_value_t = 20_000)]
    throughput_iterations: usize,
    /// Price recording and invariants instead: each holding variant's
    /// scenarios run twice on loom, with steps recorded and invariants
    /// checked, and without; both runs must explore the same executions.
    #[arg(long)]
    overhead: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Bad input: printed with its context, exit 2.
struct BadInput(String);

type Out<T> = Result<T, BadInput>;

/// Runs the CLI; returns the exit code.
pub fn main() -> i32 {
    die_quietly_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    crate::quiet::mute_engine_stderr();
    let result = match cli.command {
        Command::List => Ok(list()),
        Command::Show { model } => show(&model),
        Command::Check(a) => run_check(a),
        Command::Replay { files } => Ok(replay(&files)),
        Command::Bench(a) => bench(a),
        Command::Diff {
            model,
            a,
            b,
            scenario,
        } => diff(&model, &a, &b, scenario.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(BadInput(msg)) => {
            eprintln!("vfsmc: {msg}");
            2
        }
    }
}

/// Rust starts programs with SIGPIPE ignored, so printing into a closed pipe
/// (`vfsmc show fdtable | head`) panics. A command-line tool should stop
/// quietly instead, as `cat` does: restore the default action.
fn die_quietly_on_closed_pipe() {
    // SAFETY: resetting a signal to its default action before any thread is
    // spawned; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn list() -> i32 {
    for m in vfsmc_specs::models() {
        for v in m.variants() {
            println!("{} {} {}", m.name(), v.name, v.expected);
        }
    }
    0
}

fn show(name: &str) -> Out<i32> {
    let m = find_model(name)?;
    println!("{}: {}\n\nvariants:", m.name(), m.about());
    for v in m.variants() {
        let witness = if v.witness.is_empty() {
            String::new()
        } else {
            format!(" on {}", v.witness)
        };
        println!(
            "  {} — expected {}{witness}\n      {}\n      {}",
            v.name, v.expected, v.kernel, v.about
        );
    }
    println!("\nscenarios:");
    for s in m.scenarios() {
        let tier = match s.tier {
            Tier::Pr => "PR tier",
            Tier::Deep => "deep tier",
        };
        let bound = s.loom_bound.map_or("loom exhaustive".to_string(), |b| {
            format!("loom preemption bound {b}")
        });
        let bound = format!("{tier}, {bound}");
        let kind = if s.generated {
            ", generated from --input bytes"
        } else {
            ""
        };
        println!("  {} ({bound}{kind})\n      {}", s.name, s.about);
        if !s.goals.is_empty() {
            println!("      goals: {}", s.goals.join(", "));
        }
    }
    println!("\ninvariants:");
    for i in m.invariants() {
        println!("  {}: {}", i.name, i.about);
    }
    if !m.limits().is_empty() {
        println!("\nwhat this model cannot express (a \"holds\" says nothing about these):");
        for l in m.limits() {
            println!("  - {l}");
        }
    }
    Ok(0)
}

fn names<T>(items: &[T], name: impl Fn(&T) -> &str) -> String {
    items.iter().map(name).collect::<Vec<_>>().join(", ")
}

fn find_model(name: &str) -> Out<&'static dyn Model> {
    vfsmc_specs::model(name).ok_or_else(|| {
        let known: Vec<&str> = vfsmc_specs::models().iter().map(|m| m.name()).collect();
        BadInput(format!(
            "unknown model '{name}' (expected one of: {})",
            known.join(", ")
        ))
    })
}

fn find_variant(m: &'static dyn Model, name: &str) -> Out<&'static Variant> {
    m.variant(name).ok_or_else(|| {
        BadInput(format!(
            "model '{}' has no variant '{name}' (expected one of: {})",
            m.name(),
            names(m.variants(), |v| v.name)
        ))
    })
}

fn find_scenario(m: &'static dyn Model, name: &str) -> Out<&'static Scenario> {
    m.scenario(name).ok_or_else(|| {
        BadInput(format!(
            "model '{}' has no scenario '{name}' (expected one of: {})",
            m.name(),
            names(m.scenarios(), |s| s.name)
        ))
    })
}

/// `--engine`: one engine, a comma-separated list, or `all`.
fn engines_of(a: &CheckArgs) -> Out<Vec<EngineKind>> {
    let mut engines = Vec::new();
    for name in a.engine.split(',') {
        if name == "all" {
            engines.extend(EngineKind::ALL);
            continue;
        }
        let e: EngineKind = name.parse().map_err(|e| {
            BadInput(format!(
                "--engine: {e} (or a comma-separated list, or 'all')"
            ))
        })?;
        engines.push(e);
    }
    engines.sort();
    engines.dedup();
    if let Some(n) = a.max_preemptions {
        if !engines
            .iter()
            .any(|e| e.engine().reads(Knob::MaxPreemptions))
        {
            return Err(BadInput(format!(
                "--max-preemptions bounds {} only; engine(s) '{}' take --iterations/--pct-depth",
                engine_names(|e| e.reads(Knob::MaxPreemptions)),
                a.engine
            )));
        }
        if n > 16 {
            return Err(BadInput(format!(
                "--max-preemptions {n} is beyond any tractable loom search (expected 0..=16, or omit it)"
            )));
        }
    }
    let replays_schedule = |e: &EngineKind| e.engine().replay() == Replay::Schedule;
    if a.schedule.is_some() && (engines.len() != 1 || !replays_schedule(&engines[0])) {
        return Err(BadInput(format!(
            "--schedule replays one shuttle engine ({}), not '{}'",
            engine_names(|e| e.replay() == Replay::Schedule),
            a.engine
        )));
    }
    Ok(engines)
}

/// The engines `pick` selects, as "a, b or c".
fn engine_names(pick: impl Fn(&dyn Engine) -> bool) -> String {
    let names: Vec<&str> = EngineKind::ALL
        .iter()
        .filter(|e| pick(e.engine()))
        .map(|e| e.name())
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// The budget of every check: flags over `base` (the default budget with the
/// environment applied). One budget serves every engine, as each reads only
/// its own knobs.
fn budget_of(a: &CheckArgs, base: &Budget) -> Out<Budget> {
    let mut b = base.clone();
    if let Some(n) = flag(Knob::Iterations, a.iterations)? {
        Knob::Iterations.set(&mut b, n);
        // The flag caps loom too: one number for "how long may it search".
        Knob::LoomCap.set(&mut b, n);
    }
    for (knob, value) in [
        (Knob::Seed, a.seed),
        (Knob::MaxPreemptions, a.max_preemptions),
        (Knob::PctDepth, a.pct_depth),
    ] {
        if let Some(v) = flag(knob, value)? {
            knob.set(&mut b, v);
        }
    }
    Ok(b)
}

/// A knob's flag value, checked against the knob's range.
fn flag(knob: Knob, value: Option<u64>) -> Out<Option<u64>> {
    let name = knob.flag().unwrap_or(knob.env());
    value.map(|v| knob.check(name, v).map_err(bad)).transpose()
}

fn bad(e: impl std::fmt::Display) -> BadInput {
    BadInput(e.to_string())
}

fn checks_for(a: &CheckArgs, engine: EngineKind, budget: &Budget) -> Out<Vec<Check>> {
    let input = match &a.input {
        Some(h) => check::unhex(h).map_err(|e| BadInput(format!("--input: {e}")))?,
        None => Vec::new(),
    };
    let models: Vec<&'static dyn Model> = match &a.model {
        Some(name) => vec![find_model(name)?],
        None => {
            if a.variant.is_some() || a.scenario.is_some() {
                return Err(BadInput("--variant and --scenario need a MODEL".into()));
            }
            vfsmc_specs::models()
        }
    };
    let mut checks = Vec::new();
    for m in models {
        let variants: Vec<&'static Variant> = match &a.variant {
            Some(v) => vec![find_variant(m, v)?],
            None => m.variants().iter().collect(),
        };
        for v in variants {
            let scenarios = match &a.scenario {
                Some(s) => vec![find_scenario(m, s)?],
                None => m.scenarios_for(v, a.tier.tier()),
            };
            for s in scenarios {
                if s.generated && input.is_empty() {
                    return Err(BadInput(format!(
                        "scenario '{}' is generated from bytes: give them with --input HEX",
                        s.name
                    )));
                }
                let mut c = Check::new(m, v, s, engine).with_budget(budget);
                c.input = input.clone();
                c.schedule = a.schedule.clone();
                checks.push(c);
            }
        }
    }
    Ok(checks)
}

fn run_check(a: CheckArgs) -> Out<i32> {
    let start = Instant::now();
    let budget = budget_of(&a, &Budget::from_env().map_err(bad)?)?;
    let mut checks = Vec::new();
    for engine in engines_of(&a)? {
        checks.extend(checks_for(&a, engine, &budget)?);
    }
    if a.model.is_some() {
        return check_model(&checks, &a);
    }
    let tally = check_registry(&checks, &a)?;
    let line = tally.line(start.elapsed());
    // JSON output stays one object per line; the tally goes beside it.
    match a.format {
        Format::Text => println!("{line}"),
        Format::Json => eprintln!("{line}"),
    }
    Ok(i32::from(tally.differ > 0))
}

/// A model named: every check runs (with a note where its engine cannot
/// give the registry verdict); exit 1 on any verdict but holds.
fn check_model(checks: &[Check], a: &CheckArgs) -> Out<i32> {
    let mut failed = false;
    for c in checks {
        if let Some(why) = c.engine_limit() {
            eprintln!(
                "note: {} cannot give this variant its registry verdict: {why}",
                c.engine
            );
        }
        failed |= run_one(c, a, false)?.verdict != Verdict::Holds;
    }
    Ok(i32::from(failed))
}

/// No model named: each check is judged against the registry, or is n/a
/// where its engine cannot judge it.
fn check_registry(checks: &[Check], a: &CheckArgs) -> Out<Tally> {
    let mut tally = Tally::default();
    for c in checks {
        if let Some(why) = c.engine_limit() {
            println!(
                "n/a  {}/{} [{}] {}: not judged by this engine: {why}",
                c.model.name(),
                c.variant.name,
                c.scenario.name,
                c.engine
            );
            tally.not_judged += 1;
        } else if run_one(c, a, true)?.matches_expected() {
            tally.matched += 1;
        } else {
            tally.differ += 1;
        }
    }
    Ok(tally)
}

/// Registry mode's verdicts, counted.
#[derive(Default)]
struct Tally {
    matched: usize,
    differ: usize,
    not_judged: usize,
}

impl Tally {
    /// `N match, N differ, N n/a in M:SS`.
    fn line(&self, elapsed: std::time::Duration) -> String {
        let secs = elapsed.as_secs();
        format!(
            "{} match, {} differ, {} n/a in {}:{:02}",
            self.matched,
            self.differ,
            self.not_judged,
            secs / 60,
            secs % 60
        )
    }
}

/// Runs `c`, prints its report and writes its corpus file if asked.
fn run_one(c: &Check, a: &CheckArgs, registry_mode: bool) -> Out<Report> {
    let r = c.run().map_err(bad)?;
    print_report(&r, a.format, registry_mode);
    if let (Some(dir), Some(_)) = (&a.save_corpus, &r.record) {
        save_corpus(dir, &r, c)?;
    }
    Ok(r)
}

/// Writes the corpus file of a failing report, unless its engine cannot
/// replay it (a file `vfsmc replay` would reject is no evidence).
fn save_corpus(dir: &std::path::Path, r: &Report, c: &Check) -> Out<()> {
    if c.engine.engine().replay() == Replay::Never {
        eprintln!("corpus: not written: {} failures do not replay", c.engine);
        return Ok(());
    }
    let path = corpus::save(dir, &Entry::from_report(r, c))
        .map_err(|e| BadInput(format!("--save-corpus {}: {e}", dir.display())))?;
    eprintln!("corpus: wrote {}", path.display());
    Ok(())
}

fn print_report(r: &Report, format: Format, registry_mode: bool) {
    match format {
        Format::Json => println!("{}", r.json()),
        Format::Text if registry_mode => {
            let mark = if r.matches_expected() { "ok  " } else { "FAIL" };
            println!(
                "{mark} expected {:<28} {}",
                r.expected.to_string(),
                r.summary()
            );
            if !r.matches_expected() {
                print!("{}", r.text());
            }
        }
        Format::Text => print!("{}", r.text()),
    }
}

fn replay(files: &[PathBuf]) -> i32 {
    let mut code = 0;
    for f in files {
        let name = f.display().to_string();
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("vfsmc: {name}: {e}");
                return 2;
            }
        };
        let entry = match Entry::parse(&name, &text) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("vfsmc: {e}");
                return 2;
            }
        };
        match corpus::replay(&name, &entry) {
            Ok(r) => {
                println!("{name}: reproduced {}", entry.expect);
                print!("{}", r.text());
            }
            Err(ReplayError::Input(m)) => {
                eprintln!("vfsmc: {m}");
                return 2;
            }
            Err(e) => {
                eprintln!("vfsmc: {e}");
                code = 1;
            }
        }
    }
    code
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// The bench's budget: a cap of 100 000 executions per search unless the
/// flag or the environment says otherwise.
fn bench_budget(a: &BenchArgs) -> Out<Budget> {
    let base = Budget {
        iterations: 100_000,
        ..Budget::default()
    };
    let mut budget = base.with_env().map_err(bad)?;
    if let Some(n) = flag(Knob::Iterations, a.iterations)? {
        Knob::Iterations.set(&mut budget, n);
    }
    Ok(budget)
}

fn bench(a: BenchArgs) -> Out<i32> {
    if a.seeds == 0 || a.throughput_iterations == 0 {
        return Err(BadInput(
            "--seeds and --throughput-iterations must be at least 1".into(),
        ));
    }
    let budget = bench_budget(&a)?;
    let models = match &a.model {
        Some(m) => vec![find_model(m)?],
        None => vfsmc_specs::models(),
    };
    if a.overhead {
        return bench_overhead(&models, &a);
    }
    println!("vfsmc bench: wall-clock numbers on this machine; they vary between runs");
    for m in models {
        let variants: Vec<&'static Variant> = match &a.variant {
            Some(v) => vec![find_variant(m, v)?],
            None => m.variants().iter().collect(),
        };
        for v in variants {
            for s in m.scenarios_for(v, Tier::Pr) {
                match v.expected {
                    Expected::Violates(_) => bench_first_failure(m, v, s, &a, &budget),
                    Expected::Holds => bench_throughput(m, v, s, &a, &budget),
                }
            }
        }
    }
    Ok(0)
}

fn timed(c: &Check) -> (Report, f64) {
    let start = Instant::now();
    let r = c
        .run()
        .expect("a search without a schedule cannot fail to start");
    (r, start.elapsed().as_secs_f64())
}

fn bench_first_failure(
    m: &'static dyn Model,
    v: &'static Variant,
    s: &'static Scenario,
    a: &BenchArgs,
    budget: &Budget,
) {
    let mut c = Check::new(m, v, s, EngineKind::Loom).with_budget(budget);
    let (r, secs) = timed(&c);
    println!(
        "{}/{} [{}] loom: {} after {} executions at preemption bound {}, {:.3}s",
        m.name(),
        v.name,
        s.name,
        r.invariant
            .as_deref()
            .map_or("not found".to_string(), |i| format!("first failure ({i})")),
        r.executions,
        r.max_preemptions
            .map_or("unbounded".to_string(), |n| n.to_string()),
        secs
    );
    for engine in [EngineKind::Random, EngineKind::Pct] {
        let (mut runs, mut times, mut missed) = (Vec::new(), Vec::new(), 0);
        for seed in 1..=a.seeds {
            c = Check::new(m, v, s, engine).with_budget(budget);
            c.budget.seed = seed;
            let (r, secs) = timed(&c);
            if r.verdict == Verdict::Violates {
                runs.push(r.executions as f64);
                times.push(secs);
            } else {
                missed += 1;
            }
        }
        let what = if runs.is_empty() {
            format!(
                "not found in {} seeds (cap {} executions each)",
                a.seeds, budget.iterations
            )
        } else {
            let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = runs.iter().copied().fold(0.0, f64::max);
            format!(
                "runs to first failure median {} (min {lo}, max {hi}), time median {:.4}s, missed {missed}/{} seeds",
                median(&mut runs),
                median(&mut times),
                a.seeds
            )
        };
        println!("{}/{} [{}] {engine}: {what}", m.name(), v.name, s.name);
    }
}

fn bench_throughput(
    m: &'static dyn Model,
    v: &'static Variant,
    s: &'static Scenario,
    a: &BenchArgs,
    budget: &Budget,
) {
    for engine in EngineKind::ALL {
        let mut c = Check::new(m, v, s, engine).with_budget(budget);
        c.budget.iterations = budget.iterations.min(a.throughput_iterations);
        let (r, secs) = timed(&c);
        println!(
            "{}/{} [{}] {engine}: {} executions in {:.3}s = {:.0}/s ({}, exhaustive: {})",
            m.name(),
            v.name,
            s.name,
            r.executions,
            secs,
            r.executions as f64 / secs.max(1e-9),
            r.verdict,
            r.exhaustive
        );
    }
}

/// The fastest of two timed runs of `c` (wall clocks on a shared machine
/// jitter; the minimum is the run least disturbed).
fn fastest(c: &Check) -> (Report, f64) {
    let (r, first) = timed(c);
    let (_, second) = timed(c);
    (r, first.min(second))
}

/// `vfsmc bench --overhead`: what recording steps and checking invariants
/// cost, per holding variant and scenario, on loom at the scenario's bound.
/// Exit 1 if a pair of runs explored different numbers of executions (the
/// instrumentation would then be changing the search, not just pricing it).
fn bench_overhead(models: &[&'static dyn Model], a: &BenchArgs) -> Out<i32> {
    let mut differ = 0;
    for &m in models {
        for v in m
            .variants()
            .iter()
            .filter(|v| v.expected == Expected::Holds)
        {
            if a.variant.as_deref().is_some_and(|n| n != v.name) {
                continue;
            }
            for s in m.scenarios_for(v, Tier::Pr) {
                let on = Check::new(m, v, s, EngineKind::Loom);
                let mut off = on.clone();
                off.budget.recording = false;
                let ((r_on, secs_on), (r_off, secs_off)) = (fastest(&on), fastest(&off));
                if r_on.executions != r_off.executions {
                    differ += 1;
                }
                let ratio = secs_on / secs_off.max(1e-9);
                match a.format {
                    Format::Json => println!(
                        "{}",
                        serde_json::json!({
                            "model": m.name(), "variant": v.name, "scenario": s.name,
                            "executions": r_on.executions, "executions_off": r_off.executions,
                            "secs_on": secs_on, "secs_off": secs_off, "ratio": ratio,
                        })
                    ),
                    Format::Text => println!(
                        "{}/{} [{}] loom: {} executions ({} without recording), \
                         {secs_on:.3}s on, {secs_off:.3}s off, ratio {ratio:.2}",
                        m.name(),
                        v.name,
                        s.name,
                        r_on.executions,
                        r_off.executions
                    ),
                }
            }
        }
    }
    if differ > 0 {
        eprintln!("{differ} scenario(s) explored different executions with recording off");
        return Ok(1);
    }
    Ok(0)
}

fn per_call(c: &OpCost, k: Counter) -> f64 {
    let n = c.get(k) as f64;
    if c.calls == 0 {
        n
    } else {
        n / c.calls as f64
    }
}

fn diff(model: &str, a: &str, b: &str, scenario: Option<&str>) -> Out<i32> {
    let m = find_model(model)?;
    let (va, vb) = (find_variant(m, a)?, find_variant(m, b)?);
    let scenarios: Vec<&'static Scenario> = match scenario {
        Some(s) => vec![find_scenario(m, s)?],
        None => m.scenarios().iter().filter(|s| !s.generated).collect(),
    };
    for s in scenarios {
        let run = |v: &Variant| Run {
            variant: v.name.to_string(),
            scenario: s.name.to_string(),
            input: Vec::new(),
        };
        let (ca, cb) = (check::costs(m, &run(va)), check::costs(m, &run(vb)));
        println!(
            "{model} [{}]: cost per call, canonical sequential execution",
            s.name
        );
        println!(
            "{:<22} {:<15} {:>12} {:>12}",
            "operation", "counter", va.name, vb.name
        );
        let ops: std::collections::BTreeSet<&&str> = ca.keys().chain(cb.keys()).collect();
        let empty = OpCost::default();
        for op in ops {
            let (x, y) = (ca.get(op).unwrap_or(&empty), cb.get(op).unwrap_or(&empty));
            for k in Counter::ALL {
                let (px, py) = (per_call(x, k), per_call(y, k));
                if px != 0.0 || py != 0.0 {
                    println!("{op:<22} {:<15} {px:>12.2} {py:>12.2}", k.name());
                }
            }
        }
        println!();
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Tally;

    #[test]
    fn the_tally_line_counts_and_times_in_minutes_and_seconds() {
        let t = Tally {
            matched: 170,
            differ: 3,
            not_judged: 22,
        };
        assert_eq!(
            t.line(Duration::from_millis(125_900)),
            "170 match, 3 differ, 22 n/a in 2:05"
        );
        assert_eq!(
            Tally::default().line(Duration::from_secs(3_600)),
            "0 match, 0 differ, 0 n/a in 60:00"
        );
    }
}
