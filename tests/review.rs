//! `vfsmc review`, PCT confidence and the progress line, as a reviewer
//! meets them at the command line.

use std::process::{Command, Output};

use vfsmc::check::{miss_probability, runs_for};
use vfsmc::engine::Knob;

/// vfsmc with no budget variable of the caller's, and no cache of proofs
/// unless `cache` names one.
fn vfsmc_cached(args: &[&str], cache: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vfsmc"));
    for knob in Knob::ALL {
        cmd.env_remove(knob.env());
    }
    cmd.env(vfsmc::cache::VARIABLE, cache)
        .args(args)
        .output()
        .expect("the vfsmc binary runs")
}

fn vfsmc(args: &[&str]) -> Output {
    vfsmc_cached(args, "off")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const V1: [&str; 6] = [
    "review",
    "fdtable",
    "v6.10",
    "rlimit-skipped-by-fast-path",
    "--scenario",
    "rlimit-lowered",
];

/// Yu Ma's v1 fast path breaks RLIMIT_NOFILE where v6.10 holds: exit 1, the
/// changed verdicts first, the trace, and a replay line that reproduces it.
#[test]
fn a_patch_that_breaks_what_base_holds_exits_1_with_trace_and_replay() {
    let o = vfsmc(&V1);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let verdicts: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("VERDICTS"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(verdicts[0].starts_with("NEW "), "{out}");
    assert!(
        verdicts.iter().any(|l| l.contains("violates emfile")),
        "{out}"
    );
    assert!(out.contains("VIOLATED emfile"), "{out}");
    for section in ["NEW VIOLATIONS", "COSTS per call", "WHAT THIS COVERS"] {
        assert!(out.contains(section), "no {section}:\n{out}");
    }
    for l in out.lines().filter(|l| !l.starts_with("replay: ")) {
        assert!(l.chars().count() <= 80, "wider than 80 columns: {l}");
    }
    let replays: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("replay: vfsmc "))
        .collect();
    assert!(!replays.is_empty(), "{out}");
    for line in replays {
        let again = vfsmc(&line.split(' ').collect::<Vec<_>>());
        assert_eq!(again.status.code(), Some(1), "{line}");
        assert!(stdout(&again).contains("VIOLATED emfile"), "{line}");
    }
}

#[test]
fn a_patch_that_holds_where_base_holds_exits_0() {
    let o = vfsmc(&[
        "review",
        "fdtable",
        "v6.10",
        "current",
        "--scenario",
        "dupfd-vs-close",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("PATCHED holds everywhere BASE holds"), "{out}");
    assert!(!out.contains("NEW VIOLATIONS"), "{out}");
}

/// The coverage names what the engines cannot see and the stand-ins the
/// executions use: a "holds" is never more than it is.
#[test]
fn markdown_and_json_carry_the_same_findings() {
    let md = stdout(&vfsmc(&[&V1[..], &["--format", "markdown"]].concat()));
    assert!(md.contains("| **NEW** | rlimit-lowered | loom |"), "{md}");
    assert!(md.contains("#### What this covers"), "{md}");
    assert!(md.contains("cannot show weak-memory outcomes"), "{md}");
    let o = vfsmc(&[&V1[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["breaks"], true);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "loom and pct on one scenario");
    assert!(cells.iter().all(|c| c["change"] == "new"));
    assert!(cells.iter().all(|c| c["patched"]["invariant"] == "emfile"));
    let stand_ins = v["coverage"]["stand_ins"].as_array().unwrap();
    assert!(stand_ins
        .iter()
        .any(|s| s["kernel"].as_str().unwrap().contains("rcu_dereference")));
}

#[test]
fn bad_review_input_exits_2() {
    for (args, says) in [
        (vec!["review", "nope", "a", "b"], "unknown model"),
        (
            vec!["review", "fdtable", "v6.10", "nope"],
            "no variant 'nope'",
        ),
        (
            vec!["review", "fdtable", "v6.10", "current", "--scenario", "x"],
            "no scenario 'x'",
        ),
        (
            vec!["review", "fdtable", "v6.10", "current", "--engine", "tla"],
            "unknown engine",
        ),
        (
            vec![
                "review",
                "fdtable",
                "v6.10",
                "current",
                "--confidence",
                "1.5",
            ],
            "--confidence",
        ),
    ] {
        let o = vfsmc(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// The n and k a PCT check prints are measured: a litmus test has two
/// threads and the scenario's driver, and `--confidence` runs exactly the
/// runs the printed guarantee needs.
#[test]
fn pct_prints_measured_n_and_k_and_confidence_picks_the_runs() {
    let args = [
        "check",
        "litmus",
        "--variant",
        "SB+fencembonceonces",
        "--engine",
        "pct",
        "--pct-depth",
        "2",
        "--confidence",
        "0.99",
        "--format",
        "json",
    ];
    let o = vfsmc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let c = &v["confidence"];
    let (n, k) = (c["threads"].as_u64().unwrap(), c["steps"].as_u64().unwrap());
    assert_eq!(n, 3, "two threads and the driver: {c}");
    assert!(k >= 2, "{c}");
    assert_eq!(c["depth"], 2);
    let p = 1.0 / (n as f64 * k as f64);
    assert!(
        (c["per_run_bound"].as_f64().unwrap() - p).abs() < 1e-12,
        "{c}"
    );
    let needed = runs_for(p, 0.99);
    assert_eq!(
        v["confidence_target"]["runs"].as_u64().unwrap(),
        needed,
        "{v}"
    );
    let runs = v["executions"].as_u64().unwrap();
    assert!(runs >= needed, "{v}");
    assert_eq!(c["runs"].as_u64().unwrap(), runs);
    let miss = c["miss_probability"].as_f64().unwrap();
    assert!(miss <= 0.01 && miss > 0.0, "{c}");
    assert!((miss - miss_probability(p, runs as usize)).abs() < 1e-12);

    let text = stdout(&vfsmc(&args[..10]));
    assert!(
        text.contains(&format!("pct: measured n={n} threads, k={k} steps")),
        "{text}"
    );
    assert!(text.contains(&format!("{runs} runs all miss it")), "{text}");
    assert!(
        text.contains(&format!("confidence 0.99: {needed} runs asked for")),
        "{text}"
    );
}

#[test]
fn runs_for_and_miss_probability_agree() {
    for p in [1e-7, 1e-3, 0.25, 0.5] {
        for c in [0.5, 0.9, 0.99, 0.999] {
            let r = runs_for(p, c) as usize;
            assert!(miss_probability(p, r) <= 1.0 - c + 1e-12, "{p} {c}");
            assert!(
                miss_probability(p, r - 1) > 1.0 - c - 1e-12,
                "{p} {c}: not the fewest"
            );
        }
    }
    assert_eq!(runs_for(1.0, 0.99), 1);
    assert_eq!(miss_probability(1.0, 1), 0.0);
}

/// Under a terminal (script(1) gives vfsmc one) a search shows its progress
/// line on stderr; with --quiet, or with stdout not a terminal, nothing
/// extra. The trace is the same either way.
#[test]
fn the_progress_line_is_drawn_on_terminals_only_and_changes_no_trace() {
    let bin = env!("CARGO_BIN_EXE_vfsmc");
    let cmd = format!(
        "{bin} check fdtable --variant fget-skips-fdt-recheck --scenario expand-vs-fget-recycled \
         --engine loom"
    );
    let script = |extra: &str| {
        let o = Command::new("script")
            .args(["-qefc", &format!("{cmd}{extra}"), "/dev/null"])
            .output()
            .expect("script(1) from util-linux runs");
        String::from_utf8_lossy(&o.stdout).replace('\r', "")
    };
    let tty = script("");
    assert!(tty.contains("executions ("), "no progress line:\n{tty}");
    assert!(tty.contains("loom bound"), "no loom bound:\n{tty}");
    let quiet = script(" --quiet");
    assert!(!quiet.contains("executions ("), "--quiet drew:\n{quiet}");
    let piped = vfsmc(&cmd.split(' ').skip(1).collect::<Vec<_>>());
    assert!(
        !stderr(&piped).contains("executions ("),
        "{}",
        stderr(&piped)
    );
    let trace = |s: &str| {
        s.lines()
            .skip_while(|l| !l.contains("VIOLATED"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(!trace(&stdout(&piped)).is_empty());
    assert_eq!(trace(&quiet), trace(&stdout(&piped)));
    assert_eq!(trace(&tty), trace(&stdout(&piped)));
}

/// The issue-16 patch: `try_to_unlazy` legitimizing the path before the
/// links. On a scenario that follows a symlink but never fails the
/// legitimization with the link on the stack, the change runs and alters
/// traces, yet the review must not say "holds": exit 3, naming the exit no
/// search reached. On the scenario that fails it there, the engine finds
/// the refcount bug: exit 1.
#[test]
fn a_change_never_exercised_where_it_differs_is_inconclusive_until_a_scenario_reaches_it() {
    let review = |scenario: &str| {
        vfsmc(&[
            "review",
            "unlazy",
            "current",
            "unlazy-path-before-links",
            "--scenario",
            scenario,
            "--engine",
            "loom",
        ])
    };
    let before = review("symlink-vs-rename");
    let out = stdout(&before);
    assert_eq!(before.status.code(), Some(3), "{out}{}", stderr(&before));
    assert!(out.contains("INCONCLUSIVE (exit 3)"), "{out}");
    let unreached: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.trim_start()
                .starts_with("never reached: model/src/namei/unlazy.rs:")
        })
        .collect();
    assert!(!unreached.is_empty(), "no unreached exit named:\n{out}");
    assert!(out.contains("legitimize_path failed"), "{out}");

    let after = review("unlazy-link-vs-rename-dir");
    let out = stdout(&after);
    assert_eq!(after.status.code(), Some(1), "{out}{}", stderr(&after));
    assert!(out.contains("VIOLATED refs_exact"), "{out}");
}

/// A review of two variants whose code differs nowhere a search goes is
/// not a proof either: the same executions with the same traces on every
/// scenario is inconclusive.
#[test]
fn identical_traces_everywhere_are_inconclusive() {
    let o = vfsmc(&[
        "review",
        "unlazy",
        "current",
        "current",
        "--scenario",
        "kill-vs-walk",
        "--engine",
        "loom",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{}", stderr(&o));
    assert!(out.contains("exactly BASE's executions"), "{out}");
}

/// The review of a lockless fd_install racing an expansion that skips
/// synchronize_rcu, on churn under loom, in `format`.
fn review_lost_install(format: &str) -> Output {
    vfsmc(&[
        "review",
        "fdtable",
        "current",
        "expand-skips-synchronize-rcu",
        "--scenario",
        "churn",
        "--engine",
        "loom",
        "--format",
        format,
    ])
}

/// The mail report of a lockless fd_install racing an expansion that
/// skips synchronize_rcu: at most about 60 lines (replay lines aside, 80
/// columns), the install and the copy that misses it kept, the set-up
/// folded, the stale read marked, and a replay line that reproduces it.
#[test]
fn the_mail_report_fits_a_mail_and_keeps_the_race() {
    let o = review_lost_install("mail");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.lines().count() <= 62,
        "{} lines:\n{out}",
        out.lines().count()
    );
    for l in out.lines().filter(|l| !l.starts_with("replay: ")) {
        assert!(l.chars().count() <= 80, "wider than 80 columns: {l}");
    }
    assert!(out.contains("steps of set-up …"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let install = lines.windows(2).find(|w| {
        w[0].contains("rcu_assign_pointer(fdtable#1.fd[3])")
            && (w[0].contains("NULL→file#") || w[1].contains("NULL→file#"))
    });
    assert!(
        install.is_some(),
        "the racing install is folded away:\n{out}"
    );
    assert!(
        out.contains("rcu_dereference(fdtable#1.fd[3]) ="),
        "the copy is folded:\n{out}"
    );
    assert!(out.contains("(stale: step"), "{out}");
    let replay = out
        .lines()
        .find_map(|l| l.strip_prefix("replay: vfsmc "))
        .expect("a replay line");
    let again = vfsmc(&replay.split(' ').collect::<Vec<_>>());
    assert!(
        stdout(&again).contains("VIOLATED no_lost_install"),
        "{replay}"
    );
}

/// `--format svg` draws the first new violation and carries its replay line.
#[test]
fn the_svg_of_a_review_carries_the_replay_line() {
    let o = review_lost_install("svg");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(out.starts_with("<svg") || out.starts_with("<?xml"), "{out}");
    assert!(
        out.contains("replay: vfsmc check fdtable --variant expand-skips-synchronize-rcu"),
        "{out}"
    );
}

/// A fresh, empty directory under the system's temporary one.
fn empty_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vfsmc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The verdict rows of a text review, the seconds column cut off.
fn verdict_rows(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.starts_with("VERDICTS"))
        .take_while(|l| !l.starts_with("PATCH COVERAGE") && !l.starts_with("COSTS"))
        .map(|l| {
            let l = l.trim_end();
            l.rsplit_once(' ')
                .map_or(l, |(row, _)| row)
                .trim_end()
                .to_string()
        })
        .collect()
}

/// A second review of the same base with the same binary and budget
/// re-proves nothing: every holding search comes from the cache, the report
/// is the same but for its seconds; a violation is searched again (its
/// trace is not kept); an entry that cannot be read is a miss, noted.
#[test]
fn a_second_review_reads_its_proofs_from_the_cache() {
    let dir = empty_dir("review-cache");
    let cache = dir.to_str().expect("a UTF-8 temporary path");
    let first = vfsmc_cached(&V1, cache);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert!(!stdout(&first).contains("cached"), "{}", stdout(&first));
    let entries = std::fs::read_dir(&dir).expect("the cache exists").count();
    assert!(entries >= 1, "the holding BASE searches are kept");
    let second = vfsmc_cached(&V1, cache);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let (a, b) = (stdout(&first), stdout(&second));
    let cached_rows = b
        .lines()
        .filter(|l| l.trim_end().ends_with("cached"))
        .count();
    assert_eq!(cached_rows, entries, "every kept proof is read back:\n{b}");
    assert_eq!(verdict_rows(&a), verdict_rows(&b));
    assert!(
        b.contains("VIOLATED emfile"),
        "the violation is found again:\n{b}"
    );
    for entry in std::fs::read_dir(&dir).unwrap() {
        std::fs::write(entry.unwrap().path(), "{ not json").unwrap();
    }
    let third = vfsmc_cached(&V1, cache);
    assert_eq!(third.status.code(), Some(1));
    assert!(
        stderr(&third).contains("ignoring unreadable cache entry"),
        "{}",
        stderr(&third)
    );
    assert!(!stdout(&third).contains("cached"), "{}", stdout(&third));
    assert_eq!(verdict_rows(&a), verdict_rows(&stdout(&third)));
    let _ = std::fs::remove_dir_all(&dir);
}
