//! Trace renderers: plain text that fits 80 columns with one column per
//! thread (pasteable into a mailing-list reply), JSON for tools, and the
//! canonical byte encoding the corpus fingerprint hashes. Models record
//! steps as data (`vfsmc_model::trace`); this is the only place that puts
//! them into words. Nothing here depends on addresses, time or hash order.

use serde_json::{json, Value};
use vfsmc_model::driver::Record;
use vfsmc_model::trace::{CpuEvent, Effect, LockOp, Note, Part, Show, Step, Val};

/// Total width of a text trace.
pub const WIDTH: usize = 80;
const STEP_W: usize = 4;

/// A value in words.
pub fn val(v: Val) -> String {
    match v.show {
        Show::Dec => v.raw.to_string(),
        Show::Pair { lo_bits } => {
            let mask = (1u64 << lo_bits) - 1;
            format!("{{{}, {}}}", v.raw & mask, v.raw >> lo_bits)
        }
        Show::Bits { nbits, word_bits } => bits(v.raw, nbits, word_bits),
        Show::Bool => (v.raw != 0).to_string(),
        Show::With(f) => f(v.raw),
    }
}

/// A bitmap as the kernel's docs draw it: words lowest first, each word's
/// bit 0 first, words separated by a space (`1110 0000`).
fn bits(raw: u64, nbits: u8, word_bits: u8) -> String {
    let mut out = String::new();
    for b in 0..nbits {
        if b > 0 && b % word_bits == 0 {
            out.push(' ');
        }
        out.push(if raw >> b & 1 == 1 { '1' } else { '0' });
    }
    out
}

fn note(n: &Note) -> String {
    let mut out = String::new();
    let mut args = n.args.iter().flatten();
    let mut rest = n.text;
    while let Some(i) = rest.find("{}") {
        out.push_str(&rest[..i]);
        out.push_str(&args.next().map(|v| val(*v)).unwrap_or_default());
        rest = &rest[i + 2..];
    }
    out.push_str(rest);
    out
}

fn part(p: &Part) -> String {
    match *p {
        Part::SetBit { map, word, bit } => format!("{map}[{word}] |= 1<<{bit}"),
        Part::ClearBit { map, word, bit } => format!("{map}[{word}] &= ~(1<<{bit})"),
        Part::Store { var, old, new } => format!("{var} {}→{}", val(old), val(new)),
        Part::Assign { var, val: v } => format!("{var} = {}", val(v)),
    }
}

fn cpu_event(e: CpuEvent) -> String {
    match e {
        CpuEvent::IrqEnter { cpu } => format!("irq_enter() on cpu{cpu}"),
        CpuEvent::IrqExit => "irq_exit()".to_string(),
        CpuEvent::NmiEnter { cpu } => format!("nmi_enter() on cpu{cpu}"),
        CpuEvent::NmiExit => "nmi_exit()".to_string(),
        CpuEvent::LocalIrqSave => "local_irq_save()".to_string(),
        CpuEvent::LocalIrqRestore => "local_irq_restore()".to_string(),
        CpuEvent::MigrationRequest { cpu } => format!("request migration to cpu{cpu}"),
        CpuEvent::Migrated { from, to } => format!("preempted, migrated cpu{from}→cpu{to}"),
    }
}

/// A CPU event as data: its kernel function and the CPUs it names.
fn cpu_fields(e: CpuEvent) -> (&'static str, Vec<u8>) {
    match e {
        CpuEvent::IrqEnter { cpu } => ("irq_enter", vec![cpu]),
        CpuEvent::IrqExit => ("irq_exit", vec![]),
        CpuEvent::NmiEnter { cpu } => ("nmi_enter", vec![cpu]),
        CpuEvent::NmiExit => ("nmi_exit", vec![]),
        CpuEvent::LocalIrqSave => ("local_irq_save", vec![]),
        CpuEvent::LocalIrqRestore => ("local_irq_restore", vec![]),
        CpuEvent::MigrationRequest { cpu } => ("migration_request", vec![cpu]),
        CpuEvent::Migrated { from, to } => ("migrated", vec![from, to]),
    }
}

