//! The CLI contract scripts and reviewers rely on: exit codes, bad-input
//! messages, the replay line reproducing its failure byte for byte.

use std::process::{Command, Output};

use vfsmc::engine::Knob;

fn vfsmc(args: &[&str]) -> Output {
    vfsmc_with(args, &[])
}

/// vfsmc with exactly the budget variables `env` sets: the caller's own
/// `VFSMC_*` settings never leak into a test.
fn vfsmc_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vfsmc"));
    for knob in Knob::ALL {
        cmd.env_remove(knob.env());
    }
    cmd.env_remove("SHUTTLE_RANDOM_SEED");
    cmd.args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the vfsmc binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Bad input: exit 2, a message naming what was wrong, no panic.
fn assert_bad_input(args: &[&str], names: &str) {
    assert_bad_input_with(args, &[], names);
}

fn assert_bad_input_with(args: &[&str], env: &[(&str, &str)], names: &str) {
    let o = vfsmc_with(args, env);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?} should be bad input; stderr: {err}"
    );
    assert!(
        err.contains(names),
        "{args:?}: message should name '{names}': {err}"
    );
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
}

#[test]
fn list_prints_model_variant_expected() {
    let o = vfsmc(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(!out.is_empty());
    for line in out.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 3, "not MODEL VARIANT EXPECTED: {line}");
        assert!(
            fields[2] == "holds" || fields[2].starts_with("violates:"),
            "bad EXPECTED in {line}"
        );
        let m = vfsmc_specs::model(fields[0]).expect("listed model exists");
        assert_eq!(
            m.variant(fields[1]).unwrap().expected.to_string(),
            fields[2]
        );
    }
}

#[test]
fn unknown_names_are_bad_input() {
    assert_bad_input(&["check", "nosuchmodel"], "unknown model 'nosuchmodel'");
    assert_bad_input(
        &["check", "litmus", "--variant", "nope"],
        "no variant 'nope'",
    );
    assert_bad_input(
        &["check", "litmus", "--scenario", "nope"],
        "no scenario 'nope'",
    );
    assert_bad_input(
        &["check", "litmus", "--engine", "tla"],
        "unknown engine 'tla'",
    );
    assert_bad_input(
        &["diff", "litmus", "MP+poonceonces", "nope"],
        "no variant 'nope'",
    );
    assert_bad_input(&["bench", "nosuchmodel"], "unknown model");
    assert_bad_input(&["show", "nosuchmodel"], "unknown model");
    assert_bad_input(
        &[
            "review", "fdtable", "v6.10", "current", "--engine", "registry",
        ],
        "only `vfsmc check` judges the registry's checks",
    );
    assert_bad_input(
        &[
            "check",
            "litmus",
            "--variant",
            "MP+poonceonces",
            "--engine",
            "registry",
            "--schedule",
            "00",
        ],
        "--schedule replays one shuttle engine",
    );
}

/// A reviewer's slips get a way out: the nearest name, the model a variant
/// belongs to, and no silently ignored `--input`.
#[test]
fn misspelled_and_misplaced_names_say_what_was_meant() {
    assert_bad_input(&["check", "unlazyy"], "did you mean 'unlazy'?");
    assert_bad_input(
        &["check", "unlazy", "--variant", "legitimize-skip-seq-check"],
        "did you mean 'legitimize-skips-seq-check'?",
    );
    assert_bad_input(
        &["check", "unlazy", "--variant", "fget-skips-slot-recheck"],
        "it is a variant of 'fdtable'",
    );
    assert_bad_input(
        &[
            "check",
            "fdtable",
            "--variant",
            "current",
            "--scenario",
            "churn",
            "--input",
            "00",
        ],
        "hand-written and reads no bytes",
    );
}

#[test]
fn impossible_budgets_are_bad_input() {
    assert_bad_input(&["check", "litmus", "--iterations", "0"], "--iterations");
    assert_bad_input(
        &["check", "litmus", "--engine", "pct", "--pct-depth", "0"],
        "--pct-depth",
    );
    assert_bad_input(
        &["check", "litmus", "--max-preemptions", "99"],
        "--max-preemptions=99",
    );
    assert_bad_input(
        &[
            "check",
            "litmus",
            "--engine",
            "pct",
            "--max-preemptions",
            "1",
        ],
        "--max-preemptions bounds loom, optimal or optimal-sc only",
    );
    assert_bad_input(
        &[
            "check",
            "litmus",
            "--engine",
            "loom,pct",
            "--schedule",
            "00",
        ],
        "--schedule replays one shuttle engine",
    );
    assert_bad_input(&["check", "litmus", "--iterations=-3"], "--iterations");
    assert_bad_input(&["bench", "--seeds", "0"], "--seeds");
}

