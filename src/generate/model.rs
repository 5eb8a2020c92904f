//! The generated mock-model scripts: the conversation the model drives and its fault schedule.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Draw, model_name};
use crate::limits;
use crate::scenario::format::file::AgentSpec;
use ctxbed_harness::model::ModelInfo;
use ctxbed_harness::model::Purpose;
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::task::requirements::{PROPOSE_REQUIREMENT_TOOL, RequirementKind};
use ctxbed_harness::task::todo::TODO_WRITE_TOOL;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::{
    MockScript, MockTurn, ScriptedCall, ScriptedError, SummaryMode, TurnAction, TurnCondition,
};

/// Reasoning turns before the final one, at most.
const TURNS_MAX: u64 = 10;

/// Tool calls one generated reply carries, at most (parallel calls).
const PARALLEL_CALLS_MAX: u64 = 4;

/// The script of the agent's model for one seed.
pub(super) fn mock_script(draw: &mut Draw, seed: u64, tool_names: &[String]) -> MockScript {
    let name = model_name(seed);
    let window = (!draw.percent(5)).then(|| {
        *draw.pick(&[
            600, 1_000, 2_000, 4_000, 4_000, 8_000, 8_000, 32_000, 128_000,
        ])
    });
    let count = draw.range(0, TURNS_MAX);
    let mut turns: Vec<MockTurn> = (0..count)
        .map(|_| {
            if draw.percent(25) {
                fault_turn(draw, window)
            } else {
                reply_turn(draw, tool_names, window)
            }
        })
        .collect();
    turns.push(final_turn(draw, tool_names));
    MockScript {
        info: ModelInfo {
            name: name.clone(),
            context_window: window,
            max_output_tokens: draw.percent(10).then(|| draw.range(1, 4_000)),
        },
        imitates: *draw.pick(&Provider::ALL),
        vocabulary: *draw.pick(&[Vocabulary::O200k, Vocabulary::Cl100k]),
        strict: draw.percent(90),
        deepseek_thinking: false,
        summaries: if draw.percent(85) {
            SummaryMode::Auto
        } else {
            SummaryMode::Scripted
        },
        memory_flushes: SummaryMode::Auto,
        turns,
        file: format!("mock-models/{name}.toml"),
    }
}

/// A separate summary model: a small window, sometimes a script that fails, blanks or overflows
/// before it summarises.
pub(super) fn summary_script(draw: &mut Draw, seed: u64) -> MockScript {
    let name = format!("{}-summary", model_name(seed));
    let scripted = draw.percent(50);
    let mut turns = Vec::new();
    if scripted {
        for _ in 0..draw.range(0, 2) {
            let action = match draw.below(10) {
                0 => TurnAction::reply(""),
                1 => TurnAction::Error(ScriptedError::Transient(503)),
                2 => TurnAction::Error(ScriptedError::Overflow),
                3 => TurnAction::Error(ScriptedError::Timeout),
                4 => TurnAction::Error(ScriptedError::Malformed("{\"choices\":[".to_string())),
                5 => TurnAction::Error(ScriptedError::RateLimit),
                6 => TurnAction::Error(ScriptedError::Pairing),
                7 => TurnAction::Reply {
                    // A summary that also asks for a tool: the harness must not run it.
                    thinking: None,
                    text: Some("## Summary\nThe export was checked.".to_string()),
                    tool_calls: vec![ScriptedCall {
                        id: None,
                        name: "execute".to_string(),
                        arguments: arguments(draw),
                    }],
                },
                _ => TurnAction::Summarize,
            };
            let mut turn = MockTurn::new(action);
            // Slow now and then, past any model timeout the agent sets.
            turn.latency = match draw.below(10) {
                0 => Duration::from_secs(600),
                1..3 => draw.millis(1, 4_000),
                _ => Duration::ZERO,
            };
            turns.push(turn);
        }
        let mut last = MockTurn::new(TurnAction::Summarize);
        last.times = limits::MOCK_TURNS_MAX as u32;
        turns.push(last);
    }
    MockScript {
        info: ModelInfo {
            name: name.clone(),
            context_window: Some(*draw.pick(&[500, 1_000, 4_000, 8_000])),
            max_output_tokens: None,
        },
        imitates: *draw.pick(&Provider::ALL),
        vocabulary: Vocabulary::O200k,
        strict: true,
        deepseek_thinking: false,
        summaries: if scripted {
            SummaryMode::Scripted
        } else {
            SummaryMode::Auto
        },
        memory_flushes: SummaryMode::Auto,
        turns,
        file: format!("mock-models/{name}.toml"),
    }
}

