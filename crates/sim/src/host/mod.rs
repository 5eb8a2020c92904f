//! The provider host: a mock model served in a real provider's wire format, whatever carries the
//! bytes (turmoil's simulated TCP in network scenarios, real loopback TCP in `ctxbed serve`).
//!
//! [`ProviderHost::answer`] takes one HTTP request (method, path, body) and returns the response
//! the imitated provider would send: the body is read back into a [`ModelRequest`] (by
//! [`openai`] for Chat Completions, by [`anthropic`] for Messages), the [`MockModel`] counts,
//! checks and answers it exactly as in every other scenario, and the answer goes out as a whole
//! JSON reply or as server-sent events; errors as the provider's status and body. Faults that
//! belong to the server ([`HostFaults`]: a connection reset, a stream cut in the middle) are
//! injected by request number. Every request is kept as an [`Exchange`] (bounded), so a test-bed
//! can check what a harness actually sent.
//!
//! **Invariant:** nothing here reads the wall clock or an unseeded random source; the host
//! answers request `n` the same way in every run. All waiting goes through `tokio::time`.

pub mod anthropic;
pub mod openai;
mod outcome;
pub mod reasoning;
pub mod responses;
pub mod stored;
pub mod validate;

pub use outcome::Outcome;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use crate::mock::{Lane, MockModel};
use ctxbed_harness::message::{ContentPart, Role};
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Purpose};

/// Exchanges one host keeps in memory by default; past it, requests are still answered and
/// counted, and [`ProviderHost::dropped`] says how many were not kept.
pub const EXCHANGES_MAX: usize = 100_000;

/// Faults the provider host injects by request number (1-based, counting every HTTP request
/// it receives, retries included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFaults {
    /// Requests whose connection is dropped before any answer (a reset).
    pub reset_requests: Vec<u64>,
    /// Requests whose streamed answer is cut after its first events.
    pub cut_stream_requests: Vec<u64>,
}

/// How a host behaves beyond its mock model's script.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOptions {
    pub faults: HostFaults,
    /// Treat a request without tools whose last message asks for a summary as a summary
    /// request, and one asking to extract facts into long-term memory as a memory flush (the
    /// wire does not say why a request was made). Off in network scenarios, whose
    /// mocks script summaries like any other turn; on in `ctxbed serve`, where each harness
    /// words its own summary prompt.
    pub infer_summaries: bool,
    /// Send usage figures (OpenAI's `usage`, its final usage chunk). Anthropic's replies always
    /// carry usage, as the real API's do.
    pub report_usage: bool,
    /// How long a turn scripted as a timeout holds its request before answering 504.
    pub hang: Duration,
    /// The `retry-after` header (seconds) sent with a 429.
    pub retry_after_seconds: u64,
    /// Deal the script's turns to steps ([`ProviderHost::begin_step`]): each request is told
    /// apart by structure as the step's main-loop request or a side request, main-loop requests
    /// are answered from their step's own turns, side requests by the turns scripted for them or
    /// the deterministic summariser. Requests before the first step are side requests. On in
    /// `ctxbed conform`; off in network scenarios and in a plain `ctxbed serve`, which play the
    /// script in arrival order.
    pub steps: bool,
    /// How many exchanges the host keeps in memory ([`ProviderHost::exchanges`]); past it,
    /// requests are answered and counted but not kept. `ctxbed serve` keeps none (each exchange
    /// goes to its record file as it happens), so its memory does not grow with traffic.
    pub retain_exchanges: usize,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            faults: HostFaults::default(),
            infer_summaries: false,
            report_usage: true,
            hang: Duration::from_secs(crate::limits::STEP_VIRTUAL_TIME_MAX_SECONDS),
            retry_after_seconds: 1,
            steps: false,
            retain_exchanges: EXCHANGES_MAX,
        }
    }
}

/// The end of Anthropic's token-counting route (`POST /v1/messages/count_tokens`).
pub const COUNT_TOKENS_PATH: &str = "/messages/count_tokens";

/// True for a request to Anthropic's token-counting route.
pub fn is_count_tokens(path: &str) -> bool {
    route_path(path).ends_with(COUNT_TOKENS_PATH)
}

/// A request path without its query and trailing slashes.
fn route_path(path: &str) -> &str {
    path.split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
}

