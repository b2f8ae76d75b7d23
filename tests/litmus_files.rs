//! `vfsmc litmus` on the repository's own litmus files (tests/litmus/), and
//! the reader on malformed input. Every verdict here is computed by the
//! engines from the files' `Result:` lines; nothing states what an engine
//! should observe.

use std::path::{Path, PathBuf};
use std::process::Command;

use vfsmc::litmus::{judge_file, needs, Options, Verdict};
use vfsmc_specs::litmus::ast::ErrorKind;
use vfsmc_specs::litmus::parse::parse;

fn vfsmc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vfsmc"))
        .args(args)
        .output()
        .expect("vfsmc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn own_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/litmus");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/litmus exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "litmus"))
        .collect();
    v.sort();
    v
}

/// Every file of the repository either agrees with its `Result:` line or is
/// n/a with the reason of a need loom is blind to; none is weaker, stronger
/// or unsupported.
#[test]
fn own_files_agree_or_say_why_not() {
    for f in own_files() {
        let j = judge_file(&f, Options::default()).expect("the repository's files are well formed");
        println!("{}", j.text());
        match j.verdict {
            Verdict::Agree => {}
            Verdict::NotApplicable => assert!(!j.reason.is_empty(), "{}", j.text()),
            _ => panic!("{}", j.text()),
        }
    }
}

/// The engine probes of the vendored loom's DPOR fix must be observed: an
/// unpatched loom reports them Never, which this judges stronger.
#[test]
fn engine_probes_are_observed() {
    let probes: Vec<_> = own_files()
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("probe-")
        })
        .collect();
    assert_eq!(probes.len(), 4, "the four probe-… files");
    for f in probes {
        let j = judge_file(&f, Options::default()).expect("well formed");
        assert_eq!(j.verdict, Verdict::Agree, "{}", j.text());
    }
}

/// The judge is deterministic and the CLI exits 0 on the repository's files.
#[test]
fn cli_judges_a_directory_the_same_twice() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/litmus");
    let (code, a, _) = vfsmc(&["litmus", dir, "--jobs", "2"]);
    assert_eq!(code, 0, "{a}");
    let (_, b, _) = vfsmc(&["litmus", dir, "--jobs", "1"]);
    assert_eq!(a, b, "same input, same output, any --jobs");
    let (_, json, _) = vfsmc(&["litmus", dir, "--format", "json"]);
    let first: serde_json::Value =
        serde_json::from_str(json.lines().next().expect("a line")).expect("JSON");
    for k in ["file", "result", "observed", "verdict", "reason"] {
        assert!(first.get(k).is_some(), "field {k} in {first}");
    }
}

/// A test whose Result: line is wrong is judged stronger or weaker, and the
/// CLI exits 1: the judge can fail.
#[test]
fn a_wrong_result_line_fails() {
    let tmp = std::env::temp_dir().join(format!("vfsmc-litmus-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/litmus/MP+poonceonces.litmus"),
    )
    .unwrap();
    let wrong = tmp.join("MP-claimed-never.litmus");
    std::fs::write(&wrong, src.replace("Result: Sometimes", "Result: Never")).unwrap();
    let j = judge_file(&wrong, Options::default()).unwrap();
    assert_eq!(j.verdict, Verdict::Weaker, "{}", j.text());
    let (code, out, _) = vfsmc(&["litmus", wrong.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let sb = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/litmus/SB+fencembonceonces.litmus"),
    )
    .unwrap();
    let wrong = tmp.join("SB-claimed-sometimes.litmus");
    std::fs::write(&wrong, sb.replace("Result: Never", "Result: Sometimes")).unwrap();
    let j = judge_file(&wrong, Options::default()).unwrap();
    assert_eq!(j.verdict, Verdict::Stronger, "{}", j.text());
    assert!(needs(&parse(&sb).unwrap()).is_empty());
}

/// A `stronger` verdict on a stand-in documented as stronger than LKMM
/// names it and does not fail the run; an undocumented one does (above).
#[test]
fn a_documented_stronger_stand_in_does_not_fail() {
    let tmp = std::env::temp_dir().join(format!("vfsmc-litmus-doc-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Message passing whose reader uses rcu_dereference, an acquire load
    // here: LKMM allows the outcome (no dependency orders the read of x).
    let f = tmp.join("MP+release+rcu_dereference.litmus");
    std::fs::write(
        &f,
        "C MP+release+rcu_dereference\n(* Result: Sometimes *)\n{}\n\
         P0(int *x, int *y) { WRITE_ONCE(*x, 1); smp_store_release(y, 1); }\n\
         P1(int *x, int *y) { int r0; int r1; r0 = rcu_dereference(*y); r1 = READ_ONCE(*x); }\n\
         exists (1:r0=1 /\\ 1:r1=0)\n",
    )
    .unwrap();
    let j = judge_file(&f, Options::default()).unwrap();
    assert_eq!(j.verdict, Verdict::Stronger, "{}", j.text());
    assert!(j.reason.contains("rcu_dereference"), "{}", j.text());
    let (code, out, _) = vfsmc(&["litmus", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
}

/// Mutations of every repository file (a deleted brace, a bad register, a
/// truncated clause) are malformed with a line and column; the CLI exits 2.
#[test]
fn mutations_are_malformed_with_a_position() {
    let tmp = std::env::temp_dir().join(format!("vfsmc-litmus-mut-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for f in own_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut mutants = Vec::new();
        // Each closing brace deleted in turn.
        for (i, _) in text.match_indices('}') {
            let mut m = text.clone();
            m.remove(i);
            mutants.push(("brace", m));
        }
        // A register the clause names renamed where the clause names it
        // (or, in a clause on locations only, the first location renamed).
        // (A file without a clause, which herd7 reads as forall (true), has
        // neither mutation.)
        if let Some(clause_at) = text.rfind("exists") {
            let (head, clause) = text.split_at(clause_at);
            let bad = if clause.contains(":r") {
                clause.replacen(":r", ":rq", 1)
            } else {
                clause.replacen('=', "q=", 1)
            };
            mutants.push(("register", format!("{head}{bad}")));
            // The clause cut short.
            let cut = text.trim_end().len() - 4;
            mutants.push(("truncated", text[..cut].to_string()));
        }
        for (what, m) in mutants {
            let e = parse(&m).expect_err(&format!("{} with a {what} mutation", f.display()));
            assert_eq!(e.kind, ErrorKind::Malformed, "{}: {what}: {e}", f.display());
            assert!(e.pos.line > 0 && e.pos.col > 0);
        }
        let path = tmp.join("mutant.litmus");
        std::fs::write(&path, text.replacen('}', "", 1)).unwrap();
        let (code, _, err) = vfsmc(&["litmus", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("mutant.litmus:")
                && err
                    .split(':')
                    .nth(2)
                    .is_some_and(|l| l.trim().parse::<u32>().is_ok()),
            "file:line:col in {err}"
        );
    }
}
