//! Scripted mock models: a strict provider imitation that replays a script of turns.
//!
//! A [`MockModel`] counts every request it receives with an exact tokenizer and checks it the way
//! a strict provider would: unpaired tool calls or results get the pairing rejection of the
//! provider it imitates; input over its window gets that provider's overflow error. Otherwise it
//! answers with the next applicable turn of its [`MockScript`]: a text reply, tool calls, a
//! latency, an error, or a deterministic summary. A turn with a `when` condition that does not
//! hold is skipped. When the script runs out the model fails with
//! [`ModelError::ScriptExhausted`], naming the file.
//!
//! Errors travel as a provider status and body through [`classify`], exactly as a real
//! provider's would, so classification is exercised on real wording.
//!
//! Counting is exact but not repeated: each message's count is remembered under a hash of its
//! content ([`CachedEstimator`], one per vocabulary, shared by every mock model of the process
//! and by scenario agents that count exactly, so a scenario run twice or a sweep's next seed
//! reuses it, and a message the agent counted is not counted again; the same counter remembers
//! tool schemas), so a request over a long history costs one exact count per *new* message. Before
//! hashing, a message is compared with the one this model last counted under the same id (a
//! request resends the history, and a comparison is far cheaper than a hash). A count is
//! a function of the content alone, so sharing changes no number: they are those of
//! [`ExactEstimator::request_tokens`], which a test checks.
//!
//! ```
//! use ctxbed_harness::model::{Model, ModelInfo, ModelRequest, Purpose};
//! use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, TurnAction};
//! use ctxbed_harness::message::Message;
//! let script = MockScript::new(
//!     ModelInfo { name: "tiny".into(), context_window: Some(1_000), max_output_tokens: None },
//!     vec![MockTurn::new(TurnAction::reply("Done."))],
//! );
//! let model = MockModel::new(script);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! let reply = runtime.block_on(model.call(&ModelRequest {
//!     call_id: "c1".into(), purpose: Purpose::Reasoning,
//!     messages: vec![Message::user("m1", "Hi")].into(), tools: Default::default(), max_output_tokens: None,
//! })).unwrap();
//! assert_eq!(reply.message.text(), "Done.");
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use ctxbed_harness::context::pairs::{PairingProblem, find_pairing_problem};
use ctxbed_harness::message::{ContentPart, Message, Role};
use ctxbed_harness::model::classify::classify;
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{
    Model, ModelError, ModelInfo, ModelReply, ModelRequest, Purpose, Usage,
};
use ctxbed_harness::tokens::cache::same_json_text;
use ctxbed_harness::tokens::{
    CachedEstimator, ExactEstimator, REQUEST_OVERHEAD_TOKENS, TokenEstimator, Vocabulary,
    shared_exact_counter,
};

/// Messages one mock model remembers by id; past it, new ids go through the shared cache only.
const MESSAGE_COUNTS_MAX: usize = ctxbed_harness::limits::TOKEN_CACHE_ENTRIES_MAX;

/// True when everything a count reads is the same in both messages (the id and metadata are
/// not counted). JSON arguments compare in key order, as they are printed when counted.
fn same_counted_content(a: &Message, b: &Message) -> bool {
    a.name == b.name
        && a.parts.len() == b.parts.len()
        && a.parts.iter().zip(&b.parts).all(|pair| match pair {
            (ContentPart::Text { text: x }, ContentPart::Text { text: y })
            | (ContentPart::Thinking { text: x }, ContentPart::Thinking { text: y }) => x == y,
            (ContentPart::ToolCall(x), ContentPart::ToolCall(y)) => {
                x.id == y.id && x.name == y.name && same_json_text(&x.arguments, &y.arguments)
            }
            (ContentPart::ToolResult(x), ContentPart::ToolResult(y)) => {
                x.call_id == y.call_id && x.tool_name == y.tool_name && x.outputs == y.outputs
            }
            (
                ContentPart::Media {
                    kind: x,
                    size_bytes: x_size,
                },
                ContentPart::Media {
                    kind: y,
                    size_bytes: y_size,
                },
            ) => x == y && x_size == y_size,
            _ => false,
        })
}

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
    pub summaries: SummaryMode,
    /// How memory flush requests are answered: `Auto` by the deterministic extractor
    /// ([`extract_facts`]), without consuming a turn.
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

