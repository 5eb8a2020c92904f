//! One reasoning step's preparation over long histories, with counts cached as in a run.
//!
//! The history is a user turn, then tool exchanges with 400-character log results, held in a
//! `History` (which tells the preparation what changed since its last look); the sources are
//! reference blocks of 500 characters of prose. The estimator is approx-v2-o200k behind a
//! `CachedEstimator`, as scenarios with `estimator = "approx"` run it, and the cache is warm
//! (the previous step saw the same history), so a step counts and hashes nothing new.
//! `slice/N` is the step with 10 sources over the same messages as a plain slice, which the
//! preparation recognises by comparing one handle per message. `uncached/N` is the step with
//! approx-v2-o200k alone (no `CachedEstimator`), so every step counts and hashes every message; it
//! runs with 10 sources up to 10,000 messages.
//!
//! Two references in the same run: `history_clone/N` copies the history (messages share their
//! content, so this is one reference-count increment per message), and `request_json/N`
//! serialises the prepared request (10 sources) as the OpenAI-compatible provider sends it, the
//! least a real provider does with each request.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion};
use ctxbed_harness::context::block::{ContextBlock, Material};
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::history::{History, HistoryRef};
use ctxbed_harness::context::{PrepareInput, prepare};
use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::model::{ModelInfo, ModelRequest, Purpose};
use ctxbed_harness::tokens::{ApproximateEstimator, CachedEstimator, TokenEstimator};
use ctxbed_providers::{MaxTokensField, WireOptions, openai};
use ctxbed_sim::text::{TextKind, generate_text};

use crate::record::{self, Record};

/// History lengths measured; the smoke test stops at the second.
const HISTORY_SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Source blocks per step.
const SOURCE_COUNTS: [usize; 3] = [0, 10, 100];
/// The longest history the uncached step is measured on.
const UNCACHED_MESSAGES_MAX: usize = 10_000;

pub struct Preparation {
    record: Record,
}

