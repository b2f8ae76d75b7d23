//! The progress line of long searches: on a terminal, one line on stderr
//! with the check, the executions so far and their rate, the current loom
//! bound or PCT run k of N, and the time elapsed; cleared when the check
//! ends. Nothing is drawn when stdout or stderr is not a terminal, or with
//! `--quiet`.
//!
//! The engines only bump a counter and name their phase ([`execution`],
//! [`phase`]); a ticker thread reads both and redraws. Nothing here feeds
//! back into a search, so traces and verdicts are the same with or without
//! it. The line is drawn by indicatif on a duplicate of stderr taken before
//! any search starts: searches point descriptor 2 at /dev/null to silence
//! the engines (`crate::quiet`), and the line must stay visible.

use std::fs::File;
use std::io::IsTerminal;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static ENABLED: AtomicBool = AtomicBool::new(false);
static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
static PHASE: Mutex<Phase> = Mutex::new(Phase::Starting);
static ITEMS_DONE: AtomicUsize = AtomicUsize::new(0);

/// What a search is doing, as the line shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Starting,
    /// loom at preemption bound `Some(b)`, or unbounded.
    LoomBound(Option<usize>),
    /// Runs of a sampling engine: `of` in all, counted from `from`
    /// executions on.
    Runs {
        engine: &'static str,
        of: usize,
        from: usize,
    },
    /// A failure found, searching again for fewer preemptions.
    Shrinking {
        depth: usize,
    },
}

/// Counts one execution (called by every engine, once per execution; a
/// relaxed increment, so the search pays nothing measurable).
pub fn execution() {
    EXECUTIONS.fetch_add(1, Ordering::Relaxed);
}

/// The executions counted so far.
pub fn executions() -> usize {
    EXECUTIONS.load(Ordering::Relaxed)
}

/// Counts one item of a run on several workers as finished.
pub fn item_done() {
    ITEMS_DONE.fetch_add(1, Ordering::Relaxed);
}

/// Names what the search does from now on.
pub fn phase(p: Phase) {
    *PHASE.lock().unwrap_or_else(|e| e.into_inner()) = p;
}

/// A sampling engine starts `of` runs.
pub fn runs(engine: &'static str, of: usize) {
    phase(Phase::Runs {
        engine,
        of,
        from: executions(),
    });
}

/// Turns the line on when `quiet` is off and both stdout and stderr are
/// terminals (called once by the CLI).
pub fn enable(quiet: bool) {
    let tty = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    ENABLED.store(!quiet && tty, Ordering::Relaxed);
}

/// The line's text.
pub fn line(label: &str, phase: Phase, executions: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        (executions as f64 / secs) as u64
    } else {
        0
    };
    let what = match phase {
        Phase::Starting => String::new(),
        Phase::LoomBound(Some(b)) => format!(", loom bound {b}"),
        Phase::LoomBound(None) => ", loom unbounded".to_string(),
        Phase::Runs { engine, of, from } => {
            format!(
                ", {engine} run {} of {of}",
                executions.saturating_sub(from).min(of)
            )
        }
        Phase::Shrinking { depth } => format!(", shrinking at PCT depth {depth}"),
    };
    let s = elapsed.as_secs();
    format!(
        "{label}: {executions} executions ({rate}/s){what}, {}:{:02}",
        s / 60,
        s % 60
    )
}

/// The line of one check, drawn until dropped.
pub struct Meter {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

/// A terminal on a duplicate of stderr.
fn stderr_term() -> Option<console::Term> {
    let fd: OwnedFd = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
    Some(console::Term::read_write_pair(
        std::io::stdin(),
        File::from(fd),
    ))
}

impl Meter {
    /// Starts the line of check `label`, if the line is enabled.
    pub fn start(label: String) -> Option<Meter> {
        phase(Phase::Starting);
        let base = executions();
        Meter::draw(move |elapsed| {
            let p = *PHASE.lock().unwrap_or_else(|e| e.into_inner());
            let p = match p {
                Phase::Runs { engine, of, from } => Phase::Runs {
                    engine,
                    of,
                    from: from.saturating_sub(base),
                },
                other => other,
            };
            line(&label, p, executions() - base, elapsed)
        })
    }

    /// Starts the line of a run of `total` items on several workers: items
    /// finished and executions of all of them (each search's phase would
    /// be one worker's only).
    pub fn items(label: &str, total: usize) -> Option<Meter> {
        let (base, done) = (executions(), ITEMS_DONE.load(Ordering::Relaxed));
        let label = label.to_string();
        Meter::draw(move |elapsed| {
            let finished = ITEMS_DONE.load(Ordering::Relaxed) - done;
            let what = format!("{label}: {finished} of {total} items");
            line(&what, Phase::Starting, executions() - base, elapsed)
        })
    }

    /// Redraws `text(elapsed)` five times a second until dropped.
    fn draw(text: impl Fn(Duration) -> String + Send + 'static) -> Option<Meter> {
        if !ENABLED.load(Ordering::Relaxed) {
            return None;
        }
        let term = stderr_term()?;
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::term(term, 4));
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").ok()?);
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (bar.clone(), stop.clone());
        let start = Instant::now();
        let ticker = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                b.set_message(text(start.elapsed()));
                b.tick();
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Some(Meter {
            bar,
            stop,
            ticker: Some(ticker),
        })
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}
