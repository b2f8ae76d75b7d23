//! Trace renderers: plain text that fits 80 columns with one column per
//! thread (pasteable into a mailing-list reply), and JSON for tools.
//! Nothing here depends on addresses, time or hash order.

use serde_json::{json, Value};
use vfsmc_model::exec::{Event, Record};

/// Total width of a text trace.
pub const WIDTH: usize = 80;
const STEP_W: usize = 4;

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let extra = usize::from(!line.is_empty());
        if !line.is_empty() && line.chars().count() + extra + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        } else if extra == 1 {
            line.push(' ');
        }
        let mut word = word.to_string();
        while line.chars().count() + word.chars().count() > width {
            let room = width.saturating_sub(line.chars().count()).max(1);
            let head: String = word.chars().take(room).collect();
            word = word.chars().skip(room).collect();
            line.push_str(&head);
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        }
        line.push_str(&word);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n >= width {
        s.chars().take(width).collect()
    } else {
        format!("{s}{}", " ".repeat(width - n))
    }
}

fn row(step: &str, cells: &[String], col_w: usize) -> String {
    let mut line = pad(step, STEP_W);
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            line.push('|');
        }
        line.push_str(&pad(c, col_w));
    }
    line.trim_end().to_string()
}

fn columns(record: &Record) -> Vec<String> {
    let mut cols: Vec<String> = record
        .columns
        .iter()
        .filter(|c| record.events.iter().any(|e| &e.thread == *c))
        .cloned()
        .collect();
    for e in &record.events {
        if !cols.contains(&e.thread) {
            cols.push(e.thread.clone());
        }
    }
    cols
}

fn header(col: &str, events: &[Event]) -> String {
    match events.iter().find(|e| e.thread == col) {
        Some(e) if !e.context.is_empty() => format!("{col} ({})", e.context),
        _ => col.to_string(),
    }
}

/// The trace as an 80-column table, one column per thread, then the
/// violation and the state that breaks it.
pub fn text_trace(record: &Record) -> String {
    let cols = columns(record);
    let ncols = cols.len().max(1);
    let col_w = (WIDTH - STEP_W - (ncols - 1)) / ncols;
    let mut out = Vec::new();
    let heads: Vec<String> = cols.iter().map(|c| header(c, &record.events)).collect();
    out.push(row("", &heads, col_w));
    out.push("-".repeat(WIDTH));
    let mut last_func: Vec<Option<&str>> = vec![None; ncols];
    for (n, e) in record.events.iter().enumerate() {
        let i = cols.iter().position(|c| *c == e.thread).unwrap_or(0);
        let mut lines = Vec::new();
        if last_func[i] != Some(e.func.as_str()) {
            lines.push(format!("{}:", e.func));
            last_func[i] = Some(e.func.as_str());
        }
        for l in wrap(&e.effect, col_w - 1) {
            lines.push(format!(" {l}"));
        }
        for (k, l) in lines.into_iter().enumerate() {
            let mut cells = vec![String::new(); ncols];
            cells[i] = l;
            let step = if k == 0 {
                format!("{:>3}", n + 1)
            } else {
                String::new()
            };
            out.push(row(&step, &cells, col_w));
        }
    }
    if let Some(v) = &record.violation {
        out.push("-".repeat(WIDTH));
        let who = if v.thread.is_empty() {
            String::new()
        } else {
            format!(" in {}", v.thread)
        };
        out.extend(wrap(
            &format!(
                "VIOLATED {} after step {}{who}: {}",
                v.invariant, v.step, v.message
            ),
            WIDTH,
        ));
        if !v.state.is_empty() {
            for l in v.state.lines() {
                out.extend(wrap(&format!("state: {l}"), WIDTH));
            }
        }
    }
    out.join("\n") + "\n"
}

/// The trace as JSON: one object per step, then the violation.
pub fn json_trace(record: &Record) -> Value {
    let steps: Vec<Value> = record
        .events
        .iter()
        .enumerate()
        .map(|(n, e)| {
            json!({
                "step": n + 1,
                "thread": e.thread,
                "context": e.context,
                "function": e.func,
                "effect": e.effect,
            })
        })
        .collect();
    let violation = record.violation.as_ref().map(|v| {
        json!({
            "invariant": v.invariant,
            "message": v.message,
            "thread": v.thread,
            "after_step": v.step,
            "state": v.state,
        })
    });
    json!({ "steps": steps, "violation": violation })
}