/// A history of `count` messages: a user turn, then tool exchanges with 400-character results.
/// Results repeat every 64 rounds (distinct ids, so every message is its own), which keeps
/// the setup of 100,000 messages fast.
pub fn history(count: usize) -> Vec<Message> {
    let results: Vec<String> = (0..64)
        .map(|seed| generate_text(TextKind::Log, 400, seed))
        .collect();
    let mut messages = vec![Message::user("h0", "Investigate the flaky export test.")];
    let mut round = 0usize;
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
        messages.push(Message::tool_result(
            format!("t{round}"),
            call_id,
            "execute",
            results[round % results.len()].clone(),
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

fn sources(count: usize) -> Vec<Material> {
    (0..count)
        .map(|index| {
            let text = generate_text(TextKind::Prose, 500, index as u64);
            Material::from_block(
                "bench",
                &ContextBlock::reference(format!("doc{index}"), text),
            )
        })
        .collect()
}

fn step(
    model: &ModelInfo,
    materials: &[Material],
    history: HistoryRef<'_>,
    estimator: &dyn TokenEstimator,
) -> i64 {
    prepared_request(model, materials, history, estimator).0
}

/// The step's estimate and its request.
fn prepared_request(
    model: &ModelInfo,
    materials: &[Material],
    history: HistoryRef<'_>,
    estimator: &dyn TokenEstimator,
) -> (i64, ModelRequest) {
    let input = PrepareInput {
        call_id: "c1-r1",
        purpose: Purpose::Reasoning,
        model,
        system_prompt: Some("Investigate and fix."),
        materials,
        transforms: &[],
        history,
        projections: &[],
        tools: &Default::default(),
        estimator,
        budget: BudgetSettings::default(),
        pairing: Default::default(),
        selection: None,
    };
    match prepare(&input) {
        Ok(prepared) => (prepared.manifest.estimated_input_tokens, prepared.request),
        Err(rejected) => panic!("the benchmark step prepares: {}", rejected.error),
    }
}

pub fn run(criterion: &mut Criterion, smoke_test: bool) -> Preparation {
    let record = Record::default();
    let model = ModelInfo {
        name: "bench".into(),
        context_window: Some(100_000_000),
        max_output_tokens: None,
    };
    let sizes = if smoke_test {
        &HISTORY_SIZES[..2]
    } else {
        &HISTORY_SIZES[..]
    };
    for &size in sizes {
        let messages = History::from(history(size));
        let mut group = criterion.benchmark_group(format!("prepare_step/{size}"));
        for source_count in SOURCE_COUNTS {
            let materials = sources(source_count);
            let estimator = CachedEstimator::new(ApproximateEstimator::default());
            // The previous step: every message counted and hashed once.
            step(&model, &materials, (&messages).into(), &estimator);
            let key = format!("prepare/{size}/{source_count}");
            record.bench(
                &mut group,
                BenchmarkId::new("sources", source_count),
                &key,
                || step(&model, &materials, black_box(&messages).into(), &estimator),
            );
        }
        let materials = sources(10);
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        step(&model, &materials, (&messages).into(), &estimator);
        record.bench(
            &mut group,
            BenchmarkId::from_parameter("slice"),
            &format!("slice/{size}"),
            || {
                let slice: &[Message] = black_box(&messages);
                step(&model, &materials, slice.into(), &estimator)
            },
        );
        if size <= UNCACHED_MESSAGES_MAX {
            let materials = sources(10);
            record.bench(
                &mut group,
                BenchmarkId::from_parameter("uncached"),
                &format!("uncached/{size}"),
                || {
                    step(
                        &model,
                        &materials,
                        black_box(&messages).into(),
                        &ApproximateEstimator::default(),
                    )
                },
            );
        }
        record.bench(
            &mut group,
            BenchmarkId::from_parameter("history_clone"),
            &format!("clone/{size}"),
            || black_box(&messages).to_vec(),
        );
        let (_, request) = prepared_request(
            &model,
            &sources(10),
            (&messages).into(),
            &CachedEstimator::new(ApproximateEstimator::default()),
        );
        let wire = WireOptions {
            model: "bench".into(),
            stream: false,
            max_tokens_field: MaxTokensField::MaxTokens,
            max_output_tokens: None,
            thinking_budget: None,
        };
        record.bench(
            &mut group,
            BenchmarkId::from_parameter("request_json"),
            &format!("json/{size}"),
            || {
                serde_json::to_vec(&openai::request_body(black_box(&request), &wire))
                    .map(|b| b.len())
            },
        );
        group.finish();
    }
    Preparation { record }
}

impl Preparation {
    pub fn print(&self) {
        eprintln!("\n## One reasoning step (`prepare`, counts cached), against 100 messages");
        eprint!("| messages |");
        for sources in SOURCE_COUNTS {
            eprint!(" {sources} sources | × 100 msgs |");
        }
        eprintln!(
            " plain slice (10 sources) | slice ÷ History | history clone | request JSON | step ÷ JSON (10 sources) | uncached (10 sources) | uncached ÷ cached |"
        );
        eprintln!(
            "| ---: |{} ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            " ---: | ---: |".repeat(SOURCE_COUNTS.len())
        );
        for size in HISTORY_SIZES {
            let seconds = |key: String| self.record.seconds(&key);
            eprint!("| {size} |");
            for sources in SOURCE_COUNTS {
                let at_size = seconds(format!("prepare/{size}/{sources}"));
                let at_100 = seconds(format!("prepare/100/{sources}"));
                eprint!(
                    " {} | {} |",
                    record::time(at_size),
                    record::ratio(at_size, at_100)
                );
            }
            let clone = seconds(format!("clone/{size}"));
            let json = seconds(format!("json/{size}"));
            let cached = seconds(format!("prepare/{size}/10"));
            let slice = seconds(format!("slice/{size}"));
            let uncached = seconds(format!("uncached/{size}"));
            eprintln!(
                " {} | {} | {} | {} | {} | {} | {} |",
                record::time(slice),
                record::ratio(slice, cached),
                record::time(clone),
                record::time(json),
                record::ratio(cached, json),
                record::time(uncached),
                record::ratio(uncached, cached),
            );
        }
        eprintln!(
            "\nper message, plain slice (10 sources): the step over N messages less the step over a History, divided by N"
        );
        for size in HISTORY_SIZES {
            let seconds = |key: String| self.record.seconds(&key);
            let per_message = seconds(format!("slice/{size}"))
                .zip(seconds(format!("prepare/{size}/10")))
                .map(|(slice, history)| (slice - history).max(0.0) / size as f64);
            eprintln!("  {size:>7}: {}", record::time(per_message));
        }
    }
}
