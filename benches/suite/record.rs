//! Timings criterion takes, kept for the summary tables.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId};

/// Mean time per iteration of each benchmark, by name.
#[derive(Default)]
pub struct Record {
    timings: RefCell<BTreeMap<String, (u64, Duration)>>,
}

impl Record {
    /// Benchmarks `routine` in `group` under `id`, and keeps its total iterations and time.
    pub fn bench<R>(
        &self,
        group: &mut BenchmarkGroup<'_, WallTime>,
        id: BenchmarkId,
        key: &str,
        mut routine: impl FnMut() -> R,
    ) {
        group.bench_function(id, |bencher| {
            bencher.iter_custom(|iterations| {
                let start = Instant::now();
                for _ in 0..iterations {
                    black_box(routine());
                }
                let elapsed = start.elapsed();
                let mut timings = self.timings.borrow_mut();
                let total = timings.entry(key.to_string()).or_default();
                total.0 += iterations;
                total.1 += elapsed;
                elapsed
            })
        });
    }

    /// Benchmarks a routine that times `iterations` iterations itself (to leave its setup
    /// out), and keeps its total iterations and time.
    pub fn bench_custom(
        &self,
        group: &mut BenchmarkGroup<'_, WallTime>,
        id: BenchmarkId,
        key: &str,
        mut routine: impl FnMut(u64) -> Duration,
    ) {
        group.bench_function(id, |bencher| {
            bencher.iter_custom(|iterations| {
                let elapsed = routine(iterations);
                let mut timings = self.timings.borrow_mut();
                let total = timings.entry(key.to_string()).or_default();
                total.0 += iterations;
                total.1 += elapsed;
                elapsed
            })
        });
    }

    /// True when nothing was measured (a filter left every benchmark out).
    pub fn is_empty(&self) -> bool {
        self.timings.borrow().is_empty()
    }

    /// Mean seconds per iteration of `key`; `None` when a filter left it out.
    pub fn seconds(&self, key: &str) -> Option<f64> {
        let timings = self.timings.borrow();
        let (iterations, time) = timings.get(key)?;
        (*iterations > 0).then(|| time.as_secs_f64() / *iterations as f64)
    }
}

/// A duration in the unit that reads best.
pub fn time(seconds: Option<f64>) -> String {
    match seconds {
        None => "-".to_string(),
        Some(s) if s >= 1.0 => format!("{s:.2} s"),
        Some(s) if s >= 1e-3 => format!("{:.2} ms", s * 1e3),
        Some(s) if s >= 1e-6 => format!("{:.1} µs", s * 1e6),
        Some(s) => format!("{:.0} ns", s * 1e9),
    }
}

/// Bytes per second in the unit that reads best.
pub fn rate(bytes: usize, seconds: Option<f64>) -> String {
    match seconds {
        None => "-".to_string(),
        Some(s) => {
            let per_second = bytes as f64 / s;
            if per_second >= 1e9 {
                format!("{:.2} GB/s", per_second / 1e9)
            } else {
                format!("{:.1} MB/s", per_second / 1e6)
            }
        }
    }
}

/// `numerator / denominator` as a multiple.
pub fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> String {
    match (numerator, denominator) {
        (Some(n), Some(d)) if d > 0.0 => {
            let r = n / d;
            if r >= 10.0 {
                format!("{r:.0}×")
            } else if r >= 0.01 || r <= 0.0 {
                format!("{r:.2}×")
            } else {
                // Two significant digits, so a small ratio does not print as 0.00×.
                let digits = (-r.log10()).ceil() as usize + 1;
                format!("{r:.digits$}×")
            }
        }
        _ => "-".to_string(),
    }
}
