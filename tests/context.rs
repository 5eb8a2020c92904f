//! Library-level tests of context assembly: instructions, sources, layout, manifest delivery.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxbed_harness::agent::{AgentError, BuildError, ContextPolicy, HarnessAgent};
use ctxbed_harness::context::block::{ContextBlock, Material, MaterialKind, Placement};
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::context::render::is_rendered;
use ctxbed_harness::context::source::{
    ContextRequest, ContextSource, RegistrationError, SourceError, SourceOptions, SourceRegistry,
    StaticSource, load_all,
};
use ctxbed_harness::context::{PrepareInput, prepare};
use ctxbed_harness::message::Message;
use ctxbed_harness::model::{ModelInfo, Purpose};
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::tokens::{RatioEstimator, TokenEstimator};
use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, TurnAction};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
}

fn info() -> ModelInfo {
    ModelInfo {
        name: "test".into(),
        context_window: Some(16_000),
        max_output_tokens: None,
    }
}

fn replying_model(replies: u32) -> Arc<MockModel> {
    let turn = MockTurn {
        times: replies,
        ..MockTurn::new(TurnAction::reply("ok"))
    };
    Arc::new(MockModel::new(MockScript::new(info(), vec![turn])))
}

/// Counts its loads and remembers the identities it was given.
#[derive(Default)]
struct CountingSource {
    loads: AtomicU64,
    seen: Mutex<Vec<ContextRequest>>,
}

#[async_trait]
impl ContextSource for CountingSource {
    async fn load(
        &self,
        request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        let load = self.loads.fetch_add(1, Ordering::SeqCst) + 1;
        self.seen.lock().unwrap().push(request.clone());
        Ok(Some(vec![ContextBlock::runtime(
            "count",
            format!("load {load}"),
        )]))
    }
}

/// No tool schemas, for inputs that outlive the function building them.
static NO_TOOLS: std::sync::LazyLock<std::sync::Arc<[ctxbed_harness::tools::ToolSchema]>> =
    std::sync::LazyLock::new(Default::default);

fn prepare_input<'a>(
    materials: &'a [Material],
    history: &'a [Message],
    model: &'a ModelInfo,
) -> PrepareInput<'a> {
    PrepareInput {
        call_id: "c1/r1",
        purpose: Purpose::Reasoning,
        model,
        system_prompt: Some("Be careful."),
        materials,
        transforms: &[],
        history: history.into(),
        projections: &[],
        tools: &NO_TOOLS,
        estimator: &RatioEstimator,
        budget: BudgetSettings::default(),
        pairing: Default::default(),
        selection: None,
    }
}

#[test]
fn rebuilding_from_a_previous_output_is_idempotent() {
    let model = info();
    let materials = vec![
        Material::instruction("policy", "Preserve the API."),
        Material::from_block("record", &ContextBlock::runtime("status", "open")),
        Material::from_block("record", &ContextBlock::reference("format", "csv")),
    ];
    let history = vec![Message::user("u1", "Fix it.")];
    let first = prepare(&prepare_input(&materials, &history, &model)).expect("first");
    let again = prepare(&prepare_input(
        &materials,
        &first.request.messages.to_vec(),
        &model,
    ))
    .expect("again");
    assert_eq!(first.request.messages, again.request.messages);
    let systems = again
        .request
        .messages
        .iter()
        .filter(|m| m.id == "system")
        .count();
    assert_eq!(systems, 1, "exactly one System message");
    // An edited instruction replaces the old one instead of adding a second.
    let edited = vec![Material::instruction(
        "policy",
        "Preserve the API and the format.",
    )];
    let rebuilt = prepare(&prepare_input(
        &edited,
        &first.request.messages.to_vec(),
        &model,
    ))
    .expect("edited");
    let system = rebuilt.request.messages[0].text();
    assert!(system.contains("Preserve the API and the format."));
    assert_eq!(system.matches("instruction/policy").count(), 1);
}