/// The threads in `mask` (one bit per trace column), by name.
fn threads_in(mask: u32, record: &Record) -> Vec<&'static str> {
    (0..32)
        .filter(|i| mask >> i & 1 == 1)
        .map(|i| record.threads.get(i).copied().unwrap_or("?"))
        .collect()
}

/// A step's effect in the kernel's words, e.g. `spin_lock(file_lock)` or
/// `cmpxchg(file#1.f_count, 2→3) ok`.
pub fn effect(e: &Effect, record: &Record) -> String {
    match *e {
        Effect::Load {
            how: "",
            var,
            val: v,
        } => format!("{var} = {}", val(v)),
        Effect::Load { how, var, val: v } => format!("{how}({var}) = {}", val(v)),
        Effect::Store {
            how: "",
            var,
            old,
            new,
        } => format!("{var} {}→{}", val(old), val(new)),
        Effect::Store { how, var, old, new } => {
            format!("{how}({var}) {}→{}", val(old), val(new))
        }
        Effect::Rmw { op, var, old, new } => format!("{op}({var}) {}→{}", val(old), val(new)),
        Effect::Cmpxchg {
            op,
            var,
            old,
            new,
            ok,
            seen,
        } => {
            let outcome = if ok {
                "ok".to_string()
            } else {
                format!("failed, saw {}", val(seen))
            };
            format!("{op}({var}, {}→{}) {outcome}", val(old), val(new))
        }
        Effect::Fence(name) => format!("{name}()"),
        Effect::Lock { op, lock, .. } => match op {
            LockOp::SpinTrylockBusy | LockOp::SpinLockBusy => {
                format!("{}({lock}) busy", op.func())
            }
            LockOp::SpinLockNested { subclass } => format!("{}({lock}, {subclass})", op.func()),
            _ => format!("{}({lock})", op.func()),
        },
        Effect::LockTest { lock, locked } => format!("spin_is_locked({lock}) = {locked}"),
        Effect::RcuRead { func, .. } => format!("{func}()"),
        Effect::GracePeriod { func, gp, waited } => {
            let start = match func {
                "synchronize_rcu" => format!("{func}() gp {gp}"),
                _ => format!("grace period gp {gp}"),
            };
            match waited {
                0 => format!("{start}, no readers"),
                _ => format!(
                    "{start}, waited for {}",
                    threads_in(waited, record).join(", ")
                ),
            }
        }
        Effect::CallRcu { func: Some(f), obj } => format!("call_rcu({f}({}))", val(obj)),
        Effect::CallRcu { func: None, obj } => format!("call_rcu({})", val(obj)),
        Effect::Alloc {
            func,
            cache,
            obj,
            recycled_gen,
        } => match recycled_gen {
            Some(gen) => format!("{func}: {cache}#{obj} recycled (gen {gen})"),
            None => format!("{func}: {cache}#{obj}"),
        },
        Effect::Free { func, cache, obj } => format!("{func}({cache}#{obj})"),
        Effect::Cpu(c) => cpu_event(c),
        Effect::Update { scope, parts } => {
            let text: Vec<String> = parts.iter().map(part).collect();
            match scope {
                Some(s) => format!("{s}: {}", text.join("; ")),
                None => text.join("; "),
            }
        }
        Effect::Return(v) => format!("return {}", val(v)),
        Effect::Note(n) => note(&n),
    }
}

pub(crate) fn thread(step: &Step, record: &Record) -> &'static str {
    record
        .threads
        .get(usize::from(step.thread))
        .copied()
        .unwrap_or("?")
}

/// "task cpu0", or empty for models without CPUs.
fn context(step: &Step) -> String {
    match step.cpu {
        Some(cpu) => format!("{} cpu{cpu}", step.context.name()),
        None => String::new(),
    }
}