/// The wire format of one request, chosen by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST …/messages`).
    Anthropic,
    /// OpenAI Responses (`POST …/responses`).
    Responses,
}

impl Api {
    /// Every API, in a fixed order.
    pub const ALL: [Api; 3] = [Api::OpenAi, Api::Anthropic, Api::Responses];

    /// `openai` (Chat Completions), `anthropic` (Messages) or `responses` (OpenAI Responses):
    /// the names records, traces and `CTXBED_API` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Responses => "responses",
        }
    }

    /// The API named `name` ([`Api::as_str`]).
    pub fn parse(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.as_str() == name)
    }

    /// The API a request path names: `…/messages` is Anthropic's, `…/responses` OpenAI's
    /// Responses, anything else OpenAI's Chat Completions.
    pub fn for_path(path: &str) -> Api {
        let path = route_path(path);
        if path.ends_with("/messages") || path.ends_with(COUNT_TOKENS_PATH) {
            Api::Anthropic
        } else if path.ends_with(responses::PATH) {
            Api::Responses
        } else {
            Api::OpenAi
        }
    }
}

/// One request the host received and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// 1-based, over every request the host received.
    pub number: u64,
    pub api: Api,
    pub path: String,
    pub stream: bool,
    /// The body as sent (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The body read back as the provider sees it (`None` when it was not JSON).
    pub request: Option<ModelRequest>,
    /// The exact input tokens, counted with the mock's tokenizer.
    pub input_tokens: Option<u64>,
    /// The HTTP status answered (0: the connection was reset, no answer).
    pub status: u16,
    /// `reply` or `tool_calls`, an error kind (`context_overflow`, `pairing_rejected`,
    /// `rate_limited`, …), or a fault (`reset`, `cut_stream`, `not_json`).
    pub outcome: Outcome,
    /// The step the host was in when the request arrived (0: before the first), when it deals
    /// turns to steps.
    pub step: Option<usize>,
    /// True for a side request: one that does not continue the step's conversation (see
    /// [`continues_step`]); answered without using a main-loop turn.
    pub side: bool,
    /// What the host changed in the scripted answer, and why (a tool call the request did not
    /// offer, answered as text).
    pub note: Option<String>,
}

/// A tool call the mock made during a step.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The step a host is in, as the test-bed announced it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepState {
    /// 1-based; 0 before the first step.
    pub number: usize,
    /// The input the step's call was given.
    pub input: String,
    /// The tool calls the mock answered this step's main-loop requests with.
    pub calls: Vec<IssuedCall>,
}

/// A response body: whole, or a stream of frames that may end in an error (a cut).
pub type HostBody = Either<Full<Bytes>, StreamBody<FrameStream>>;

/// The frames of a streamed answer: data, then (for a cut or reset) an error.
pub type FrameStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + Sync>,
>;

/// The provider host's state: the mock model behind it, its options and what it received.
#[derive(Debug)]
pub struct ProviderHost {
    model: MockModel,
    options: HostOptions,
    requests: AtomicU64,
    exchanges: Mutex<Vec<Exchange>>,
    /// Exchanges not kept because `retain_exchanges` was reached.
    dropped: AtomicU64,
    /// How many requests ended in each outcome, kept or not.
    outcomes: Mutex<BTreeMap<&'static str, u64>>,
    step: Mutex<StepState>,
    /// Which Responses replies carried reasoning, for the reasoning rules.
    reasoned: reasoning::Reasoned,
    /// The output items of stored Responses replies, for references to them.
    stored: stored::StoredItems,
}

/// What a request asked of the answer's format.
#[derive(Debug, Clone, Copy)]
struct Wire {
    api: Api,
    stream: bool,
    /// Reasoning items carry their encrypted content (Responses' `include`).
    encrypted: bool,
    /// The response is stored (Responses' `store`, on by default): its reasoning can be
    /// passed back by id.
    stored: bool,
}

impl ProviderHost {
    /// A host answering with `model`, injecting `faults`, with every other option at its
    /// default.
    pub fn new(model: MockModel, faults: HostFaults) -> Self {
        ProviderHost::with_options(
            model,
            HostOptions {
                faults,
                ..HostOptions::default()
            },
        )
    }

