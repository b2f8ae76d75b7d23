//! The files that run vfsmc elsewhere cannot drift from its command line:
//! the Kubernetes indexed Job of the deep tier (deploy/k8s/) and the CI
//! workflow's jobs run commands vfsmc accepts, and divide the work the
//! way they claim (as many parts as pods or matrix entries).

use std::path::Path;

use serde_yaml_ng::Value;

fn read(path: &str) -> Vec<Value> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// The vfsmc command line of a shell script: its words up to a redirection
/// or `||`, which must start with `vfsmc` or `target/release/vfsmc`.
fn vfsmc_words(script: &str) -> Vec<String> {
    let words: Vec<String> = script
        .split_whitespace()
        .take_while(|w| !w.starts_with('>') && *w != "||")
        .map(str::to_string)
        .collect();
    assert!(
        words
            .first()
            .is_some_and(|w| w == "vfsmc" || w.ends_with("/vfsmc")),
        "not a vfsmc command: {script}"
    );
    words
}

fn accepted(words: &[String], whence: &str) {
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    if let Err(e) = vfsmc::cli::accepts(&args) {
        panic!("{whence}: vfsmc refuses `{}`:\n{e}", words.join(" "));
    }
}

/// The number after `flag` in `words`.
fn number_after(words: &[String], flag: &str) -> Option<u64> {
    let i = words.iter().position(|w| w == flag)?;
    words.get(i + 1)?.parse().ok()
}

/// The budget `words` search with under the variables `env` (name, value),
/// and nothing else of the environment.
fn budget(words: &[String], env: &[(String, String)]) -> vfsmc::engine::Budget {
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    vfsmc::cli::check_budget(&args, |name| {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    })
    .unwrap_or_else(|e| panic!("`{}`: {e}", words.join(" ")))
}

/// `check_budget`, which the tests below read the deploy files' budgets
/// through, answers as `vfsmc check` would: only for a check command, a
/// variable it cannot read is an error rather than the default, and a flag
/// wins over the variable of the same knob (`--iterations` also caps loom).
#[test]
fn check_budget_reads_a_command_line_as_vfsmc_check_does() {
    let none = |_: &str| None;
    let refused = vfsmc::cli::check_budget(&["vfsmc", "merge", "deep-1.json"], none);
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("not a `vfsmc check` command")),
        "{refused:?}"
    );
    let iterations = |value: &'static str| {
        move |name: &str| (name == "VFSMC_ITERATIONS").then(|| value.to_string())
    };
    let unreadable = vfsmc::cli::check_budget(&["vfsmc", "check"], iterations("many"));
    assert!(
        unreadable
            .as_ref()
            .is_err_and(|e| e.contains("VFSMC_ITERATIONS")),
        "{unreadable:?}"
    );
    let words = ["vfsmc", "check", "--iterations", "7"];
    let flagged = vfsmc::cli::check_budget(&words, iterations("100000")).expect("a budget");
    assert_eq!((flagged.iterations, flagged.loom_cap), (7, Some(7)));
    let from_var = vfsmc::cli::check_budget(&["vfsmc", "check"], iterations("100000"));
    let from_var = from_var.expect("a budget");
    assert_eq!((from_var.iterations, from_var.loom_cap), (100000, None));
}

/// The deep tier proves what it searches exhaustively: loom runs uncapped
/// (a capped part is not exhaustive, and a split part spends the cap on its
/// probes first), while random and PCT keep a budget of their own.
fn assert_loom_uncapped(words: &[String], env: &[(String, String)], whence: &str) {
    let b = budget(words, env);
    assert_eq!(b.loom_cap, None, "{whence}: the deep tier caps loom");
    assert!(
        b.iterations > vfsmc::engine::Budget::default().iterations,
        "{whence}: random and PCT get no more than the default {} runs in the deep tier",
        b.iterations
    );
}

/// Name/value pairs of a YAML `env`: a Kubernetes list or an Actions map.
fn env_pairs(env: &Value) -> Vec<(String, String)> {
    let text = |v: &Value| v.as_str().map(str::to_string);
    match env {
        Value::Sequence(list) => list
            .iter()
            .filter_map(|e| Some((text(&e["name"])?, text(&e["value"])?)))
            .collect(),
        Value::Mapping(map) => map
            .iter()
            .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect(),
        _ => Vec::new(),
    }
}