#[test]
fn sources_load_per_preparation_never_at_registration_and_are_shared_by_copies() {
    runtime().block_on(async {
        let source = Arc::new(CountingSource::default());
        let builder = HarnessAgent::builder()
            .agent_id("copyable")
            .context_source("counter", source.clone());
        let first = builder
            .clone()
            .model(replying_model(5))
            .build()
            .expect("first agent");
        let copy = builder
            .model(replying_model(5))
            .build()
            .expect("copied agent");
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            0,
            "nothing loads at registration or build"
        );
        let alice = RuntimeContext::new().with_user("alice").with_session("a");
        let bob = RuntimeContext::new().with_user("bob").with_session("b");
        first.call("one", alice.clone()).await.expect("alice");
        copy.call("two", bob.clone()).await.expect("bob");
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            2,
            "the same instance serves both agents"
        );
        let seen = source.seen.lock().unwrap().clone();
        assert_eq!(seen[0].user_id.as_deref(), Some("alice"));
        assert_eq!(seen[1].session_id.as_deref(), Some("b"));
        assert_eq!(seen[0].agent_id.as_deref(), Some("copyable"));
        assert_eq!(seen[0].purpose, Purpose::Reasoning);
        // Rendered material never enters durable history.
        assert!(first.history(&alice).iter().all(|m| !is_rendered(m)));
        assert_eq!(first.history(&alice).len(), 2);
    });
}

