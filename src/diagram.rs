//! Counterexample diagrams: a trace as a sequence diagram, one lane per
//! thread (with its context and CPU), one row per step in the kernel's words
//! (the text of [`render::effect`]), lock-held spans as bars beside the lane,
//! and the violated invariant at the bottom. [`svg`] draws it for a browser
//! or a document, [`mermaid`] writes it for a PR comment.
//!
//! Both are built from one [`Diagram`], laid out from the typed steps of a
//! [`Record`]; nothing here reads the wording of a step to find its kind.

use std::fmt::Write as _;

use vfsmc_model::driver::Record;
use vfsmc_model::trace::{Effect, Step};

use crate::render;

/// One lane: a thread column of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The thread's name (its trace column).
    pub thread: &'static str,
    /// Its contexts and CPUs in the order it ran in them: `task cpu0`,
    /// `nmi cpu0`, `kthread`.
    pub context: String,
}

impl Lane {
    /// `T0 (task cpu0)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.thread, self.context)
    }
}

/// One row: one step of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The step's number, as the text trace numbers it (from 1).
    pub step: usize,
    /// Index into [`Diagram::lanes`].
    pub lane: usize,
    /// The kernel function, when it differs from the lane's previous row.
    pub func: Option<&'static str>,
    /// The step's effect in the kernel's words.
    pub text: String,
}

/// A lock held by one lane from one row to another (both included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    pub lane: usize,
    pub lock: &'static str,
    /// The acquiring function, e.g. `spin_lock`.
    pub how: &'static str,
    pub from: usize,
    /// The releasing row, or the last row when the trace ends with the lock
    /// still held.
    pub to: usize,
    pub released: bool,
    /// Locks this lane already held when it took this one: bars nest
    /// side by side.
    pub depth: usize,
}

/// A trace laid out as a sequence diagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagram {
    pub title: String,
    pub lanes: Vec<Lane>,
    pub rows: Vec<Row>,
    pub bars: Vec<Bar>,
    /// `VIOLATED inv after step N in T: message`, then the state lines.
    pub violation: Vec<String>,
}

/// `task cpu0`, or `task` for models that place no task on a CPU.
fn place(step: &Step) -> String {
    match step.cpu {
        Some(cpu) => format!("{} cpu{cpu}", step.context.name()),
        None => step.context.name().to_string(),
    }
}

fn lanes(record: &Record, cols: &[u8]) -> Vec<Lane> {
    cols.iter()
        .map(|&c| {
            let mut places: Vec<String> = Vec::new();
            for s in record.steps.iter().filter(|s| s.thread == c) {
                let p = place(s);
                if places.last() != Some(&p) && !places.contains(&p) {
                    places.push(p);
                }
            }
            Lane {
                thread: record.threads.get(usize::from(c)).copied().unwrap_or("?"),
                context: places.join(", "),
            }
        })
        .collect()
}

/// The lock bars: each acquisition paired with the same lane's next release
/// of the same lock.
fn bars(record: &Record, lane_of: impl Fn(&Step) -> usize) -> Vec<Bar> {
    let mut open: Vec<Bar> = Vec::new();
    let mut done = Vec::new();
    let last = record.steps.len().saturating_sub(1);
    for (row, s) in record.steps.iter().enumerate() {
        let Effect::Lock { op, lock, .. } = s.effect else {
            continue;
        };
        let lane = lane_of(s);
        if op.acquires() {
            let depth = open.iter().filter(|b| b.lane == lane).count();
            open.push(Bar {
                lane,
                lock,
                how: op.func(),
                from: row,
                to: last,
                released: false,
                depth,
            });
        } else if op.releases() {
            if let Some(i) = open.iter().rposition(|b| b.lane == lane && b.lock == lock) {
                let mut bar = open.remove(i);
                bar.to = row;
                bar.released = true;
                done.push(bar);
            }
        }
    }
    done.extend(open);
    done.sort_by_key(|b| (b.from, b.lane));
    done
}

impl Diagram {
    /// Lays out `record` under `title` (`model/variant [scenario] engine`).
    pub fn of(title: &str, record: &Record) -> Diagram {
        let cols = render::columns(record);
        let lane_of = |s: &Step| cols.iter().position(|c| *c == s.thread).unwrap_or(0);
        let mut last_func: Vec<Option<&str>> = vec![None; cols.len()];
        let rows = record
            .steps
            .iter()
            .enumerate()
            .map(|(n, s)| {
                let lane = lane_of(s);
                let changed = last_func[lane] != Some(s.func);
                last_func[lane] = Some(s.func);
                Row {
                    step: n + 1,
                    lane,
                    func: Some(s.func).filter(|f| changed && *f != "-"),
                    text: render::effect(&s.effect, record),
                }
            })
            .collect();
        Diagram {
            title: title.to_string(),
            lanes: lanes(record, &cols),
            rows,
            bars: bars(record, lane_of),
            violation: render::violation_lines(record),
        }
    }
}