/// Arguments of a scripted call: keys in sorted order (TOML tables are sorted, so a written
/// scenario loads back to the same value), sometimes with a long string for argument truncation.
pub(super) fn arguments(draw: &mut Draw) -> Value {
    let mut map = Map::new();
    let command = if draw.percent(10) {
        let chars = draw.range(500, 5_000) as usize;
        draw.text(chars)
    } else {
        (*draw.pick(&["cargo test", "grep -r export", "ls logs", "导出 报告"])).to_string()
    };
    map.insert("command".to_string(), Value::String(command));
    if draw.percent(50) {
        map.insert("n".to_string(), Value::from(draw.range(0, 1_000)));
    }
    Value::Object(map)
}

fn condition(draw: &mut Draw, window: Option<u64>) -> TurnCondition {
    if !draw.percent(15) {
        return TurnCondition::default();
    }
    let scale = window.unwrap_or(8_000);
    match draw.below(5) {
        0 => TurnCondition {
            tokens_over: Some(draw.range(scale / 8, scale)),
            ..TurnCondition::default()
        },
        1 => TurnCondition {
            tokens_at_most: Some(draw.range(scale / 8, scale)),
            ..TurnCondition::default()
        },
        2 => TurnCondition {
            contains: Some((*draw.pick(&["export", "导出", "Fact:", "cargo"])).to_string()),
            ..TurnCondition::default()
        },
        3 => TurnCondition {
            purpose: Some(*draw.pick(&[Purpose::Reasoning, Purpose::Summary])),
            ..TurnCondition::default()
        },
        // Conditions combine: every one given must hold.
        _ => TurnCondition {
            tokens_over: Some(draw.range(scale / 8, scale / 2)),
            tokens_at_most: Some(draw.range(scale / 2 + 1, scale)),
            purpose: Some(Purpose::Reasoning),
            ..TurnCondition::default()
        },
    }
}

fn turn(draw: &mut Draw, window: Option<u64>, action: TurnAction) -> MockTurn {
    MockTurn {
        when: condition(draw, window),
        action,
        latency: if draw.percent(70) {
            Duration::ZERO
        } else {
            draw.millis(1, 4_000)
        },
        times: draw.range(1, 3) as u32,
        line: 0,
        usage: None,
        step: None,
        redacted_thinking: false,
        retry_after: None,
    }
}

fn calls(draw: &mut Draw, tool_names: &[String]) -> Vec<ScriptedCall> {
    let count = if draw.percent(30) {
        draw.range(2, PARALLEL_CALLS_MAX)
    } else {
        1
    };
    (0..count)
        .map(|_| {
            let name = if tool_names.is_empty() || draw.percent(5) {
                "no_such_tool".to_string()
            } else {
                draw.pick(tool_names).clone()
            };
            let arguments = builtin_arguments(draw, &name).unwrap_or_else(|| arguments(draw));
            // Rarely a fixed id: repeated across turns, or one strict providers refuse.
            let id = match draw.below(100) {
                0..3 => Some("call_fixed".to_string()),
                3..4 => Some(" ".to_string()),
                _ => None,
            };
            ScriptedCall {
                id,
                name,
                arguments,
            }
        })
        .collect()
}

/// Plausible arguments for the built-in tools, keys sorted.
fn builtin_arguments(draw: &mut Draw, tool: &str) -> Option<Value> {
    let path = (*draw.pick(&[
        "AGENTS.md",
        "MEMORY.md",
        "logs/big.log",
        "missing.md",
        "notes/out.md",
    ]))
    .to_string();
    let text = |draw: &mut Draw| {
        let chars = draw.range(0, 300) as usize;
        Value::String(draw.text(chars))
    };
    let pairs: Vec<(&str, Value)> = match tool {
        "read_file" => {
            let mut pairs = Vec::new();
            if draw.percent(25) {
                pairs.push(("char_offset", Value::from(draw.range(0, 30_000))));
            }
            pairs.push(("limit", Value::from(draw.range(1, 50))));
            if draw.percent(30) {
                pairs.push(("offset", Value::from(draw.range(1, 400))));
            }
            pairs.push(("path", Value::String(path)));
            pairs
        }
        "write_file" => vec![("content", text(draw)), ("path", Value::String(path))],
        "edit_file" => vec![
            ("new", text(draw)),
            ("old", Value::String("Fact".to_string())),
            ("path", Value::String(path)),
        ],
        "list_files" => vec![("dir", Value::String("logs".to_string()))],
        "memory_search" => vec![("query", Value::String("export column".to_string()))],
        "memory_get" => vec![("id", Value::String("MEMORY.md:1".to_string()))],
        _ => return None,
    };
    Some(Value::Object(
        pairs
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    ))
}