    /// A host answering with `model` as `options` say.
    pub fn with_options(model: MockModel, options: HostOptions) -> Self {
        ProviderHost {
            // The host keeps its own bounded record of what it received.
            model: model.without_request_log(),
            options,
            requests: AtomicU64::new(0),
            exchanges: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            outcomes: Mutex::new(BTreeMap::new()),
            step: Mutex::new(StepState::default()),
            reasoned: reasoning::Reasoned::default(),
            stored: stored::StoredItems::default(),
        }
    }

    /// Starts step `number` (1-based), whose call was given `input`: from now on, requests that
    /// continue this step's conversation are answered from its own turns (with
    /// [`HostOptions::steps`]).
    pub fn begin_step(&self, number: usize, input: &str) {
        *self.lock_step() = StepState {
            number,
            input: input.to_string(),
            calls: Vec::new(),
        };
    }

    fn lock_step(&self) -> std::sync::MutexGuard<'_, StepState> {
        self.step
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// HTTP requests received so far.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The options the host answers with.
    pub fn options(&self) -> &HostOptions {
        &self.options
    }

    /// The mock model behind the host.
    pub fn model(&self) -> &MockModel {
        &self.model
    }

    /// Every exchange so far, in the order the requests arrived.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.lock_exchanges().clone()
    }

    /// The exchanges, emptied.
    pub fn take_exchanges(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.lock_exchanges())
    }

    fn lock_exchanges(&self) -> std::sync::MutexGuard<'_, Vec<Exchange>> {
        self.exchanges
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many exchanges were not kept because `retain_exchanges` was reached (0 when the
    /// host keeps none by design).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// How many requests ended in each outcome (`reply`, `context_overflow`, …), over every
    /// request, kept or not.
    pub fn outcomes(&self) -> BTreeMap<&'static str, u64> {
        self.outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Answers one request and keeps its exchange (see [`HostOptions::retain_exchanges`]).
    /// `body` is `None` when it could not be read (the client went away): the answer is then a
    /// reset.
    pub async fn answer(&self, path: &str, body: Option<Bytes>) -> http::Response<HostBody> {
        let (response, exchange) = self.exchange(path, body).await;
        self.keep(exchange);
        response
    }

    /// Answers one request and hands back its exchange without keeping it, for a caller that
    /// writes it somewhere first; [`ProviderHost::keep`] then keeps it.
    pub async fn exchange(
        &self,
        path: &str,
        body: Option<Bytes>,
    ) -> (http::Response<HostBody>, Exchange) {
        let number = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let api = Api::for_path(path);
        let mut exchange = Exchange {
            number,
            api,
            path: path.to_string(),
            stream: false,
            body: Value::Null,
            request: None,
            input_tokens: None,
            status: 0,
            outcome: Outcome::Reset,
            step: None,
            side: false,
            note: None,
        };
        let response = if is_count_tokens(path) {
            self.count_tokens(body, &mut exchange)
        } else {
            self.respond(api, body, &mut exchange).await
        };
        if exchange.outcome != Outcome::Reset {
            exchange.status = response.status().as_u16();
        }
        *self
            .outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(exchange.outcome.as_str())
            .or_default() += 1;
        (response, exchange)
    }

    /// Keeps `exchange` in memory while fewer than `retain_exchanges` are kept; past it, counts
    /// it as dropped.
    pub fn keep(&self, exchange: Exchange) {
        let limit = self.options.retain_exchanges;
        if limit == 0 {
            return;
        }
        let mut exchanges = self.lock_exchanges();
        if exchanges.len() < limit {
            exchanges.push(exchange);
        } else if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!(
                limit,
                model = %self.model.script().info.name,
                "the host keeps no more exchanges; later requests are answered but not kept"
            );
        }
    }

    /// Answers `POST /v1/messages/count_tokens` with the exact count the window check uses,
    /// as `{"input_tokens": N}`; it uses no turn and is recorded as `count_tokens`.
    fn count_tokens(
        &self,
        body: Option<Bytes>,
        exchange: &mut Exchange,
    ) -> http::Response<HostBody> {
        let Some(body) = body else {
            return reset();
        };
        let json = match self.checked_json(
            Api::Anthropic,
            &body,
            exchange,
            validate::check_count_tokens,
        ) {
            Ok(json) => json,
            Err(refusal) => return full(400, refusal),
        };
        let request = anthropic::parse_request(&json);
        let tokens = self.model.count_input_tokens(&request);
        exchange.outcome = Outcome::CountTokens;
        exchange.input_tokens = Some(tokens);
        exchange.side = true;
        exchange.body = json;
        exchange.request = Some(request);
        full(
            200,
            serde_json::json!({ "input_tokens": tokens }).to_string(),
        )
    }

    /// The body as JSON that `check` accepts, or the body of the 400 that refuses it (the
    /// exchange records `not_json` or `invalid_request` and why).
    fn checked_json(
        &self,
        api: Api,
        body: &Bytes,
        exchange: &mut Exchange,
        check: impl Fn(&Value) -> Result<(), validate::Invalid>,
    ) -> Result<Value, String> {
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            exchange.outcome = Outcome::NotJson;
            return Err(self.not_json_body(api));
        };
        if let Err(invalid) = check(&json) {
            exchange.outcome = Outcome::InvalidRequest;
            exchange.note = Some(invalid.reason);
            exchange.body = json;
            return Err(invalid.body);
        }
        Ok(json)
    }

    async fn respond(
        &self,
        api: Api,
        body: Option<Bytes>,
        exchange: &mut Exchange,
    ) -> http::Response<HostBody> {
        let Some(body) = body else {
            return reset();
        };
        if self
            .options
            .faults
            .reset_requests
            .contains(&exchange.number)
        {
            return reset();
        }
        // Responses: references to stored items are resolved first, and the reasoning rules
        // hold over what they resolve to.
        let resolved: RefCell<Option<Value>> = RefCell::new(None);
        let check = |json: &Value| {
            validate::check(api, json)?;
            if api == Api::Responses {
                let items = self.stored.resolve(json)?;
                reasoning::check(items.as_ref().unwrap_or(json), &self.reasoned)?;
                *resolved.borrow_mut() = items;
            }
            Ok(())
        };
        let json = match self.checked_json(api, &body, exchange, check) {
            Ok(json) => json,
            Err(refusal) => return full(400, refusal),
        };
        let stream = json.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let encrypted = reasoning::wants_encrypted_content(&json);
        let stored = reasoning::wants_stored(&json);
        let mut request = match api {
            Api::OpenAi => openai::parse_request(&json),
            Api::Anthropic => anthropic::parse_request(&json),
            Api::Responses => responses::parse_request(resolved.borrow().as_ref().unwrap_or(&json)),
        };
        let lane = self.lane(&mut request, exchange);
        exchange.stream = stream;
        exchange.body = json;
        exchange.input_tokens = Some(self.model.count_input_tokens(&request));
        let outcome = self
            .model
            .call_in(&request, lane)
            .await
            .map(|reply| self.offered_calls_only(reply, &request, exchange));
        if let (Lane::Step(number), Ok(reply)) = (lane, &outcome) {
            self.note_calls(number, reply);
        }
        exchange.request = Some(request);
        let wire = Wire {
            api,
            stream,
            encrypted,
            stored,
        };
        match outcome {
            Ok(reply) => self.answer_reply(reply, wire, lane, exchange),
            Err(error) => {
                exchange.outcome = Outcome::Error(error.error_kind());
                self.answer_error(error, wire, exchange).await
            }
        }
    }

    /// Which lane answers `request`: in steps, the current step's when the request continues
    /// it, else the side lane (the request then becomes a summary or memory request); without
    /// steps, the script, with summary and memory requests told apart by wording when asked to.
    fn lane(&self, request: &mut ModelRequest, exchange: &mut Exchange) -> Lane {
        if self.options.steps {
            let step = self.lock_step().clone();
            exchange.step = Some(step.number);
            if step.number > 0 && continues_step(request, &step) {
                return Lane::Step(step.number);
            }
            exchange.side = true;
            // The wording only chooses the shape of the automatic answer (facts or a summary);
            // whether the request is a side request is decided by structure.
            request.purpose = if asks_for_memory(request) {
                Purpose::MemoryFlush
            } else {
                Purpose::Summary
            };
            return Lane::Side;
        }
        if self.options.infer_summaries {
            if asks_for_memory(request) {
                request.purpose = Purpose::MemoryFlush;
            } else if asks_for_summary(request) {
                request.purpose = Purpose::Summary;
            }
        }
        Lane::Script
    }

    /// Remembers the calls step `number`'s reply made, so later requests of the step are known
    /// by the results they carry.
    fn note_calls(&self, number: usize, reply: &ModelReply) {
        let mut step = self.lock_step();
        if step.number == number {
            step.calls
                .extend(reply.message.tool_calls().map(|call| IssuedCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }));
        }
    }

    /// The reply in `wire`'s format, whole or streamed (and cut, when the request is one the
    /// faults name: its turn is then given back for the retry).
    fn answer_reply(
        &self,
        reply: ModelReply,
        wire: Wire,
        lane: Lane,
        exchange: &mut Exchange,
    ) -> http::Response<HostBody> {
        exchange.outcome = if reply.message.has_tool_calls() {
            Outcome::ToolCalls
        } else {
            Outcome::Reply
        };
        let usage = self.options.report_usage;
        let name = &self.model.script().info.name;
        let number = exchange.number;
        let shape = self.responses_shape(&reply, wire, number);
        if wire.api == Api::Responses {
            if thinking(&reply).is_some() {
                self.reasoned.insert(number, wire.stored);
            }
            if wire.stored {
                self.stored
                    .insert_all(&responses::output_items(&reply, &shape));
            }
        }
        if !wire.stream {
            let body = match wire.api {
                Api::OpenAi => openai::completion(&reply, name, number, usage),
                Api::Anthropic => anthropic::message(&reply, name, number),
                Api::Responses => responses::response(&reply, &shape),
            };
            return full(200, body.to_string());
        }
        let events = match wire.api {
            Api::OpenAi => openai::stream_events(&reply, name, number, usage),
            Api::Anthropic => anthropic::stream_events(&reply, name, number),
            Api::Responses => responses::stream_events(&reply, &shape),
        };
        let cut = self.options.faults.cut_stream_requests.contains(&number);
        if cut {
            exchange.outcome = Outcome::CutStream;
            // The answer never reaches the client: a retry gets the same turn.
            if matches!(lane, Lane::Step(_)) {
                self.model.give_back(lane);
            }
        }
        streamed(events, cut)
    }

    /// How a Responses reply goes out for this request.
    fn responses_shape<'a>(
        &'a self,
        reply: &ModelReply,
        wire: Wire,
        number: u64,
    ) -> responses::Shape<'a> {
        let reasoning_tokens = thinking(reply).map_or(0, |text| {
            self.model
                .output_tokens(&ctxbed_harness::message::Message::new(
                    "reasoning",
                    Role::Assistant,
                    vec![ContentPart::Thinking { text }],
                ))
        });
        responses::Shape {
            model: &self.model.script().info.name,
            number,
            usage: self.options.report_usage,
            encrypted: wire.encrypted,
            stored: wire.stored,
            reasoning_tokens,
        }
    }

    /// A model error in `wire`'s format. The Responses API words its overflow and pairing
    /// refusals its own way, and reports a streamed overflow inside a 200 stream.
    async fn answer_error(
        &self,
        error: ModelError,
        wire: Wire,
        exchange: &Exchange,
    ) -> http::Response<HostBody> {
        if wire.api != Api::Responses {
            return self.error_response(error).await;
        }
        match (&error, &exchange.request) {
            (ModelError::ContextOverflow { .. }, _) if wire.stream => {
                let shape = responses::Shape {
                    model: &self.model.script().info.name,
                    number: exchange.number,
                    usage: self.options.report_usage,
                    encrypted: wire.encrypted,
                    stored: wire.stored,
                    reasoning_tokens: 0,
                };
                streamed(responses::overflow_events(&shape), false)
            }
            (ModelError::ContextOverflow { .. }, _) => full(400, responses::overflow_body()),
            (ModelError::PairingRejected { .. }, Some(request)) => {
                full(400, responses::pairing_body(request))
            }
            _ => self.error_response(error).await,
        }
    }

    /// The reply with every tool call the request did not offer taken out (a provider cannot
    /// call a tool it was not given); when nothing is left, a text reply saying so. The change
    /// is noted on the exchange.
    fn offered_calls_only(
        &self,
        mut reply: ModelReply,
        request: &ModelRequest,
        exchange: &mut Exchange,
    ) -> ModelReply {
        let offered = |name: &str| request.tools.iter().any(|tool| tool.name == name);
        let dropped: Vec<String> = reply
            .message
            .tool_calls()
            .filter(|call| !offered(&call.name))
            .map(|call| call.name.clone())
            .collect();
        if dropped.is_empty() {
            return reply;
        }
        let mut parts: Vec<ContentPart> = reply.message.parts.to_vec();
        parts.retain(|part| !matches!(part, ContentPart::ToolCall(call) if !offered(&call.name)));
        let names = dropped.join(", ");
        let why = if request.tools.is_empty() {
            "the request offered no tools".to_string()
        } else {
            "the request did not offer it".to_string()
        };
        if !parts
            .iter()
            .any(|part| matches!(part, ContentPart::Text { .. } | ContentPart::ToolCall(_)))
        {
            parts.push(ContentPart::text(format!(
                "I would call {names} now, but {why}."
            )));
        }
        exchange.note = Some(format!(
            "the scripted call of {names} is answered as text: {why}"
        ));
        let message = ctxbed_harness::message::Message::new(String::new(), Role::Assistant, parts);
        if let Some(usage) = reply.usage.as_mut() {
            usage.output_tokens = self.model.output_tokens(&message);
        }
        reply.message = message;
        reply
    }

    fn imitates_anthropic(&self) -> bool {
        self.model.script().imitates == Provider::Anthropic
    }

    fn not_json_body(&self, api: Api) -> String {
        if api == Api::Anthropic || self.imitates_anthropic() {
            anthropic::error_body("invalid_request_error", "the body is not JSON")
        } else {
            r#"{"error":{"message":"the body is not JSON","type":"invalid_request_error"}}"#
                .to_string()
        }
    }

    async fn error_response(&self, error: ModelError) -> http::Response<HostBody> {
        let anthropic = self.imitates_anthropic();
        match error {
            ModelError::ContextOverflow { status, body, .. }
            | ModelError::PairingRejected { status, body, .. }
            | ModelError::Rejected { status, body } => full(status, body),
            ModelError::Transient { status, body } => {
                let status = status.unwrap_or(503);
                if anthropic {
                    let kind = if status == 529 {
                        "overloaded_error"
                    } else {
                        "api_error"
                    };
                    full(status, anthropic::error_body(kind, "upstream fault"))
                } else {
                    full(status, body)
                }
            }
            ModelError::RateLimited { body, .. } => {
                let body = if anthropic {
                    anthropic::error_body(
                        "rate_limit_error",
                        "This request would exceed your rate limit; please try again later.",
                    )
                } else {
                    body
                };
                let mut response = full(429, body);
                if let Ok(value) =
                    http::HeaderValue::from_str(&self.options.retry_after_seconds.to_string())
                {
                    response.headers_mut().insert("retry-after", value);
                }
                response
            }
            ModelError::MalformedReply { raw, .. } => {
                let mut response = full(200, raw);
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/plain"),
                );
                response
            }
            ModelError::Timeout { .. } => {
                // The script says the provider never answers in time: hold the request open
                // until the client gives up (bounded, so a run always ends).
                tokio::time::sleep(self.options.hang).await;
                full(504, r#"{"error":{"message":"gateway timeout"}}"#.into())
            }
            ModelError::ScriptExhausted { .. } => full(
                500,
                json!({"error": {"message": error.to_string(), "type": "script_exhausted"}})
                    .to_string(),
            ),
        }
    }
}

