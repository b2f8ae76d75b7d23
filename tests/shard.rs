//! Sharded runs: for N = 1..=4 the shards of a registry run take disjoint
//! items that cover the whole run, and `vfsmc merge` of their JSON gives
//! the unsharded run's verdict table and exit code. One execution per
//! search (PCT over two seeds, loom capped at one execution per bound)
//! keeps it cheap, and misses bugs, so both matching and differing
//! verdicts are merged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Output};

use vfsmc::engine::Knob;
use vfsmc::shard::Shard;

const RUN: [&str; 8] = [
    "check",
    "--engine",
    "loom,pct",
    "--iterations",
    "1",
    "--seeds",
    "2",
    "--quiet",
];

fn vfsmc(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vfsmc"));
    for knob in Knob::ALL {
        cmd.env_remove(knob.env());
    }
    for v in ["VFSMC_SHARD", "VFSMC_SHARDS", "JOB_COMPLETION_INDEX"] {
        cmd.env_remove(v);
    }
    cmd.env("VFSMC_SHRINK_MAX_DEPTH", "0")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the vfsmc binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The verdict table: every line but the tally's time.
fn table(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| match l.split_once(" n/a in ") {
            Some((counts, _)) => format!("{counts} n/a"),
            None => l.to_string(),
        })
        .filter(|l| !l.starts_with("replay: ") && !l.starts_with("    ") && !l.starts_with("---"))
        .filter(|l| !l.starts_with("VIOLATED") && !l.starts_with("state:") && !l.is_empty())
        .collect()
}

/// The JSON item lines of `out` (`--format json`), parsed.
fn item_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).expect("an item line"))
        .collect()
}

