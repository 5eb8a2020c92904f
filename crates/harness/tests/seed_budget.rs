//! Seed statements about budgets, offload, compaction and the manifest observer: the message
//! trigger at exactly its count, the one-token floors of a tiny window, offload and compaction
//! switched off one without the other, a token trigger above the allowance, prune switched off
//! where it would prune, the prune preview's shape, one observer called by two agents at once,
//! and the model each manifest names.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctxbed_harness::agent::{ContextPolicy, HarnessAgent};
use ctxbed_harness::compaction::config::{CompactionConfig, PruneConfig};
use ctxbed_harness::compaction::prune::prune;
use ctxbed_harness::context::budget::{BudgetSettings, InputBudget};
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::model::Purpose;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{MemoryStorage, Storage};
use ctxbed_harness::tokens::RatioEstimator;
use support::{
    CountingTool, Scripted, Turn, chat_history, info, lock, recording_policy, request_text, runtime,
};

fn alice() -> RuntimeContext {
    RuntimeContext::new().with_user("alice").with_session("s1")
}

/// Compaction by messages only (a token trigger far above anything here), keeping two.
fn by_messages(trigger_messages: usize) -> CompactionConfig {
    CompactionConfig {
        trigger_messages,
        keep_tokens: Some(0),
        keep_messages: 2,
        flush_before_compact: false,
        ..CompactionConfig::default()
    }
}

/// Whether a summary request was sent.
fn summarised(model: &Scripted) -> bool {
    model
        .requests()
        .iter()
        .any(|r| r.purpose == Purpose::Summary)
}

/// S105: a conversation of exactly `trigger_messages` messages compacts; one fewer does not.
#[test]
fn exactly_trigger_messages_compacts_and_one_fewer_does_not() {
    runtime().block_on(async {
        for (loaded, expected) in [(5, true), (4, false)] {
            let model = Scripted::new(info("m", 16_000), vec![Turn::reply("ok")]);
            let agent = HarnessAgent::builder()
                .model(model.clone())
                .compaction(by_messages(6))
                .build()
                .expect("an agent");
            let mut history = chat_history(3, 2);
            history.truncate(loaded);
            agent.load_history(&alice(), history);
            agent.call("Next.", alice()).await.expect("a reply");
            // The conversation at preparation: the loaded messages and the input.
            assert_eq!(summarised(&model), expected, "{} messages", loaded + 1);
        }
    });
}

/// S167: with a 10-token window the output reservation (10/8) and the safety margin (10/50)
/// are each raised to one token, so the limit is 8 (a 7-token window, whose 7/8 is 0 too, keeps
/// 5); a 49-token window still keeps a 1-token margin; and a request prepared under a 10-token
/// window reports that limit.
#[test]
fn a_ten_token_window_keeps_one_token_each_for_output_and_safety() {
    let tiny = InputBudget::compute(Some(10), &BudgetSettings::default());
    assert_eq!(
        (tiny.output_reserve, tiny.safety_margin, tiny.input_limit),
        (1, 1, 8)
    );
    let seven = InputBudget::compute(Some(7), &BudgetSettings::default());
    assert_eq!(
        (seven.output_reserve, seven.safety_margin, seven.input_limit),
        (1, 1, 5)
    );
    let small = InputBudget::compute(Some(49), &BudgetSettings::default());
    assert_eq!(
        (small.output_reserve, small.safety_margin, small.input_limit),
        (6, 1, 42)
    );
    runtime().block_on(async {
        let (policy, manifests) = recording_policy();
        let model = Scripted::new(info("tiny", 10), vec![Turn::reply("ok")]);
        let agent = HarnessAgent::builder()
            .model(model)
            .context_policy(policy)
            .build()
            .expect("an agent");
        let outcome = agent.call("Hi.", alice()).await;
        assert!(outcome.is_err(), "no request fits 8 tokens");
        let manifest = lock(&manifests)[0].clone();
        assert_eq!(manifest.input_limit, 8);
        assert_eq!(manifest.validation.as_str(), "budget_exceeded");
    });
}

/// An agent whose tool answers `chars` characters of text, and its model.
fn with_big_result(chars: usize) -> (ctxbed_harness::agent::HarnessAgentBuilder, Arc<Scripted>) {
    let model = Scripted::new(
        info("m", 200_000),
        vec![
            Turn::call("c1", "fetch_log", serde_json::json!({})),
            Turn::reply("ok"),
        ],
    );
    let log = "log line with a status code 200\n".repeat(chars / 32 + 1);
    let builder = HarnessAgent::builder()
        .model(model.clone())
        .tool(CountingTool::new("fetch_log", &log[..chars]));
    (builder, model)
}

