//! Restoring sessions from the session log, compare-and-swap commits, and the session tools,
//! at library level on the simulated runtime.

use std::sync::Arc;
use std::time::Duration;

use ctxbed_harness::agent::{AgentError, EventKind, HarnessAgent, RestoreError};
use ctxbed_harness::message::{Message, Role};
use ctxbed_harness::model::ModelInfo;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::session::jsonl::session_path;
use ctxbed_harness::session::{
    JsonlSessionLog, MemorySessionLog, SessionLog, SessionLogKey, durable_history,
};
use ctxbed_harness::storage::{MemoryStorage, Storage};
use ctxbed_harness::task::todo::{TodoItem, TodoPriority, TodoStatus};
use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, TurnAction};

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
}

fn model(replies: &[&str]) -> Arc<MockModel> {
    let info = ModelInfo {
        name: "test".into(),
        context_window: Some(8_000),
        max_output_tokens: None,
    };
    let turns = replies
        .iter()
        .map(|text| MockTurn::new(TurnAction::reply(*text)))
        .collect();
    Arc::new(MockModel::new(MockScript::new(info, turns)))
}

fn alice() -> RuntimeContext {
    RuntimeContext::new().with_user("alice").with_session("s1")
}

fn key() -> SessionLogKey {
    SessionLogKey {
        agent_id: "fixer".into(),
        user_id: Some("alice".into()),
        session_id: Some("s1".into()),
    }
}

fn agent_over(model: Arc<MockModel>, log: Arc<dyn SessionLog>) -> HarnessAgent {
    HarnessAgent::builder()
        .name("fixer")
        .model(model)
        .session_log(log)
        .enable_task_list()
        .build()
        .expect("agent")
}

/// Alice's Todo list: one item, "Fix the export", in progress.
fn write_fix_todo(agent: &HarnessAgent) {
    agent
        .task_state(&alice())
        .with(|state| {
            state.write_todos(vec![TodoItem::new(
                "fix",
                "Fix the export",
                TodoStatus::InProgress,
                TodoPriority::High,
            )])
        })
        .expect("todo");
}

#[test]
fn a_new_agent_restores_history_task_state_and_the_id_counter() {
    paused_runtime().block_on(async {
        let log: Arc<dyn SessionLog> = Arc::new(MemorySessionLog::new());
        let model = model(&["First answer.", "Second answer."]);
        let first = agent_over(model.clone(), log.clone());
        write_fix_todo(&first);
        first
            .call("Question one.", alice())
            .await
            .expect("first call");
        let before = first.history(&alice());

        let second = agent_over(model, log.clone());
        let stream = second.stream_events("Question two.", alice());
        let events = stream.collect().await;
        let restored = events.iter().find_map(|event| match &event.kind {
            EventKind::SessionRestored { messages, torn, .. } => Some((*messages, torn.clone())),
            _ => None,
        });
        assert_eq!(restored, Some((2, None)));
        let after = second.history(&alice());
        assert_eq!(
            after[..2],
            before[..],
            "the restored history is the committed one"
        );
        assert_eq!(
            after[2].id, "m0003",
            "ids continue after the restored counter"
        );
        let task = second.task_state(&alice()).snapshot();
        assert_eq!(task.revision(), 1);
        assert_eq!(task.todos()[0].content, "Fix the export");
        // A session this agent already knows is never restored again.
        let third = second
            .stream_events("Question three.", alice())
            .collect()
            .await;
        assert!(
            !third
                .iter()
                .any(|e| matches!(e.kind, EventKind::SessionRestored { .. }))
        );
    });
}