/// True when `request` continues the conversation of `step`: its last turn (the last message that
/// is not a system message) is the step's input or carries the result of a tool call the mock
/// made in this step. When the request offers tools, every turn after the last assistant message
/// counts (a harness may add a reminder after the results), and so does a line of a turn that is
/// the input (turns merged into one). Any other request (a summary, a
/// memory extraction, a title, a classifier, however it is worded) is a side request.
pub fn continues_step(request: &ModelRequest, step: &StepState) -> bool {
    let turns: Vec<&ctxbed_harness::message::Message> = request
        .messages
        .iter()
        .filter(|message| message.role != Role::System)
        .collect();
    let Some(last) = turns.last() else {
        return false;
    };
    if is_step_turn(request, last, step) {
        return true;
    }
    !request.tools.is_empty()
        && turns
            .iter()
            .rev()
            .take_while(|message| message.role != Role::Assistant)
            .any(|message| is_step_turn(request, message, step))
}

/// A user turn that is the step's input, or a turn carrying a result of one of the step's calls
/// (by id, or by the name and arguments of the call it answers, for a harness that renames ids).
fn is_step_turn(
    request: &ModelRequest,
    message: &ctxbed_harness::message::Message,
    step: &StepState,
) -> bool {
    let input = step.input.trim();
    let text = message.text();
    // With tools offered, the input may share its turn with other lines (consecutive user
    // turns merged, as Anthropic's alternation forces; a reminder added after it): a line of
    // the turn that is the input counts. A request without tools must be the input itself.
    let is_input = message.role == Role::User
        && !input.is_empty()
        && (text.trim() == input
            || message
                .parts
                .iter()
                .any(|part| matches!(part, ContentPart::Text { text } if text.trim() == input))
            || (!request.tools.is_empty() && text.lines().any(|line| line.trim() == input)));
    if is_input {
        return true;
    }
    let issued = |call_id: &str| {
        step.calls.iter().any(|call| call.id == call_id)
            || request
                .messages
                .iter()
                .flat_map(|m| m.tool_calls())
                .filter(|call| call.id == call_id)
                .any(|call| {
                    step.calls
                        .iter()
                        .any(|c| c.name == call.name && c.arguments == call.arguments)
                })
    };
    message.parts.iter().any(|part| match part {
        ContentPart::ToolResult(result) => issued(&result.call_id),
        _ => false,
    })
}

