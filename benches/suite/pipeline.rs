//! The rest of a request's way: the compaction cut and the aggregate prune over long
//! histories, offloading a 10 MB tool result, and one whole scenario run on the simulator.
//!
//! References measured in the same run: cut and prune against 1,000 messages; offload against
//! one copy of the 10 MB text (the least any rewrite of it costs: offloading rewrites the
//! shared message, which copies it first); the scenario run against one preparation step
//! (measured by `preparation`).

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion};
use ctxbed::scenario::check::outcome::run as run_scenario;
use ctxbed::scenario::format::file::load;
use ctxbed_harness::compaction::config::{PruneConfig, TailBudget};
use ctxbed_harness::compaction::cut::cut_index;
use ctxbed_harness::compaction::prune::prune;
use ctxbed_harness::context::offload::{OffloadConfig, offload};
use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::storage::MemoryStorage;
use ctxbed_harness::tokens::{RatioEstimator, TokenEstimator};
use ctxbed_sim::text::{TextKind, generate_text};

use crate::Parts;
use crate::record::{self, Record};

/// History lengths for cut and prune; the smoke test stops at the first.
const HISTORY_SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Characters of the offloaded tool result.
const OFFLOAD_CHARS: usize = 10_000_000;
/// The scenario whose whole run is measured.
const SCENARIO: &str = "scenarios/tools/tool-then-reply.toml";

pub struct Pipeline {
    record: Record,
}

/// A user turn, then tool exchanges (two parallel calls every third round) with 3,000-character
/// results, `count` messages in all.
fn history(count: usize) -> Vec<Message> {
    let result = generate_text(TextKind::Log, 3_000, 1);
    let mut messages = vec![Message::user("h0", "Investigate the export.")];
    let mut round = 0usize;
    while messages.len() < count {
        let parallel = if round.is_multiple_of(3) { 2 } else { 1 };
        let calls = (0..parallel)
            .map(|p| {
                ContentPart::tool_call(
                    format!("c{round}_{p}"),
                    "execute",
                    serde_json::json!({ "round": round }),
                )
            })
            .collect();
        messages.push(Message::assistant_tool_calls(format!("a{round}"), calls));
        for p in 0..parallel {
            messages.push(Message::tool_result(
                format!("t{round}_{p}"),
                format!("c{round}_{p}"),
                "execute",
                result.clone(),
                false,
            ));
        }
        round += 1;
    }
    messages
}

pub fn run(criterion: &mut Criterion, parts: &Parts, smoke_test: bool) -> Pipeline {
    let record = Record::default();
    let sizes = if smoke_test {
        &HISTORY_SIZES[..1]
    } else {
        &HISTORY_SIZES[..]
    };
    if parts.wanted("compaction") {
        compaction(criterion, &record, sizes);
    }
    if parts.wanted("offload") {
        offload_large_result(criterion, &record, smoke_test);
    }
    if parts.wanted("scenario") {
        scenario(criterion, &record);
    }
    Pipeline { record }
}

fn compaction(criterion: &mut Criterion, record: &Record, sizes: &[usize]) {
    let mut group = criterion.benchmark_group("compaction");
    for &size in sizes {
        let messages = history(size);
        record.bench(
            &mut group,
            BenchmarkId::new("cut", size),
            &format!("cut/{size}"),
            || {
                cut_index(black_box(&messages), TailBudget::Tokens(8_000), |m| {
                    RatioEstimator.message_tokens(m)
                })
            },
        );
        // Prune rewrites the history, so each iteration works on a fresh copy; the copy is
        // measured on its own and subtracted in the summary.
        record.bench(
            &mut group,
            BenchmarkId::new("prune", size),
            &format!("prune/{size}"),
            || {
                let mut copy = messages.clone();
                prune(&mut copy, &PruneConfig::default(), &RatioEstimator);
                copy
            },
        );
        record.bench(
            &mut group,
            BenchmarkId::new("history_clone", size),
            &format!("clone/{size}"),
            || messages.clone(),
        );
    }
    group.finish();
}

fn offload_large_result(criterion: &mut Criterion, record: &Record, smoke_test: bool) {
    let chars = if smoke_test { 100_000 } else { OFFLOAD_CHARS };
    let text = generate_text(TextKind::Log, chars, 3);
    let messages = vec![
        Message::user("u1", "Collect the logs."),
        Message::assistant_tool_calls(
            "a1",
            vec![ContentPart::tool_call(
                "c1",
                "execute",
                serde_json::json!({ "command": "collect" }),
            )],
        ),
        Message::tool_result("t1", "c1", "execute", text.clone(), false),
    ];
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        panic!("a current-thread runtime starts");
    };
    let config = OffloadConfig::default();
    let mut group = criterion.benchmark_group("offload");
    // A fresh storage each time: the result is written, not found already there.
    record.bench(
        &mut group,
        BenchmarkId::from_parameter("10MB_result"),
        "offload",
        || {
            let storage = MemoryStorage::new();
            let mut copy = messages.clone();
            let outcome = runtime.block_on(offload(&mut copy, &storage, &config, "bench"));
            assert_eq!(outcome.written.len(), 1, "the result is offloaded");
            (copy, storage)
        },
    );
    record.bench(
        &mut group,
        BenchmarkId::from_parameter("10MB_text_copy"),
        "offload_clone",
        || black_box(&text).clone(),
    );
    group.finish();
}

fn scenario(criterion: &mut Criterion, record: &Record) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO);
    let Ok(scenario) = load(&path) else {
        panic!("the benchmark scenario {} loads", path.display());
    };
    let mut group = criterion.benchmark_group("scenario");
    record.bench(
        &mut group,
        BenchmarkId::from_parameter("tools/tool-then-reply"),
        "scenario",
        || run_scenario(black_box(&scenario)).map(|output| output.text.len()),
    );
    group.finish();
}

impl Pipeline {
    pub fn print(&self) {
        if self.record.is_empty() {
            return;
        }
        let seconds = |key: &str| self.record.seconds(key);
        let minus = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (a - b).max(0.0));
        eprintln!(
            "\n## Compaction, against 1,000 messages (prune without its copy of the history)"
        );
        eprintln!("| messages | cut | × 1,000 | prune | × 1,000 | history clone |");
        eprintln!("| ---: | ---: | ---: | ---: | ---: | ---: |");
        let prune_1000 = minus(seconds("prune/1000"), seconds("clone/1000"));
        for size in HISTORY_SIZES {
            let cut = seconds(&format!("cut/{size}"));
            let prune = minus(
                seconds(&format!("prune/{size}")),
                seconds(&format!("clone/{size}")),
            );
            eprintln!(
                "| {size} | {} | {} | {} | {} | {} |",
                record::time(cut),
                record::ratio(cut, seconds("cut/1000")),
                record::time(prune),
                record::ratio(prune, prune_1000),
                record::time(seconds(&format!("clone/{size}"))),
            );
        }
        let offload = minus(seconds("offload"), seconds("offload_clone"));
        eprintln!("\n## Offload of a 10 MB tool result");
        eprintln!(
            "offload {} ({}) beyond the copy of the message it rewrites, {} × one copy of the text ({})",
            record::time(offload),
            record::rate(OFFLOAD_CHARS, offload),
            record::ratio(offload, seconds("offload_clone")),
            record::time(seconds("offload_clone")),
        );
        eprintln!("\n## A whole scenario run ({SCENARIO})");
        eprintln!("run {}", record::time(seconds("scenario")));
    }
}
