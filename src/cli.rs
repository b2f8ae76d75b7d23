//! The `vfsmc` command line. Exit codes: 0 every invariant held (or every
//! verdict matched the registry), 1 a violation (or a mismatch, or a replay
//! that did not reproduce), 2 bad input — always with a message naming the
//! argument, file or line and what was expected, never a panic — and, for
//! `review` only, 3 inconclusive: PATCHED held, but no search exercised its
//! change where it differs (`crate::review::INCONCLUSIVE`).

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use vfsmc_specs::{Expected, Judge, Model, Run, Scenario, Tier, Variant};

use crate::check::{self, Check, Report, Target, Verdict};
use crate::corpus::{self, Entry, ReplayError};
use crate::diagram::{self, Diagram};
use crate::engine::{Budget, Engine, EngineKind, Knob, Replay};
use crate::progress::Meter;
use crate::render;
use crate::review;
use crate::shard::{self, Item, Shard};

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

/// `vfsmc check --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// Summaries, traces and replay lines (80 columns).
    Text,
    /// One JSON object per search (item), for tools and `vfsmc merge`.
    Json,
    /// The first counterexample as an SVG sequence diagram (summaries on
    /// stderr).
    Svg,
    /// The first counterexample as a Mermaid sequence diagram.
    Mermaid,
}

/// `vfsmc review --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ReviewFormat {
    /// Plain text within 80 columns: the mail report, then every verdict,
    /// the full traces, costs and what the verdicts cover.
    Text,
    /// For a mail reply: the verdict, one trace per new violation trimmed
    /// to its race, the replay lines (about 60 lines).
    Mail,
    /// The first new violation as an SVG sequence diagram, with its replay
    /// line.
    Svg,
    /// The first new violation as a Mermaid sequence diagram.
    Mermaid,
    /// For a pull request.
    Markdown,
    Json,
}

/// `vfsmc replay --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TraceFormat {
    Text,
    Svg,
    Mermaid,
}

/// `vfsmc bench --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TableFormat {
    Text,
    Json,
}

