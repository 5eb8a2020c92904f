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
mod body;
pub mod cache;
pub mod chains;
pub mod counting;
pub mod deepseek;
mod errors;
mod exchange;
mod heavy;
pub mod image_check;
pub mod images;
pub mod openai;
mod options;
mod outcome;
pub mod own_tools;
mod plan;
mod read;
pub mod reasoning;
pub mod responses;
mod shape;
mod step;
pub mod stored;
pub mod validate;

pub use body::{FrameStream, HostBody, full, reset};
pub use exchange::{Api, COUNT_TOKENS_PATH, Exchange, is_count_tokens};
pub use heavy::{BLOCKING_BODY_BYTES, off_the_workers};
pub use options::{EXCHANGES_MAX, HostFaults, HostOptions};
pub use outcome::Outcome;
pub use plan::Plan;
pub use step::{IssuedCall, StepState, asks_for_memory, asks_for_summary, continues_step};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::Value;

use crate::mock::{Lane, MockModel};
use body::{seal, streamed, thinking};
use ctxbed_harness::message::{ContentPart, Role};
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Purpose};

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
    /// The conversations of stored Responses replies, for `previous_response_id`.
    chains: chains::StoredChains,
    /// The prefixes the provider's prompt cache holds.
    cache: cache::PromptCache,
    /// A CLI row's scripted calls, made through its own tools ([`own_tools`]).
    own_tools: Mutex<Option<own_tools::OwnToolCalls>>,
    /// Bytes of streamed events rendered so far, over every stream (a stream renders an event
    /// when its connection asks for the next).
    rendered: Arc<AtomicU64>,
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
            chains: chains::StoredChains::default(),
            cache: cache::PromptCache::default(),
            own_tools: Mutex::new(None),
            rendered: Arc::new(AtomicU64::new(0)),
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

    /// Bytes of streamed events rendered so far, over every stream: a stream renders each event
    /// only when its connection takes it, so a client that stops reading stops this count.
    pub fn stream_bytes_rendered(&self) -> u64 {
        self.rendered.load(Ordering::Relaxed)
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
            cache: cache::CacheUse::default(),
            refused_rule: None,
            received: tokio::time::Instant::now(),
            retry_after: None,
            answer: None,
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

    /// The input tokens of a request body of `api`, read and counted exactly as the window check
    /// reads and counts it (for calibration against what providers report).
    pub fn count_body(&self, api: Api, json: &Value) -> u64 {
        let (request, _) = shape::parse(api, json);
        counting::input_tokens(&self.model, api, json, &request)
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
            exchange.refused_rule = invalid.rule;
            exchange.body = json;
            return Err(invalid.body);
        }
        Ok(json)
    }

    /// Records a model error's outcome, and a 429's `Retry-After`.
    fn note_error(&self, error: &ModelError, exchange: &mut Exchange) {
        exchange.outcome = Outcome::Error(error.error_kind());
        if let ModelError::RateLimited { retry_after, .. } = error {
            let seconds = self.retry_after_seconds(*retry_after);
            exchange.retry_after = Some(std::time::Duration::from_secs(seconds));
        }
    }

    /// True when the faults reset request `number`'s connection.
    fn resets(&self, number: u64) -> bool {
        self.options.faults.reset_requests.contains(&number)
    }

    async fn respond(
        &self,
        api: Api,
        body: Option<Bytes>,
        exchange: &mut Exchange,
    ) -> http::Response<HostBody> {
        let Some(body) = body.filter(|_| !self.resets(exchange.number)) else {
            return reset();
        };
        let checked = off_the_workers(body.len(), || self.checked_request(api, &body, exchange));
        let (json, resolved) = match checked {
            Ok(checked) => checked,
            Err(refusal) => return full(400, refusal),
        };
        let stream = json.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let encrypted = reasoning::wants_encrypted_content(&json);
        let stored = reasoning::wants_stored(&json);
        let thinking_on = api == Api::Anthropic && anthropic::thinking_enabled(&json);
        let effective = resolved.as_ref().unwrap_or(&json);
        let kept_input = (api == Api::Responses && stored)
            .then(|| chains::StoredChains::kept_input(effective))
            .flatten();
        let (mut request, breakpoints) = shape::parse(api, effective);
        let lane = self.lane(&mut request, exchange);
        let tokens = off_the_workers(body.len(), || {
            counting::input_tokens(&self.model, api, &json, &request)
        });
        exchange.stream = stream;
        exchange.body = json;
        exchange.input_tokens = Some(tokens);
        let outcome = self
            .model
            .call_counted(&request, lane, tokens)
            .await
            .map(|reply| self.own_tools_mapped(reply, &request, exchange))
            .map(|reply| self.offered_calls_only(reply, &request, exchange))
            .map(|reply| {
                let asked = shape::Asked {
                    api,
                    thinking_on,
                    request: &request,
                    breakpoints: &breakpoints,
                };
                self.as_sent(reply, &asked, exchange)
            });
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
            Ok(reply) => self.answer_reply(reply, wire, lane, kept_input, exchange),
            Err(error) => {
                self.note_error(&error, exchange);
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
        kept_input: Option<Vec<Arc<chains::Kept>>>,
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
        let shape = self.responses_shape(wire, number, self.reasoning_tokens(&reply, wire));
        if wire.api == Api::Responses {
            if thinking(&reply).is_some() {
                self.reasoned.insert(number, wire.stored);
            }
            if wire.stored {
                let output = responses::output_items(&reply, &shape);
                self.stored.insert_all(&output);
                if let Some(input) = kept_input {
                    self.chains
                        .insert(responses::response_id(number), input, &output);
                }
            }
        }
        if !wire.stream {
            exchange.answer = Some(reply.message.clone());
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
                self.give_back_own_calls(number);
            }
        } else {
            exchange.answer = Some(reply.message.clone());
        }
        streamed(events, cut, self.rendered.clone())
    }

    /// The output tokens of the reply's thinking, which only the Responses API reports
    /// (`output_tokens_details.reasoning_tokens`); 0 for the other APIs, which are not counted.
    fn reasoning_tokens(&self, reply: &ModelReply, wire: Wire) -> u64 {
        if wire.api != Api::Responses {
            return 0;
        }
        thinking(reply).map_or(0, |text| {
            self.model
                .output_tokens(&ctxbed_harness::message::Message::new(
                    "reasoning",
                    Role::Assistant,
                    vec![ContentPart::thinking(text)],
                ))
        })
    }

    /// How a Responses answer to request `number` goes out.
    fn responses_shape(
        &self,
        wire: Wire,
        number: u64,
        reasoning_tokens: u64,
    ) -> responses::Shape<'_> {
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
                let shape = self.responses_shape(wire, exchange.number, 0);
                streamed(
                    responses::overflow_events(&shape),
                    false,
                    self.rendered.clone(),
                )
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
        let said = format!("the scripted call of {names} is answered as text: {why}");
        exchange.note = Some(match exchange.note.take() {
            Some(before) => format!("{before}; {said}"),
            None => said,
        });
        let message = ctxbed_harness::message::Message::new(String::new(), Role::Assistant, parts);
        if let Some(usage) = reply.usage.as_mut() {
            usage.output_tokens = self.model.output_tokens(&message);
        }
        reply.message = message;
        reply
    }
}

#[cfg(test)]
mod tests;