fn script_of(container: &Value) -> String {
    let args = container["args"].as_sequence().expect("args");
    args[0].as_str().expect("a script").to_string()
}

#[test]
fn the_deep_tier_job_runs_a_command_vfsmc_accepts_with_one_part_per_pod() {
    let docs = read("deploy/k8s/deep-tier.yaml");
    let spec = &docs[0]["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_u64().expect("completions");
    let container = &spec["template"]["spec"]["containers"][0];
    let env = env_pairs(&container["env"]);
    let shards = env
        .iter()
        .find(|(name, _)| name == "VFSMC_SHARDS")
        .and_then(|(_, value)| value.parse::<u64>().ok());
    assert_eq!(shards, Some(completions), "VFSMC_SHARDS is the pod count");
    let script = script_of(container);
    assert!(script.contains("$JOB_COMPLETION_INDEX"), "{script}");
    let words = vfsmc_words(&script);
    accepted(&words, "deploy/k8s/deep-tier.yaml");
    assert_eq!(words[1], "check");
    assert_eq!(
        number_after(&words, "--split"),
        Some(completions),
        "each pod takes one part of every divided search"
    );
    assert!(words.iter().any(|w| w == "json"), "{script}");
    assert_loom_uncapped(&words, &env, "deploy/k8s/deep-tier.yaml");
}

#[test]
fn the_merge_job_runs_vfsmc_merge() {
    let docs = read("deploy/k8s/deep-tier-merge.yaml");
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    let words = vfsmc_words(&script_of(container));
    assert_eq!(words[1], "merge");
    let mut concrete = words.clone();
    concrete[2] = "deep-0.json".to_string();
    accepted(&concrete, "deploy/k8s/deep-tier-merge.yaml");
}

#[test]
fn the_workflows_deep_job_splits_each_search_over_its_matrix() {
    let docs = read(".github/workflows/vfsmc.yml");
    let deep = &docs[0]["jobs"]["deep"];
    let shards = deep["strategy"]["matrix"]["shard"]
        .as_sequence()
        .expect("a shard matrix")
        .len() as u64;
    let step = deep["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("--tier deep")))
        .expect("a step that runs the deep tier");
    let run = step["run"].as_str().expect("a script");
    let words = vfsmc_words(&run.replace("${{ matrix.shard }}", "1"));
    accepted(&words, ".github/workflows/vfsmc.yml");
    assert_loom_uncapped(
        &words,
        &env_pairs(&step["env"]),
        ".github/workflows/vfsmc.yml",
    );
    assert_eq!(number_after(&words, "--split"), Some(shards), "{run}");
    let shard = words
        .iter()
        .position(|w| w == "--shard")
        .map(|i| words[i + 1].clone());
    assert_eq!(shard, Some(format!("1/{shards}")), "{run}");
}

/// Every step of the workflow that runs the built vfsmc runs a command line
/// vfsmc accepts (matrix values filled in), so no job rots when a flag is
/// renamed.
#[test]
fn every_vfsmc_command_of_the_workflow_is_one_vfsmc_accepts() {
    let docs = read(".github/workflows/vfsmc.yml");
    let jobs = docs[0]["jobs"].as_mapping().expect("jobs");
    let mut seen = 0;
    for (name, job) in jobs {
        let steps = job["steps"].as_sequence().expect("steps");
        for run in steps.iter().filter_map(|s| s["run"].as_str()) {
            if !run.trim_start().starts_with("target/release/vfsmc") {
                continue;
            }
            let words = vfsmc_words(&run.replace("${{ matrix.shard }}", "1"));
            let job = name.as_str().unwrap_or("?");
            accepted(&words, &format!(".github/workflows/vfsmc.yml job {job}"));
            seen += 1;
        }
    }
    assert!(
        seen >= 6,
        "only {seen} vfsmc commands found in the workflow"
    );
}
