//! The layers stay apart: the engine facade (`model/rt/src/sync.rs`) imports
//! nothing from the runtime crate, and no model, primitive or spec reaches
//! the driver API (`vfsmc_model::driver`), which only the checker's engines
//! may use to start, reset or fail an execution.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_facade_is_a_leaf() {
    let text = std::fs::read_to_string(root().join("model/rt/src/sync.rs")).unwrap();
    let imports: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("crate::") || l.contains("super::"))
        .collect();
    assert!(
        imports.is_empty(),
        "sync.rs imports from the crate: {imports:?}"
    );
}

#[test]
fn models_and_specs_never_use_the_driver() {
    let mut offenders = Vec::new();
    let files = ["model/src", "model/rt/src", "specs/src"]
        .into_iter()
        .flat_map(|d| rust_files(&root().join(d)))
        .filter(|f| {
            !f.ends_with("model/rt/src/driver.rs")
                && !f.ends_with("model/rt/src/lib.rs")
                && !f.ends_with("model/src/lib.rs")
        });
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = !line.trim_start().starts_with("//");
            if code && (line.contains("driver::") || line.contains("crate::driver")) {
                offenders.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}
