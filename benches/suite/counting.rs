//! Exact counting over long runs of one class of characters: the cost per byte at each size
//! from 64 KiB to 1 MiB, which stays flat when counting is linear.
//!
//! A request may hold a megabyte of digits, spaces or punctuation, and the exact counter is the
//! one the mock models and ctxbed's own exact estimates share. Each class is its unit repeated
//! to the size (then its tail), counted by `ExactEstimator::memoised(O200k)`, the counter the
//! shared exact estimator wraps. The ratio in the summary is the cost per byte at 1 MiB over
//! the cost per byte at 64 KiB, measured in the same run: about 1 when the cost is linear, 16
//! when it is quadratic.

use criterion::{BenchmarkId, Criterion, Throughput};
use ctxbed_harness::tokens::{ExactEstimator, TokenEstimator, Vocabulary};

use crate::record::{self, Record};

/// Sizes measured, in KiB; the smoke test stops at the first.
const SIZES_KIB: [usize; 5] = [64, 128, 256, 512, 1024];

/// Each class: its name, the unit repeated to the size, and what follows the run.
const CLASSES: [(&str, &str, &str); 13] = [
    ("digits", "0123456789", ""),
    ("digits-then-other", "0123456789", "é"),
    ("spaced-digits", "1234567 ", ""),
    ("letters", "abcdefghijklmnopqrstuvwxyz", ""),
    ("capitals", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", ""),
    ("spaces", " ", "x"),
    ("whitespace", " \t \n", "x"),
    ("punctuation", "!\"#$%&()*+,-.:;<=>?@[]^_{|}~", ""),
    (
        "ideographs",
        "的一是不了人我在有他这中大来上国个到说们",
        "。",
    ),
    (
        "ideographs-then-letter",
        "的一是不了人我在有他这中大来上国个到说们",
        "a",
    ),
    ("other-digits", "٠١٢٣٤٥٦٧٨٩", ""),
    ("other-spaces", "\u{3000}", "x"),
    ("cyrillic", "абвгдежзийклмнопрстуфхцчшщъыьэюя", ""),
];

pub struct Counting {
    record: Record,
    sizes: usize,
}

/// `unit` repeated to `bytes` bytes (whole characters), then `tail`.
fn text(unit: &str, tail: &str, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + unit.len() + tail.len());
    for c in unit.chars().cycle() {
        if out.len() + c.len_utf8() > bytes {
            break;
        }
        out.push(c);
    }
    out.push_str(tail);
    out
}

pub fn run(criterion: &mut Criterion, smoke_test: bool) -> Counting {
    let record = Record::default();
    let sizes = if smoke_test { 1 } else { SIZES_KIB.len() };
    let counter = ExactEstimator::memoised(Vocabulary::O200k);
    for (name, unit, tail) in CLASSES {
        let mut group = criterion.benchmark_group(format!("counting/{name}"));
        for kib in &SIZES_KIB[..sizes] {
            let text = text(unit, tail, kib * 1024);
            group.throughput(Throughput::Bytes(text.len() as u64));
            let id = BenchmarkId::from_parameter(format!("{kib}KiB"));
            record.bench(&mut group, id, &format!("{name}/{kib}"), || {
                counter.text_tokens(&text)
            });
        }
        group.finish();
    }
    Counting { record, sizes }
}

impl Counting {
    pub fn print(&self) {
        if self.record.is_empty() {
            return;
        }
        eprintln!("\n## Exact o200k counting of one class: ns per byte at each size");
        let sizes = &SIZES_KIB[..self.sizes];
        let header: Vec<String> = sizes.iter().map(|kib| format!("{kib} KiB")).collect();
        eprintln!("| class | {} | largest / smallest |", header.join(" | "));
        eprintln!("| --- |{} ---: |", " ---: |".repeat(sizes.len()));
        for (name, _, _) in CLASSES {
            let per_byte: Vec<Option<f64>> = sizes
                .iter()
                .map(|kib| {
                    let seconds = self.record.seconds(&format!("{name}/{kib}"))?;
                    Some(seconds * 1e9 / (kib * 1024) as f64)
                })
                .collect();
            let cells: Vec<String> = per_byte
                .iter()
                .map(|ns| ns.map_or("-".to_string(), |ns| format!("{ns:.1}")))
                .collect();
            let last = per_byte.last().copied().flatten();
            let first = per_byte.first().copied().flatten();
            eprintln!(
                "| {name} | {} | {} |",
                cells.join(" | "),
                record::ratio(last, first)
            );
        }
    }
}