/// `vfsmc check --tier`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TierArg {
    /// Every push.
    Pr,
    /// Nightly: the longer scenarios.
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
    Show {
        model: String,
        /// Only this variant: its row and where its code lives (the sites
        /// and exits of model/src/patch.rs).
        #[arg(long)]
        variant: Option<String>,
    },
    /// Check variants; with no MODEL, check the whole registry against its
    /// expected verdicts.
    #[command(after_help = crate::engine::help())]
    Check(CheckArgs),
    /// Compare two variants of a model for a review: verdicts per scenario
    /// and engine, new violations with their traces, costs, and what the
    /// verdicts cover. Exit 0 when PATCHED holds wherever BASE holds, 1 when
    /// it breaks something BASE holds, 3 when it holds but no search
    /// exercised its change where it differs (inconclusive).
    #[command(after_help = crate::engine::help())]
    Review(ReviewArgs),
    /// Model coverage (`scripts/model-coverage`): per folder line coverage
    /// from an lcov export of a PR-tier run, the functions and failure exits
    /// no scenario reached; exit 1 when a gated exit is missing from LIST
    /// (or listed but reached).
    #[command(hide = true)]
    CoverageGaps {
        lcov: PathBuf,
        list: PathBuf,
        /// Also write the per-file table `vfsmc show` reads here.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Replay corpus files; exit 0 when each reproduces its recorded outcome.
    Replay {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// text: the trace; svg or mermaid: the trace as a sequence diagram
        /// (svg: one file).
        #[arg(long, value_enum, default_value = "text")]
        format: TraceFormat,
    },
    /// Merge the `--format json` output of `vfsmc check --shard` runs into
    /// the verdict table and exit code of the unsharded run.
    Merge {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Executions per second, executions explored, runs and time to first
    /// failure, per engine. Numbers are printed, never asserted.
    Bench(BenchArgs),
    /// Read litmus tests in herd7's C dialect (files, or directories
    /// walked for *.litmus), run each on the kernel primitives and judge
    /// the `Result:` line: agree, stronger (vfsmc forbids what LKMM
    /// allows), weaker (vfsmc allows what LKMM forbids), n/a (with the
    /// reason) or unsupported (with the construct); the verdict judges
    /// LKMM's data-race flag (`DATARACE`) too, which loom alone reports.
    /// Exit 1 on any weaker, or stronger without a stand-in documented as
    /// stronger, 2 on a malformed file.
    Litmus(LitmusArgs),
    /// Side-by-side cost counters of two variants (sequential execution).
    Diff {
        model: String,
        a: String,
        b: String,
        #[arg(long)]
        scenario: Option<String>,
    },
}

/// The budget flags `check` and `review` share.
#[derive(clap::Args)]
struct BudgetArgs {
    /// Executions for random/pct/dfs/stress (a cap for loom) [env: VFSMC_ITERATIONS].
    #[arg(long)]
    iterations: Option<u64>,
    /// Seed of random and PCT [env: VFSMC_SEED].
    #[arg(long)]
    seed: Option<u64>,
    /// loom: largest preemption bound (default: the scenario's PR-tier
    /// bound); optimal: its preemption bound (default: none)
    /// [env: VFSMC_MAX_PREEMPTIONS].
    #[arg(long)]
    max_preemptions: Option<u64>,
    /// PCT depth (preemptions the bug needs + 1) [env: VFSMC_PCT_DEPTH].
    #[arg(long)]
    pct_depth: Option<u64>,
    /// loom --split: choice points in the prefix whose subtrees are dealt
    /// to the parts (default 40) [env: VFSMC_SPLIT_DEPTH].
    #[arg(long, value_name = "D")]
    split_depth: Option<u64>,
    /// loom --split with a preemption bound: choice points a prefix goes
    /// deeper for each preemption it has left beyond one (default 24) [env:
    /// VFSMC_SPLIT_EXTEND].
    #[arg(long, value_name = "E")]
    split_extend: Option<u64>,
    /// PCT: run until a bug of depth --pct-depth would be missed with
    /// probability at most 1 - C (0 < C < 1); --iterations caps the runs
    /// (default 1000000).
    #[arg(long, value_name = "C")]
    confidence: Option<f64>,
    /// No progress line (it is drawn only when stdout and stderr are
    /// terminals).
    #[arg(long, short)]
    quiet: bool,
    /// Searches run at once, each on its own core; the output is the same
    /// for any number [env: VFSMC_JOBS; default: the available cores].
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
}

#[derive(clap::Args)]
struct CheckArgs {
    model: Option<String>,
    #[arg(long)]
    variant: Option<String>,
    #[arg(long)]
    scenario: Option<String>,
    /// Engine(s): loom, random, pct, dfs, stress, optimal, optimal-sc, a
    /// comma-separated list, or all; `registry` is, per check, the engine
    /// that gives its registry verdict (optimal for a holding variant on a
    /// scenario the registry judges on it, loom otherwise, and loom for
    /// every check under --max-preemptions).
    #[arg(long, default_value = "registry,pct")]
    engine: String,
    #[command(flatten)]
    budget: BudgetArgs,
    /// random and PCT: search with K seeds (--seed, --seed + 1, …), each
    /// with the full budget; a check violates if any seed does.
    #[arg(long, value_name = "K", default_value_t = 1)]
    seeds: u64,
    /// Run shard I of N (1-based) of the work: (variant, scenario, engine)
    /// items and the seeds of random/PCT [env: VFSMC_SHARD, or
    /// JOB_COMPLETION_INDEX (0-based) with VFSMC_SHARDS]. Merge the shards'
    /// --format json output with `vfsmc merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// loom and optimal: split each search into N parts (loom: the subtrees
    /// below its first --split-depth choice points; optimal: the subtrees of
    /// the execution graphs at choice depth VFSMC_OPTIMAL_SPLIT_DEPTH; dealt
    /// out k mod N), run on N workers unless --jobs says otherwise; with
    /// --shard, the parts are items like any other, so N machines divide one
    /// search. Without --scenario, only the searches of rows marked for it
    /// (millions of executions; `vfsmc show` says which) are split, the
    /// others run whole: a part of a smaller search costs more than all of it.
    #[arg(long, value_name = "N", default_value_t = 1)]
    split: usize,
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
struct ReviewArgs {
    model: String,
    /// The variant the patch applies to (e.g. a kernel release).
    base: String,
    /// The variant with the patch.
    patched: String,
    /// Only this scenario (default: every hand-written PR-tier scenario
    /// both variants apply to).
    #[arg(long)]
    scenario: Option<String>,
    /// Engine(s): loom, random, pct, dfs, stress, optimal, optimal-sc, a comma-separated list, or all.
    #[arg(long, default_value = "loom,pct")]
    engine: String,
    #[command(flatten)]
    budget: BudgetArgs,
    #[arg(long, value_enum, default_value = "text")]
    format: ReviewFormat,
    /// Search everything again: neither read nor write the cache of proofs
    /// (kept per binary, model, variant, scenario, engine and budget in
    /// $VFSMC_CACHE, else $XDG_CACHE_HOME/vfsmc or ~/.cache/vfsmc;
    /// VFSMC_CACHE=off turns it off).
    #[arg(long)]
    no_cache: bool,
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
    /// Time a generated scenario natively instead: the stress engine (real
    /// threads) runs it for every holding variant that applies, on each
    /// --input, and prints executions per second in one-second samples.
    #[arg(long, value_name = "SCENARIO")]
    native: Option<String>,
    /// Scenario bytes (hex) for --native; repeat for several rows.
    #[arg(long, requires = "native")]
    input: Vec<String>,
    /// One-second samples per --native row.
    #[arg(long, default_value_t = 5, requires = "native")]
    seconds: u32,
    /// Measure the pool instead: the PR-tier loom checks of the holding
    /// variants on one worker, then on --jobs, and the speed-up.
    #[arg(long)]
    scaling: bool,
    /// Re-measure which engine should judge each scenario's holding
    /// variants: loom at the scenario's bound against optimal unbounded
    /// (capped at --judge-cap per variant); rows where the registry's
    /// choice differs are marked stale.
    #[arg(long, conflicts_with_all = ["scaling", "overhead", "native"])]
    judge: bool,
    /// Executions per variant the optimal engine gets under --judge.
    #[arg(long, default_value_t = 40_000, requires = "judge")]
    judge_cap: usize,
    /// Measurements run at once [env: VFSMC_JOBS; default: the available
    /// cores]; with more than one, each row's time includes the others'.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    format: TableFormat,
}

#[derive(clap::Args)]
struct LitmusArgs {
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    format: TableFormat,
    /// Files judged at once [default: the available cores].
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// loom (weak memory, the default) or pct (sequentially consistent;
    /// a sampling engine, so a Never it reports is not a proof).
    #[arg(long, default_value = "loom")]
    engine: EngineKind,
    /// Executions per search before a file is reported n/a as capped.
    #[arg(long, default_value_t = 1_000_000)]
    cap: usize,
    /// Print, under a file's line, the trace of the execution that decided
    /// its verdict (the outcome found, or the deadlock or error).
    #[arg(long)]
    trace: bool,
}

/// Bad input: printed with its context, exit 2.
struct BadInput(String);

type Out<T> = Result<T, BadInput>;

/// Whether `args` (the program name first) is a command line vfsmc accepts:
/// its subcommand, flags and their values parse; the clap error if not.
/// For files that run vfsmc (CI workflows, Kubernetes manifests), so a test
/// can check them against the CLI.
pub fn accepts(args: &[&str]) -> Result<(), String> {
    Cli::try_parse_from(args)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The budget a `vfsmc check` command line (`args`, the program name first)
/// searches with, `var` standing in for the environment. For files that run
/// vfsmc, so a test can check what their searches may do: that the deep
/// tier leaves loom uncapped, say.
pub fn check_budget(args: &[&str], var: impl Fn(&str) -> Option<String>) -> Result<Budget, String> {
    let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
    let Command::Check(a) = cli.command else {
        return Err(format!("not a `vfsmc check` command: {}", args.join(" ")));
    };
    let base = Budget::default()
        .with_vars(var)
        .map_err(|e| e.to_string())?;
    budget_of(&a.budget, &base).map_err(|e| e.0)
}

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
        Command::Show { model, variant } => match variant {
            Some(v) => show_variant(&model, &v),
            None => show(&model),
        },
        Command::Check(a) => run_check(a),
        Command::CoverageGaps { lcov, list, write } => {
            coverage_gaps(&lcov, &list, write.as_deref())
        }
        Command::Review(a) => run_review(a),
        Command::Replay { files, format } => replay(&files, format),
        Command::Merge { files } => merge(&files),
        Command::Bench(a) => bench(a),
        Command::Litmus(a) => litmus(a),
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

fn coverage_gaps(
    lcov: &std::path::Path,
    list: &std::path::Path,
    write: Option<&std::path::Path>,
) -> Out<i32> {
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| BadInput(format!("{}: {e}", p.display())))
    };
    let counts = crate::coverage::parse_lcov(&read(lcov)?);
    let listed =
        crate::coverage::parse_list(&list.display().to_string(), &read(list)?).map_err(BadInput)?;
    let (text, pass) =
        crate::coverage::report(&counts, |f| std::fs::read_to_string(f).ok(), &listed);
    print!("{text}");
    if let Some(path) = write {
        std::fs::write(path, crate::coverage::table(&counts))
            .map_err(|e| BadInput(format!("--write {}: {e}", path.display())))?;
    }
    Ok(i32::from(!pass))
}

/// The measured per-file line coverage of model/ (scripts/model-coverage).
const MODEL_COVERAGE: &str = include_str!("../model/COVERAGE");

/// A variant's registry row, as `show` lists it.
fn print_variant(m: &'static dyn Model, v: &Variant) {
    let witness = if v.witness.is_empty() {
        String::new()
    } else {
        format!(" on {}", v.witness)
    };
    println!(
        "  {} — expected {}{witness}\n      {}\n      {}",
        v.name, v.expected, v.kernel, v.about
    );
    let sites = vfsmc_model::patch::sites_of(&m.changes(v.name));
    if !sites.is_empty() {
        let at: Vec<String> = sites.iter().map(|s| s.at()).collect();
        println!("      code: {}", at.join(", "));
    }
}

/// `vfsmc show MODEL --variant V`: the row and every site and exit of its
/// changed code.
fn show_variant(model: &str, variant: &str) -> Out<i32> {
    let m = find_model(model)?;
    let v = find_variant(m, variant)?;
    println!("{}: {}\n", m.name(), m.about());
    print_variant(m, v);
    let names = m.changes(v.name);
    if names.is_empty() {
        println!(
            "\n{} changes no variant site: a base or a spec-level variant",
            v.name
        );
    } else {
        println!("\nchanged code ({}):", names.join(", "));
        for s in vfsmc_model::patch::sites_of(&names) {
            println!("  {}", check::site_text(s));
        }
    }
    Ok(0)
}

fn show(name: &str) -> Out<i32> {
    let m = find_model(name)?;
    println!("{}: {}\n\nvariants:", m.name(), m.about());
    for v in m.variants() {
        print_variant(m, v);
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
        let judge = match s.judge {
            Judge::Loom => "",
            Judge::Optimal => "; holding variants judged by optimal DPOR, unbounded",
        };
        let bound = format!("{tier}, {bound}{judge}");
        let kind = if s.generated {
            ", generated from --input bytes"
        } else {
            ""
        };
        let split = if s.split {
            ", divided by --split in runs over the registry or a tier"
        } else {
            ""
        };
        println!("  {} ({bound}{kind}{split})\n      {}", s.name, s.about);
        if !s.goals.is_empty() {
            println!("      goals: {}", s.goals.join(", "));
        }
    }
    print_tiers(m);
    if m.scenarios().iter().any(|s| s.judge == Judge::Optimal) {
        println!("\n{OPTIMAL_JUDGES}");
    }
    println!("\ninvariants:");
    for i in m.invariants() {
        println!("  {}: {}", i.name, i.about);
    }
    if let Some((h, n)) = crate::coverage::figure(MODEL_COVERAGE, m.code()) {
        println!(
            "\ncoverage: {:.1} % of the lines of its code ({}) ran in the PR tier's \
             searches ({h} of {n}; model/COVERAGE, scripts/model-coverage)",
            crate::coverage::pct(h, n),
            m.code().join(", ")
        );
    }
    if !m.limits().is_empty() {
        println!("\nwhat this model cannot express (a \"holds\" says nothing about these):");
        for l in m.limits() {
            println!("  - {l}");
        }
    }
    Ok(0)
}

/// What a holds from the optimal engine covers, and what it does not.
const OPTIMAL_JUDGES: &str = "\
optimal DPOR (the scenarios marked so) explores one execution per class of
executions with the same reads-from and coherence, with no preemption bound.
It cannot see a race whose only evidence is the order of two ghost updates
that no engine operation orders: it explores one order of them. Step
invariants are also judged on the final state, so ghost state a thread
updates after its last step is judged whatever the replay order. A variant
that needs what optimal cannot produce (load buffering, LKMM-only
ordering, a lock's state read out of order, happens-before queries) is
judged on loom.";

/// What each tier of `m` proves: its hand-written scenarios with their loom
/// bounds, and when the tier runs.
fn print_tiers(m: &'static dyn Model) {
    println!("\ntiers:");
    for (tier, when) in [
        (
            Tier::Pr,
            "PR tier, every push (cargo test --release, vfsmc check)",
        ),
        (
            Tier::Deep,
            "deep tier, nightly (vfsmc check --tier deep, cargo test --release -- --ignored)",
        ),
    ] {
        let rows: Vec<String> = m
            .scenarios()
            .iter()
            .filter(|s| s.tier == tier && !s.generated)
            .map(|s| {
                let bound = match (s.judge, s.loom_bound) {
                    (Judge::Optimal, _) => "optimal, unbounded".to_string(),
                    (Judge::Loom, Some(b)) => format!("bound {b}"),
                    (Judge::Loom, None) => "unbounded".to_string(),
                };
                format!("{} ({bound})", s.name)
            })
            .collect();
        if rows.is_empty() {
            println!("  {when}: no scenario");
            continue;
        }
        let claim = format!(
            "{when}: a holds covers loom's search of these scenarios at the preemption \
             bound named (not every schedule with that many preemptions: docs/engines.md, \
             'What loom's preemption bound covers'), every schedule where optimal judges \
             or loom is unbounded, and PCT's stated depth:"
        );
        for l in render::wrap(&claim, render::WIDTH - 2) {
            println!("  {l}");
        }
        for l in render::wrap(&rows.join(", "), render::WIDTH - 6) {
            println!("      {l}");
        }
    }
}

fn find_model(name: &str) -> Out<&'static dyn Model> {
    vfsmc_specs::model(name).ok_or_else(|| {
        let known: Vec<&str> = vfsmc_specs::models().iter().map(|m| m.name()).collect();
        BadInput(format!(
            "unknown model '{name}'{} (expected one of: {})",
            did_you_mean(name, &known),
            known.join(", ")
        ))
    })
}

/// Edit distance (Levenshtein) of two names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `; did you mean 'x'?` for the known name nearest a misspelled one, when
/// one is near enough (a third of its length).
fn did_you_mean(name: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (distance(name, k), *k))
        .filter(|(d, k)| *d <= k.chars().count().div_ceil(3).max(2))
        .min()
        .map_or(String::new(), |(_, k)| format!("; did you mean '{k}'?"))
}