/// Where one lane has got to in its turns.
#[derive(Debug, Default, Clone, Copy)]
struct Position {
    turn: usize,
    used: u32,
}

#[derive(Debug, Default)]
struct Cursor {
    lanes: BTreeMap<Lane, Position>,
    /// Each lane's position before its last turn was taken, for [`MockModel::give_back`].
    before: BTreeMap<Lane, Position>,
    requests: u64,
    call_ids: u64,
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

fn ends_step(action: &TurnAction) -> bool {
    matches!(action, TurnAction::Reply { text: Some(_), tool_calls, .. } if tool_calls.is_empty())
}

/// A model that replays a [`MockScript`].
#[derive(Debug)]
pub struct MockModel {
    script: MockScript,
    estimator: Arc<CachedEstimator<ExactEstimator>>,
    /// The message last counted under each id, with its count.
    message_counts: Mutex<BTreeMap<String, (Message, u64)>>,
    cursor: Mutex<Cursor>,
    received: Mutex<Vec<ModelRequest>>,
    /// Whether `received` keeps requests (off behind a provider host, which keeps its own
    /// bounded record, so a long-running server's memory does not grow with every request).
    log_requests: bool,
    /// Per step, the indices of its main-loop turns ([`step_groups`]).
    groups: Vec<Vec<usize>>,
    /// The indices of the turns scripted for side requests.
    side: Vec<usize>,
    /// Every turn's index, in order (the script lane).
    every: Vec<usize>,
}

impl MockModel {
    pub fn new(script: MockScript) -> Self {
        let estimator = shared_exact_counter(script.vocabulary);
        let groups = step_groups(&script.turns);
        let script_turns = script.turns.len();
        let side = (0..script.turns.len())
            .filter(|&i| script.turns[i].when.side == Some(true))
            .collect();
        MockModel {
            script,
            estimator,
            message_counts: Mutex::new(BTreeMap::new()),
            cursor: Mutex::new(Cursor::default()),
            received: Mutex::new(Vec::new()),
            log_requests: true,
            groups,
            side,
            every: (0..script_turns).collect(),
        }
    }

    /// Exact tokens of a reply message, as usage reports them.
    pub fn output_tokens(&self, message: &Message) -> u64 {
        self.estimator.message_tokens(message)
    }

    /// How many steps the script's main-loop turns answer ([`step_groups`]).
    pub fn scripted_steps(&self) -> usize {
        self.groups.len()
    }

    /// The same model, keeping no log of the requests it receives ([`MockModel::take_received`]
    /// then stays empty).
    pub fn without_request_log(mut self) -> Self {
        self.log_requests = false;
        self
    }

