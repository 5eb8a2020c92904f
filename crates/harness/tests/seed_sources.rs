//! Seed statements about context sources and the runtime context, each through a whole agent
//! call: one load per preparation however many omission passes the budget forces, no repeated
//! side effect across preparations (overflow recovery included), the call id a source is
//! given, one source instance loaded by two sessions at once, runtime attributes never shown,
//! a business revision kept while content changes, and source names.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ctxbed_harness::agent::{ContextPolicy, HarnessAgent};
use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::context::block::ContextBlock;
use ctxbed_harness::context::manifest::ItemKind;
use ctxbed_harness::context::source::{
    ContextRequest, ContextSource, RegistrationError, SourceError, SourceOptions, SourceRegistry,
    StaticSource,
};
use ctxbed_harness::message::{ToolCall, ToolSchema};
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::tools::{Tool, ToolContext, ToolOutcome};
use support::{
    CountingSource, CountingTool, Scripted, Turn, info, lock, recording_policy, request_text,
    runtime,
};

fn alice() -> RuntimeContext {
    RuntimeContext::new().with_user("alice").with_session("s1")
}

/// S19: a budget that forces several omissions still loads the source once per preparation;
/// budgeting and rendering reuse that one result.
#[test]
fn a_tight_budget_omitting_several_blocks_loads_each_source_once_per_preparation() {
    runtime().block_on(async {
        let blocks = (0..6)
            .map(|i| ContextBlock::reference(format!("doc{i}"), "reference text ".repeat(150)))
            .collect();
        let source = CountingSource::with_blocks(blocks);
        let (policy, manifests) = recording_policy();
        let tool = CountingTool::new("run_tests", "3 passed");
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "run_tests", serde_json::json!({})),
                Turn::reply("ok"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .tool(tool)
            .context_source("docs", source.clone())
            .context_policy(ContextPolicy {
                max_input_tokens: Some(1_500),
                ..policy
            })
            .build()
            .expect("an agent");
        agent
            .call("Check the docs.", alice())
            .await
            .expect("a reply");
        let manifests = lock(&manifests).clone();
        assert_eq!(manifests.len(), 2, "two preparations");
        for manifest in &manifests {
            let omitted = manifest
                .transforms
                .iter()
                .filter(|t| t.to_string().starts_with("omitted_for_budget:"))
                .count();
            assert!(omitted >= 2, "several omissions: {:?}", manifest.transforms);
            assert_eq!(manifest.validation.as_str(), "passed");
        }
        assert_eq!(
            source.loads(),
            2,
            "one load per preparation, however many omissions"
        );
    });
}

/// S22: preparing a request never repeats a side effect: the tool runs once although three
/// requests are prepared (its step, the next, and that step's retry after an overflow), and the
/// source, loaded for each of them, only reads.
#[test]
fn a_tools_side_effect_happens_once_across_preparations_and_an_overflow_retry() {
    runtime().block_on(async {
        let source = CountingSource::with_blocks(Vec::new());
        let tool = CountingTool::new("run_tests", "3 passed");
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "run_tests", serde_json::json!({})),
                Turn::overflow(),
                Turn::reply("fixed"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .tool(tool.clone())
            .context_source("record", source.clone())
            .compaction(CompactionConfig {
                flush_before_compact: false,
                ..CompactionConfig::default()
            })
            .build()
            .expect("an agent");
        agent.load_history(&alice(), support::chat_history(6, 20));
        let reply = agent
            .call("Run the tests.", alice())
            .await
            .expect("a reply");
        assert_eq!(reply.text(), "fixed");
        let ids: Vec<String> = model
            .reasoning()
            .iter()
            .map(|r| r.call_id.clone())
            .collect();
        assert_eq!(ids, ["call-1/r1", "call-1/r2", "call-1/r2.retry"]);
        assert_eq!(
            source.loads(),
            3,
            "one load per preparation, the retry's included"
        );
        assert_eq!(tool.runs(), 1, "no preparation runs the tool again");
        let retry = request_text(&model.reasoning()[2]);
        assert_eq!(retry.matches("3 passed").count(), 1, "{retry}");
    });
}

