//! What a mock model plays: the script ([`MockScript`]) and its turns ([`MockTurn`]: a condition,
//! an action, latency), the lanes a turn may answer in ([`Lane`]), how main-loop turns are dealt
//! to steps ([`step_groups`]) and when a turn's condition holds.

use std::time::Duration;

use serde_json::Value;

use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{ModelInfo, ModelRequest, Purpose, Usage};
use ctxbed_harness::tokens::Vocabulary;

/// A tool call a turn asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    /// A fixed call id; generated (`call_0001`, `toolu_0001`, …) when `None`.
    pub id: Option<String>,
    pub name: String,
    pub arguments: Value,
}

/// An error a turn injects.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedError {
    /// The imitated provider's overflow wording (sizes from the request's exact count).
    Overflow,
    /// The imitated provider's pairing rejection.
    Pairing,
    /// The provider does not answer in time.
    Timeout,
    /// A reply that cannot be parsed; carries the raw text.
    Malformed(String),
    /// A server fault with this status.
    Transient(u16),
    /// HTTP 429.
    RateLimit,
    /// A raw status and body, classified like any provider answer.
    Raw { status: u16, body: String },
}

/// What a turn does.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnAction {
    /// An assistant reply: optional thinking and text, and tool calls (parallel when several).
    Reply {
        thinking: Option<String>,
        text: Option<String>,
        tool_calls: Vec<ScriptedCall>,
    },
    /// A deterministic summary of the request's conversation.
    Summarize,
    /// The deterministic fact extractor's answer to a memory flush request.
    ExtractFacts,
    /// An injected failure.
    Error(ScriptedError),
}

impl TurnAction {
    /// A plain text reply.
    pub fn reply(text: impl Into<String>) -> Self {
        TurnAction::Reply {
            thinking: None,
            text: Some(text.into()),
            tool_calls: Vec::new(),
        }
    }
}

/// When a turn applies. Every given condition must hold; an empty condition always holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnCondition {
    /// Exact input tokens strictly above this.
    pub tokens_over: Option<u64>,
    /// Exact input tokens at most this.
    pub tokens_at_most: Option<u64>,
    /// Some message text contains this.
    pub contains: Option<String>,
    /// The request has this purpose.
    pub purpose: Option<Purpose>,
    /// `true`: the turn answers side requests only (a summary, a memory extraction, any request
    /// that does not continue the conversation); `false`: main-loop requests only. In a
    /// scripted run a side request is one whose purpose is not reasoning; over the wire the host
    /// tells them apart by structure (see [`crate::host`]).
    pub side: Option<bool>,
}

/// One scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct MockTurn {
    pub when: TurnCondition,
    pub action: TurnAction,
    /// Simulated time before answering.
    pub latency: Duration,
    /// How many requests this turn answers before the script moves on.
    pub times: u32,
    /// The line of the script file where the turn starts (0 when built in code).
    pub line: usize,
    /// Usage figures to report instead of the exact counts: a recording keeps what the real
    /// model reported, so a replay reports it too.
    pub usage: Option<Usage>,
    /// The step (1-based) whose requests this turn answers when the model is driven step by
    /// step ([`Lane::Step`]); `None` deals turns to steps by [`step_groups`].
    pub step: Option<usize>,
    /// The reply's thinking is withheld: it is answered as opaque data
    /// (`ContentPart::RedactedThinking`, Anthropic's `redacted_thinking`) that encodes the
    /// scripted thinking.
    pub redacted_thinking: bool,
    /// The `Retry-After` a rate-limit turn answers with (`None`: the host's default).
    pub retry_after: Option<Duration>,
}

impl MockTurn {
    /// An unconditional turn answering once with no latency.
    pub fn new(action: TurnAction) -> Self {
        MockTurn {
            when: TurnCondition::default(),
            action,
            latency: Duration::ZERO,
            times: 1,
            line: 0,
            usage: None,
            step: None,
            redacted_thinking: false,
            retry_after: None,
        }
    }
}

/// How requests with purpose SUMMARY (or MEMORY_FLUSH) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryMode {
    /// By the deterministic summariser, without consuming a turn.
    Auto,
    /// By the script, like any other request.
    Scripted,
}