fn items(out: &str) -> Vec<(usize, usize)> {
    item_lines(out)
        .iter()
        .map(|v| {
            (
                v["item"].as_u64().unwrap() as usize,
                v["items"].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vfsmc-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn shards_are_disjoint_cover_the_run_and_merge_to_it() {
    let whole = vfsmc(&RUN, &[]);
    let expected = table(&stdout(&whole));
    assert!(
        expected.iter().any(|l| l.starts_with("ok ")),
        "{expected:?}"
    );
    assert!(
        expected.iter().any(|l| l.starts_with("FAIL ")),
        "{expected:?}"
    );
    let d = dir("merge");
    for n in 1..=4usize {
        let mut files = Vec::new();
        let mut seen = BTreeSet::new();
        let mut total = None;
        for i in 1..=n {
            let shard = format!("{i}/{n}");
            let mut args = RUN.to_vec();
            args.extend(["--format", "json", "--shard", &shard]);
            let o = vfsmc(&args, &[]);
            let out = stdout(&o);
            for (item, of) in items(&out) {
                assert!(seen.insert(item), "shard {shard} repeats item {item}");
                assert_eq!(*total.get_or_insert(of), of, "shards disagree on the run");
            }
            let f = d.join(format!("{i}-of-{n}.json"));
            std::fs::write(&f, out).unwrap();
            files.push(f);
        }
        let total = total.expect("some item");
        assert_eq!(
            seen,
            (0..total).collect(),
            "{n} shards do not cover the run"
        );
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().map(|f| f.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let merged = vfsmc(&args, &[]);
        assert_eq!(
            merged.status.code(),
            whole.status.code(),
            "{n} shards: exit code"
        );
        assert_eq!(
            table(&stdout(&merged)),
            expected,
            "{n} shards: verdict table"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_environment_names_the_shard_and_a_kubernetes_index_counts_from_zero() {
    let mut args = RUN.to_vec();
    args.extend(["--format", "json"]);
    let by_flag = stdout(&vfsmc(&[&args[..], &["--shard", "2/3"]].concat(), &[]));
    let by_env = stdout(&vfsmc(&args, &[("VFSMC_SHARD", "2/3")]));
    let by_k8s = stdout(&vfsmc(
        &args,
        &[("JOB_COMPLETION_INDEX", "1"), ("VFSMC_SHARDS", "3")],
    ));
    let numbers = |s: &str| items(s).into_iter().map(|x| x.0).collect::<Vec<_>>();
    assert!(!numbers(&by_flag).is_empty());
    assert!(numbers(&by_flag).iter().all(|n| n % 3 == 1));
    assert_eq!(numbers(&by_env), numbers(&by_flag));
    assert_eq!(numbers(&by_k8s), numbers(&by_flag));
}

#[test]
fn bad_shards_and_merges_are_bad_input() {
    for (args, env, says) in [
        (vec!["check", "--shard", "0/2"], vec![], "--shard=0/2"),
        (vec!["check", "--shard", "3/2"], vec![], "--shard=3/2"),
        (vec!["check"], vec![("VFSMC_SHARD", "x")], "VFSMC_SHARD=x"),
        (
            vec!["check"],
            vec![("JOB_COMPLETION_INDEX", "2"), ("VFSMC_SHARDS", "2")],
            "JOB_COMPLETION_INDEX=2",
        ),
    ] {
        let o = vfsmc(&args, &env);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let d = dir("bad-merge");
    let mut args = RUN.to_vec();
    args.extend(["--format", "json", "--shard", "1/2"]);
    let one = d.join("one.json");
    std::fs::write(&one, stdout(&vfsmc(&args, &[]))).unwrap();
    let one = one.display().to_string();
    for (files, says) in [
        (vec![one.as_str()], "missing"),
        (vec![one.as_str(), one.as_str()], "overlap"),
    ] {
        let o = vfsmc(&[&["merge"][..], &files].concat(), &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{files:?}: {err}");
        assert!(err.contains(says), "{files:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn shard_arithmetic() {
    assert_eq!(
        Shard::parse("--shard", "2/4"),
        Ok(Shard { index: 2, count: 4 })
    );
    for n in 1..=4 {
        for item in 0..20 {
            let takers = (1..=n)
                .filter(|&i| Shard { index: i, count: n }.takes(item))
                .count();
            assert_eq!(takers, 1, "item {item} of {n} shards");
        }
    }
}

/// One loom search split into 3 parts and run as 3 shards (one part each,
/// the way deploy/k8s/deep-tier.yaml runs the deep tier) merges into the
/// report of the same split run in one process: verdict, executions,
/// subtrees and probes; and `--split 0` is bad input.
#[test]
fn the_parts_of_one_split_search_are_shards_that_merge_into_it() {
    let run = [
        "check",
        "fdtable",
        "--variant",
        "current",
        "--scenario",
        "churn",
        "--engine",
        "loom",
        "--split",
        "3",
        "--quiet",
    ];
    let whole = vfsmc(&run, &[]);
    let summary = stdout(&whole);
    assert!(summary.contains("in 3 parts ("), "{summary}");
    let d = dir("split-merge");
    let mut files = Vec::new();
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let o = vfsmc(
            &[&run[..], &["--format", "json", "--shard", &shard]].concat(),
            &[],
        );
        let out = stdout(&o);
        assert_eq!(items(&out).len(), 1, "shard {shard} runs one part: {out}");
        assert!(out.contains(&format!("\"index\":{}", i - 1)), "{out}");
        let f = d.join(format!("part-{i}.json"));
        std::fs::write(&f, out).unwrap();
        files.push(f.display().to_string());
    }
    let args: Vec<&str> = ["merge"]
        .into_iter()
        .chain(files.iter().map(String::as_str))
        .collect();
    let merged = vfsmc(&args, &[]);
    assert_eq!(merged.status.code(), whole.status.code());
    assert_eq!(stdout(&merged).trim(), summary.trim());
    let bad = vfsmc(&[&run[..8], &["--split", "0"]].concat(), &[]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The split parts of each scenario in `out` (JSON item lines): a part
/// index per item, `None` for an item that runs its search whole.
fn parts_by_scenario(out: &str) -> BTreeMap<String, Vec<Option<u64>>> {
    let mut by = BTreeMap::<String, Vec<Option<u64>>>::new();
    for v in item_lines(out) {
        let scenario = v["scenario"].as_str().expect("a scenario").to_string();
        by.entry(scenario)
            .or_default()
            .push(v["part"]["index"].as_u64());
    }
    by
}

/// Over a tier, `--split` divides the searches of the rows marked for it
/// (`Scenario::split`: millions of executions) and runs every other search
/// as one item; naming a scenario divides its searches whatever its mark.
#[test]
fn a_tier_run_splits_only_the_rows_marked_for_it() {
    let run = [
        "check",
        "fdtable",
        "--tier",
        "deep",
        "--engine",
        "loom",
        "--iterations",
        "1",
        "--split",
        "3",
        "--format",
        "json",
        "--quiet",
    ];
    let by = parts_by_scenario(&stdout(&vfsmc(&run, &[])));
    let model = vfsmc_specs::model("fdtable").expect("the fdtable model");
    let marked = |name: &str| model.scenarios().iter().any(|s| s.name == name && s.split);
    let (divided, whole): (Vec<_>, Vec<_>) = by.iter().partition(|(name, _)| marked(name));
    assert!(!divided.is_empty() && !whole.is_empty(), "{by:?}");
    for (name, parts) in divided {
        let mut indices: Vec<Option<u64>> = parts.clone();
        indices.sort();
        indices.dedup();
        assert_eq!(
            indices,
            [Some(0), Some(1), Some(2)],
            "{name} in 3 parts: {parts:?}"
        );
    }
    for (name, parts) in &whole {
        assert!(
            parts.iter().all(Option::is_none),
            "{name} runs whole: {parts:?}"
        );
    }
    let (name, _) = whole[0];
    let named = [&run[..], &["--scenario", name, "--variant", "current"]].concat();
    let parts = &parts_by_scenario(&stdout(&vfsmc(&named, &[])))[name];
    assert_eq!(parts.len(), 3, "--scenario {name} is divided: {parts:?}");
}