    /// Every request received since the last call, in order (the test-bed's view of the wire).
    pub fn take_received(&self) -> Vec<ModelRequest> {
        std::mem::take(
            &mut *self
                .received
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The script being replayed.
    pub fn script(&self) -> &MockScript {
        &self.script
    }

    /// Exact input tokens of a request: [`TokenEstimator::request_tokens`] with every message
    /// and schema counted once per model.
    pub fn count_input_tokens(&self, request: &ModelRequest) -> u64 {
        let messages: u64 = request
            .messages
            .iter()
            .map(|m| self.message_tokens(m))
            .sum();
        let tools: u64 = request
            .tools
            .iter()
            .map(|t| self.estimator.tool_schema_tokens(t))
            .sum();
        REQUEST_OVERHEAD_TOKENS + messages + tools
    }

    fn message_tokens(&self, message: &Message) -> u64 {
        let mut counts = self
            .message_counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((known, tokens)) = counts.get(&message.id)
            && same_counted_content(known, message)
        {
            return *tokens;
        }
        let tokens = self.estimator.message_tokens(message);
        if counts.len() < MESSAGE_COUNTS_MAX || counts.contains_key(&message.id) {
            counts.insert(message.id.clone(), (message.clone(), tokens));
        }
        tokens
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cursor> {
        self.cursor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The indices of the turns `lane` may use, in order.
    fn lane_turns(&self, lane: Lane) -> &[usize] {
        match lane {
            Lane::Script => &self.every,
            Lane::Step(step) => self
                .groups
                .get(step.wrapping_sub(1))
                .map_or(&[][..], Vec::as_slice),
            Lane::Side => &self.side,
        }
    }

    /// Picks the turn of `lane` for this request and advances that lane; `None` when the lane
    /// has no turn left.
    fn next_turn(&self, request: &ModelRequest, tokens: u64, lane: Lane) -> Option<MockTurn> {
        let turns = self.lane_turns(lane);
        let mut cursor = self.lock();
        cursor.requests += 1;
        let start = cursor.lanes.get(&lane).copied().unwrap_or_default();
        cursor.before.insert(lane, start);
        let position = cursor.lanes.entry(lane).or_default();
        while let Some(turn) = turns.get(position.turn).map(|&i| &self.script.turns[i]) {
            if !condition_holds(&turn.when, request, tokens) {
                position.turn += 1;
                position.used = 0;
                continue;
            }
            position.used += 1;
            if position.used >= turn.times {
                position.turn += 1;
                position.used = 0;
            }
            return Some(turn.clone());
        }
        None
    }

    /// Puts back the turn `lane` last answered with, so the next request of that lane gets it
    /// again: the answer never reached the client (the host cut its stream).
    pub fn give_back(&self, lane: Lane) {
        let mut cursor = self.lock();
        if let Some(before) = cursor.before.remove(&lane) {
            cursor.lanes.insert(lane, before);
        }
    }

    fn exhausted(&self, lane: Lane) -> ModelError {
        let turns = self.lane_turns(lane);
        let last = turns.last().map(|&i| &self.script.turns[i]);
        let last_line = last
            .or(self.script.turns.last())
            .map_or(0, |turn| turn.line);
        let whose = match lane {
            Lane::Step(step) if turns.is_empty() => {
                format!(" (it scripts no turn for step {step})")
            }
            Lane::Step(step) => format!(" (the last of step {step}'s turns)"),
            _ => String::new(),
        };
        ModelError::ScriptExhausted {
            model: self.script.info.name.clone(),
            file: format!("{}:{last_line}{whose}", self.script.file),
            request: self.lock().requests,
        }
    }

    fn next_call_id(&self) -> String {
        let mut cursor = self.lock();
        cursor.call_ids += 1;
        match self.script.imitates {
            Provider::Anthropic => format!("toolu_{:04}", cursor.call_ids),
            _ => format!("call_{:04}", cursor.call_ids),
        }
    }

    fn provider_error(&self, status: u16, body: String) -> ModelError {
        classify(self.script.imitates.as_str(), status, &body)
    }

    /// A strict provider's checks: pairing first, then the window.
    fn check_request(&self, request: &ModelRequest, tokens: u64) -> Result<(), ModelError> {
        if let Some(problem) = find_pairing_problem(&request.messages) {
            let provider = self.script.imitates;
            let (status, body) = match problem {
                PairingProblem::CallWithoutResult { index, call_id } => {
                    provider.call_without_result_error(index, &call_id)
                }
                PairingProblem::ResultWithoutCall { index, call_id }
                | PairingProblem::DuplicateCallId { index, call_id } => {
                    provider.result_without_call_error(index, &call_id)
                }
                PairingProblem::BlankId { index } => provider.result_without_call_error(index, ""),
            };
            return Err(self.provider_error(status, body));
        }
        if let Some(window) = self.script.info.context_window {
            let completion = request.max_output_tokens.unwrap_or(0);
            if tokens + completion > window {
                let (status, body) = self
                    .script
                    .imitates
                    .overflow_error_split(tokens, completion, window);
                return Err(self.provider_error(status, body));
            }
        }
        Ok(())
    }

    fn scripted_error(&self, turn: &MockTurn, error: &ScriptedError, tokens: u64) -> ModelError {
        // The provider's effective limit: the turn's threshold when it has one, else the window;
        // always below the request so the reported sizes are consistent.
        let window = turn
            .when
            .tokens_over
            .or(self.script.info.context_window)
            .unwrap_or(tokens)
            .min(tokens.saturating_sub(1));
        let latency = turn.latency;
        match error {
            ScriptedError::Overflow => {
                let (status, body) = self.script.imitates.overflow_error(tokens, window);
                self.provider_error(status, body)
            }
            ScriptedError::Pairing => {
                let (status, body) = self.script.imitates.call_without_result_error(1, "call_0000");
                self.provider_error(status, body)
            }
            ScriptedError::Timeout => ModelError::Timeout { after: latency },
            ScriptedError::Malformed(raw) => ModelError::MalformedReply {
                detail: "the reply is not a valid chat completion".to_string(),
                raw: raw.clone(),
            },
            ScriptedError::Transient(status) => self.provider_error(
                *status,
                format!(r#"{{"error":{{"message":"upstream fault","code":{status}}}}}"#),
            ),
            ScriptedError::RateLimit => self.provider_error(
                429,
                r#"{"error":{"message":"Rate limit reached; please try again later.","type":"requests","code":"rate_limit_exceeded"}}"#.to_string(),
            ),
            ScriptedError::Raw { status, body } => self.provider_error(*status, body.clone()),
        }
    }

    fn reply(&self, action: &TurnAction, request: &ModelRequest, tokens: u64) -> ModelReply {
        let mut parts = Vec::new();
        match action {
            TurnAction::Reply {
                thinking,
                text,
                tool_calls,
            } => {
                if let Some(thinking) = thinking {
                    parts.push(ContentPart::Thinking {
                        text: thinking.clone(),
                    });
                }
                if let Some(text) = text {
                    parts.push(ContentPart::text(text.clone()));
                }
                for call in tool_calls {
                    parts.push(ContentPart::tool_call(
                        call.id.clone().unwrap_or_else(|| self.next_call_id()),
                        call.name.clone(),
                        call.arguments.clone(),
                    ));
                }
            }
            TurnAction::Summarize => parts.push(ContentPart::text(summarize(request))),
            TurnAction::ExtractFacts => parts.push(ContentPart::text(extract_facts(request))),
            TurnAction::Error(_) => unreachable!("errors are answered before replies"),
        }
        let message = Message::new(String::new(), Role::Assistant, parts);
        let output_tokens = self.estimator.message_tokens(&message);
        ModelReply {
            message,
            usage: Some(Usage {
                input_tokens: tokens,
                output_tokens,
            }),
        }
    }
}

#[async_trait]
impl Model for MockModel {
    fn info(&self) -> &ModelInfo {
        &self.script.info
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.call_in(request, Lane::Script).await
    }
}

impl MockModel {
    /// Answers `request` from the turns of `lane` (see [`Lane`]); [`Model::call`] is
    /// `call_in(request, Lane::Script)`.
    ///
    /// # Errors
    /// The strict provider checks, a scripted error, or a lane with no turn left.
    pub async fn call_in(
        &self,
        request: &ModelRequest,
        lane: Lane,
    ) -> Result<ModelReply, ModelError> {
        if self.log_requests {
            self.received
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(request.clone());
        }
        let tokens = self.count_input_tokens(request);
        if self.script.strict {
            self.check_request(request, tokens)?;
        }
        let automatic = |purpose: Purpose| match purpose {
            Purpose::MemoryFlush => MockTurn::new(TurnAction::ExtractFacts),
            _ => MockTurn::new(TurnAction::Summarize),
        };
        let turn = match lane {
            Lane::Script => {
                let auto_summary = request.purpose == Purpose::Summary
                    && self.script.summaries == SummaryMode::Auto;
                let auto_extraction = request.purpose == Purpose::MemoryFlush
                    && self.script.memory_flushes == SummaryMode::Auto;
                if auto_summary || auto_extraction {
                    automatic(request.purpose)
                } else {
                    self.next_turn(request, tokens, lane)
                        .ok_or_else(|| self.exhausted(lane))?
                }
            }
            Lane::Side => self
                .next_turn(request, tokens, lane)
                .unwrap_or_else(|| automatic(request.purpose)),
            Lane::Step(_) => self
                .next_turn(request, tokens, lane)
                .ok_or_else(|| self.exhausted(lane))?,
        };
        if !turn.latency.is_zero() {
            tokio::time::sleep(turn.latency).await;
        }
        match &turn.action {
            TurnAction::Error(error) => Err(self.scripted_error(&turn, error, tokens)),
            action => {
                let mut reply = self.reply(action, request, tokens);
                if turn.usage.is_some() {
                    reply.usage = turn.usage;
                }
                Ok(reply)
            }
        }
    }
}

fn condition_holds(condition: &TurnCondition, request: &ModelRequest, tokens: u64) -> bool {
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

fn message_mentions(message: &Message, needle: &str) -> bool {
    message.parts.iter().any(|part| match part {
        ContentPart::Text { text } | ContentPart::Thinking { text } => text.contains(needle),
        ContentPart::ToolResult(result) => result.text().contains(needle),
        ContentPart::ToolCall(call) => call.arguments.to_string().contains(needle),
        ContentPart::Media { .. } => false,
    })
}

/// The deterministic summariser: names how many messages it covers and quotes each user turn's
/// first line, so a golden shows which messages went into a summary.
pub fn summarize(request: &ModelRequest) -> String {
    let mut lines = vec![format!(
        "Summary of {} request message(s).",
        request.messages.len()
    )];
    for message in &request.messages {
        if message.role == Role::User {
            let text = message.text();
            let first = text.lines().next().unwrap_or("");
            lines.push(format!(
                "- user: {}",
                ctxbed_harness::format::snippet(first, 80)
            ));
        }
    }
    lines.join("\n")
}

/// The deterministic fact extractor: a line of the request's user text that starts, after an
/// optional `[role] ` tag of the transcript, with `Fact:`, `Decision:`, `Remember:` or `Note:`
/// (any case) is a fact; each is answered once, as a `- ` list item, in order. With none it
/// answers `NONE`, as the default extraction prompt asks.
pub fn extract_facts(request: &ModelRequest) -> String {
    const MARKERS: [&str; 4] = ["fact:", "decision:", "remember:", "note:"];
    let mut facts: Vec<String> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role == Role::User) {
        for line in message.text().lines() {
            let line = line.trim();
            let line = match line
                .strip_prefix('[')
                .and_then(|rest| rest.split_once("] "))
            {
                Some((_, rest)) => rest.trim(),
                None => line,
            };
            let lower = line.to_lowercase();
            if MARKERS.iter().any(|m| lower.starts_with(m)) && !facts.iter().any(|f| f == line) {
                facts.push(line.to_string());
            }
        }
    }
    if facts.is_empty() {
        return "NONE".to_string();
    }
    facts
        .iter()
        .map(|fact| format!("- {fact}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::tools::ToolSchema;

    #[test]
    fn cached_counts_equal_exact_request_counts() {
        let script = MockScript::new(
            ModelInfo {
                name: "m".into(),
                context_window: None,
                max_output_tokens: None,
            },
            Vec::new(),
        );
        let model = MockModel::new(script);
        let exact = ExactEstimator::new(Vocabulary::O200k);
        let schema = ToolSchema {
            name: "shell".into(),
            description: "Runs a command.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        };
        let mut messages = vec![Message::user("m1", "Run the export tests, then report.")];
        for round in 0..4 {
            let tools = vec![schema.clone()];
            let request = ModelRequest {
                call_id: format!("c{round}"),
                purpose: Purpose::Reasoning,
                messages: messages.clone().into(),
                tools: tools.clone().into(),
                max_output_tokens: None,
            };
            assert_eq!(
                model.count_input_tokens(&request),
                exact.request_tokens(&messages, &tools)
            );
            // The same id with other text must be counted afresh.
            messages.push(Message::assistant("m1", "x".repeat(round * 7 + 1)));
        }
        // Arguments with the same keys in another order print, and count, differently.
        let call = |arguments| {
            Message::assistant_tool_calls(
                "a1",
                vec![ContentPart::tool_call("c1", "shell", arguments)],
            )
        };
        let first = call(serde_json::json!({"command": "ls", "n": 100000}));
        let mut reordered = serde_json::Map::new();
        reordered.insert("n".into(), serde_json::json!(100000));
        reordered.insert("command".into(), serde_json::json!("ls"));
        let second = call(Value::Object(reordered));
        assert!(!same_counted_content(&first, &second));
        for message in [&first, &second, &first] {
            let request = ModelRequest {
                call_id: "c-call".into(),
                purpose: Purpose::Reasoning,
                messages: vec![message.clone()].into(),
                tools: Default::default(),
                max_output_tokens: None,
            };
            assert_eq!(
                model.count_input_tokens(&request),
                exact.request_tokens(std::slice::from_ref(message), &[])
            );
        }
        let mut other = schema.clone();
        other.description = "Runs a command in the workspace, with a longer description.".into();
        let request = ModelRequest {
            call_id: "c-other".into(),
            purpose: Purpose::Reasoning,
            messages: messages.clone().into(),
            tools: vec![schema.clone(), other.clone()].into(),
            max_output_tokens: None,
        };
        assert_eq!(
            model.count_input_tokens(&request),
            exact.request_tokens(&messages, &[schema, other])
        );
    }
}
