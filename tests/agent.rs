//! Library-level tests of the agent loop on the simulated runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxbed_harness::agent::{AgentError, BuildError, EventKind, HarnessAgent};
use ctxbed_harness::model::ModelInfo;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, ScriptedCall, TurnAction};
use ctxbed_sim::scripted::{ScriptedOutput, ScriptedTool};

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
}

fn info() -> ModelInfo {
    ModelInfo {
        name: "test".into(),
        context_window: Some(8_000),
        max_output_tokens: None,
    }
}

fn turn_with_latency(action: TurnAction, latency: Duration) -> MockTurn {
    MockTurn {
        latency,
        ..MockTurn::new(action)
    }
}

fn tool_turn(names: &[&str]) -> MockTurn {
    MockTurn::new(TurnAction::Reply {
        thinking: None,
        text: None,
        tool_calls: names
            .iter()
            .map(|name| ScriptedCall {
                id: None,
                name: (*name).to_string(),
                arguments: serde_json::json!({}),
            })
            .collect(),
    })
}

fn agent(turns: Vec<MockTurn>) -> HarnessAgent {
    let model = MockModel::new(MockScript::new(info(), turns));
    let slow = ScriptedTool::new("slow", ScriptedOutput::Fixed("slow done".into()))
        .with_latency(Duration::from_secs(5));
    let fast = ScriptedTool::new("fast", ScriptedOutput::Fixed("fast done".into()))
        .with_latency(Duration::from_secs(1));
    HarnessAgent::builder()
        .name("tester")
        .model(Arc::new(model))
        .tool(slow.into_arc())
        .tool(fast.into_arc())
        .build()
        .expect("agent builds")
}

#[test]
fn ten_minutes_of_model_latency_cost_no_wall_time() {
    let runtime = paused_runtime();
    let wall = Instant::now();
    let (reply, virtual_elapsed) = runtime.block_on(async {
        let start = tokio::time::Instant::now();
        let agent = agent(vec![turn_with_latency(
            TurnAction::reply("done"),
            Duration::from_secs(600),
        )]);
        let reply = agent.call("think", RuntimeContext::new()).await;
        (reply, start.elapsed())
    });
    let wall = wall.elapsed();
    assert_eq!(reply.expect("reply").text(), "done");
    assert_eq!(virtual_elapsed, Duration::from_secs(600));
    assert!(wall < Duration::from_secs(2), "took {wall:?} of wall time");
    eprintln!("600 s of virtual latency took {wall:?} of wall time");
}

#[test]
fn parallel_results_are_recorded_in_call_order_even_when_the_first_finishes_last() {
    let runtime = paused_runtime();
    runtime.block_on(async {
        let agent = agent(vec![
            tool_turn(&["slow", "fast"]),
            MockTurn::new(TurnAction::reply("ok")),
        ]);
        let events = agent
            .stream_events("go", RuntimeContext::new())
            .collect()
            .await;
        let results: Vec<(String, Duration)> = events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::ToolResult { result, .. } => Some((result.text(), event.at)),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].0, "slow done");
        assert_eq!(results[1].0, "fast done");
        // Executed concurrently: both done after the slower one's 5 s, not 6 s.
        assert_eq!(results[1].1, Duration::from_secs(5));
        let history = agent.history(&RuntimeContext::new());
        let tool_messages: Vec<String> = history
            .iter()
            .flat_map(|m| m.tool_results().map(|r| r.text()).collect::<Vec<_>>())
            .collect();
        assert_eq!(tool_messages, vec!["slow done", "fast done"]);
    });
}

#[test]
fn call_and_stream_events_agree() {
    let runtime = paused_runtime();
    runtime.block_on(async {
        let turns = || {
            vec![
                tool_turn(&["fast"]),
                MockTurn::new(TurnAction::reply("all good")),
            ]
        };
        let by_call = agent(turns());
        let reply = by_call
            .call("go", RuntimeContext::new())
            .await
            .expect("call");
        let by_stream = agent(turns());
        let events = by_stream
            .stream_events("go", RuntimeContext::new())
            .collect()
            .await;
        let Some(EventKind::RunFinished { outcome, .. }) = events.last().map(|e| &e.kind) else {
            panic!("the last event is RunFinished");
        };
        assert_eq!(outcome.as_ref().expect("stream outcome"), &reply);
        assert_eq!(
            by_call.history(&RuntimeContext::new()),
            by_stream.history(&RuntimeContext::new())
        );
        let builds = events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::Custom {
                        name: "context_build",
                        ..
                    }
                )
            })
            .count();
        assert_eq!(builds, 2, "one context_build per reasoning step");
    });
}

