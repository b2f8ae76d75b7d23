//! Native benchmark for the `freelist` model: a will-it-scale-style run on
//! real hardware (the `stress`/std side of the suite, not a test).
//!
//! (a) 8-byte vs 16-byte compare-and-exchange in a dependent loop, in the
//!     kernel's `this_cpu` form (no LOCK prefix, inline asm) and in the
//!     LOCK-prefixed form (`portable_atomic`), as in Guzik's will-it-scale
//!     test of 15 Aug 2024 (Sapphire Rapids: 8-byte ≈ 461M/s, 16-byte ≈ 204M/s,
//!     ratio 2.26×).
//! (b) The allocation+free fast paths as real code on a private per-thread
//!     freelist: SLUB's `{freelist, tid}` with `cmpxchg16b`, and the 8-byte
//!     proposal (pending marker + `cmpxchg`), both without LOCK, as the
//!     kernel's per-CPU operations are.
//!
//! Each worker owns its data (will-it-scale's `_processes` flavour: nothing is
//! shared). Once per second the driver prints `min:… max:… total:…` of the
//! workers' iterations in that second, first `warmup` lines, then
//! `measurement` lines, then the median total per second and the ratios.
//!
//! Usage: `cargo bench --bench native_cmpxchg [-- --threads N --seconds S]`
//! (defaults: 1 thread, 1 warm-up and 2 measured seconds per test).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One counter per worker, on its own cache line.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

struct Config {
    threads: usize,
    warmup: usize,
    seconds: usize,
}

fn config() -> Config {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    Config {
        threads: value("--threads", 1).max(1),
        warmup: value("--warmup", 1),
        seconds: value("--seconds", 2).max(1),
    }
}

/// Batches of iterations between counter updates.
const BATCH: u64 = 1 << 14;

