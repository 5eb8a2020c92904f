//! Preparation of one reasoning step over histories of 100, 1,000 and 10,000 messages.
//!
//! Shows how the cost of a step grows with history length. Each size is measured in the same
//! run, so the figures read as ratios against the 100-message case. `cargo bench -- --test`
//! runs each once (CI smoke).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxbed::context::block::{ContextBlock, Material};
use ctxbed::context::budget::BudgetSettings;
use ctxbed::context::{PrepareInput, prepare};
use ctxbed::message::{ContentPart, Message};
use ctxbed::model::{ModelInfo, Purpose};
use ctxbed::sim::text::{TextKind, generate_text};
use ctxbed::tokens::RatioEstimator;

/// A history of `count` messages: a user turn, then tool exchanges with 400-character results.
fn history(count: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("h0", "Investigate the flaky export test.")];
    let mut round = 0;
    while messages.len() < count {
        let call_id = format!("call_{round}");
        messages.push(Message::assistant_tool_calls(
            format!("a{round}"),
            vec![ContentPart::tool_call(
                call_id.clone(),
                "execute",
                serde_json::json!({ "round": round }),
            )],
        ));
        let text = generate_text(TextKind::Log, 400, round as u64);
        messages.push(Message::tool_result(
            format!("t{round}"),
            call_id,
            "execute",
            text,
            false,
        ));
        round += 1;
    }
    messages.truncate(count);
    if messages.last().is_some_and(|m| m.has_tool_calls()) {
        messages.pop();
    }
    messages
}

fn preparation(c: &mut Criterion) {
    let model = ModelInfo {
        name: "bench".into(),
        context_window: Some(10_000_000),
        max_output_tokens: None,
    };
    let materials: Vec<Material> = (0..10)
        .map(|i| {
            Material::from_block(
                "bench",
                &ContextBlock::reference(format!("doc{i}"), generate_text(TextKind::Prose, 500, i)),
            )
        })
        .collect();
    let mut group = c.benchmark_group("prepare_step");
    for size in [100usize, 1_000, 10_000] {
        let messages = history(size);
        group.bench_with_input(
            BenchmarkId::from_parameter(size),
            &messages,
            |b, messages| {
                b.iter(|| {
                    let input = PrepareInput {
                        call_id: "c1/r1",
                        purpose: Purpose::Reasoning,
                        model: &model,
                        system_prompt: Some("Investigate and fix."),
                        materials: &materials,
                        transforms: &[],
                        history: black_box(messages),
                        projections: &[],
                        tools: &[],
                        estimator: &RatioEstimator,
                        budget: BudgetSettings::default(),
                        pairing: Default::default(),
                        selection: None,
                    };
                    prepare(&input).map(|prepared| prepared.manifest.estimated_input_tokens)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, preparation);
criterion_main!(benches);