#[test]
fn bad_schedule_strings_are_bad_input() {
    assert_bad_input(
        &[
            "check",
            "litmus",
            "--variant",
            "MP+poonceonces",
            "--engine",
            "pct",
            "--schedule",
            "xyz",
        ],
        "bad schedule string 'xyz'",
    );
    assert_bad_input(
        &[
            "check",
            "litmus",
            "--variant",
            "MP+poonceonces",
            "--engine",
            "loom",
            "--schedule",
            "00",
        ],
        "--schedule replays one shuttle engine",
    );
    assert_bad_input(&["check", "litmus", "--input", "abc"], "--input");
}

#[test]
fn malformed_corpus_files_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("vfsmc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "unknown-key.vfsmc",
            "model: litmus\nmodle: x\n",
            ":2: unknown key 'modle'",
        ),
        (
            "no-colon.vfsmc",
            "model litmus\n",
            ":1: expected 'key: value'",
        ),
        (
            "bad-expect.vfsmc",
            "engine: loom\nexpect: maybe\n",
            ":2: 'expect' must be",
        ),
        (
            "bad-engine.vfsmc",
            "engine: tla\n",
            ":1: unknown engine 'tla'",
        ),
        (
            "loom-schedule.vfsmc",
            "engine: loom\nschedule: 00\n",
            ":2: 'schedule' does not apply to engine 'loom'",
        ),
        (
            "missing.vfsmc",
            "engine: loom\nexpect: holds\n",
            "missing required key",
        ),
        (
            "bad-seed.vfsmc",
            "model: litmus\nvariant: v\nscenario: s\nengine: pct\nexpect: holds\nseed: -1\n\
             fingerprint: 0\nkernel: k\nwhy: w\n",
            ":6: 'seed' must be",
        ),
    ];
    for (name, text, msg) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let p = path.to_str().unwrap();
        assert_bad_input(&["replay", p], msg);
        assert_bad_input(&["replay", p], name);
    }
    assert_bad_input(
        &["replay", dir.join("absent.vfsmc").to_str().unwrap()],
        "absent.vfsmc",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_check_prints_a_replay_line_that_reproduces_it() {
    for engine in ["loom", "pct"] {
        let mut found = None;
        for m in vfsmc_specs::models() {
            for v in m.variants() {
                let vfsmc_specs::Expected::Violates(_) = v.expected else {
                    continue;
                };
                let o = vfsmc(&["check", m.name(), "--variant", v.name, "--engine", engine]);
                if o.status.code() == Some(1) {
                    found = Some(o);
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        let o = found.unwrap_or_else(|| panic!("no violating variant found by {engine}"));
        let out = stdout(&o);
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("replay: vfsmc "))
            .unwrap_or_else(|| panic!("no replay line in:\n{out}"));
        let args: Vec<&str> = line.split(' ').collect();
        let again = vfsmc(&args);
        assert_eq!(
            again.status.code(),
            Some(1),
            "replay line did not fail: {line}"
        );
        let trace = |s: &str| {
            s.split_once('\n')
                .map(|x| x.1.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            trace(&out),
            trace(&stdout(&again)),
            "replay of `{line}` differs"
        );
    }
}

#[test]
fn json_has_the_documented_fields() {
    let o = vfsmc(&[
        "check",
        "litmus",
        "--variant",
        "MP+poonceonces",
        "--format",
        "json",
    ]);
    let line = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    for key in [
        "model",
        "variant",
        "scenario",
        "engine",
        "verdict",
        "invariant",
        "executions",
        "exhaustive",
        "max_preemptions",
        "seed",
        "schedule",
        "trace",
    ] {
        assert!(v.get(key).is_some(), "json lacks '{key}': {line}");
    }
}

/// `vfsmc show fdtable | head` must stop quietly when the reader goes away.
/// The pipe's read end is closed before vfsmc starts, so its first write
/// finds no reader.
#[test]
fn a_closed_pipe_ends_output_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe(2) failed");
    // SAFETY: both descriptors were just returned by pipe(2), owned once.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let o = Command::new(env!("CARGO_BIN_EXE_vfsmc"))
        .args(["show", "fdtable"])
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .expect("the vfsmc binary runs");
    assert_eq!(stderr(&o), "", "a closed pipe is not an error to report");
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}", o.status);
}

/// Each budget knob: the flag wins over the environment, which wins over
/// the default.
#[test]
fn a_flag_beats_the_environment_which_beats_the_default() {
    let args = [
        "check",
        "litmus",
        "--variant",
        "SB+fencembonceonces",
        "--engine",
        "pct",
    ];
    let summary = |extra: &[&str], env: &[(&str, &str)]| {
        let all: Vec<&str> = args.iter().chain(extra).copied().collect();
        let o = vfsmc_with(&all, env);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let default = summary(&[], &[]);
    assert!(
        default.contains("(10000 executions, not exhaustive, seed 1)"),
        "{default}"
    );
    let env = [("VFSMC_SEED", "7"), ("VFSMC_ITERATIONS", "20")];
    let from_env = summary(&[], &env);
    assert!(
        from_env.contains("(20 executions, not exhaustive, seed 7)"),
        "{from_env}"
    );
    let flagged = summary(&["--seed", "3"], &env);
    assert!(
        flagged.contains("(20 executions, not exhaustive, seed 3)"),
        "{flagged}"
    );
}

#[test]
fn a_malformed_budget_variable_is_bad_input() {
    let args = ["check", "litmus", "--variant", "SB+fencembonceonces"];
    assert_bad_input_with(
        &args,
        &[("VFSMC_SHUTTLE_MAX_STEPS", "lots")],
        "VFSMC_SHUTTLE_MAX_STEPS=lots: expected an integer at least 1",
    );
    assert_bad_input_with(
        &args,
        &[("VFSMC_MAX_PREEMPTIONS", "17")],
        "VFSMC_MAX_PREEMPTIONS=17: expected an integer in 0..=16",
    );
    assert_bad_input_with(
        &args,
        &[("SHUTTLE_RANDOM_SEED", "5")],
        "SHUTTLE_RANDOM_SEED",
    );
}

/// A corpus file replays the same everywhere: `vfsmc replay` reads no
/// budget variable (with one step per shuttle execution, or one loom
/// branch, nothing would reproduce).
#[test]
fn replay_ignores_the_environment() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let files = vfsmc::corpus::files(&dir).unwrap();
    let loom = files
        .iter()
        .find(|f| f.to_string_lossy().ends_with("-loom.vfsmc"));
    let pct = files
        .iter()
        .find(|f| f.to_string_lossy().ends_with("-pct.vfsmc"));
    for f in [loom, pct] {
        let f = f
            .expect("corpus/ holds a loom and a pct seed")
            .to_str()
            .unwrap();
        let env = [
            ("VFSMC_SHUTTLE_MAX_STEPS", "1"),
            ("VFSMC_LOOM_MAX_BRANCHES", "1"),
        ];
        let o = vfsmc_with(&["replay", f], &env);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
    }
}

/// Registry mode (no model): a line per registry check, then exactly one
/// tally line that counts them; exit 1 iff a verdict differs. One PCT
/// execution per check, unshrunk, keeps it cheap (and misses bugs, so both
/// counts are exercised on a normal registry).
#[test]
fn registry_mode_ends_with_one_tally_line() {
    let o = vfsmc_with(
        &["check", "--engine", "pct", "--iterations", "1"],
        &[("VFSMC_SHRINK_MAX_DEPTH", "0")],
    );
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let count = |mark: &str| lines.iter().filter(|l| l.starts_with(mark)).count();
    let (matched, differ, na) = (count("ok "), count("FAIL "), count("n/a "));
    let registry: usize = vfsmc_specs::models()
        .iter()
        .flat_map(|m| {
            m.variants()
                .iter()
                .map(|v| m.scenarios_for(v, vfsmc_specs::Tier::Pr).len())
        })
        .sum();
    assert_eq!(
        matched + differ + na,
        registry,
        "a check is missing:\n{out}"
    );
    let tally = format!("{matched} match, {differ} differ, {na} n/a in ");
    assert_eq!(lines.iter().filter(|l| l.contains(" n/a in ")).count(), 1);
    let time = lines
        .last()
        .and_then(|l| l.strip_prefix(&tally))
        .unwrap_or_else(|| panic!("the last line is not '{tally}M:SS':\n{out}"));
    let (m, s) = time.split_once(':').expect("M:SS");
    assert!(m.parse::<u64>().is_ok() && s.len() == 2 && s.parse::<u8>().is_ok_and(|s| s < 60));
    assert_eq!(
        o.status.code(),
        Some(i32::from(differ > 0)),
        "{}",
        stderr(&o)
    );
}

/// A stress failure does not replay, so --save-corpus writes no file that
/// `vfsmc replay` would reject. Sleeping inside an RCU read-side section
/// breaks might_sleep on every interleaving, real threads included.
#[test]
fn stress_failures_are_not_saved_to_the_corpus() {
    let dir = std::env::temp_dir().join(format!("vfsmc-stress-{}", std::process::id()));
    let o = vfsmc(&[
        "check",
        "primitives",
        "--variant",
        "might-sleep-in-rcu",
        "--engine",
        "stress",
        "--iterations",
        "1",
        "--save-corpus",
        dir.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("violates might_sleep"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("corpus: not written"), "{}", stderr(&o));
    let written = std::fs::read_dir(&dir).map_or(0, |d| d.count());
    assert_eq!(written, 0, "a stress seed was written to {}", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--jobs` changes how many searches run at once, never what is printed:
/// the registry mode's lines, a model's traces and replay lines, and the JSON
/// item lines (their `seconds` aside) are the same bytes on 1, 2 and 3
/// workers, and so is the exit code.
#[test]
fn the_output_is_the_same_bytes_for_any_number_of_jobs() {
    let untimed = |o: &Output| -> String {
        stdout(o)
            .lines()
            .map(|l| match serde_json::from_str::<serde_json::Value>(l) {
                Ok(mut v) if v.is_object() => {
                    v["seconds"] = serde_json::Value::Null;
                    v.to_string()
                }
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for args in [
        &["check", "primitives", "--scenario", "lockref"][..],
        &[
            "check",
            "primitives",
            "--scenario",
            "lockref",
            "--format",
            "json",
        ][..],
    ] {
        let runs: Vec<Output> = ["1", "2", "3"]
            .iter()
            .map(|j| vfsmc(&[args, &["--jobs", j]].concat()))
            .collect();
        for r in &runs[1..] {
            assert_eq!(r.status.code(), runs[0].status.code(), "{args:?}");
            assert_eq!(untimed(r), untimed(&runs[0]), "{args:?}");
        }
        assert!(!stdout(&runs[0]).is_empty(), "{args:?}");
    }
    assert_bad_input(&["check", "primitives", "--jobs", "0"], "--jobs=0");
    assert_bad_input_with(
        &["check", "primitives"],
        &[("VFSMC_JOBS", "lots")],
        "VFSMC_JOBS=lots",
    );
}

/// The default engines judge each check on its registry engine: optimal for
/// a holding variant on a scenario the registry judges on it, and loom when
/// `--max-preemptions` asks for a bounded search.
#[test]
fn the_registry_engine_is_optimal_where_the_row_says_and_loom_under_a_bound() {
    let row = [
        "check",
        "fdtable",
        "--variant",
        "current",
        "--scenario",
        "fork-vs-open",
    ];
    let o = vfsmc(&row);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("[fork-vs-open] optimal: holds"),
        "{}",
        stdout(&o)
    );
    let bounded: Vec<&str> = row
        .iter()
        .copied()
        .chain(["--max-preemptions", "1"])
        .collect();
    let o = vfsmc(&bounded);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("[fork-vs-open] loom: holds"),
        "{}",
        stdout(&o)
    );
}

/// `bench --judge` measures every scenario whose holding variants the
/// optimal engine could judge, names the registry's choice as the spec
/// writes it, and proves (unbounded, within the cap) every row the
/// registry judges on optimal. Its times are printed, never asserted here.
#[test]
fn bench_judge_measures_each_scenario_against_the_registrys_choice() {
    let model = vfsmc_specs::model("primitives").expect("the primitives model");
    let o = vfsmc(&["bench", "primitives", "--judge", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record per line"))
        .collect();
    let names: Vec<&str> = records
        .iter()
        .map(|r| r["scenario"].as_str().expect("a scenario name"))
        .collect();
    assert!(!names.is_empty());
    for (r, name) in records.iter().zip(&names) {
        let s = model
            .scenarios()
            .iter()
            .find(|s| s.name == *name)
            .expect("a scenario of the model");
        let registry = match s.judge {
            vfsmc_specs::Judge::Loom => "loom",
            vfsmc_specs::Judge::Optimal => "optimal",
        };
        assert_eq!(r["record"], "judge");
        assert_eq!(r["registry"], registry, "{r}");
        assert_eq!(r["loom"]["complete"], true, "{r}");
        if registry == "optimal" {
            assert_eq!(r["optimal"]["complete"], true, "{r}");
        }
    }
}

/// The cap reaches the optimal engine: a search cut short is reported as
/// not proved, so it can never make a row look cheaper than it is.
#[test]
fn bench_judge_reports_a_capped_optimal_search_as_not_proved() {
    let o = vfsmc(&["bench", "primitives", "--judge", "--judge-cap", "5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rcu = stdout(&o)
        .lines()
        .find(|l| l.starts_with("primitives [rcu] "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("an rcu row: {}", stdout(&o)));
    assert!(rcu.contains("optimal 5 executions"), "{rcu}");
    assert!(rcu.contains("(not proved)"), "{rcu}");
    assert!(rcu.contains("measured loom"), "{rcu}");
    assert_bad_input(&["bench", "--judge", "--scaling"], "--scaling");
    assert_bad_input(&["bench", "--judge-cap", "5"], "--judge");
    assert_bad_input(&["bench", "--judge", "--judge-cap", "0"], "--judge-cap");
    assert_bad_input(
        &["bench", "primitives", "--judge", "--variant", "nope"],
        "no variant 'nope'",
    );
}