/// `text` in lines of at most `width` characters, continuation lines
/// indented by two spaces. A word too long for a line breaks after a `(`,
/// `,`, `=` or `→` inside it, never inside a name; only a name longer than
/// a whole line is cut.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let len = |s: &str| s.chars().count();
    for word in text.split(' ') {
        let extra = usize::from(!line.is_empty());
        if !line.is_empty() && len(&line) + extra + len(word) > width {
            if len(word) + 2 <= width {
                lines.push(std::mem::take(&mut line));
                line.push_str("  ");
            } else {
                line.push(' ');
            }
        } else if extra == 1 {
            line.push(' ');
        }
        for piece in pieces(word) {
            if len(&line) + len(piece) > width && !line.trim().is_empty() {
                lines.push(std::mem::take(&mut line).trim_end().to_string());
                line.push_str("  ");
            }
            let mut piece = piece.to_string();
            while len(&line) + len(&piece) > width {
                let room = width.saturating_sub(len(&line)).max(1);
                let head: String = piece.chars().take(room).collect();
                piece = piece.chars().skip(room).collect();
                line.push_str(&head);
                lines.push(std::mem::take(&mut line));
                line.push_str("  ");
            }
            line.push_str(&piece);
        }
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

/// A word cut after each `(`, `,`, `=` and `→`: where a long word may
/// break.
fn pieces(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in word.char_indices() {
        if matches!(c, '(' | ',' | '=' | '→') {
            let end = i + c.len_utf8();
            out.push(&word[start..end]);
            start = end;
        }
    }
    if start < word.len() {
        out.push(&word[start..]);
    }
    out
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

/// The trace columns: threads that took a step, in spawn order.
pub(crate) fn columns(record: &Record) -> Vec<u8> {
    let mut cols: Vec<u8> = (0..record.threads.len() as u8)
        .filter(|c| record.steps.iter().any(|s| s.thread == *c))
        .collect();
    for s in &record.steps {
        if !cols.contains(&s.thread) {
            cols.push(s.thread);
        }
    }
    cols
}

fn header(col: u8, record: &Record) -> String {
    let name = record.threads.get(usize::from(col)).copied().unwrap_or("?");
    match record.steps.iter().find(|s| s.thread == col) {
        Some(s) if s.cpu.is_some() => format!("{name} ({})", context(s)),
        _ => name.to_string(),
    }
}

/// The trace as an 80-column table, one column per thread, then the
/// violation and the state that breaks it.
pub fn text_trace(record: &Record) -> String {
    text_trace_folded(record, &vec![true; record.steps.len()])
}

/// [`text_trace`] with the steps whose `keep` is false folded: each run of
/// them one line, `… 38 steps of set-up …` before the first kept step and
/// `… 5 steps …` between kept ones. Step numbers stay the trace's own.
pub fn text_trace_folded(record: &Record, keep: &[bool]) -> String {
    let cols = columns(record);
    let ncols = cols.len().max(1);
    let col_w = (WIDTH - STEP_W - (ncols - 1)) / ncols;
    let mut out = Vec::new();
    let heads: Vec<String> = cols.iter().map(|&c| header(c, record)).collect();
    out.push(row("", &heads, col_w));
    out.push("-".repeat(WIDTH));
    let mut last_func: Vec<Option<&str>> = vec![None; ncols];
    let mut folded = 0;
    let mut seen_kept = false;
    let stale = stale_reads(record);
    for (n, s) in record.steps.iter().enumerate() {
        let i = cols.iter().position(|c| *c == s.thread).unwrap_or(0);
        if !keep.get(n).copied().unwrap_or(true) {
            folded += 1;
            // A folded step still sets its thread's function: the next
            // kept step of that thread names its own if it differs.
            last_func[i] = None;
            continue;
        }
        if folded > 0 {
            out.push(fold_line(folded, seen_kept));
            folded = 0;
        }
        seen_kept = true;
        let mut lines = Vec::new();
        if last_func[i] != Some(s.func) {
            if s.func != "-" {
                lines.push(format!("{}:", s.func));
            }
            last_func[i] = Some(s.func);
        }
        for l in wrap(&effect(&s.effect, record), col_w - 1) {
            lines.push(format!(" {l}"));
        }
        if let Some(at) = stale[n] {
            let note = format!("(stale: step {}'s store not visible here)", at + 1);
            for l in wrap(&note, col_w - 3) {
                lines.push(format!("   {l}"));
            }
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
    if folded > 0 {
        out.push(fold_line(folded, seen_kept));
    }
    if record.violation.is_some() {
        out.push("-".repeat(WIDTH));
        for l in violation_lines(record) {
            out.extend(wrap(&l, WIDTH));
        }
    }
    out.join("\n") + "\n"
}

/// The violation in words, one unwrapped line each: `VIOLATED inv after
/// step N in T: message`, the step that caused it when the check named one
/// (`caused by step K, T1's lockref_put_return(…)`), then the state.
pub fn violation_lines(record: &Record) -> Vec<String> {
    let Some(v) = &record.violation else {
        return Vec::new();
    };
    let who = if v.thread.is_empty() {
        String::new()
    } else {
        format!(" in {}", v.thread)
    };
    let mut out = vec![format!(
        "VIOLATED {} after step {}{who}: {}",
        v.invariant, v.step, v.message
    )];
    let cause = v
        .cause
        .and_then(|k| Some((k, record.steps.get(k.checked_sub(1)?)?)));
    if let Some((k, s)) = cause {
        out.push(format!(
            "caused by step {k}, {}'s {}: {}",
            thread(s, record),
            s.func,
            effect(&s.effect, record)
        ));
    }
    out.extend(v.state.lines().map(|l| format!("state: {l}")));
    out
}

/// The data a step reads or writes: each location (a variable, a bitmap, a
/// slab object) with whether the step writes it.
fn accesses(e: &Effect) -> Vec<(String, bool)> {
    use vfsmc_model::trace::Part;
    match *e {
        Effect::Load { var, .. } => vec![(var.to_string(), false)],
        Effect::Store { var, .. } | Effect::Rmw { var, .. } => vec![(var.to_string(), true)],
        Effect::Cmpxchg { var, ok, .. } => vec![(var.to_string(), ok)],
        Effect::Alloc { cache, obj, .. } | Effect::Free { cache, obj, .. } => {
            vec![(format!("{cache}#{obj}"), true)]
        }
        Effect::Update { parts, .. } => parts
            .iter()
            .map(|p| match *p {
                Part::SetBit { map, .. } | Part::ClearBit { map, .. } => (map.to_string(), true),
                Part::Store { var, .. } | Part::Assign { var, .. } => (var.to_string(), true),
            })
            .collect(),
        // Locks and RCU order the accesses; they are not the race.
        Effect::Lock { .. }
        | Effect::LockTest { .. }
        | Effect::RcuRead { .. }
        | Effect::GracePeriod { .. }
        | Effect::CallRcu { .. }
        | Effect::Fence(_)
        | Effect::Cpu(_)
        | Effect::Return(_)
        | Effect::Note(_) => Vec::new(),
    }
}

/// The value a step leaves in each location it writes.
fn written(e: &Effect) -> Vec<(&'static str, u64)> {
    use vfsmc_model::trace::Part;
    match *e {
        Effect::Store { var, new, .. } | Effect::Rmw { var, new, .. } => vec![(var, new.raw)],
        Effect::Cmpxchg {
            var, new, ok: true, ..
        } => vec![(var, new.raw)],
        Effect::Update { parts, .. } => parts
            .iter()
            .filter_map(|p| match *p {
                Part::Store { var, new, .. } => Some((var, new.raw)),
                Part::Assign { var, val } => Some((var, val.raw)),
                Part::SetBit { .. } | Part::ClearBit { .. } => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// For each load that returns something else than the latest store to its
/// location in the trace, that store's step (0-based): under weak memory
/// the loading thread does not see it yet.
fn stale_reads(record: &Record) -> Vec<Option<usize>> {
    let mut last: std::collections::BTreeMap<&'static str, (usize, u64, u8)> = Default::default();
    record
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let stale = match s.effect {
                Effect::Load { var, val, .. } => last
                    .get(var)
                    .filter(|(_, v, t)| *v != val.raw && *t != s.thread)
                    .map(|(at, _, _)| *at),
                _ => None,
            };
            for (var, v) in written(&s.effect) {
                last.insert(var, (i, v, s.thread));
            }
            stale
        })
        .collect()
}

/// The locks each step's thread holds when it runs (the lock a step takes
/// counts from that step on).
fn locksets(record: &Record) -> Vec<Vec<&'static str>> {
    let mut held: std::collections::BTreeMap<u8, Vec<&'static str>> = Default::default();
    record
        .steps
        .iter()
        .map(|s| {
            let mine = held.entry(s.thread).or_default();
            if let Effect::Lock { op, lock, .. } = s.effect {
                if op.acquires() {
                    mine.push(lock);
                } else if op.releases() {
                    if let Some(k) = mine.iter().rposition(|l| *l == lock) {
                        mine.remove(k);
                    }
                }
            }
            mine.clone()
        })
        .collect()
}

/// The steps that race: each accesses a location another thread accesses
/// too, one of the two writing it, with no lock held by both (Eraser's
/// lockset rule: accesses a common lock orders are not the race).
fn racing(record: &Record) -> Vec<usize> {
    let acc: Vec<Vec<(String, bool)>> = record.steps.iter().map(|s| accesses(&s.effect)).collect();
    let locks = locksets(record);
    let conflict = |i: usize, j: usize| {
        record.steps[i].thread != record.steps[j].thread
            && !locks[i].iter().any(|l| locks[j].contains(l))
            && acc[i]
                .iter()
                .any(|(loc, w)| acc[j].iter().any(|(l, w2)| l == loc && (*w || *w2)))
    };
    (0..record.steps.len())
        .filter(|&i| (0..record.steps.len()).any(|j| conflict(i, j)))
        .collect()
}

/// Which steps a mail keeps of `record` so that its trace fits `lines`:
/// the last step (where the violation was judged) and the step that caused
/// it, then the racing
/// accesses, then the steps between them, each nearest the violation first
/// while they fit; the rest folded (the set-up before them into one line).
pub fn mail_steps(record: &Record, lines: usize) -> Vec<bool> {
    let n = record.steps.len();
    let mut keep = vec![false; n];
    if n == 0 {
        return keep;
    }
    keep[n - 1] = true;
    if let Some(k) = record.violation.as_ref().and_then(|v| v.cause) {
        if let Some(c) = keep.get_mut(k.wrapping_sub(1)) {
            *c = true;
        }
    }
    let fits = |keep: &[bool]| text_trace_folded(record, keep).lines().count() <= lines;
    let races = racing(record);
    let first = |keep: &[bool]| keep.iter().position(|k| *k).unwrap_or(n);
    for &i in races.iter().rev() {
        keep[i] = true;
        if !fits(&keep) {
            keep[i] = false;
            break;
        }
    }
    for i in (first(&keep)..n).rev() {
        if !keep[i] {
            keep[i] = true;
            if !fits(&keep) {
                keep[i] = false;
            }
        }
    }
    keep
}

/// The line that stands for `n` folded steps.
fn fold_line(n: usize, after_kept: bool) -> String {
    let what = if after_kept { "" } else { " of set-up" };
    let steps = if n == 1 { "step" } else { "steps" };
    format!("    … {n} {steps}{what} …")
}

fn val_json(v: Val) -> Value {
    json!({ "raw": v.raw, "shown": val(v) })
}

/// The typed fields of an effect, for tools.
pub fn effect_json(e: &Effect, record: &Record) -> Value {
    match *e {
        Effect::Load { how, var, val: v } => {
            json!({ "kind": "load", "how": how, "var": var, "value": val_json(v) })
        }
        Effect::Store { how, var, old, new } => json!({
            "kind": "store", "how": how, "var": var, "old": val_json(old), "new": val_json(new)
        }),
        Effect::Rmw { op, var, old, new } => json!({
            "kind": "rmw", "op": op, "var": var, "old": val_json(old), "new": val_json(new)
        }),
        Effect::Cmpxchg {
            op,
            var,
            old,
            new,
            ok,
            seen,
        } => json!({
            "kind": "cmpxchg", "op": op, "var": var, "old": val_json(old),
            "new": val_json(new), "ok": ok, "seen": val_json(seen)
        }),
        Effect::Fence(name) => json!({ "kind": "fence", "barrier": name }),
        Effect::Lock { op, class, lock } => json!({
            "kind": "lock", "op": op.func(), "acquired": op.acquires(),
            "released": op.releases(), "class": class, "lock": lock
        }),
        Effect::LockTest { lock, locked } => {
            json!({ "kind": "lock_test", "lock": lock, "locked": locked })
        }
        Effect::RcuRead { func, lock } => json!({ "kind": "rcu_read", "func": func, "lock": lock }),
        Effect::GracePeriod { func, gp, waited } => json!({
            "kind": "grace_period", "func": func, "gp": gp,
            "waited_for": threads_in(waited, record)
        }),
        Effect::CallRcu { func, obj } => {
            json!({ "kind": "call_rcu", "func": func, "obj": val_json(obj) })
        }
        Effect::Alloc {
            func,
            cache,
            obj,
            recycled_gen,
        } => json!({
            "kind": "alloc", "func": func, "cache": cache, "obj": obj,
            "recycled_gen": recycled_gen
        }),
        Effect::Free { func, cache, obj } => {
            json!({ "kind": "free", "func": func, "cache": cache, "obj": obj })
        }
        Effect::Cpu(c) => {
            let (event, cpus) = cpu_fields(c);
            json!({ "kind": "cpu", "event": event, "cpus": cpus })
        }
        Effect::Update { scope, parts } => {
            let parts: Vec<String> = parts.iter().map(part).collect();
            json!({ "kind": "update", "scope": scope, "parts": parts })
        }
        Effect::Return(v) => json!({ "kind": "return", "value": val_json(v) }),
        Effect::Note(n) => {
            let args: Vec<Value> = n.args.iter().flatten().map(|v| val_json(*v)).collect();
            json!({ "kind": "note", "text": n.text, "args": args })
        }
    }
}

/// The trace as JSON: one object per step (its words and its fields), then
/// the violation.
pub fn json_trace(record: &Record) -> Value {
    let steps: Vec<Value> = record
        .steps
        .iter()
        .enumerate()
        .map(|(n, s)| {
            json!({
                "step": n + 1,
                "thread": thread(s, record),
                "context": context(s),
                "cpu": s.cpu,
                "function": s.func,
                "effect": effect(&s.effect, record),
                "event": effect_json(&s.effect, record),
            })
        })
        .collect();
    let violation = record.violation.as_ref().map(|v| {
        json!({
            "invariant": v.invariant,
            "message": v.message,
            "thread": v.thread,
            "after_step": v.step,
            "caused_by_step": v.cause,
            "state": v.state,
        })
    });
    json!({ "steps": steps, "violation": violation })
}

/// The canonical bytes of a step's structure, for fingerprints: thread,
/// context, CPU, function, the effect's kind, names and raw values. The
/// wording (how a value or a note is shown) is not part of it, so
/// rewording a trace does not stale a corpus seed; changing what a step
/// does, or where, does.
pub fn encode(step: &Step, record: &Record, out: &mut Vec<u8>) {
    let mut put = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    put(thread(step, record).as_bytes());
    put(step.context.name().as_bytes());
    put(&step.cpu.map_or(u16::MAX, u16::from).to_le_bytes());
    put(step.func.as_bytes());
    let n = |v: u64| v.to_le_bytes();
    match step.effect {
        Effect::Load { how, var, val } => {
            put(b"load");
            put(how.as_bytes());
            put(var.as_bytes());
            put(&n(val.raw));
        }
        Effect::Store { how, var, old, new } => {
            put(b"store");
            put(how.as_bytes());
            put(var.as_bytes());
            put(&n(old.raw));
            put(&n(new.raw));
        }
        Effect::Rmw { op, var, old, new } => {
            put(b"rmw");
            put(op.as_bytes());
            put(var.as_bytes());
            put(&n(old.raw));
            put(&n(new.raw));
        }
        Effect::Cmpxchg {
            op,
            var,
            old,
            new,
            ok,
            seen,
        } => {
            put(b"cmpxchg");
            put(op.as_bytes());
            put(var.as_bytes());
            put(&n(old.raw));
            put(&n(new.raw));
            put(&[u8::from(ok)]);
            put(&n(seen.raw));
        }
        Effect::Fence(name) => {
            put(b"fence");
            put(name.as_bytes());
        }
        Effect::Lock { op, class, lock } => {
            put(b"lock");
            put(op.func().as_bytes());
            put(&[u8::from(op.acquires()), u8::from(op.releases())]);
            if let LockOp::SpinLockNested { subclass } = op {
                put(&[subclass]);
            }
            put(class.as_bytes());
            put(lock.as_bytes());
        }
        Effect::LockTest { lock, locked } => {
            put(b"lock_test");
            put(lock.as_bytes());
            put(&[u8::from(locked)]);
        }
        Effect::RcuRead { func, lock } => {
            put(b"rcu_read");
            put(func.as_bytes());
            put(&[u8::from(lock)]);
        }
        Effect::GracePeriod { func, gp, waited } => {
            put(b"grace_period");
            put(func.as_bytes());
            put(&n(gp));
            for t in threads_in(waited, record) {
                put(t.as_bytes());
            }
        }
        Effect::CallRcu { func, obj } => {
            put(b"call_rcu");
            put(func.unwrap_or("").as_bytes());
            put(&n(obj.raw));
        }
        Effect::Alloc {
            func,
            cache,
            obj,
            recycled_gen,
        } => {
            put(b"alloc");
            put(func.as_bytes());
            put(cache.as_bytes());
            put(&n(obj));
            put(&recycled_gen.map_or(u32::MAX, |g| g).to_le_bytes());
        }
        Effect::Free { func, cache, obj } => {
            put(b"free");
            put(func.as_bytes());
            put(cache.as_bytes());
            put(&n(obj));
        }
        Effect::Cpu(c) => {
            let (event, cpus) = cpu_fields(c);
            put(b"cpu");
            put(event.as_bytes());
            put(&cpus);
        }
        Effect::Update { scope, parts } => {
            put(b"update");
            put(scope.unwrap_or("").as_bytes());
            for p in parts.iter() {
                match *p {
                    Part::SetBit { map, word, bit } | Part::ClearBit { map, word, bit } => {
                        put(&[u8::from(matches!(p, Part::SetBit { .. })), word, bit]);
                        put(map.as_bytes());
                    }
                    Part::Store { var, old, new } => {
                        put(var.as_bytes());
                        put(&n(old.raw));
                        put(&n(new.raw));
                    }
                    Part::Assign { var, val } => {
                        put(var.as_bytes());
                        put(&n(val.raw));
                    }
                }
            }
        }
        Effect::Return(v) => {
            put(b"return");
            put(&n(v.raw));
        }
        Effect::Note(note) => {
            put(b"note");
            for v in note.args.iter().flatten() {
                put(&n(v.raw));
            }
        }
    }
}