/// S24: each preparation gives its sources its own non-empty call id, the one its manifest
/// carries (not the agent call's id).
#[test]
fn a_source_gets_the_call_id_of_the_preparation_its_manifest_names() {
    runtime().block_on(async {
        let source = CountingSource::with_blocks(Vec::new());
        let (policy, manifests) = recording_policy();
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "run_tests", serde_json::json!({})),
                Turn::reply("ok"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model)
            .tool(CountingTool::new("run_tests", "ok"))
            .context_source("record", source.clone())
            .context_policy(policy)
            .build()
            .expect("an agent");
        agent.call("Go.", alice()).await.expect("a reply");
        agent.call("Again.", alice()).await.expect("a reply");
        let seen: Vec<String> = source.seen().iter().map(|r| r.call_id.clone()).collect();
        let built: Vec<String> = lock(&manifests).iter().map(|m| m.call_id.clone()).collect();
        assert_eq!(seen, ["call-1/r1", "call-1/r2", "call-2/r1"]);
        assert_eq!(seen, built, "the source's call id is the manifest's");
        assert!(seen.iter().all(|id| !id.is_empty()));
    });
}

/// Answers with a block naming the requesting session, after waiting (up to 2 s) until another
/// load is in flight at the same time; remembers the most loads it saw at once.
#[derive(Default)]
struct OverlapSource {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    loads: AtomicUsize,
}

