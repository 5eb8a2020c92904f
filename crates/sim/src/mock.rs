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
//! [`classify`]: ctxbed_harness::model::classify::classify
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

use async_trait::async_trait;

use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest, Purpose};
use ctxbed_harness::tokens::cache::same_json_text;
use ctxbed_harness::tokens::{
    CachedEstimator, ExactEstimator, REQUEST_OVERHEAD_TOKENS, TokenEstimator, shared_exact_counter,
};

mod reply;
mod script;

pub use reply::{extract_facts, redact_thinking, redacted_text, summarize};
use script::condition_holds;
pub use script::{
    Lane, MockScript, MockTurn, ScriptedCall, ScriptedError, SummaryMode, TurnAction,
    TurnCondition, step_groups,
};

/// Messages one mock model remembers by id; past it, new ids go through the shared cache only.
const MESSAGE_COUNTS_MAX: usize = ctxbed_harness::limits::TOKEN_CACHE_ENTRIES_MAX;

/// True when everything a count reads is the same in both messages (the id and metadata are
/// not counted). JSON arguments compare in key order, as they are printed when counted.
fn same_counted_content(a: &Message, b: &Message) -> bool {
    // Copies that share their content are equal without reading it.
    if a.shares_content(b) {
        return true;
    }
    a.name == b.name
        && a.parts.len() == b.parts.len()
        && a.parts.iter().zip(&b.parts).all(|pair| match pair {
            (ContentPart::Text { text: x }, ContentPart::Text { text: y })
            | (ContentPart::Thinking { text: x, .. }, ContentPart::Thinking { text: y, .. })
            | (
                ContentPart::RedactedThinking { data: x },
                ContentPart::RedactedThinking { data: y },
            ) => x == y,
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
            (ContentPart::Image(x), ContentPart::Image(y)) => x == y,
            _ => false,
        })
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

    /// Exact tokens of one text, with the model's vocabulary.
    pub fn text_tokens(&self, text: &str) -> u64 {
        self.estimator.text_tokens(text)
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

    /// The exact tokens of each prefix of a request, as [`Self::count_input_tokens`] counts
    /// them: the first holds the overhead and the tool schemas, each next one message more (the
    /// last is the whole request).
    pub fn prefix_tokens(&self, request: &ModelRequest) -> Vec<u64> {
        let tools: u64 = request
            .tools
            .iter()
            .map(|t| self.estimator.tool_schema_tokens(t))
            .sum();
        let mut total = REQUEST_OVERHEAD_TOKENS + tools;
        let mut prefixes = Vec::with_capacity(request.messages.len() + 1);
        prefixes.push(total);
        for message in request.messages.iter() {
            total += self.message_tokens(message);
            prefixes.push(total);
        }
        prefixes
    }

    /// The count of `message`, remembered under its id. The lock is held only to read and to
    /// store the memo: comparing a long message with the one remembered, and counting it, run
    /// outside it, so a request with a huge message keeps no other request to this model waiting.
    fn message_tokens(&self, message: &Message) -> u64 {
        let remembered = self.message_counts().get(&message.id).cloned();
        if let Some((known, tokens)) = remembered
            && same_counted_content(&known, message)
        {
            return tokens;
        }
        let tokens = self.estimator.message_tokens(message);
        let mut counts = self.message_counts();
        if counts.len() < MESSAGE_COUNTS_MAX || counts.contains_key(&message.id) {
            counts.insert(message.id.clone(), (message.clone(), tokens));
        }
        tokens
    }

    fn message_counts(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Message, u64)>> {
        self.message_counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        self.call_counted(request, lane, self.count_input_tokens(request))
            .await
    }

    /// [`MockModel::call_in`] with the request's input already counted as `tokens` (a provider
    /// host counts the body as its provider does, see `host::counting`): the window check, the
    /// turns' conditions and the reply's usage all read `tokens`.
    ///
    /// # Errors
    /// As [`MockModel::call_in`].
    pub async fn call_counted(
        &self,
        request: &ModelRequest,
        lane: Lane,
        tokens: u64,
    ) -> Result<ModelReply, ModelError> {
        if self.log_requests {
            self.received
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(request.clone());
        }
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
                if turn.redacted_thinking {
                    redact_thinking(&mut reply.message);
                }
                if turn.usage.is_some() {
                    reply.usage = turn.usage;
                }
                Ok(reply)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::tokens::Vocabulary;
    use ctxbed_harness::tools::ToolSchema;
    use serde_json::Value;

    /// Counting a long message holds no lock: while one thread counts it, the memo of counts by
    /// id stays free for every other request to the model (it was held for the whole count,
    /// so every other request waited behind a huge one).
    #[test]
    fn counting_a_long_message_holds_no_lock() {
        let info = ModelInfo {
            name: "m".into(),
            context_window: None,
            max_output_tokens: None,
        };
        let model = MockModel::new(MockScript::new(info, Vec::new()));
        let text: String = (0..300_000u32)
            .map(|i| format!("{i} lock{} ", i % 97))
            .collect();
        let long = Message::user("long", text);
        let (samples, held, tokens) = std::thread::scope(|scope| {
            let counting = scope.spawn(|| model.message_tokens(&long));
            let (mut samples, mut held) = (0u32, 0u32);
            while !counting.is_finished() {
                samples += 1;
                held += u32::from(model.message_counts.try_lock().is_err());
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            (samples, held, counting.join().expect("the count ends"))
        });
        assert_eq!(tokens, model.estimator.inner().message_tokens(&long));
        assert!(samples >= 5, "the count took {samples} samples only");
        assert!(
            held * 10 < samples,
            "the lock was held in {held} of {samples} samples"
        );
    }

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