fn find_variant(m: &'static dyn Model, name: &str) -> Out<&'static Variant> {
    m.variant(name).ok_or_else(|| {
        let elsewhere = vfsmc_specs::models()
            .into_iter()
            .find(|o| o.name() != m.name() && o.variant(name).is_some());
        if let Some(o) = elsewhere {
            return BadInput(format!(
                "model '{}' has no variant '{name}': it is a variant of '{}' (vfsmc check {} --variant {name})",
                m.name(),
                o.name(),
                o.name()
            ));
        }
        let known: Vec<&str> = m.variants().iter().map(|v| v.name).collect();
        BadInput(format!(
            "model '{}' has no variant '{name}'{} (expected one of: {})",
            m.name(),
            did_you_mean(name, &known),
            known.join(", ")
        ))
    })
}

fn find_scenario(m: &'static dyn Model, name: &str) -> Out<&'static Scenario> {
    m.scenario(name).ok_or_else(|| {
        let known: Vec<&str> = m.scenarios().iter().map(|s| s.name).collect();
        BadInput(format!(
            "model '{}' has no scenario '{name}'{} (expected one of: {})",
            m.name(),
            did_you_mean(name, &known),
            known.join(", ")
        ))
    })
}

/// What `check --engine` names: engines, and `registry`.
struct CheckEngines {
    /// `registry` was named: each check on the engine that gives its
    /// registry verdict ([`check::registry_engine`]).
    registry: bool,
    engines: Vec<EngineKind>,
}

/// `check --engine`: `registry` and the engines of [`engines_of`].
fn check_engines_of(engine: &str, a: &BudgetArgs, schedule: Option<&str>) -> Out<CheckEngines> {
    let registry = engine.split(',').any(|n| n == REGISTRY);
    let rest: Vec<&str> = engine.split(',').filter(|&n| n != REGISTRY).collect();
    let engines = if rest.is_empty() {
        Vec::new()
    } else {
        named_engines(&rest.join(","))?
    };
    let mut all = engines.clone();
    if registry {
        // Its checks run on loom or optimal.
        all.extend([EngineKind::Loom, EngineKind::Optimal]);
    }
    flags_apply(&all, engine, a, schedule)?;
    Ok(CheckEngines { registry, engines })
}

/// The `--engine` name of each check's registry engine.
const REGISTRY: &str = "registry";

/// `--engine`: one engine, a comma-separated list, or `all`, for the flags
/// of `a` and `schedule`.
fn engines_of(engine: &str, a: &BudgetArgs, schedule: Option<&str>) -> Out<Vec<EngineKind>> {
    let engines = named_engines(engine)?;
    flags_apply(&engines, engine, a, schedule)?;
    Ok(engines)
}

/// The engines `engine` names, sorted, each once.
fn named_engines(engine: &str) -> Out<Vec<EngineKind>> {
    let mut engines = Vec::new();
    for name in engine.split(',') {
        if name == "all" {
            engines.extend(EngineKind::ALL);
            continue;
        }
        if name == REGISTRY {
            return Err(BadInput(format!(
                "--engine {REGISTRY}: only `vfsmc check` judges the registry's checks; name \
                 engines (loom, pct, …)"
            )));
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
    Ok(engines)
}

/// Whether the flags of `a` and `schedule` apply to `engines` (named
/// `engine` on the command line).
fn flags_apply(
    engines: &[EngineKind],
    engine: &str,
    a: &BudgetArgs,
    schedule: Option<&str>,
) -> Out<()> {
    if let Some(n) = a.max_preemptions {
        if !engines
            .iter()
            .any(|e| e.engine().reads(Knob::MaxPreemptions))
        {
            return Err(BadInput(format!(
                "--max-preemptions bounds {} only; engine(s) '{engine}' take --iterations/--pct-depth",
                engine_names(|e| e.reads(Knob::MaxPreemptions)),
            )));
        }
        if n > 16 {
            return Err(BadInput(format!(
                "--max-preemptions {n} is beyond any tractable loom search (expected 0..=16, or omit it)"
            )));
        }
    }
    let replays_schedule = |e: &EngineKind| e.engine().replay() == Replay::Schedule;
    if schedule.is_some() && (engines.len() != 1 || !replays_schedule(&engines[0])) {
        return Err(BadInput(format!(
            "--schedule replays one shuttle engine ({}), not '{engine}'",
            engine_names(|e| e.replay() == Replay::Schedule),
        )));
    }
    Ok(())
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
fn budget_of(a: &BudgetArgs, base: &Budget) -> Out<Budget> {
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
        (Knob::SplitDepth, a.split_depth),
        (Knob::SplitExtend, a.split_extend),
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

/// The checks `a` names on `engine`, or (`None`) each on its registry
/// engine.
fn checks_for(a: &CheckArgs, engine: Option<EngineKind>, budget: &Budget) -> Out<Vec<Check>> {
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
                if !s.generated && !input.is_empty() && a.scenario.is_some() {
                    return Err(BadInput(format!(
                        "--input: scenario '{}' is hand-written and reads no bytes (only generated \
                         scenarios take --input)",
                        s.name
                    )));
                }
                let on = engine.unwrap_or_else(|| registry_engine_under(a, m, v, s));
                let mut c = Check::new(m, v, s, on).with_budget(budget);
                c.input = input.clone();
                c.schedule = a.schedule.clone();
                checks.push(c);
            }
        }
    }
    Ok(checks)
}

/// The registry engine of a check, unless `--max-preemptions` asks for a
/// bounded search: the scenarios' bounds are loom's, so every check is
/// loom's then (`--engine optimal --max-preemptions N` bounds optimal).
fn registry_engine_under(
    a: &CheckArgs,
    m: &'static dyn Model,
    v: &'static Variant,
    s: &'static Scenario,
) -> EngineKind {
    if a.budget.max_preemptions.is_some() {
        EngineKind::Loom
    } else {
        check::registry_engine(m, v, s)
    }
}

/// The confidence target of `--confidence`, if given: PCT runs until a bug
/// of the budget's depth would be missed with probability at most 1 − C.
fn target_of(a: &BudgetArgs, budget: &Budget, share: u64) -> Out<Option<Target>> {
    let Some(level) = a.confidence else {
        return Ok(None);
    };
    if !(level > 0.0 && level < 1.0) {
        return Err(BadInput(format!(
            "--confidence {level}: expected a probability strictly between 0 and 1, e.g. 0.99"
        )));
    }
    let capped = a.iterations.is_some() || std::env::var_os(Knob::Iterations.env()).is_some();
    Ok(Some(Target {
        level,
        cap: if capped {
            budget.iterations
        } else {
            DEFAULT_CONFIDENCE_CAP
        },
        share: usize::try_from(share).unwrap_or(usize::MAX),
    }))
}

/// Runs per search a confidence may ask for when --iterations does not cap
/// it: about ten minutes of PCT on the models here.
const DEFAULT_CONFIDENCE_CAP: usize = 1_000_000;

/// `--shard`, else the environment's shard, else the whole run.
fn shard_of(flag: Option<&str>) -> Out<Shard> {
    if let Some(s) = flag {
        return Shard::parse("--shard", s).map_err(BadInput);
    }
    let env = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    Ok(Shard::from_vars(env)
        .map_err(BadInput)?
        .unwrap_or(Shard::ALL))
}

fn run_check(a: CheckArgs) -> Out<i32> {
    let start = Instant::now();
    crate::progress::enable(a.budget.quiet);
    let budget = budget_of(&a.budget, &Budget::from_env().map_err(bad)?)?;
    let target = target_of(&a.budget, &budget, a.seeds)?;
    let shard = shard_of(a.shard.as_deref())?;
    if a.seeds == 0 || (a.seeds > 1 && a.schedule.is_some()) {
        return Err(BadInput(
            "--seeds: expected at least 1 (and 1 with --schedule, which replays one search)".into(),
        ));
    }
    if a.model.is_none() && matches!(a.format, Format::Svg | Format::Mermaid) {
        return Err(BadInput(
            "--format svg and mermaid draw a counterexample: name a MODEL (and a --variant)".into(),
        ));
    }
    let mut checks = Vec::new();
    let engines = check_engines_of(&a.engine, &a.budget, a.schedule.as_deref())?;
    if engines.registry {
        checks.extend(checks_for(&a, None, &budget)?);
    }
    for engine in engines.engines {
        checks.extend(checks_for(&a, Some(engine), &budget)?);
    }
    for c in &mut checks {
        c.confidence = target;
    }
    let mut run = CheckRun {
        args: &a,
        registry: a.model.is_none(),
        shard,
        total: 0,
        tally: Tally::default(),
        failed: false,
        diagram: None,
    };
    if a.split == 0 || (a.split > 1 && a.schedule.is_some()) {
        return Err(BadInput(
            "--split: expected at least 1 part (and 1 with --schedule, which replays one search)"
                .into(),
        ));
    }
    let items = shard::items(&checks, a.seeds, a.split, a.scenario.is_some());
    run.total = items.len();
    let mine: Vec<Item> = items
        .into_iter()
        .filter(|it| shard.takes(it.number))
        .collect();
    let split_jobs = (a.split > 1).then_some(a.split);
    let jobs = crate::pool::jobs(a.budget.jobs.or(split_jobs)).map_err(BadInput)?;
    run.items(&checks, &mine, jobs)?;
    run.finish(start.elapsed())
}

/// One `vfsmc check` run: what it prints and counts as its items end.
struct CheckRun<'a> {
    args: &'a CheckArgs,
    /// No model named: verdicts are judged against the registry.
    registry: bool,
    shard: Shard,
    /// Items of the whole run (every shard).
    total: usize,
    tally: Tally,
    /// A model named: some verdict was not holds.
    failed: bool,
    /// The first counterexample, for svg and mermaid.
    diagram: Option<Diagram>,
}

/// What one item's search gave: nothing where the engine cannot judge the
/// variant (registry mode), else its report or why its replay did not start.
type ItemResult = Option<Result<Report, crate::engine::ScheduleError>>;

impl CheckRun<'_> {
    /// Runs this shard's `items` of `checks` on `jobs` workers and takes
    /// their results in item order: each item's JSON line, and each check's
    /// combined report once its last item is in. The first replay that
    /// cannot start ends the run (bad input).
    fn items(&mut self, checks: &[Check], items: &[Item], jobs: usize) -> Out<()> {
        let registry = self.registry;
        // One search at a time draws its own line (bound, runs); several
        // draw one line for the run.
        let jobs = jobs.min(items.len()).max(1);
        let _meter = (jobs > 1).then(|| Meter::items("vfsmc check", items.len()));
        let search = |k: usize| -> ItemResult {
            let it = items[k];
            let c = &checks[it.check];
            if registry && c.engine_limit().is_some() {
                return None;
            }
            let mut one = c.clone();
            one.budget.seed = it.seed;
            one.budget.part = it.part;
            let meter = (jobs == 1).then(|| Meter::start(c.label()));
            let r = one.run_guarded();
            drop(meter);
            crate::progress::item_done();
            Some(r)
        };
        let mut reports = Vec::new();
        let mut error = None;
        crate::pool::ordered(jobs, items.len(), search, |k, result| {
            let it = items[k];
            let c = &checks[it.check];
            let first = k == 0 || items[k - 1].check != it.check;
            let last = items.get(k + 1).is_none_or(|n| n.check != it.check);
            if first {
                self.begin(c);
            }
            match result {
                None => self.not_judged(c, &it),
                Some(Err(e)) => {
                    error = Some(bad(e));
                    return false;
                }
                Some(Ok(r)) => {
                    if self.args.format == Format::Json {
                        println!("{}", self.item_line(r.json(), &it));
                    }
                    reports.push(r);
                }
            }
            if last && !reports.is_empty() {
                if let Err(e) = self.end(c, shard::combine(std::mem::take(&mut reports))) {
                    error = Some(e);
                    return false;
                }
            }
            true
        });
        error.map_or(Ok(()), Err)
    }

    /// A check's first item is in: in registry mode a check its engine
    /// cannot judge is counted (and its line printed); otherwise a note says
    /// its verdict is not the registry's.
    fn begin(&mut self, c: &Check) {
        let Some(why) = c.engine_limit() else {
            return;
        };
        if !self.registry {
            eprintln!(
                "note: {} cannot give this variant its registry verdict: {why}",
                c.engine
            );
            return;
        }
        self.tally.not_judged += 1;
        if self.args.format != Format::Json {
            println!("{}", not_judged_line(c, why));
        }
    }

    /// The JSON line of an item its engine cannot judge.
    fn not_judged(&self, c: &Check, it: &Item) {
        if self.args.format == Format::Json {
            let why = c.engine_limit().unwrap_or_default();
            let line = shard::not_judged_json(c, it.seed, why);
            println!("{}", self.item_line(line, it));
        }
    }

    /// A check's items are all in: its combined report `r`, printed and
    /// counted, and saved to the corpus when asked.
    fn end(&mut self, c: &Check, r: Report) -> Out<()> {
        self.count(&r);
        match self.args.format {
            Format::Text => print_report(&r, self.registry),
            Format::Json => {}
            Format::Svg | Format::Mermaid => {
                eprint!("{}", r.text());
                if self.diagram.is_none() {
                    self.diagram = r.record.as_ref().map(|rec| Diagram::of(&title(&r), rec));
                }
            }
        }
        if let (Some(dir), Some(_)) = (&self.args.save_corpus, &r.record) {
            save_corpus(dir, &r, c)?;
        }
        Ok(())
    }

    fn item_line(&self, v: serde_json::Value, it: &Item) -> serde_json::Value {
        shard::item_json(v, it, self.total, self.shard, self.registry)
    }

    fn count(&mut self, r: &Report) {
        if !self.registry {
            self.failed |= r.verdict != Verdict::Holds;
        } else if r.matches_expected() {
            self.tally.matched += 1;
        } else {
            self.tally.differ += 1;
        }
    }

    /// Prints the diagram or the tally line; the exit code.
    fn finish(self, elapsed: std::time::Duration) -> Out<i32> {
        match (self.args.format, &self.diagram) {
            (Format::Svg, Some(d)) => print!("{}", diagram::svg(d)),
            (Format::Mermaid, Some(d)) => print!("{}", diagram::mermaid(d)),
            (Format::Svg | Format::Mermaid, None) => {
                eprintln!("no counterexample to draw: every check held")
            }
            _ => {}
        }
        if !self.registry {
            return Ok(i32::from(self.failed));
        }
        let line = self.tally.line(elapsed);
        // JSON output stays one object per line; the tally goes beside it.
        match self.args.format {
            Format::Text => println!("{line}"),
            _ => eprintln!("{line}"),
        }
        Ok(i32::from(self.tally.differ > 0))
    }
}

/// `model/variant [scenario] engine`: a diagram's title.
fn title(r: &Report) -> String {
    format!("{}/{} [{}] {}", r.model, r.variant, r.scenario, r.engine)
}

fn not_judged_line(c: &Check, why: &str) -> String {
    format!("n/a  {}: not judged by this engine: {why}", c.label())
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

/// A check's report in text: in registry mode one line with the registry's
/// expectation (and the confidence lines), the whole report where the
/// verdict differs.
fn print_report(r: &Report, registry_mode: bool) {
    if !registry_mode {
        print!("{}", r.text());
        return;
    }
    let mark = match (r.expected, r.matches_expected()) {
        (Expected::Candidate, _) => "cand",
        (_, true) => "ok  ",
        (_, false) => "FAIL",
    };
    println!(
        "{mark} expected {:<28} {}",
        r.expected.to_string(),
        r.summary()
    );
    if !r.matches_expected() {
        print!("{}", r.text());
    } else {
        print!("{}", r.confidence_text());
    }
}

fn replay(files: &[PathBuf], format: TraceFormat) -> Out<i32> {
    if format == TraceFormat::Svg && files.len() != 1 {
        return Err(BadInput(
            "--format svg draws one corpus file: give exactly one".into(),
        ));
    }
    let mut code = 0;
    for f in files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f).map_err(|e| BadInput(format!("{name}: {e}")))?;
        let entry = Entry::parse(&name, &text).map_err(bad)?;
        match corpus::replay(&name, &entry) {
            Ok(r) => match (format, &r.record) {
                (TraceFormat::Text, _) => {
                    println!("{name}: reproduced {}", entry.expect);
                    print!("{}", r.text());
                }
                (TraceFormat::Svg, Some(rec)) => {
                    print!("{}", diagram::svg(&Diagram::of(&title(&r), rec)))
                }
                (TraceFormat::Mermaid, Some(rec)) => {
                    print!("{}", diagram::mermaid(&Diagram::of(&title(&r), rec)))
                }
                (_, None) => eprintln!("{name}: reproduced {}; no trace to draw", entry.expect),
            },
            Err(ReplayError::Input(m)) => return Err(BadInput(m)),
            Err(e) => {
                eprintln!("vfsmc: {e}");
                code = 1;
            }
        }
    }
    Ok(code)
}