/// A complete mock-model definition.
#[derive(Debug, Clone, PartialEq)]
pub struct MockScript {
    pub info: ModelInfo,
    pub imitates: Provider,
    pub vocabulary: Vocabulary,
    /// Check pairing and window like a strict provider.
    pub strict: bool,
    /// Imitate DeepSeek's thinking mode on Chat Completions: a tool-call assistant message of
    /// the current turn handed back without its `reasoning_content` is refused, in DeepSeek's
    /// words (replies carry the scripted thinking in `reasoning_content` in any case).
    pub deepseek_thinking: bool,
    pub summaries: SummaryMode,
    /// How memory flush requests are answered: `Auto` by the deterministic extractor
    /// ([`extract_facts`](super::extract_facts)), without consuming a turn.
    pub memory_flushes: SummaryMode,
    pub turns: Vec<MockTurn>,
    /// The file the script came from, for error messages.
    pub file: String,
}

impl MockScript {
    /// A strict OpenAI-imitating script counting with o200k.
    pub fn new(info: ModelInfo, turns: Vec<MockTurn>) -> Self {
        MockScript {
            info,
            imitates: Provider::OpenAi,
            vocabulary: Vocabulary::O200k,
            strict: true,
            deepseek_thinking: false,
            summaries: SummaryMode::Auto,
            memory_flushes: SummaryMode::Auto,
            turns,
            file: "<inline>".to_string(),
        }
    }
}

/// Which of a script's turns may answer a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// Every turn, in order: the script as one sequence (scenarios run in process, `ctxbed
    /// serve` without steps).
    Script,
    /// The main-loop turns of one step (1-based), in order: a step's answers never depend on
    /// how many requests earlier steps made.
    Step(usize),
    /// The turns scripted for side requests (`when.side = true`), in order; past them, side
    /// requests get the deterministic summariser or fact extractor.
    Side,
}

/// Deals a script's main-loop turns (every turn not marked `when.side = true`) to steps: by
/// each turn's `step` when the script gives one, else in order, a step's turns running up to
/// and including its first plain text reply (a reply without tool calls, the step's final
/// answer). Returns, per step, the indices of its turns; trailing turns after the last reply
/// form a last step.
pub fn step_groups(turns: &[MockTurn]) -> Vec<Vec<usize>> {
    let main = turns
        .iter()
        .enumerate()
        .filter(|(_, turn)| turn.when.side != Some(true));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    if turns.iter().any(|turn| turn.step.is_some()) {
        for (index, turn) in main {
            let step = turn.step.unwrap_or(1).max(1);
            if groups.len() < step {
                groups.resize(step, Vec::new());
            }
            groups[step - 1].push(index);
        }
        return groups;
    }
    let mut current = Vec::new();
    for (index, turn) in main {
        current.push(index);
        if ends_step(&turn.action) {
            groups.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// Whether a turn ends its step: a text reply without tool calls.
fn ends_step(action: &TurnAction) -> bool {
    matches!(action, TurnAction::Reply { text: Some(_), tool_calls, .. } if tool_calls.is_empty())
}

/// Whether every given condition of a turn holds for this request of `tokens` input tokens.
pub(super) fn condition_holds(
    condition: &TurnCondition,
    request: &ModelRequest,
    tokens: u64,
) -> bool {
    let over = condition.tokens_over.is_none_or(|limit| tokens > limit);
    let at_most = condition.tokens_at_most.is_none_or(|limit| tokens <= limit);
    let purpose = condition.purpose.is_none_or(|p| p == request.purpose);
    let side = condition
        .side
        .is_none_or(|side| side == (request.purpose != Purpose::Reasoning));
    let contains = condition.contains.as_ref().is_none_or(|needle| {
        request
            .messages
            .iter()
            .any(|message| message_mentions(message, needle))
    });
    over && at_most && purpose && side && contains
}

/// Whether a text, thinking, tool result or tool call's arguments of the message contain
/// `needle`.
fn message_mentions(message: &Message, needle: &str) -> bool {
    message.parts.iter().any(|part| match part {
        ContentPart::Text { text } | ContentPart::Thinking { text, .. } => text.contains(needle),
        ContentPart::RedactedThinking { .. } => false,
        ContentPart::ToolResult(result) => result.text().contains(needle),
        ContentPart::ToolCall(call) => call.arguments.to_string().contains(needle),
        ContentPart::Media { .. } | ContentPart::Image(_) => false,
    })
}
