//! The agent's task configuration: which task tools it registers, and a `todo_write` call
//! updating the shared task state through the loop.

use std::sync::Arc;

use ctxbed_harness::agent::{BuildError, HarnessAgent, HarnessAgentBuilder};
use ctxbed_harness::model::ModelInfo;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::task::todo::TodoStatus;
use ctxbed_harness::task::{BeginOutcome, TaskContextOptions, TaskScope};
use ctxbed_harness::tools::ToolRegistryError;
use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, ScriptedCall, TurnAction};

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
}

fn model(turns: Vec<MockTurn>) -> Arc<MockModel> {
    let info = ModelInfo {
        name: "test".into(),
        context_window: Some(8_000),
        max_output_tokens: None,
    };
    Arc::new(MockModel::new(MockScript::new(info, turns)))
}

/// The tool names the first request offered the model.
fn offered_tools(builder: HarnessAgentBuilder) -> Vec<String> {
    let model = model(vec![MockTurn::new(TurnAction::reply("Done."))]);
    paused_runtime().block_on(async {
        let agent = builder.model(model.clone()).build().expect("agent builds");
        agent
            .call("Go.", RuntimeContext::new())
            .await
            .expect("a reply");
    });
    let requests = model.take_received();
    requests[0].tools.iter().map(|t| t.name.clone()).collect()
}

#[test]
fn task_tools_follow_the_task_list_and_the_latest_options() {
    assert!(offered_tools(HarnessAgent::builder()).is_empty());
    assert_eq!(
        offered_tools(HarnessAgent::builder().enable_task_list()),
        ["todo_write"]
    );
    let proposals = TaskContextOptions::default().allow_requirement_proposals();
    assert_eq!(
        offered_tools(HarnessAgent::builder().task_context(proposals)),
        ["propose_requirement"]
    );
    assert_eq!(
        offered_tools(
            HarnessAgent::builder()
                .enable_task_list()
                .task_context(proposals)
                .task_context(TaskContextOptions::default().include_requirements())
        ),
        ["todo_write"],
        "a later task_context replaces the options"
    );
}

#[test]
fn a_user_tool_named_todo_write_is_a_build_error() {
    let user_tool = ctxbed_sim::scripted::ScriptedTool::new(
        "todo_write",
        ctxbed_sim::scripted::ScriptedOutput::Fixed("x".into()),
    );
    let error = paused_runtime().block_on(async {
        HarnessAgent::builder()
            .model(model(Vec::new()))
            .tool(user_tool.into_arc())
            .enable_task_list()
            .build()
            .unwrap_err()
    });
    assert_eq!(
        error,
        BuildError::Tool(ToolRegistryError::Duplicate("todo_write".into()))
    );
}

#[test]
fn todo_write_through_the_loop_updates_the_shared_state() {
    let write = MockTurn::new(TurnAction::Reply {
        thinking: None,
        text: None,
        tool_calls: vec![ScriptedCall {
            id: None,
            name: "todo_write".into(),
            arguments: serde_json::json!({"todos": [
                {"id": "fix", "content": "Fix quoting", "status": "in_progress", "priority": "high"},
            ]}),
        }],
    });
    let done = MockTurn::new(TurnAction::reply("Working on it."));
    let builder = HarnessAgent::builder()
        .model(model(vec![write, done]))
        .enable_task_list();
    let states = builder.task_states();
    let runtime = RuntimeContext::new().with_user("alice");
    let shared = states.of(&runtime);
    let history = paused_runtime().block_on(async {
        let agent = builder.build().expect("agent builds");
        assert_eq!(
            agent.begin_task(&runtime, TaskScope::new("export-fix", "Fix the export")),
            Ok(BeginOutcome::Started)
        );
        agent
            .call("Fix the export.", runtime.clone())
            .await
            .expect("a reply");
        assert_eq!(agent.task_state(&runtime).revision(), 2);
        let bob = RuntimeContext::new().with_user("bob");
        assert_eq!(
            agent.task_state(&bob).revision(),
            0,
            "bob's session has its own state"
        );
        agent.history(&runtime)
    });
    let state = shared.snapshot();
    assert_eq!(state.todo_revision(), Some(2));
    assert_eq!(state.todos()[0].status, TodoStatus::InProgress);
    let receipt = history
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_name == "todo_write")
        .expect("a receipt in history");
    assert_eq!(
        receipt.text(),
        "Todo list (revision 2):\n- [in_progress] fix (high): Fix quoting"
    );
}