/// `vfsmc merge`: the item lines of every file, merged into the run's
/// verdict table; exit as the unsharded run would.
fn merge(files: &[PathBuf]) -> Out<i32> {
    let mut lines = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f).map_err(|e| BadInput(format!("{name}: {e}")))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let whence = format!("{name}:{}", i + 1);
            let parsed = shard::parse_line(line).map_err(|e| {
                BadInput(format!(
                    "{whence}: {e} (expected an item line of `vfsmc check --format json`)"
                ))
            })?;
            lines.push((whence, parsed));
        }
    }
    let run = shard::merge(lines).map_err(BadInput)?;
    let (mut tally, mut failed, mut seconds) = (Tally::default(), false, 0.0);
    for m in run.checks {
        match m {
            shard::Merged::NotJudged { key, reason, .. } => {
                tally.not_judged += 1;
                println!(
                    "n/a  {}/{} [{}] {}: not judged by this engine: {reason}",
                    key.0, key.1, key.2, key.3
                );
            }
            shard::Merged::Ran(r) => {
                seconds += r.seconds;
                print_report(&r, run.registry);
                if r.verdict == Verdict::Violates && r.record.is_none() {
                    println!("replay: {}", r.replay_line());
                }
                if !run.registry {
                    failed |= r.verdict != Verdict::Holds;
                } else if r.matches_expected() {
                    tally.matched += 1;
                } else {
                    tally.differ += 1;
                }
            }
        }
    }
    if !run.registry {
        return Ok(i32::from(failed));
    }
    println!(
        "{}",
        tally.line(std::time::Duration::from_secs_f64(seconds))
    );
    Ok(i32::from(tally.differ > 0))
}