#[test]
fn a_torn_jsonl_record_is_ignored_and_everything_before_it_restores() {
    paused_runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let model = model(&["First answer.", "Second answer."]);
        let first = agent_over(
            model.clone(),
            Arc::new(JsonlSessionLog::new(storage.clone())),
        );
        first
            .call("Question one.", alice())
            .await
            .expect("first call");
        let path = session_path(&key());
        let mut bytes = storage.read(&path).await.unwrap().expect("log file");
        let committed = bytes.len();
        bytes.extend_from_slice(br#"{"kind":"message","call_id":"call-2","payl"#);
        storage.write(&path, bytes).await.unwrap();

        let second = agent_over(model, Arc::new(JsonlSessionLog::new(storage.clone())));
        let reply = second
            .call("Question two.", alice())
            .await
            .expect("second call");
        assert_eq!(reply.text(), "Second answer.");
        let history = second.history(&alice());
        assert_eq!(history.len(), 4);
        assert_eq!(history[0].text(), "Question one.");
        assert_eq!(history[1].text(), "First answer.");
        // The next flush dropped the fragment and appended after the committed bytes.
        let rewritten = storage.read(&path).await.unwrap().expect("log file");
        assert!(!String::from_utf8_lossy(&rewritten).contains(r#""payl""#));
        assert!(!String::from_utf8_lossy(&rewritten[committed..]).contains(r#""payl{"#));
        assert!(rewritten.ends_with(b"\n"));
    });
}

#[test]
fn a_corrupt_log_fails_the_call_with_a_clear_error_and_is_left_alone() {
    paused_runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let path = session_path(&key());
        let corrupt = b"{\"kind\":\"run/start\",\"call_id\":\"call-1\",\"payload\":{}}\nnot json\n{\"kind\":\"run/end\",\"call_id\":\"call-1\",\"payload\":{}}\n".to_vec();
        storage.write(&path, corrupt.clone()).await.unwrap();
        let agent = agent_over(model(&["Never."]), Arc::new(JsonlSessionLog::new(storage.clone())));
        let error = agent.call("Hello.", alice()).await.expect_err("corrupt log");
        assert!(matches!(error, AgentError::Restore(RestoreError::Log(_))), "{error}");
        assert_eq!(error.kind(), "session_restore_failed");
        assert!(error.to_string().contains("line 2"), "{error}");
        assert_eq!(storage.read(&path).await.unwrap(), Some(corrupt));

        // A checkpoint naming a message the log lacks is refused, not papered over.
        let log = Arc::new(MemorySessionLog::new());
        log.append(
            &key(),
            ctxbed_harness::session::SessionRecord {
                kind: "checkpoint".into(),
                call_id: "call-1".into(),
                payload: serde_json::json!({"history": ["m0001"], "messages_created": 1}).into(),
            },
        );
        let agent = agent_over(model(&["Never."]), log);
        let error = agent.call("Hello.", alice()).await.expect_err("dangling checkpoint");
        assert!(
            error.to_string().contains("message `m0001` has no `message` record"),
            "{error}"
        );
    });
}

#[test]
fn a_commit_after_another_writer_fails_and_keeps_both_histories() {
    paused_runtime().block_on(async {
        let log: Arc<dyn SessionLog> = Arc::new(MemorySessionLog::new());
        let info = ModelInfo {
            name: "slow".into(),
            context_window: Some(8_000),
            max_output_tokens: None,
        };
        let slow = MockTurn {
            latency: Duration::from_secs(10),
            ..MockTurn::new(TurnAction::reply("Late answer."))
        };
        let model = Arc::new(MockModel::new(MockScript::new(info, vec![slow])));
        let agent = agent_over(model, log.clone());
        let writer = agent.clone();
        let note = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            writer
                .append_message(&alice(), Role::User, "A note from another writer.")
                .await
                .expect("durable")
        });
        // The request was committed before the model call; the reply's commit finds the note.
        let error = agent
            .call("Question.", alice())
            .await
            .expect_err("conflict");
        assert_eq!(error, AgentError::HistoryConflict);
        let note_id = note.await.expect("writer");
        let working: Vec<String> = agent.history(&alice()).iter().map(|m| m.text()).collect();
        assert_eq!(working, ["Question.", "A note from another writer."]);
        assert_eq!(note_id, "m0002");
        let durable: Vec<String> = durable_history(&log.records(&key()))
            .expect("readable")
            .iter()
            .map(|m| m.text())
            .collect();
        assert_eq!(
            durable,
            ["Question.", "A note from another writer.", "Late answer."]
        );
        assert!(
            log.records(&key())
                .iter()
                .any(|r| r.kind == "history/conflict")
        );
    });
}

#[test]
fn a_failed_log_write_fails_the_call_and_the_next_flush_makes_it_durable() {
    paused_runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        storage.fail_writes_under("sessions/");
        let log: Arc<dyn SessionLog> = Arc::new(JsonlSessionLog::new(storage.clone()));
        let model = model(&["Noted.", "Both columns."]);
        let agent = agent_over(model.clone(), log.clone());
        let error = agent
            .call("The export drops the amount column.", alice())
            .await
            .expect_err("the log cannot be written");
        assert!(matches!(error, AgentError::SessionLog { .. }), "{error:?}");
        assert_eq!(error.kind(), "session_log_failed");
        assert!(
            model.take_received().is_empty(),
            "nothing reaches the model"
        );
        let path = session_path(&key());
        assert_eq!(storage.read(&path).await.expect("read"), None);

        storage.set_failing_writes(Vec::new());
        agent
            .call("It drops the date column too.", alice())
            .await
            .expect("the storage healed");
        let restored = JsonlSessionLog::new(storage.clone());
        let durable: Vec<String> =
            durable_history(&restored.load(&key()).await.expect("load").records)
                .expect("messages")
                .iter()
                .map(|m| m.id.clone())
                .collect();
        assert_eq!(
            durable,
            ["m0001", "m0002", "m0003"],
            "the failed call's input is durable now"
        );
    });
}