// --- SVG ---------------------------------------------------------------------

const FONT: &str = "DejaVu Sans Mono, Menlo, Consolas, monospace";
/// Pixels per character of the 12px monospace font (DejaVu Sans Mono's
/// advance is 0.602 em), rounded up so text never overruns its box.
const CHAR_W: f64 = 7.3;
const LINE_H: usize = 15;
const LANE_W: usize = 300;
const GUTTER: usize = 44;
const TOP: usize = 40;
const HEAD_H: usize = 34;
const BAR_W: usize = 5;
const PAD: usize = 6;

/// Characters of step text that fit in a lane beside its lock bars.
fn lane_chars() -> usize {
    ((LANE_W - 4 * BAR_W - 3 * PAD) as f64 / CHAR_W) as usize
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The lines a row shows: its function, then its effect, wrapped.
fn row_lines(r: &Row) -> Vec<String> {
    let width = lane_chars();
    let mut lines: Vec<String> = r.func.iter().map(|f| format!("{f}:")).collect();
    lines.extend(render::wrap(&r.text, width));
    lines
}

fn lane_x(lane: usize) -> usize {
    GUTTER + lane * LANE_W
}

/// The trace as an SVG sequence diagram. Lanes are `<g class="lane">`, rows
/// `<g class="step">` (with `data-step` and `data-lane`), lock spans
/// `<rect class="lock">`, the violation `<g class="violation">`.
pub fn svg(d: &Diagram) -> String {
    let heights: Vec<usize> = d
        .rows
        .iter()
        .map(|r| row_lines(r).len() * LINE_H + PAD)
        .collect();
    let mut tops = Vec::with_capacity(heights.len());
    let mut y = TOP + HEAD_H + PAD;
    for h in &heights {
        tops.push(y);
        y += h;
    }
    let body_end = y;
    let width = (GUTTER + d.lanes.len().max(1) * LANE_W + PAD).max(600);
    let wrap_width = ((width - 2 * PAD) as f64 / CHAR_W) as usize;
    let footer: Vec<String> = d
        .violation
        .iter()
        .flat_map(|l| render::wrap(l, wrap_width))
        .collect();
    let height = body_end + PAD + footer.len() * LINE_H + 2 * PAD;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="12">"#
    );
    let _ = writeln!(out, "<title>{}</title>", esc(&d.title));
    let _ = writeln!(
        out,
        r##"<rect width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r##"<text class="title" x="{PAD}" y="22" font-size="14" font-weight="bold" fill="#000000">{}</text>"##,
        esc(&d.title)
    );
    for (i, lane) in d.lanes.iter().enumerate() {
        lane_svg(&mut out, i, lane, body_end);
    }
    for (r, top) in d.rows.iter().zip(&tops) {
        row_svg(&mut out, r, *top);
    }
    for b in &d.bars {
        let x = lane_x(b.lane) + PAD + b.depth * (BAR_W + 2);
        let y0 = tops[b.from];
        let y1 = tops[b.to] + heights[b.to] - PAD / 2;
        let state = if b.released {
            "held"
        } else {
            "still held at the end"
        };
        let _ = writeln!(
            out,
            r##"<rect class="lock" data-lock="{}" x="{x}" y="{y0}" width="{BAR_W}" height="{}" fill="#d08700"><title>{}({}) {state}, steps {}-{}</title></rect>"##,
            esc(b.lock),
            y1 - y0,
            b.how,
            esc(b.lock),
            b.from + 1,
            b.to + 1
        );
    }
    if !footer.is_empty() {
        let y = body_end + PAD;
        let _ = writeln!(out, r#"<g class="violation">"#);
        let _ = writeln!(
            out,
            r##"<rect x="{}" y="{y}" width="{}" height="{}" fill="#fde8e8" stroke="#c00000"/>"##,
            PAD / 2,
            width - PAD,
            footer.len() * LINE_H + PAD
        );
        for (i, l) in footer.iter().enumerate() {
            let weight = if i == 0 { r#" font-weight="bold""# } else { "" };
            let _ = writeln!(
                out,
                r##"<text x="{PAD}" y="{}" fill="#900000"{weight} xml:space="preserve">{}</text>"##,
                y + (i + 1) * LINE_H - 2,
                esc(l)
            );
        }
        let _ = writeln!(out, "</g>");
    }
    out.push_str("</svg>\n");
    out
}

fn lane_svg(out: &mut String, i: usize, lane: &Lane, body_end: usize) {
    let x = lane_x(i);
    let mid = x + LANE_W / 2;
    let _ = writeln!(
        out,
        r#"<g class="lane" data-thread="{}" data-context="{}">"#,
        esc(lane.thread),
        esc(&lane.context)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{TOP}" width="{}" height="{}" rx="4" fill="#e8eef8" stroke="#4060a0"/>"##,
        x + 2,
        LANE_W - 4,
        HEAD_H - 6
    );
    let _ = writeln!(
        out,
        r##"<text x="{mid}" y="{}" text-anchor="middle" font-weight="bold" fill="#102040">{}</text>"##,
        TOP + 18,
        esc(&lane.label())
    );
    let _ = writeln!(
        out,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{body_end}" stroke="#a0b0d0" stroke-dasharray="4 3"/>"##,
        x + 2,
        TOP + HEAD_H - 6,
        x + 2
    );
    let _ = writeln!(out, "</g>");
}

fn row_svg(out: &mut String, r: &Row, top: usize) {
    let x = lane_x(r.lane) + PAD + 4 * BAR_W;
    let lines = row_lines(r);
    let _ = writeln!(
        out,
        r#"<g class="step" data-step="{}" data-lane="{}">"#,
        r.step, r.lane
    );
    let _ = writeln!(
        out,
        r##"<line x1="{PAD}" y1="{}" x2="{}" y2="{}" stroke="#eeeeee"/>"##,
        top - 2,
        GUTTER - 4,
        top - 2
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" text-anchor="end" fill="#808080">{}</text>"##,
        GUTTER - 8,
        top + LINE_H - 3,
        r.step
    );
    for (i, l) in lines.iter().enumerate() {
        let (fill, weight) = if r.func.is_some() && i == 0 {
            ("#204080", r#" font-weight="bold""#)
        } else {
            ("#000000", "")
        };
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{}" fill="{fill}"{weight} xml:space="preserve">{}</text>"#,
            top + (i + 1) * LINE_H - 3,
            esc(l)
        );
    }
    let _ = writeln!(out, "</g>");
}

// --- Mermaid -------------------------------------------------------------------

/// Text for a Mermaid note: characters its parser reads as syntax are
/// written as its `#code;` entities.
fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#60;"),
            '>' => out.push_str("#62;"),
            '%' => out.push_str("#37;"),
            c => out.push(c),
        }
    }
    out
}