/// S174: with compaction disabled an oversized result is still offloaded before the next
/// request.
#[test]
fn compaction_off_still_offloads_an_oversized_result() {
    runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let (builder, model) = with_big_result(90_000);
        let (policy, manifests) = recording_policy();
        let agent = builder
            .workspace(storage.clone())
            .disable_compaction()
            .context_policy(policy)
            .build()
            .expect("an agent");
        agent
            .call("Fetch the log.", alice())
            .await
            .expect("a reply");
        let files = storage
            .list("large_tool_results/")
            .await
            .expect("a listing");
        assert_eq!(files.len(), 1, "{files:?}");
        let second = request_text(&model.reasoning()[1]);
        assert!(
            second.contains(files[0].as_str()),
            "the placeholder names the file"
        );
        assert!(second.len() < 20_000, "the result is a preview now");
        let kinds: Vec<&str> = lock(&manifests)[1]
            .transforms
            .iter()
            .map(|t| t.kind())
            .collect();
        assert!(kinds.contains(&"tool_result_offload"), "{kinds:?}");
    });
}

/// S175: with offload disabled compaction still runs, and the oversized result it keeps in the
/// tail stays whole.
#[test]
fn offload_off_still_compacts_and_keeps_the_result_inline() {
    runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let (builder, model) = with_big_result(90_000);
        let agent = builder
            .workspace(storage.clone())
            .compaction(by_messages(6))
            .disable_tool_result_eviction()
            .build()
            .expect("an agent");
        agent.load_history(&alice(), chat_history(2, 2));
        agent
            .call("Fetch the log.", alice())
            .await
            .expect("a reply");
        assert!(summarised(&model), "compaction ran");
        let second = &model.reasoning()[1];
        let result = second
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .next()
            .expect("the result, kept in the tail")
            .clone();
        assert_eq!(result.text_chars(), 90_000, "not offloaded");
        assert!(
            storage
                .list("large_tool_results/")
                .await
                .expect("a listing")
                .is_empty()
        );
    });
}

/// S179: a positive `trigger_tokens` above the conversation allowance is capped at it: a
/// conversation over the allowance compacts although it is far below the configured value.
#[test]
fn a_token_trigger_above_the_allowance_is_capped_at_the_allowance() {
    let config = CompactionConfig {
        trigger_tokens: 50_000,
        ..CompactionConfig::default()
    };
    assert_eq!(config.token_trigger(3_000), 3_000);
    assert_eq!(config.token_trigger(80_000), 50_000);
    runtime().block_on(async {
        let (policy, manifests) = recording_policy();
        let model = Scripted::new(info("m", 4_000), vec![Turn::reply("ok")]);
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .compaction(CompactionConfig {
                trigger_messages: 1_000,
                ..config
            })
            .context_policy(policy)
            .build()
            .expect("an agent");
        agent.load_history(&alice(), chat_history(8, 120));
        agent.call("Next.", alice()).await.expect("a reply");
        assert!(summarised(&model), "compacted at the allowance");
        let manifest = lock(&manifests)
            .iter()
            .find(|m| m.purpose == Purpose::Reasoning)
            .cloned()
            .expect("a reasoning manifest");
        assert!(
            manifest.conversation_allowance < 4_000,
            "{}",
            manifest.conversation_allowance
        );
        assert_eq!(manifest.validation.as_str(), "passed");
    });
}

/// Ten old tool exchanges of 30,000 characters each: over 60,000 tokens of tool output, so the
/// default prune (protect 40,000, need 20,000) has something to prune.
fn tool_heavy_history() -> Vec<Message> {
    let mut history = vec![Message::user("u0", "Collect the logs.")];
    for i in 0..10 {
        let output = format!(
            "run {i}: {}",
            "request served with status 200 ok\n".repeat(900)
        );
        history.push(Message::assistant_tool_calls(
            format!("a{i}"),
            vec![ContentPart::tool_call(
                format!("c{i}"),
                "fetch_log",
                serde_json::json!({}),
            )],
        ));
        history.push(Message::tool_result(
            format!("t{i}"),
            format!("c{i}"),
            "fetch_log",
            output,
            false,
        ));
    }
    history.push(Message::assistant("a-end", "Collected."));
    history
}

/// S195: `prune: None` disables pruning where the default would prune: the same history is
/// pruned under the default and left whole without it.
#[test]
fn prune_none_keeps_outputs_the_default_prunes() {
    runtime().block_on(async {
        for (prune_config, pruned) in [(Some(PruneConfig::default()), true), (None, false)] {
            let model = Scripted::new(info("m", 200_000), vec![Turn::reply("ok")]);
            let (policy, manifests) = recording_policy();
            let agent = HarnessAgent::builder()
                .model(model.clone())
                .compaction(CompactionConfig {
                    prune: prune_config,
                    ..CompactionConfig::default()
                })
                .context_policy(policy)
                .build()
                .expect("an agent");
            agent.load_history(&alice(), tool_heavy_history());
            agent
                .call("Summarise them.", alice())
                .await
                .expect("a reply");
            let kinds: Vec<&str> = lock(&manifests)[0]
                .transforms
                .iter()
                .map(|t| t.kind())
                .collect();
            let text = request_text(&model.reasoning()[0]);
            assert_eq!(kinds.contains(&"tool_output_prune"), pruned, "{kinds:?}");
            assert_eq!(text.contains("characters pruned"), pruned);
        }
    });
}