#[async_trait]
impl ContextSource for OverlapSource {
    async fn load(
        &self,
        request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..200 {
            if self.in_flight.load(Ordering::SeqCst) >= 2 {
                self.most.fetch_max(2, Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let session = request.session_id.clone().unwrap_or_default();
        Ok(Some(vec![ContextBlock::runtime(
            "session",
            format!("record of session {session}"),
        )]))
    }
}

/// S28: one source instance, shared by two agents of one builder serving two sessions, is
/// loaded by both at once; each request carries only its own session's block.
#[test]
fn one_shared_source_is_loaded_by_two_sessions_at_once() {
    runtime().block_on(async {
        let source = Arc::new(OverlapSource::default());
        let first_model = Scripted::new(info("m", 16_000), vec![Turn::reply("one")]);
        let second_model = Scripted::new(info("m", 16_000), vec![Turn::reply("two")]);
        let builder = HarnessAgent::builder().context_source("record", source.clone());
        let first = builder
            .clone()
            .model(first_model.clone())
            .build()
            .expect("an agent");
        let second = builder
            .model(second_model.clone())
            .build()
            .expect("an agent");
        let s1 = RuntimeContext::new().with_user("alice").with_session("s1");
        let s2 = RuntimeContext::new().with_user("bob").with_session("s2");
        let (a, b) = tokio::join!(first.call("Go.", s1), second.call("Go.", s2));
        a.expect("a reply");
        b.expect("a reply");
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            2,
            "the same instance, twice"
        );
        assert_eq!(
            source.most.load(Ordering::SeqCst),
            2,
            "the loads overlapped"
        );
        let one = request_text(&first_model.reasoning()[0]);
        let two = request_text(&second_model.reasoning()[0]);
        assert!(
            one.contains("record of session s1") && !one.contains("session s2"),
            "{one}"
        );
        assert!(
            two.contains("record of session s2") && !two.contains("session s1"),
            "{two}"
        );
    });
}

/// A tool that shows the model one runtime attribute the application chose to expose.
struct RegionTool(ToolSchema);

#[async_trait]
impl Tool for RegionTool {
    fn schema(&self) -> &ToolSchema {
        &self.0
    }

    async fn call(&self, _call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let region = context.runtime.attributes.get("region").cloned();
        ToolOutcome::text(format!("region: {}", region.unwrap_or_default()))
    }
}

/// S29: free-form runtime attributes reach no request, manifest, session record or source
/// request; only what a tool selects explicitly (here `region`) reaches the model.
#[test]
fn runtime_attributes_reach_the_model_only_through_what_a_tool_selects() {
    const SECRET: &str = "attr-secret-7f3c9d";
    runtime().block_on(async {
        let source = CountingSource::with_blocks(Vec::new());
        let (policy, manifests) = recording_policy();
        let region = RegionTool(ToolSchema {
            name: "region".into(),
            description: "The caller's region.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        });
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "region", serde_json::json!({})),
                Turn::reply("ok"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .sys_prompt("Help.")
            .tool(Arc::new(region))
            .enable_task_list()
            .context_source("record", source.clone())
            .context_policy(policy)
            .build()
            .expect("an agent");
        let context = alice()
            .with_attribute("deploy_token", SECRET)
            .with_attribute("region", "eu-west");
        agent.call("Where am I?", context).await.expect("a reply");
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        for request in &requests {
            let seen = format!("{:?} {:?}", request.messages, request.tools);
            assert!(!seen.contains(SECRET), "{seen}");
            assert!(!seen.contains("deploy_token"), "{seen}");
        }
        assert!(request_text(&requests[1]).contains("region: eu-west"));
        for manifest in lock(&manifests).iter() {
            assert!(!manifest.to_json().to_string().contains(SECRET));
        }
        for record in agent.session_records(&alice()) {
            assert!(!format!("{record:?}").contains(SECRET), "{record:?}");
        }
        assert!(!format!("{:?}", source.seen()).contains(SECRET));
    });
}

/// Returns `status` with a fixed business revision, its text changing at every load.
#[derive(Default)]
struct RevisedSource {
    loads: AtomicUsize,
}

#[async_trait]
impl ContextSource for RevisedSource {
    async fn load(
        &self,
        _request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        let load = self.loads.fetch_add(1, Ordering::SeqCst);
        let text = if load == 0 {
            "status: open"
        } else {
            "status: closed"
        };
        Ok(Some(vec![
            ContextBlock::runtime("status", text).with_revision("change-v7"),
        ]))
    }
}

/// S149: an unchanged business revision over changed content: the manifest keeps the
/// revision, its content hash follows the content, and the request carries the new text.
#[test]
fn a_kept_business_revision_with_new_content_shows_the_new_content_and_hash() {
    runtime().block_on(async {
        let (policy, manifests) = recording_policy();
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "run_tests", serde_json::json!({})),
                Turn::reply("ok"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .tool(CountingTool::new("run_tests", "ok"))
            .context_source("change-record", Arc::new(RevisedSource::default()))
            .context_policy(policy)
            .build()
            .expect("an agent");
        agent.call("Go.", alice()).await.expect("a reply");
        let manifests = lock(&manifests).clone();
        let item = |i: usize| {
            manifests[i]
                .material("source/change-record/status")
                .expect("the block is in the request")
                .clone()
        };
        let (first, second) = (item(0), item(1));
        for item in [&first, &second] {
            let ItemKind::Material { revision, .. } = &item.kind else {
                panic!("a material item");
            };
            assert_eq!(revision, "change-v7");
        }
        assert_ne!(
            first.content_hash, second.content_hash,
            "the hash follows the text"
        );
        let requests = model.reasoning();
        assert!(request_text(&requests[0]).contains("status: open"));
        let later = request_text(&requests[1]);
        assert!(later.contains("status: closed") && !later.contains("status: open"));
    });
}

/// S151, S152: a source name starts with a letter or digit and holds only letters, digits,
/// `_`, `.` and `-`.
#[test]
fn source_names_start_with_a_letter_or_digit_and_use_letters_digits_underscore_dot_dash() {
    let mut registry = SourceRegistry::new();
    let source = || Arc::new(StaticSource::new(Vec::new()));
    for good in [
        "change-record",
        "9lives",
        "0",
        "a_b",
        "a.b",
        "a-b",
        "A.b_c-9",
    ] {
        registry
            .register(good, source(), SourceOptions::default())
            .unwrap_or_else(|e| panic!("`{good}` is a valid name: {e}"));
    }
    for bad in [
        "", "_a", ".a", "-a", "a/b", "a:b", "a b", "é", "a\u{e9}", "a+b",
    ] {
        assert_eq!(
            registry.register(bad, source(), SourceOptions::default()),
            Err(RegistrationError::InvalidName(bad.to_string())),
            "`{bad}` is refused"
        );
    }
    assert_eq!(registry.names().len(), 7, "the refusals changed nothing");
    // The builder refuses the same names, at build time.
    let model = Scripted::new(info("m", 16_000), Vec::new());
    let built = HarnessAgent::builder()
        .model(model)
        .context_source("_hidden", source())
        .build();
    assert!(built.is_err(), "a name starting with `_` fails the build");
}