#[test]
fn the_durable_history_check_holds_only_acknowledged_commits() {
    use ctxbed::invariants::{ViolationKind, check};
    use ctxbed::scenario::check::outcome::run;
    use ctxbed::scenario::format::file::load;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario =
        load(&root.join("scenarios/sessions/log-write-failure-restart.toml")).expect("scenario");
    let mut output = run(&scenario).expect("run");
    assert!(check(&scenario, &output).is_empty());
    // Had the failed call not reported the failure, its input would be a lost commit.
    for step in &mut output.trace.steps {
        step.events
            .retain(|event| !matches!(event.kind, EventKind::SessionLogFailed { .. }));
    }
    let violations = check(&scenario, &output);
    assert!(
        violations
            .iter()
            .any(|v| v.kind == ViolationKind::CommittedMessageLost && v.detail.contains("m0003")),
        "{violations:?}"
    );
}

#[test]
fn an_application_opens_a_session_before_it_changes_task_state() {
    paused_runtime().block_on(async {
        let log: Arc<dyn SessionLog> = Arc::new(MemorySessionLog::new());
        let model = model(&["First answer.", "Second answer.", "Third answer."]);
        let first = agent_over(model.clone(), log.clone());
        write_fix_todo(&first);
        first.call("Question one.", alice()).await.expect("call");

        // Opened first: the change builds on the restored state.
        let opened = agent_over(model.clone(), log.clone());
        let records = opened.open_session(&alice()).await.expect("open");
        assert!(records.is_some_and(|count| count > 0));
        assert_eq!(opened.open_session(&alice()).await.expect("again"), None);
        opened
            .task_state(&alice())
            .with(|state| state.set_subject_version("commit-c3"))
            .expect("subject");
        let task = opened.task_state(&alice()).snapshot();
        assert_eq!(task.revision(), 2);
        assert_eq!(task.todos()[0].content, "Fix the export");

        // Not opened: restore never overwrites live task state, so the Todo list is gone.
        let careless = agent_over(model, log.clone());
        careless
            .task_state(&alice())
            .with(|state| state.set_subject_version("commit-c3"))
            .expect("subject");
        careless.call("Question two.", alice()).await.expect("call");
        assert!(careless.task_state(&alice()).snapshot().todos().is_empty());
    });
}

#[test]
fn session_history_shows_the_last_20_by_default_and_last_n_when_asked() {
    use ctxbed_harness::message::ToolCall;
    use ctxbed_harness::session::{MemorySessionLog, SessionLog};
    use ctxbed_harness::tools::session::SessionTool;
    use ctxbed_harness::tools::{Tool, ToolContext};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let log = Arc::new(MemorySessionLog::new());
        let agent = ctxbed_harness::agent::HarnessAgent::builder()
            .agent_id("a")
            .model(Arc::new(ctxbed_sim::mock::MockModel::new(
                ctxbed_sim::mock::MockScript::new(
                    ctxbed_harness::model::ModelInfo {
                        name: "m".into(),
                        context_window: Some(8_000),
                        max_output_tokens: None,
                    },
                    vec![],
                ),
            )))
            .session_log(log.clone())
            .build()
            .expect("agent");
        let alice = RuntimeContext::new().with_user("alice").with_session("s1");
        let history: Vec<Message> = (1..=25)
            .map(|n| Message::user(format!("m{n:02}"), format!("message {n}")))
            .collect();
        agent.load_history(&alice, history);
        let tool = SessionTool::history(log as Arc<dyn SessionLog>);
        let context = ToolContext {
            agent_id: "a".into(),
            runtime: alice.clone(),
            call_id: "call-9".into(),
        };
        let ask = |arguments: serde_json::Value| {
            let call = ToolCall {
                id: "t1".into(),
                name: "session_history".into(),
                arguments,
            };
            let tool = &tool;
            let context = &context;
            async move {
                let outcome = tool.call(&call, context).await;
                let text: String = outcome
                    .outputs
                    .iter()
                    .map(|o| match o {
                        ctxbed_harness::message::ToolOutput::Text { text } => text.clone(),
                        ctxbed_harness::message::ToolOutput::Media { .. } => String::new(),
                    })
                    .collect();
                (outcome.is_error, text)
            }
        };
        let (failed, text) = ask(serde_json::json!({"sessionId": "s1"})).await;
        assert!(!failed, "{text}");
        assert!(
            text.starts_with("session s1: last 20 of 25 messages"),
            "{text}"
        );
        let ids: Vec<&str> = text
            .lines()
            .skip(1)
            .filter_map(|l| l.strip_prefix('[')?.split(']').next())
            .collect();
        let expected: Vec<String> = (6..=25).map(|n| format!("m{n:02}")).collect();
        assert_eq!(ids, expected, "the latest 20, in order");
        let (failed, text) = ask(serde_json::json!({"sessionId": "s1", "lastN": 3})).await;
        assert!(
            !failed && text.starts_with("session s1: last 3 of 25"),
            "{text}"
        );
        assert!(text.contains("[m23]") && text.contains("[m25]") && !text.contains("[m22]"));
        for bad in [0, 101] {
            let (failed, text) = ask(serde_json::json!({"sessionId": "s1", "lastN": bad})).await;
            assert!(failed, "lastN {bad}: {text}");
        }
    });
}