/// S194 (a departure kept on purpose): a pruned output keeps a 2,000-character preview in all,
/// the first 1,000 and the last 1,000 characters around the marker.
#[test]
fn a_pruned_output_keeps_its_first_and_last_thousand_characters() {
    let text: String = (0..5_000u32)
        .map(|i| char::from(b'a' + u8::try_from(i % 26).expect("below 26")))
        .collect();
    let mut messages = vec![Message::tool_result(
        "t0",
        "c0",
        "fetch_log",
        text.clone(),
        false,
    )];
    let config = PruneConfig {
        protect_tokens: 0,
        minimum_prunable_tokens: 1,
        ..PruneConfig::default()
    };
    let pruned = prune(&mut messages, &config, &RatioEstimator).expect("pruned");
    assert_eq!(pruned.results, 1);
    let kept = messages[0].tool_results().next().expect("a result").text();
    let expected = format!(
        "{}\n[... 3000 characters pruned ...]\n{}",
        &text[..1_000],
        &text[4_000..]
    );
    assert_eq!(kept, expected);
}

/// Waits (up to 5 s) inside every call until two calls are in it at once; remembers the most.
#[derive(Default)]
struct OverlapObserver {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

impl OverlapObserver {
    fn observe(&self, _manifest: &ContextManifest) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let start = Instant::now();
        // The second call records 2 and leaves at once; the first leaves once it sees that.
        while self.most.load(Ordering::SeqCst) < 2 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// S213: one observer shared by two agents of one builder is called by both at once, from two
/// threads, and sees each preparation once.
#[test]
fn one_shared_observer_is_called_by_two_agents_at_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    let observer = Arc::new(OverlapObserver::default());
    let shared = observer.clone();
    let builder = HarnessAgent::builder().context_policy(ContextPolicy {
        observer: Some(Arc::new(move |m: &ContextManifest| shared.observe(m))),
        ..ContextPolicy::default()
    });
    runtime.block_on(async {
        let tasks: Vec<_> = ["s1", "s2"]
            .into_iter()
            .map(|session| {
                let model = Scripted::new(info("m", 16_000), vec![Turn::reply("ok")]);
                let agent = builder.clone().model(model).build().expect("an agent");
                let context = RuntimeContext::new().with_session(session);
                tokio::spawn(async move { agent.call("Go.", context).await })
            })
            .collect();
        for task in tasks {
            task.await.expect("the task").expect("a reply");
        }
    });
    assert_eq!(observer.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        observer.most.load(Ordering::SeqCst),
        2,
        "the calls overlapped"
    );
}

/// S215: every manifest names the model its request went to: the agent's for reasoning, the
/// configured summary model for the summary.
#[test]
fn each_manifest_names_the_model_its_request_was_sent_to() {
    runtime().block_on(async {
        let main = Scripted::new(info("main-model", 16_000), vec![Turn::reply("ok")]);
        let summary = Scripted::new(info("summary-model", 16_000), Vec::new());
        let (policy, manifests) = recording_policy();
        let agent = HarnessAgent::builder()
            .model(main.clone())
            .compaction(CompactionConfig {
                model: Some(summary.clone()),
                ..by_messages(4)
            })
            .context_policy(policy)
            .build()
            .expect("an agent");
        agent.load_history(&alice(), chat_history(3, 2));
        agent.call("Next.", alice()).await.expect("a reply");
        let sent: Mutex<Vec<(String, String)>> = Mutex::default();
        for (model, name) in [(&main, "main-model"), (&summary, "summary-model")] {
            for request in model.requests() {
                lock(&sent).push((request.call_id.clone(), name.to_string()));
            }
        }
        let sent = sent.into_inner().expect("not poisoned");
        let manifests = lock(&manifests).clone();
        let purposes: Vec<Purpose> = manifests.iter().map(|m| m.purpose).collect();
        assert_eq!(purposes, [Purpose::Summary, Purpose::Reasoning]);
        for manifest in &manifests {
            let (_, called) = sent
                .iter()
                .find(|(id, _)| *id == manifest.call_id)
                .expect("every prepared request was sent");
            assert_eq!(&manifest.model, called, "{}", manifest.call_id);
        }
    });
}