/// Runs `work` on `cfg.threads` workers, printing will-it-scale lines;
/// returns the median total iterations per second over the measurement.
fn run(name: &str, cfg: &Config, work: fn(&AtomicBool, &AtomicU64)) -> u64 {
    println!("# {name} ({} thread(s))", cfg.threads);
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<Vec<Counter>> =
        Arc::new((0..cfg.threads).map(|_| Counter::default()).collect());
    let workers: Vec<_> = (0..cfg.threads)
        .map(|i| {
            let (stop, counters) = (stop.clone(), counters.clone());
            std::thread::spawn(move || work(&stop, &counters[i].0))
        })
        .collect();
    let mut last: Vec<u64> = vec![0; cfg.threads];
    let mut totals = Vec::new();
    let start = Instant::now();
    for tick in 0..cfg.warmup + cfg.seconds {
        if tick == 0 && cfg.warmup > 0 {
            println!("warmup");
        }
        if tick == cfg.warmup {
            println!("measurement");
        }
        let deadline = start + Duration::from_secs(tick as u64 + 1);
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        let now: Vec<u64> = counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .collect();
        let delta: Vec<u64> = now.iter().zip(&last).map(|(n, l)| n - l).collect();
        last = now;
        let (min, max, total) = (
            delta.iter().min().copied().unwrap_or(0),
            delta.iter().max().copied().unwrap_or(0),
            delta.iter().sum::<u64>(),
        );
        println!("min:{min} max:{max} total:{total}");
        if tick >= cfg.warmup {
            totals.push(total);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    totals.sort_unstable();
    totals[totals.len() / 2]
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;

    /// `cmpxchg` without LOCK (the kernel's `this_cpu_cmpxchg` on x86):
    /// atomic against interrupts on this CPU only. Returns the old value.
    #[inline(always)]
    pub fn cmpxchg8_local(p: *mut u64, old: u64, new: u64) -> u64 {
        let prev: u64;
        // SAFETY: `p` points to a live, aligned u64 owned by the caller's
        // thread; the instruction touches only that word and flags.
        unsafe {
            asm!(
                "cmpxchg qword ptr [{p}], {new}",
                p = in(reg) p,
                new = in(reg) new,
                inout("rax") old => prev,
                options(nostack),
            );
        }
        prev
    }

    /// `cmpxchg16b` without LOCK (`this_cpu_try_cmpxchg128`). rbx is
    /// reserved by LLVM, so the low new word is swapped through it; every
    /// operand has a fixed register so none of them can be allocated to rbx.
    #[inline(always)]
    pub fn cmpxchg16_local(p: *mut u128, old: (u64, u64), new: (u64, u64)) -> (u64, u64) {
        let (lo, hi): (u64, u64);
        // SAFETY: `p` points to a live, 16-byte-aligned u128 owned by the
        // caller's thread; rbx is restored before the block ends.
        unsafe {
            asm!(
                "xchg rsi, rbx",
                "cmpxchg16b xmmword ptr [rdi]",
                "mov rbx, rsi",
                inout("rsi") new.0 => _,
                in("rdi") p,
                in("rcx") new.1,
                inout("rax") old.0 => lo,
                inout("rdx") old.1 => hi,
                options(nostack),
            );
        }
        (lo, hi)
    }

    pub fn supported() -> bool {
        std::arch::is_x86_feature_detected!("cmpxchg16b")
    }
}

#[cfg(target_arch = "x86_64")]
mod loops {
    use std::hint::black_box;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use portable_atomic::AtomicU128;

    use super::x86::{cmpxchg16_local, cmpxchg8_local};
    use super::BATCH;

    #[repr(align(16))]
    struct Pair(u128);

    fn spin(stop: &AtomicBool, count: &AtomicU64, mut body: impl FnMut()) {
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..BATCH {
                body();
            }
            count.fetch_add(BATCH, Ordering::Relaxed);
        }
    }

    /// (a) 8-byte cmpxchg without LOCK, each one succeeding (like Guzik's).
    pub fn cmpxchg8(stop: &AtomicBool, count: &AtomicU64) {
        let mut word = Box::new(0u64);
        let p: *mut u64 = &mut *word;
        let mut v = 0u64;
        spin(stop, count, || {
            v = cmpxchg8_local(p, v, v + 1) + 1;
        });
        black_box(word);
    }

    /// (a) 16-byte cmpxchg16b without LOCK, bumping both halves.
    pub fn cmpxchg16(stop: &AtomicBool, count: &AtomicU64) {
        let mut pair = Box::new(Pair(0));
        let p: *mut u128 = &mut pair.0;
        let mut v = (0u64, 0u64);
        spin(stop, count, || {
            let seen = cmpxchg16_local(p, v, (v.0 + 1, v.1 + 1));
            v = (seen.0 + 1, seen.1 + 1);
        });
        black_box(pair);
    }

    /// (a) LOCK cmpxchg, 8 bytes.
    pub fn lock_cmpxchg8(stop: &AtomicBool, count: &AtomicU64) {
        let a = AtomicU64::new(0);
        let mut v = 0u64;
        spin(stop, count, || {
            let _ = a.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire);
            v += 1;
        });
        black_box(a);
    }

    /// (a) LOCK cmpxchg16b via portable-atomic.
    pub fn lock_cmpxchg16(stop: &AtomicBool, count: &AtomicU64) {
        let a = AtomicU128::new(0);
        let mut v = 0u128;
        let step = 1u128 << 64 | 1;
        spin(stop, count, || {
            let _ = a.compare_exchange(v, v + step, Ordering::AcqRel, Ordering::Acquire);
            v += step;
        });
        black_box(a);
    }

    /// Objects of the per-thread "slab": index 0 is NULL.
    const OBJECTS: usize = 64;
    const TID_STEP: u64 = 2;

    fn slab() -> Vec<u64> {
        (0..=OBJECTS as u64)
            .map(|o| if o as usize == OBJECTS { 0 } else { o + 1 })
            .collect()
    }

    /// (b) SLUB's fast paths: alloc then free of one object per iteration,
    /// each a read of tid and head, a free-pointer access and one
    /// cmpxchg16b on `{freelist, tid}`.
    pub fn freelist_classic(stop: &AtomicBool, count: &AtomicU64) {
        let mut fp = slab();
        let mut cpu = Box::new(Pair(1));
        let p: *mut u128 = &mut cpu.0;
        // SAFETY (all raw accesses below): `p` is this thread's own pair.
        let read = || unsafe { std::ptr::read_volatile(p) };
        spin(stop, count, || {
            let obj = loop {
                let w = read();
                let (tid, head) = ((w >> 64) as u64, w as u64);
                let next = fp[head as usize];
                if cmpxchg16_local(p, (head, tid), (next, tid + TID_STEP)) == (head, tid) {
                    break head;
                }
            };
            black_box(obj);
            loop {
                let w = read();
                let (tid, head) = ((w >> 64) as u64, w as u64);
                fp[obj as usize] = head;
                if cmpxchg16_local(p, (head, tid), (obj, tid + TID_STEP)) == (head, tid) {
                    break;
                }
            }
        });
        black_box(fp);
    }

    /// (b) The 8-byte proposal's fast paths: pending marker saved and set,
    /// head read, free-pointer read, 8-byte cmpxchg, marker restored; free:
    /// head read, free pointer written, 8-byte cmpxchg.
    pub fn freelist_8byte(stop: &AtomicBool, count: &AtomicU64) {
        let mut fp = slab();
        let mut cpu = Box::new([1u64, 0u64]);
        let head_p: *mut u64 = &mut cpu[0];
        let pending_p: *mut u64 = &mut cpu[1];
        // SAFETY (all raw accesses below): both words are this thread's own.
        spin(stop, count, || {
            let prev = unsafe { std::ptr::read_volatile(pending_p) };
            unsafe { std::ptr::write_volatile(pending_p, 1) };
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            let obj = loop {
                let head = unsafe { std::ptr::read_volatile(head_p) };
                let next = fp[head as usize];
                if cmpxchg8_local(head_p, head, next) == head {
                    break head;
                }
            };
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            unsafe { std::ptr::write_volatile(pending_p, prev) };
            black_box(obj);
            loop {
                let head = unsafe { std::ptr::read_volatile(head_p) };
                fp[obj as usize] = head;
                if cmpxchg8_local(head_p, head, obj) == head {
                    break;
                }
            }
        });
        black_box((fp, cpu));
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    let cfg = config();
    if !x86::supported() {
        println!("native_cmpxchg: this CPU has no cmpxchg16b; nothing to measure");
        return;
    }
    let c8 = run("cmpxchg8 (no LOCK)", &cfg, loops::cmpxchg8);
    let c16 = run("cmpxchg16b (no LOCK)", &cfg, loops::cmpxchg16);
    let l8 = run("lock cmpxchg8", &cfg, loops::lock_cmpxchg8);
    let l16 = run(
        "lock cmpxchg16b (portable-atomic)",
        &cfg,
        loops::lock_cmpxchg16,
    );
    let fc = run(
        "freelist classic: alloc+free, cmpxchg16b {freelist, tid}",
        &cfg,
        loops::freelist_classic,
    );
    let fg = run(
        "freelist 8-byte proposal: alloc+free, pending + cmpxchg8",
        &cfg,
        loops::freelist_8byte,
    );
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    println!("# summary: median total iterations per second");
    println!(
        "cmpxchg8 {c8} / cmpxchg16b {c16} = {:.2}x (no LOCK; seed thread, Sapphire Rapids: 2.26x)",
        ratio(c8, c16)
    );
    println!(
        "lock cmpxchg8 {l8} / lock cmpxchg16b {l16} = {:.2}x",
        ratio(l8, l16)
    );
    println!(
        "freelist 8-byte {fg} / classic {fc} = {:.2}x (alloc+free pairs)",
        ratio(fg, fc)
    );
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    let _ = (
        config(),
        run as fn(&str, &Config, fn(&AtomicBool, &AtomicU64)) -> u64,
    );
    println!("native_cmpxchg: x86_64 only (cmpxchg16b); nothing to measure here");
}