/// True when a request carries no tools and its last message asks to extract facts into
/// long-term memory: how a host that cannot see a request's purpose recognises a harness's
/// memory flush (ctxbed's default extraction prompt says both).
pub fn asks_for_memory(request: &ModelRequest) -> bool {
    if !request.tools.is_empty() {
        return false;
    }
    request.messages.last().is_some_and(|last| {
        let lower = last.text().to_lowercase();
        lower.contains("long-term memory") && lower.contains("extract")
    })
}

/// Whether a request asks for a summary: no tools, and its last message mentions summarising
/// or condensing (checked after [`asks_for_memory`]).
pub fn asks_for_summary(request: &ModelRequest) -> bool {
    if !request.tools.is_empty() {
        return false;
    }
    let Some(last) = request.messages.last() else {
        return false;
    };
    let asks = |text: &str| {
        let lower = text.to_lowercase();
        lower.contains("summar") || lower.contains("condense")
    };
    last.parts.iter().any(|part| match part {
        ContentPart::Text { text } => asks(text),
        _ => false,
    }) || (last.role == Role::User && asks(&last.text()))
}

/// A whole JSON response.
pub fn full(status: u16, body: String) -> http::Response<HostBody> {
    let mut response = http::Response::new(Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A response whose body fails at once: hyper closes the connection without an answer.
pub fn reset() -> http::Response<HostBody> {
    let frames = futures_util::stream::iter([Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "reset by the provider host",
    ))]);
    http::Response::new(Either::Right(StreamBody::new(Box::pin(frames))))
}