#[test]
fn a_dropped_stream_cancels_the_run() {
    let runtime = paused_runtime();
    runtime.block_on(async {
        let agent = agent(vec![
            tool_turn(&["fast"]),
            MockTurn::new(TurnAction::reply("done")),
        ]);
        let mut stream = agent.stream_events("go", RuntimeContext::new().with_session("s"));
        let first = stream.next().await.expect("first event");
        assert!(matches!(first.kind, EventKind::RunStarted { .. }));
        drop(stream);
        tokio::time::sleep(Duration::from_secs(60)).await;
        // Cancelled before its first model reply: the tool never ran and nothing was answered.
        let history = agent.history(&RuntimeContext::new().with_session("s"));
        assert!(
            history.iter().all(|m| m.text() != "done"),
            "a cancelled run goes no further: {history:?}"
        );
        // The session is usable again: a new call runs to its end.
        let reply = agent
            .call("again", RuntimeContext::new().with_session("s"))
            .await
            .expect("the next call runs");
        assert!(!reply.text().is_empty());
    });
}

#[test]
fn builder_rejects_bad_configuration_and_stays_usable() {
    let runtime = paused_runtime();
    runtime.block_on(async {
        assert_eq!(
            HarnessAgent::builder().build().err(),
            Some(BuildError::MissingModel)
        );
        let model = Arc::new(MockModel::new(MockScript::new(info(), vec![])));
        let tool = || ScriptedTool::new("t", ScriptedOutput::Fixed(String::new())).into_arc();
        let builder = HarnessAgent::builder()
            .model(model)
            .tool(tool())
            .tool(tool());
        assert!(matches!(builder.build(), Err(BuildError::Tool(_))));
        let zero = HarnessAgent::builder()
            .model(Arc::new(MockModel::new(MockScript::new(info(), vec![]))))
            .max_steps(0);
        assert!(matches!(
            zero.build(),
            Err(BuildError::InvalidMaxSteps { .. })
        ));
        let fixed = zero.max_steps(2);
        assert!(fixed.build().is_ok());
        // A second instruction of the same name is refused, never a silent replacement.
        let twice = fixed
            .clone()
            .instruction("policy", "Preserve the public API.")
            .instruction("other", "Be brief.")
            .instruction("policy", "Never touch the migrations.");
        let error = twice.build().err();
        assert_eq!(
            error,
            Some(BuildError::DuplicateInstruction("policy".into()))
        );
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("its own name"), "{message}");
        assert!(
            fixed
                .instruction("policy", "Preserve the public API.")
                .instruction("other", "Be brief.")
                .build()
                .is_ok()
        );
    });
}

#[test]
fn the_step_limit_is_a_typed_error() {
    let runtime = paused_runtime();
    runtime.block_on(async {
        let looping = MockTurn {
            times: 50,
            ..tool_turn(&["fast"])
        };
        let agent = HarnessAgent::builder()
            .model(Arc::new(MockModel::new(MockScript::new(
                info(),
                vec![looping],
            ))))
            .tool(ScriptedTool::new("fast", ScriptedOutput::Fixed("x".into())).into_arc())
            .max_steps(4)
            .build()
            .expect("agent");
        let error = agent.call("loop", RuntimeContext::new()).await.unwrap_err();
        assert_eq!(error, AgentError::MaxStepsExceeded { limit: 4 });
        assert!(error.to_string().contains("raise it with `max_steps`"));
    });
}

