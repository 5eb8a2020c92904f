//! Compaction cut selection and aggregate prune over histories of 1,000, 10,000 and 100,000
//! messages. Both are single passes, so cost should grow linearly; the figures are read as
//! ratios against the 1,000-message case measured in the same run.
//! `cargo bench -- --test` runs each once (CI smoke).

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxbed::compaction::config::{PruneConfig, TailBudget};
use ctxbed::compaction::cut::cut_index;
use ctxbed::compaction::prune::prune;
use ctxbed::message::{ContentPart, Message};
use ctxbed::sim::text::{TextKind, generate_text};
use ctxbed::tokens::{RatioEstimator, TokenEstimator};

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

fn compaction(c: &mut Criterion) {
    let sizes = [1_000usize, 10_000, 100_000];
    let histories: Vec<Vec<Message>> = sizes.iter().map(|size| history(*size)).collect();
    let mut group = c.benchmark_group("compaction_cut");
    for (size, messages) in sizes.iter().zip(&histories) {
        group.bench_with_input(
            BenchmarkId::from_parameter(size),
            messages,
            |b, messages| {
                b.iter(|| {
                    cut_index(black_box(messages), TailBudget::Tokens(8_000), |m| {
                        RatioEstimator.message_tokens(m)
                    })
                })
            },
        );
    }
    group.finish();
    let mut group = c.benchmark_group("compaction_prune");
    group.sample_size(10);
    for (size, messages) in sizes.iter().zip(&histories) {
        group.bench_with_input(
            BenchmarkId::from_parameter(size),
            messages,
            |b, messages| {
                b.iter_batched(
                    || messages.clone(),
                    |mut messages| prune(&mut messages, &PruneConfig::default(), &RatioEstimator),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group!(benches, compaction);
criterion_main!(benches);