fn reply_turn(draw: &mut Draw, tool_names: &[String], window: Option<u64>) -> MockTurn {
    let thinking = draw.percent(25).then(|| {
        let chars = draw.range(1, 300) as usize;
        draw.text(chars)
    });
    let text = draw.percent(50).then(|| {
        let chars = draw.size().min(2_000);
        draw.text(chars)
    });
    let tool_calls = if draw.percent(80) {
        calls(draw, tool_names)
    } else {
        Vec::new()
    };
    let action = TurnAction::Reply {
        thinking,
        text,
        tool_calls,
    };
    turn(draw, window, action)
}

/// One entry of the fault schedule.
fn fault_turn(draw: &mut Draw, window: Option<u64>) -> MockTurn {
    let error = match draw.below(100) {
        0..25 => ScriptedError::Overflow,
        25..35 => {
            // Another provider's overflow wording, through the classifier.
            let provider = *draw.pick(&Provider::ALL);
            let max = window.unwrap_or(8_000);
            let (status, body) = provider.overflow_error(max + draw.range(1, 5_000), max);
            ScriptedError::Raw { status, body }
        }
        35..45 => ScriptedError::Timeout,
        45..55 => {
            let chars = draw.range(0, 200) as usize;
            ScriptedError::Malformed(draw.text(chars))
        }
        55..70 => ScriptedError::Transient(*draw.pick(&[500, 502, 503, 529])),
        70..85 => ScriptedError::RateLimit,
        85..90 => ScriptedError::Pairing,
        _ => ScriptedError::Raw {
            status: *draw.pick(&[400, 401, 404]),
            body: r#"{"error":{"message":"invalid request","type":"invalid_request_error"}}"#
                .to_string(),
        },
    };
    let mut turn = turn(draw, window, TurnAction::Error(error));
    if draw.percent(20) {
        // Past any model timeout the scenario sets, so the harness's own timeout fires.
        turn.latency = Duration::from_secs(600);
    }
    turn
}

/// Session-tool calls inserted into one script, at most.
const SESSION_TOOL_CALLS_MAX: u64 = 3;

/// Gives a sixth of the seeds with a session log the session tools (generator version 4) and
/// inserts up to three turns calling them before the script's final turn: listing the
/// sessions, reading one (this one, the other one, or one that does not exist) and searching
/// them. Draws from its own stream.
pub(super) fn session_tools(draw: &mut Draw, agent: &mut AgentSpec, script: &mut MockScript) {
    if !agent.session_log || !draw.percent(16) {
        return;
    }
    agent.session_tools = true;
    for _ in 0..draw.range(1, SESSION_TOOL_CALLS_MAX) {
        let (name, arguments) = match draw.below(3) {
            0 => ("session_list", Map::new()),
            1 => {
                let mut arguments = Map::new();
                if draw.percent(50) {
                    arguments.insert("lastN".into(), Value::from(draw.range(1, 60)));
                }
                let session = *draw.pick(&["s1", "s2", "nowhere"]);
                arguments.insert("sessionId".into(), Value::String(session.into()));
                ("session_history", arguments)
            }
            _ => {
                let query = *draw.pick(&["export", "导出", "column order", "zzz"]);
                let mut arguments = Map::new();
                arguments.insert("query".into(), Value::String(query.into()));
                ("session_search", arguments)
            }
        };
        insert_call(draw, script, name, arguments);
    }
}

/// Inserts a turn whose reply is one call of `tool` before a random turn of the script (never
/// after its final turn, which answers every remaining request).
fn insert_call(
    draw: &mut Draw,
    script: &mut MockScript,
    tool: &str,
    arguments: Map<String, Value>,
) {
    let at = draw.below(script.turns.len() as u64) as usize;
    let call = ScriptedCall {
        id: None,
        name: tool.to_string(),
        arguments: Value::Object(arguments),
    };
    let action = TurnAction::Reply {
        thinking: None,
        text: None,
        tool_calls: vec![call],
    };
    script.turns.insert(at, MockTurn::new(action));
}