#[test]
fn a_summary_preparation_loads_no_source() {
    runtime().block_on(async {
        let source = Arc::new(CountingSource::default());
        let mut registry = SourceRegistry::new();
        registry
            .register("counter", source.clone(), SourceOptions::default())
            .expect("register");
        let request = ContextRequest {
            agent_id: None,
            user_id: None,
            session_id: None,
            call_id: "c1/s1".into(),
            purpose: Purpose::Summary,
        };
        let loaded = load_all(&registry, &request).await.expect("load");
        assert!(loaded.materials.is_empty());
        assert_eq!(source.loads.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn bad_registrations_leave_the_registry_usable() {
    let mut registry = SourceRegistry::new();
    let source = || Arc::new(StaticSource::new(vec![])) as Arc<dyn ContextSource>;
    registry
        .register("records", source(), SourceOptions::default())
        .expect("first");
    assert_eq!(
        registry.register("records", source(), SourceOptions::default()),
        Err(RegistrationError::Duplicate("records".into()))
    );
    assert!(matches!(
        registry.register("-bad", source(), SourceOptions::default()),
        Err(RegistrationError::InvalidName(_))
    ));
    let zero = SourceOptions::default().timeout(std::time::Duration::ZERO);
    assert!(matches!(
        registry.register("zero", source(), zero),
        Err(RegistrationError::ZeroTimeout(_))
    ));
    registry
        .register("notes", source(), SourceOptions::default())
        .expect("still usable");
    assert_eq!(registry.names(), vec!["records", "notes"]);
    // Through the builder, the error surfaces at build and names the source.
    runtime().block_on(async {
        let builder = HarnessAgent::builder()
            .model(replying_model(1))
            .context_source("records", source())
            .context_source("records", source());
        assert_eq!(
            builder.build().err(),
            Some(BuildError::Source(RegistrationError::Duplicate(
                "records".into()
            )))
        );
    });
}

#[test]
fn manifests_reach_the_observer_the_event_stream_and_the_session_log() {
    runtime().block_on(async {
        let observed: Arc<Mutex<Vec<ContextManifest>>> = Arc::default();
        let sink = observed.clone();
        let policy = ContextPolicy {
            observer: Some(Arc::new(move |manifest: &ContextManifest| {
                sink.lock().unwrap().push(manifest.clone());
                panic!("a broken observer");
            })),
            ..ContextPolicy::default()
        };
        let agent = HarnessAgent::builder()
            .model(replying_model(1))
            .context_policy(policy)
            .context_source(
                "vault",
                Arc::new(StaticSource::new(vec![ContextBlock::runtime(
                    "token",
                    "SECRET-42",
                )])),
            )
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("s");
        let reply = agent.call("go", session.clone()).await;
        assert!(
            reply.is_ok(),
            "a panicking observer never fails a valid build"
        );
        let manifests = observed.lock().unwrap().clone();
        assert_eq!(manifests.len(), 1);
        assert!(manifests[0].material("source/vault/token").is_some());
        let records: Vec<_> = agent
            .session_records(&session)
            .into_iter()
            .filter(|r| r.kind == "context/build")
            .collect();
        assert_eq!(records.len(), 1);
        let payload = records[0].payload.value();
        let manifest = &payload["event"]["value"]["context_manifest"];
        assert_eq!(
            *manifest,
            manifests[0].to_json(),
            "the record holds the event's manifest"
        );
        assert_eq!(manifest["validation"], "passed");
        assert_eq!(manifest["items"].as_array().map(Vec::len), Some(4));
        assert_eq!(manifest["policy_version"], agent.policy_version());
        assert_eq!(
            manifests[0].policy_version.as_deref(),
            Some(agent.policy_version())
        );
        assert!(!records[0].payload.json().contains("SECRET-42"));
    });
}

#[test]
fn a_failed_build_is_reported_and_commits_nothing() {
    runtime().block_on(async {
        let agent = HarnessAgent::builder()
            .model(replying_model(1))
            .context_source(
                "broken",
                Arc::new(StaticSource::new(vec![
                    ContextBlock::runtime("x", "one"),
                    ContextBlock::runtime("x", "two"),
                ])),
            )
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("s");
        let events = agent.stream_events("go", session.clone()).collect().await;
        let failed = events.iter().find_map(|event| match &event.kind {
            ctxbed_harness::agent::EventKind::Custom {
                value: ctxbed_harness::agent::events::CustomValue::ContextBuild(build),
                ..
            } => Some(build.clone()),
            _ => None,
        });
        let failed = failed.expect("a context_build event for the failed preparation");
        assert_eq!(failed.status, "failed");
        assert_eq!(failed.error_kind, Some("source_invalid"));
        assert_eq!(failed.manifest.estimated_input_tokens, -1);
        assert_eq!(failed.manifest.counting_method, "unavailable");
        assert!(agent.history(&session).is_empty(), "nothing committed");
        let error = agent.call("again", session.clone()).await.unwrap_err();
        assert!(matches!(error, AgentError::Prepare(_)));
        let builds = agent
            .session_records(&session)
            .iter()
            .filter(|r| r.kind == "context/build")
            .count();
        assert_eq!(builds, 2);
    });
}

#[test]
fn the_policy_version_names_the_settings_that_shape_preparation() {
    runtime().block_on(async {
        let build = |builder: ctxbed_harness::agent::HarnessAgentBuilder| {
            builder
                .model(replying_model(1))
                .build()
                .expect("agent")
                .policy_version()
                .to_string()
        };
        let default = build(HarnessAgent::builder());
        assert!(default.starts_with("policy-") && default.len() == "policy-".len() + 16);
        assert_eq!(
            build(HarnessAgent::builder()),
            default,
            "same settings, same version"
        );
        assert_eq!(
            build(HarnessAgent::builder().name("another")),
            default,
            "the name shapes no request"
        );
        let changed = [
            build(HarnessAgent::builder().context_policy(ContextPolicy {
                safety_margin: Some(7),
                ..ContextPolicy::default()
            })),
            build(HarnessAgent::builder().context_policy(ContextPolicy {
                estimator: Arc::new(RatioEstimator),
                ..ContextPolicy::default()
            })),
            build(
                HarnessAgent::builder()
                    .pairing_check(ctxbed_harness::context::PairingCheck::Repair),
            ),
            build(HarnessAgent::builder().compaction(
                ctxbed_harness::compaction::config::CompactionConfig {
                    memory_prompt: "Keep the facts.\n{messages}".to_string(),
                    ..Default::default()
                },
            )),
        ];
        for version in &changed {
            assert_ne!(*version, default);
        }
        let distinct: std::collections::BTreeSet<&String> = changed.iter().collect();
        assert_eq!(distinct.len(), changed.len());
    });
}

#[test]
fn an_unpolled_stream_prepares_nothing_until_it_is_polled() {
    runtime().block_on(async {
        let source = Arc::new(CountingSource::default());
        let observed = Arc::new(AtomicU64::new(0));
        let counter = observed.clone();
        let policy = ContextPolicy {
            observer: Some(Arc::new(move |_: &ContextManifest| {
                counter.fetch_add(1, Ordering::SeqCst);
            })),
            ..ContextPolicy::default()
        };
        let model = replying_model(1);
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .context_policy(policy)
            .context_source("counter", source.clone())
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("lazy");
        let mut stream = agent.stream_events("go", session.clone());
        // Time passes and every other task runs: an unpolled stream starts nothing.
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        tokio::task::yield_now().await;
        assert_eq!(source.loads.load(Ordering::SeqCst), 0, "no source load");
        assert_eq!(observed.load(Ordering::SeqCst), 0, "no manifest");
        assert!(model.take_received().is_empty(), "no model request");
        assert!(agent.history(&session).is_empty(), "nothing committed");
        assert!(format!("{stream:?}").contains("not started"));
        // The first poll starts the run.
        let first = stream.next().await.expect("an event");
        assert!(
            matches!(
                first.kind,
                ctxbed_harness::agent::events::EventKind::RunStarted { .. }
            ),
            "{first:?}"
        );
        let rest = stream.collect().await;
        assert!(!rest.is_empty());
        assert_eq!(source.loads.load(Ordering::SeqCst), 1);
        assert_eq!(observed.load(Ordering::SeqCst), 1);
        assert_eq!(agent.history(&session).len(), 2);
    });
}

/// A policy whose observer pushes every manifest it sees into `seen`.
fn observing(seen: &Arc<Mutex<Vec<ContextManifest>>>) -> ContextPolicy {
    let sink = seen.clone();
    ContextPolicy {
        observer: Some(Arc::new(move |manifest: &ContextManifest| {
            sink.lock().unwrap().push(manifest.clone());
        })),
        ..ContextPolicy::default()
    }
}

#[test]
fn a_later_context_policy_replaces_every_field_set_before() {
    runtime().block_on(async {
        let first_seen: Arc<Mutex<Vec<ContextManifest>>> = Arc::default();
        let second_seen: Arc<Mutex<Vec<ContextManifest>>> = Arc::default();
        let capped = ContextPolicy {
            max_input_tokens: Some(900),
            estimator: Arc::new(ctxbed_harness::tokens::ExactEstimator::new(
                ctxbed_harness::tokens::Vocabulary::O200k,
            )),
            ..observing(&first_seen)
        };
        // The second policy restates nothing: cap, estimator and observer all go back to
        // the defaults or to what it says.
        let agent = HarnessAgent::builder()
            .model(replying_model(1))
            .context_policy(capped)
            .context_policy(observing(&second_seen))
            .build()
            .expect("agent");
        agent
            .call("go", RuntimeContext::new())
            .await
            .expect("reply");
        assert!(
            first_seen.lock().unwrap().is_empty(),
            "the first observer is gone"
        );
        let seen = second_seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_ne!(seen[0].input_limit, 900, "the cap is gone with its policy");
        assert_eq!(
            seen[0].counting_method,
            ctxbed_harness::tokens::ApproximateEstimator::default().method(),
            "the default estimator"
        );
    });
}

#[test]
fn agents_of_one_builder_share_one_observer_and_a_build_leaves_it_untouched() {
    runtime().block_on(async {
        let seen: Arc<Mutex<Vec<ContextManifest>>> = Arc::default();
        let builder = HarnessAgent::builder()
            .model(replying_model(3))
            .context_policy(observing(&seen));
        let first = builder.build().expect("agent");
        let second = builder.build().expect("agent");
        // Building calls nothing on the observer.
        assert!(seen.lock().unwrap().is_empty(), "a build observes nothing");
        first
            .call("one", RuntimeContext::new())
            .await
            .expect("reply");
        second
            .call("two", RuntimeContext::new())
            .await
            .expect("reply");
        // The observer also sees preparations consumed through stream_events.
        let events = first
            .stream_events("three", RuntimeContext::new().with_session("s"))
            .collect()
            .await;
        assert!(!events.is_empty());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "one observer, every agent's preparations");
        // Call ids count per agent: the second agent's first call, and the first agent's two.
        let mut calls: Vec<&str> = seen.iter().map(|m| m.call_id.as_str()).collect();
        calls.sort_unstable();
        assert_eq!(calls, ["call-1/r1", "call-1/r1", "call-2/r1"]);
    });
}

/// A workspace file as the workspace loader makes it: reference material of its kind.
fn workspace_file(path: &str, kind: MaterialKind, text: &str) -> Material {
    Material {
        id: format!("workspace:{path}"),
        kind,
        placement: Placement::Reference,
        text: text.to_string(),
        revision: format!("{}", text.len()),
        required: false,
        priority: 0,
    }
}

/// Memory and knowledge are the only reference material; two runtime blocks of different sizes
/// follow them in the default order (priority 0 before 5).
fn memory_knowledge_and_runtime() -> Vec<Material> {
    vec![
        Material::instruction("policy", "Preserve the API."),
        workspace_file(
            "MEMORY.md",
            MaterialKind::Memory,
            "Memory: the writer moved to src/export/writer.rs; run tests/export.rs.",
        ),
        workspace_file(
            "knowledge/format.md",
            MaterialKind::Knowledge,
            "Knowledge: three quoted columns, a header row, CRLF line ends.",
        ),
        Material::from_block(
            "record",
            &ContextBlock::runtime("status", "Status: change 42 open, review requested."),
        ),
        Material::from_block(
            "record",
            &ContextBlock::runtime("owner", "Owner: ana.").with_priority(5),
        ),
    ]
}

/// The manifest of a preparation of `materials` under an input cap.
fn prepared_under(materials: &[Material], cap: Option<u64>) -> ContextManifest {
    let model = info();
    let history = vec![Message::user("u1", "Summarise change 42.")];
    let mut input = prepare_input(materials, &history, &model);
    input.budget = BudgetSettings {
        max_input_tokens: cap,
        ..BudgetSettings::default()
    };
    match prepare(&input) {
        Ok(prepared) => prepared.manifest,
        Err(rejected) => rejected.manifest,
    }
}

fn omitted(manifest: &ContextManifest) -> Vec<String> {
    manifest
        .transforms
        .iter()
        .map(ToString::to_string)
        .filter(|t| t.starts_with("omitted_for_budget:"))
        .collect()
}

fn has_item(manifest: &ContextManifest, id: &str) -> bool {
    manifest.items.iter().any(|item| item.id == id)
}

fn without_workspace(materials: &[Material]) -> Vec<Material> {
    materials[..1]
        .iter()
        .chain(&materials[3..])
        .cloned()
        .collect()
}

/// Dropping memory and knowledge also drops the reference message around them; a cap a few
/// tokens above what is left keeps the next optional source.
#[test]
fn omission_stops_once_memory_and_knowledge_are_enough() {
    let materials = memory_knowledge_and_runtime();
    let needed = prepared_under(&without_workspace(&materials), None).estimated_input_tokens as u64;
    let everything = prepared_under(&materials, None).estimated_input_tokens as u64;
    assert!(everything > needed + 3);
    let manifest = prepared_under(&materials, Some(needed + 3));
    assert_eq!(manifest.validation.as_str(), "passed");
    assert_eq!(
        omitted(&manifest),
        [
            "omitted_for_budget:workspace:MEMORY.md",
            "omitted_for_budget:workspace:knowledge/format.md"
        ]
    );
    assert!(has_item(&manifest, "source/record/status"));
    assert!(has_item(&manifest, "source/record/owner"));
    assert_eq!(manifest.estimated_input_tokens as u64, needed);
}

/// A request exactly at its cap keeps its materials; a token over, it omits the next one.
#[test]
fn omission_boundaries_are_exact() {
    let materials = memory_knowledge_and_runtime();
    let everything = prepared_under(&materials, None).estimated_input_tokens as u64;
    assert!(omitted(&prepared_under(&materials, Some(everything))).is_empty());
    assert_eq!(
        omitted(&prepared_under(&materials, Some(everything - 1))),
        ["omitted_for_budget:workspace:MEMORY.md"]
    );
    let needed = prepared_under(&without_workspace(&materials), None).estimated_input_tokens as u64;
    let exactly = prepared_under(&materials, Some(needed));
    assert_eq!(omitted(&exactly).len(), 2);
    assert!(has_item(&exactly, "source/record/status"));
    let over = prepared_under(&materials, Some(needed - 1));
    assert_eq!(
        omitted(&over),
        [
            "omitted_for_budget:workspace:MEMORY.md",
            "omitted_for_budget:workspace:knowledge/format.md",
            "omitted_for_budget:source/record/status"
        ]
    );
    assert!(has_item(&over, "source/record/owner"));
}