/// `vfsmc review`.
fn run_review(a: ReviewArgs) -> Out<i32> {
    crate::progress::enable(a.budget.quiet);
    let m = find_model(&a.model)?;
    let (base, patched) = (find_variant(m, &a.base)?, find_variant(m, &a.patched)?);
    let scenarios: Vec<&'static Scenario> = match &a.scenario {
        Some(s) => {
            let s = find_scenario(m, s)?;
            if s.generated {
                return Err(BadInput(format!(
                    "scenario '{}' is generated from bytes; review hand-written scenarios",
                    s.name
                )));
            }
            vec![s]
        }
        None => m
            .scenarios()
            .iter()
            .filter(|s| !s.generated && s.tier == Tier::Pr)
            .filter(|s| m.applies(base.name, s.name) && m.applies(patched.name, s.name))
            .collect(),
    };
    let budget = budget_of(&a.budget, &Budget::from_env().map_err(bad)?)?;
    let req = review::Request {
        model: m,
        base,
        patched,
        scenarios,
        engines: engines_of(&a.engine, &a.budget, None)?,
        confidence: target_of(&a.budget, &budget, 1)?,
        budget,
        jobs: crate::pool::jobs(a.budget.jobs).map_err(BadInput)?,
        cache: if a.no_cache {
            None
        } else {
            crate::cache::default_dir()
        },
    };
    let rv = review::review(&req);
    match a.format {
        ReviewFormat::Text => print!("{}", review::text(&rv)),
        ReviewFormat::Mail => print!("{}", review::mail(&rv)),
        ReviewFormat::Markdown => print!("{}", review::markdown(&rv)),
        ReviewFormat::Json => println!("{}", review::json(&rv)),
        ReviewFormat::Svg | ReviewFormat::Mermaid => match review::first_new_violation(&rv) {
            Some((r, rec)) => {
                let mut d = Diagram::of(&title(r), rec);
                d.violation.push(format!("replay: {}", r.replay_line()));
                if a.format == ReviewFormat::Svg {
                    print!("{}", diagram::svg(&d));
                } else {
                    print!("{}", diagram::mermaid(&d));
                }
            }
            None => eprint!("{}", review::mail(&rv)),
        },
    }
    Ok(rv.exit_code())
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
    if a.seeds == 0 || a.throughput_iterations == 0 || a.judge_cap == 0 {
        return Err(BadInput(
            "--seeds, --throughput-iterations and --judge-cap must be at least 1".into(),
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
    if let Some(s) = &a.native {
        return bench_native(&models, s, &a);
    }
    let jobs = crate::pool::jobs(a.jobs).map_err(BadInput)?;
    if a.scaling {
        return bench_scaling(&models, &a, &budget, jobs);
    }
    if a.judge {
        return bench_judge(&models, &a, jobs);
    }
    println!("vfsmc bench: wall-clock numbers on this machine; they vary between runs");
    if jobs > 1 {
        println!("({jobs} measurements at once, one per core: --jobs 1 times them alone)");
    }
    let mut rows = Vec::new();
    for m in models {
        let variants: Vec<&'static Variant> = match &a.variant {
            Some(v) => vec![find_variant(m, v)?],
            None => m.variants().iter().collect(),
        };
        for v in variants {
            rows.extend(m.scenarios_for(v, Tier::Pr).into_iter().map(|s| (m, v, s)));
        }
    }
    let measure = |i: usize| {
        let (m, v, s) = rows[i];
        match v.expected {
            Expected::Violates(_) => bench_first_failure(m, v, s, &a, &budget),
            Expected::Holds | Expected::Candidate => bench_throughput(m, v, s, &a, &budget),
        }
    };
    crate::pool::ordered(jobs, rows.len(), measure, |_, text| {
        print!("{text}");
        true
    });
    Ok(0)
}

/// `vfsmc bench --scaling`: the registry's PR-tier loom checks of holding
/// variants (every model, or MODEL) run once on one worker and once on
/// `jobs`: items, executions, wall seconds and the speed-up. Both runs
/// must explore the same executions (exit 1 if not).
fn bench_scaling(
    models: &[&'static dyn Model],
    a: &BenchArgs,
    budget: &Budget,
    jobs: usize,
) -> Out<i32> {
    let checks: Vec<Check> = models
        .iter()
        .flat_map(|&m| check::registry_checks(m, EngineKind::Loom))
        .filter(|c| c.variant.expected == Expected::Holds)
        .filter(|c| a.variant.as_deref().is_none_or(|v| v == c.variant.name))
        .map(|c| c.with_budget(budget))
        .collect();
    let run = |workers: usize| {
        let start = Instant::now();
        let mut executions = 0;
        let search = |i: usize| checks[i].run_guarded().map_or(0, |r| r.executions);
        crate::pool::ordered(workers, checks.len(), search, |_, n| {
            executions += n;
            true
        });
        (executions, start.elapsed().as_secs_f64())
    };
    let (one, many) = (run(1), run(jobs));
    let speedup = one.1 / many.1.max(1e-9);
    match a.format {
        TableFormat::Json => println!(
            "{}",
            serde_json::json!({
                "record": "scaling",
                "items": checks.len(),
                "jobs": [1, jobs],
                "executions": [one.0, many.0],
                "seconds": [one.1, many.1],
                "speedup": speedup,
                "cores": std::thread::available_parallelism().map_or(1, usize::from),
            })
        ),
        TableFormat::Text => println!(
            "vfsmc bench --scaling: {} loom checks of holding variants, {} executions: \
             {:.1}s on 1 worker, {:.1}s on {jobs} ({speedup:.2}x)",
            checks.len(),
            one.0,
            one.1,
            many.1
        ),
    }
    if one.0 != many.0 {
        eprintln!(
            "the runs explored different executions ({} and {}): the workers share state",
            one.0, many.0
        );
        return Ok(1);
    }
    Ok(0)
}

/// `vfsmc bench --judge`: per scenario with holding variants the optimal
/// engine can judge, both engines' executions and time, the registry's
/// choice and the one this measurement makes ([`crate::judge`]). Exit 0;
/// a stale row is news for the registry, not a failure of the run.
fn bench_judge(models: &[&'static dyn Model], a: &BenchArgs, jobs: usize) -> Out<i32> {
    if let Some(v) = &a.variant {
        for &m in models {
            find_variant(m, v)?;
        }
    }
    let rows: Vec<_> = models
        .iter()
        .flat_map(|&m| {
            crate::judge::candidates(m)
                .into_iter()
                .map(move |(s, vs)| (m, s, vs))
        })
        .map(|(m, s, mut vs)| {
            vs.retain(|v| a.variant.as_deref().is_none_or(|name| name == v.name));
            (m, s, vs)
        })
        .filter(|(_, _, vs)| !vs.is_empty())
        .collect();
    if a.format == TableFormat::Text {
        println!("vfsmc bench --judge: wall-clock numbers on this machine; they vary between runs");
    }
    let mut stale = 0;
    let measure = |i: usize| {
        let (m, s, vs) = &rows[i];
        crate::judge::measure(*m, s, vs, a.judge_cap)
    };
    crate::pool::ordered(jobs, rows.len(), measure, |_, row| {
        stale += usize::from(row.stale());
        println!("{}", judge_line(&row, a.format));
        true
    });
    if a.format == TableFormat::Text {
        println!(
            "{} scenarios measured; the registry's engine differs from this measurement on {stale}",
            rows.len()
        );
    }
    Ok(0)
}

fn judge_line(row: &crate::judge::Row, format: TableFormat) -> String {
    use crate::judge::engine_name;
    let (registry, measured) = (engine_name(row.registry), engine_name(row.measured()));
    match format {
        TableFormat::Json => serde_json::json!({
            "record": "judge",
            "model": row.model,
            "scenario": row.scenario,
            "holding_variants": row.variants,
            "loom": {"executions": row.loom.executions, "seconds": row.loom.seconds,
                     "complete": row.loom.complete},
            "optimal": {"executions": row.optimal.executions, "seconds": row.optimal.seconds,
                        "complete": row.optimal.complete},
            "registry": registry,
            "measured": measured,
            "stale": row.stale(),
        })
        .to_string(),
        TableFormat::Text => format!(
            "{} [{}] {} holding: loom {} executions {:.3}s, optimal {} executions {:.3}s{}; \
             registry {registry}, measured {measured}{}",
            row.model,
            row.scenario,
            row.variants,
            row.loom.executions,
            row.loom.seconds,
            row.optimal.executions,
            row.optimal.seconds,
            if row.optimal.complete {
                ""
            } else {
                " (not proved)"
            },
            if row.stale() { ": STALE" } else { "" }
        ),
    }
}

fn timed(c: &Check) -> (Report, f64) {
    let start = Instant::now();
    let r = c
        .run()
        .expect("a search without a schedule cannot fail to start");
    (r, start.elapsed().as_secs_f64())
}

/// The rows of a violating variant on `s`: loom's executions to its first
/// failure, and random's and PCT's runs to it over the seeds.
fn bench_first_failure(
    m: &'static dyn Model,
    v: &'static Variant,
    s: &'static Scenario,
    a: &BenchArgs,
    budget: &Budget,
) -> String {
    let mut c = Check::new(m, v, s, EngineKind::Loom).with_budget(budget);
    let (r, secs) = timed(&c);
    let mut out = format!(
        "{}/{} [{}] loom: {} after {} executions at preemption bound {}, {:.3}s\n",
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
        out.push_str(&format!(
            "{}/{} [{}] {engine}: {what}\n",
            m.name(),
            v.name,
            s.name
        ));
    }
    out
}

/// The rows of a holding variant on `s`: executions per second on every
/// engine.
fn bench_throughput(
    m: &'static dyn Model,
    v: &'static Variant,
    s: &'static Scenario,
    a: &BenchArgs,
    budget: &Budget,
) -> String {
    let mut out = String::new();
    for engine in EngineKind::ALL {
        let mut c = Check::new(m, v, s, engine).with_budget(budget);
        c.budget.iterations = budget.iterations.min(a.throughput_iterations);
        c.budget.optimal_cap = Some(c.budget.iterations);
        let (r, secs) = timed(&c);
        out.push_str(&format!(
            "{}/{} [{}] {engine}: {} executions in {:.3}s = {:.0}/s ({}, exhaustive: {})\n",
            m.name(),
            v.name,
            s.name,
            r.executions,
            secs,
            r.executions as f64 / secs.max(1e-9),
            r.verdict,
            r.exhaustive
        ));
    }
    out
}

/// `vfsmc bench MODEL --native SCENARIO --input HEX…`: a generated scenario
/// on real threads (the stress engine), per input and holding variant, in
/// one-second samples, will-it-scale style: the slowest and fastest second
/// and the mean, in executions per second. Wall clock on this machine;
/// tasks join at the end of each execution, so what one execution does is
/// the scenario's to say.
fn bench_native(models: &[&'static dyn Model], scenario: &str, a: &BenchArgs) -> Out<i32> {
    let [m] = models else {
        return Err(BadInput("--native needs one MODEL".into()));
    };
    let s = find_scenario(*m, scenario)?;
    if !s.generated || a.input.is_empty() {
        return Err(BadInput(format!(
            "--native needs a generated scenario and at least one --input (scenario '{}'{})",
            s.name,
            if s.generated { "" } else { " is hand-written" }
        )));
    }
    let inputs: Vec<Vec<u8>> = a
        .input
        .iter()
        .map(|h| check::unhex(h).map_err(|e| BadInput(format!("--input: {e}"))))
        .collect::<Out<_>>()?;
    println!(
        "vfsmc bench --native: {} [{}] on the stress engine (real threads), {} one-second \
         sample(s) per row; wall clock on this machine",
        m.name(),
        s.name,
        a.seconds
    );
    println!(
        "{:<10} {:<24} {:>12} {:>12} {:>12}",
        "input", "variant", "min/s", "max/s", "mean/s"
    );
    for input in &inputs {
        for v in m
            .variants()
            .iter()
            .filter(|v| v.expected == Expected::Holds && m.applies(v.name, s.name))
        {
            let mut c = Check::new(*m, v, s, EngineKind::Stress);
            c.input = input.clone();
            c.budget.iterations = 1;
            let samples: Vec<f64> = (0..a.seconds.max(1)).map(|_| native_second(&c)).collect();
            let mean = samples.iter().sum::<f64>() / samples.len() as f64;
            let (lo, hi) = samples
                .iter()
                .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            println!(
                "{:<10} {:<24} {lo:>12.0} {hi:>12.0} {mean:>12.0}",
                check::hex(input),
                v.name
            );
        }
    }
    Ok(0)
}

/// Executions of `c` (one per run) completed in one second of wall clock.
fn native_second(c: &Check) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < 1.0 {
        let r = c
            .run()
            .expect("a search without a schedule cannot fail to start");
        n += r.executions as u64;
    }
    n as f64 / start.elapsed().as_secs_f64()
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
                    TableFormat::Json => println!(
                        "{}",
                        serde_json::json!({
                            "model": m.name(), "variant": v.name, "scenario": s.name,
                            "executions": r_on.executions, "executions_off": r_off.executions,
                            "secs_on": secs_on, "secs_off": secs_off, "ratio": ratio,
                        })
                    ),
                    TableFormat::Text => println!(
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
            "{:<22} {:<26} {:>12} {:>12}",
            "operation", "counter", va.name, vb.name
        );
        let rows = review::cost_rows(&ca, &cb);
        let ops: std::collections::BTreeSet<&'static str> =
            ca.keys().chain(cb.keys()).copied().collect();
        for op in ops {
            let calls = |c: &std::collections::BTreeMap<&'static str, _>| {
                c.get(op).map_or(0, |x: &vfsmc_model::exec::OpCost| x.calls)
            };
            println!(
                "{op:<22} {:<26} {:>12} {:>12}",
                "calls (total)",
                calls(&ca),
                calls(&cb)
            );
            for r in rows.iter().filter(|r| r.op == op) {
                println!(
                    "{:<22} {:<26} {:>12.2} {:>12.2}",
                    r.op, r.counter, r.base, r.patched
                );
            }
        }
        println!();
    }
    Ok(0)
}

/// `vfsmc litmus`: per file a line (or a JSON object), then one summary
/// line per directory and the total.
fn litmus(a: LitmusArgs) -> Out<i32> {
    use crate::litmus::{collect, judge_all, Options, Tally};
    let files = collect(&a.paths).map_err(BadInput)?;
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let opts = Options {
        engine: a.engine,
        cap: a.cap,
        trace: a.trace,
    };
    // Searches point fd 2 at /dev/null while they run (crate::quiet), and
    // with --jobs a file is reported while another is searched: malformed
    // files go to a duplicate of stderr taken before any search.
    let stderr: Option<std::sync::Mutex<std::fs::File>> = {
        use std::os::fd::AsFd;
        std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(|fd| std::sync::Mutex::new(std::fs::File::from(fd)))
    };
    let print = |i: usize, r: &Result<crate::litmus::Judged, String>| match r {
        Ok(j) => match a.format {
            TableFormat::Text => {
                println!("{}", j.text());
                if let Some(t) = &j.trace {
                    println!("{t}");
                }
            }
            TableFormat::Json => println!("{}", j.json()),
        },
        Err(e) => {
            match &stderr {
                Some(f) => {
                    use std::io::Write;
                    let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = writeln!(f, "vfsmc: {e}");
                }
                None => eprintln!("vfsmc: {e}"),
            }
            if a.format == TableFormat::Json {
                println!(
                    "{}",
                    serde_json::json!({"file": files[i].display().to_string(), "result": null,
                        "observed": null, "verdict": "malformed", "reason": e})
                );
            }
        }
    };
    let results = judge_all(&files, opts, jobs, &print);
    let mut dirs: std::collections::BTreeMap<String, Tally> = std::collections::BTreeMap::new();
    let mut total = Tally::default();
    let (mut malformed, mut failed) = (false, false);
    for (f, r) in files.iter().zip(&results) {
        let dir = f
            .parent()
            .map_or(String::from("."), |d| d.display().to_string());
        dirs.entry(dir).or_default().add(r);
        total.add(r);
        match r {
            Ok(j) => failed |= j.fails(),
            Err(_) => malformed = true,
        }
    }
    match a.format {
        TableFormat::Text => {
            for (d, t) in &dirs {
                println!("{d}: {}", t.text());
            }
            println!("total: {}", total.text());
        }
        TableFormat::Json => {
            let by_dir: serde_json::Map<String, serde_json::Value> =
                dirs.iter().map(|(d, t)| (d.clone(), t.json())).collect();
            println!(
                "{}",
                serde_json::json!({"summary": by_dir, "total": total.json()})
            );
        }
    }
    Ok(if malformed {
        2
    } else if failed {
        1
    } else {
        0
    })
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