/// Lets a seventh of the seeds (not the ReAct loop, which has no task state) propose
/// requirements, and inserts one or two `propose_requirement` turns before the script's final
/// turn; now and then one the tool refuses (an unknown kind or a blank text). Draws from its own
/// stream.
pub(super) fn requirement_proposals(
    draw: &mut Draw,
    agent: &mut AgentSpec,
    script: &mut MockScript,
) {
    if agent.react || !draw.percent(14) {
        return;
    }
    agent.task_context.allow_requirement_proposals = true;
    for _ in 0..draw.range(1, 2) {
        let kind = if draw.percent(10) {
            "wish"
        } else {
            draw.pick(&RequirementKind::ALL).as_str()
        };
        let text = if draw.percent(5) {
            " "
        } else {
            *draw.pick(&[
                "The export keeps the documented column order.",
                "Do not touch the release branch.",
                "导出 保留 列顺序",
            ])
        };
        let mut arguments = Map::new();
        arguments.insert("kind".into(), Value::String(kind.into()));
        arguments.insert("text".into(), Value::String(text.into()));
        insert_call(draw, script, PROPOSE_REQUIREMENT_TOOL, arguments);
    }
}

/// Items one generated Todo list holds, at most.
const TODO_ITEMS_GENERATED_MAX: u64 = 5;

/// Enables task state in a quarter of the seeds (not for the ReAct loop, which has none) and
/// inserts one or two `todo_write` turns before the script's final turn. Draws from its own
/// stream, so seeds without task state are generated exactly as before.
pub(super) fn task_list(draw: &mut Draw, agent: &mut AgentSpec, script: &mut MockScript) {
    if agent.react || !draw.percent(25) {
        return;
    }
    agent.task_list = true;
    for _ in 0..draw.range(1, 2) {
        // Before the final turn, which answers every remaining request.
        let at = draw.below(script.turns.len() as u64) as usize;
        let call = ScriptedCall {
            id: None,
            name: TODO_WRITE_TOOL.to_string(),
            arguments: todo_arguments(draw),
        };
        let action = TurnAction::Reply {
            thinking: None,
            text: None,
            tool_calls: vec![call],
        };
        script.turns.insert(at, MockTurn::new(action));
    }
}

/// A `todo_write` argument: a list of items, keys sorted; one in ten the tool refuses (two
/// items in progress).
fn todo_arguments(draw: &mut Draw) -> Value {
    let refused = draw.percent(10);
    let count = draw.range(1, TODO_ITEMS_GENERATED_MAX);
    let in_progress = draw.below(count + 1);
    let items: Vec<Value> = (0..count)
        .map(|index| {
            let status = if index == in_progress || (refused && index + 1 == in_progress) {
                "in_progress"
            } else {
                *draw.pick(&["pending", "completed"])
            };
            let words = *draw.pick(&[
                "Fix the export",
                "Run the tests",
                "Read the log",
                "Write the note",
            ]);
            let mut item = Map::new();
            item.insert("content".into(), Value::String(format!("{words} {index}")));
            item.insert("id".into(), Value::String(format!("item-{index}")));
            item.insert(
                "priority".into(),
                Value::String((*draw.pick(&["high", "medium", "low"])).into()),
            );
            item.insert("status".into(), Value::String(status.into()));
            Value::Object(item)
        })
        .collect();
    let mut arguments = Map::new();
    arguments.insert("todos".into(), Value::Array(items));
    Value::Object(arguments)
}

/// The last turn answers every remaining request: a final reply, a tool loop that runs into the
/// step limit, or a fault that never clears.
fn final_turn(draw: &mut Draw, tool_names: &[String]) -> MockTurn {
    let action = match draw.below(100) {
        0..80 => {
            let chars = draw.range(1, 400) as usize;
            TurnAction::reply(draw.text(chars))
        }
        80..95 => TurnAction::Reply {
            thinking: None,
            text: None,
            tool_calls: calls(draw, tool_names),
        },
        _ => TurnAction::Error(ScriptedError::Transient(503)),
    };
    let mut turn = MockTurn::new(action);
    turn.times = limits::MOCK_TURNS_MAX as u32;
    turn
}