/// Server-sent events, each already framed (`data: …\n\n`). A cut stream sends the status, the
/// headers, its first half of events and half of the next one's bytes, lets the connection
/// flush them, and only then fails, so the client sees a stream broken mid-event.
fn streamed(events: Vec<String>, cut: bool) -> http::Response<HostBody> {
    use futures_util::StreamExt;
    let keep = if cut { events.len() / 2 } else { events.len() };
    let mut data: Vec<Bytes> = Vec::with_capacity(keep + 1);
    let mut rest = events.into_iter();
    data.extend(rest.by_ref().take(keep).map(Bytes::from));
    if cut && let Some(next) = rest.next() {
        let half = (0..=next.len() / 2)
            .rev()
            .find(|&at| next.is_char_boundary(at))
            .unwrap_or(0);
        if half > 0 {
            data.push(Bytes::from(next[..half].to_string()));
        }
    }
    let frames = futures_util::stream::iter(data.into_iter().map(|bytes| Ok(Frame::data(bytes))));
    let body: FrameStream = if cut {
        let failure = futures_util::stream::once(async {
            // Pending once, so the connection writes out what came before the cut.
            tokio::task::yield_now().await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "stream cut by the provider host",
            ))
        });
        Box::pin(frames.chain(failure))
    } else {
        Box::pin(frames)
    };
    let mut response = http::Response::new(Either::Right(StreamBody::new(body)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// The reply's thinking parts joined, when it has any.
fn thinking(reply: &ModelReply) -> Option<String> {
    let texts: Vec<&str> = reply
        .message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Thinking { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `text` in pieces of at most `chars` characters.
fn pieces(text: &str, chars: usize) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters
        .chunks(chars)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests;