#[test]
fn overflow_recovery_works_through_call_too() {
    use ctxbed_sim::mock::{ScriptedError, TurnCondition};
    let runtime = paused_runtime();
    runtime.block_on(async {
        let overflow = MockTurn {
            when: TurnCondition {
                tokens_over: Some(400),
                ..TurnCondition::default()
            },
            ..MockTurn::new(TurnAction::Error(ScriptedError::Overflow))
        };
        let model = MockModel::new(MockScript::new(
            info(),
            vec![overflow, MockTurn::new(TurnAction::reply("recovered"))],
        ));
        let agent = HarnessAgent::builder()
            .model(Arc::new(model))
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("s");
        let mut history = vec![ctxbed_harness::message::Message::user("h0", "Investigate.")];
        for round in 0..6 {
            history.push(ctxbed_harness::message::Message::assistant(
                format!("a{round}"),
                "A long reply about the export writer and its column order. ".repeat(10),
            ));
            history.push(ctxbed_harness::message::Message::user(
                format!("u{round}"),
                "Go on.",
            ));
        }
        agent.load_history(&session, history);
        let reply = agent
            .call("Continue.", session.clone())
            .await
            .expect("recovered");
        assert_eq!(reply.text(), "recovered");
        let kinds: Vec<String> = agent
            .session_records(&session)
            .into_iter()
            .map(|r| r.kind)
            .filter(|k| k.starts_with("run/") || k.starts_with("compaction/"))
            .collect();
        assert_eq!(
            kinds,
            vec!["run/start", "compaction/start", "compaction/end", "run/end"]
        );
        let summaries = agent
            .history(&session)
            .iter()
            .filter(|m| ctxbed_harness::compaction::summary::is_summary(m))
            .count();
        assert_eq!(
            summaries, 1,
            "the retried request's compacted history is committed"
        );
    });
}

#[test]
fn compaction_never_rewrites_durable_history() {
    use ctxbed_harness::compaction::config::CompactionConfig;
    let runtime = paused_runtime();
    runtime.block_on(async {
        let replies = MockTurn {
            times: 20,
            ..MockTurn::new(TurnAction::reply(
                "A long answer about the export writer and its column order. ".repeat(8),
            ))
        };
        let agent = HarnessAgent::builder()
            .model(Arc::new(MockModel::new(MockScript::new(
                info(),
                vec![replies],
            ))))
            .compaction(CompactionConfig {
                trigger_messages: 6,
                keep_tokens: Some(0),
                keep_messages: 2,
                ..CompactionConfig::default()
            })
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("s");
        for turn in 0..6 {
            agent
                .call(format!("Question {turn}."), session.clone())
                .await
                .expect("reply");
        }
        let working = agent.history(&session);
        let logged: Vec<String> = agent
            .session_records(&session)
            .into_iter()
            .filter(|r| r.kind == "message")
            .filter_map(|r| r.payload.value()["id"].as_str().map(str::to_string))
            .collect();
        assert!(
            working.len() < 12,
            "the working history was compacted: {}",
            working.len()
        );
        for turn in 1..=12 {
            let id = format!("m{turn:04}");
            assert!(logged.contains(&id), "{id} is in the session log");
        }
        for message in &working {
            assert!(logged.contains(&message.id), "{} is logged", message.id);
        }
    });
}

#[test]
fn the_memory_flush_asks_the_memory_model_when_one_is_configured() {
    use ctxbed_harness::compaction::config::CompactionConfig;
    use ctxbed_harness::message::Message;
    use ctxbed_harness::model::Purpose;
    let runtime = paused_runtime();
    runtime.block_on(async {
        let agent_model = Arc::new(MockModel::new(MockScript::new(
            info(),
            vec![MockTurn::new(TurnAction::reply("Noted."))],
        )));
        let summary_model = Arc::new(MockModel::new(MockScript::new(info(), Vec::new())));
        let memory_model = Arc::new(MockModel::new(MockScript::new(info(), Vec::new())));
        let agent = HarnessAgent::builder()
            .model(agent_model.clone())
            .compaction(CompactionConfig {
                trigger_messages: 4,
                keep_tokens: Some(0),
                keep_messages: 1,
                model: Some(summary_model.clone()),
                memory_model: Some(memory_model.clone()),
                ..CompactionConfig::default()
            })
            .build()
            .expect("agent");
        let session = RuntimeContext::new().with_session("s");
        let long = "the export writer groups rows by account and day. ".repeat(20);
        agent.load_history(
            &session,
            vec![
                Message::user(
                    "u1",
                    format!("Fact: the writer lives in src/writer.rs. {long}"),
                ),
                Message::assistant("a1", long.clone()),
                Message::user("u2", format!("Task B. {long}")),
                Message::assistant("a2", long.clone()),
            ],
        );
        agent.call("Task C.", session).await.expect("the call");
        let purposes = |model: &MockModel| -> Vec<Purpose> {
            model.take_received().iter().map(|r| r.purpose).collect()
        };
        assert_eq!(purposes(&memory_model), [Purpose::MemoryFlush]);
        assert_eq!(purposes(&summary_model), [Purpose::Summary]);
        assert_eq!(purposes(&agent_model), [Purpose::Reasoning]);
    });
}