/// A participant id Mermaid accepts: the thread name with anything but
/// letters, digits and `_` replaced.
fn participant(lane: &Lane, i: usize) -> String {
    let id: String = lane
        .thread
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("L{i}_{id}")
}

/// The trace as a Mermaid sequence diagram: a participant per lane, a note
/// per step, an activation while a lock is held, the violation as a note
/// over every lane.
pub fn mermaid(d: &Diagram) -> String {
    let ids: Vec<String> = d
        .lanes
        .iter()
        .enumerate()
        .map(|(i, l)| participant(l, i))
        .collect();
    let mut out = String::from("sequenceDiagram\n");
    let _ = writeln!(out, "    title {}", mermaid_text(&d.title));
    for (id, lane) in ids.iter().zip(&d.lanes) {
        let _ = writeln!(
            out,
            "    participant {id} as {}",
            mermaid_text(&lane.label())
        );
    }
    for (i, r) in d.rows.iter().enumerate() {
        let id = &ids[r.lane];
        let text = match r.func {
            Some(f) => format!("{} {f}: {}", r.step, r.text),
            None => format!("{} {}", r.step, r.text),
        };
        let _ = writeln!(out, "    Note over {id}: {}", mermaid_text(&text));
        for b in d.bars.iter().filter(|b| b.from == i) {
            let _ = writeln!(out, "    activate {}", ids[b.lane]);
        }
        for b in d.bars.iter().filter(|b| b.to == i && b.released) {
            let _ = writeln!(out, "    deactivate {}", ids[b.lane]);
        }
    }
    if let (Some(first), Some(last)) = (ids.first(), ids.last()) {
        let over = if first == last {
            first.clone()
        } else {
            format!("{first},{last}")
        };
        for l in &d.violation {
            let _ = writeln!(out, "    Note over {over}: {}", mermaid_text(l));
        }
    }
    out
}
