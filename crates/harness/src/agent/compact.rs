//! The compaction stage of a preparation, and forced compaction for overflow recovery.
//!
//! Order: argument truncation (when configured) → aggregate prune → if the conversation still
//! meets the message or token trigger (or compaction is forced), the memory flush and a summary
//! of the prefix before a pair-closed cut. The memory flush and the summary are model requests,
//! each prepared (purpose MEMORY_FLUSH or SUMMARY: System material only, budgeted) and reported
//! like any preparation. The flush is best-effort: its failure is a transform and the summary
//! goes on. A failed or blank summary leaves the conversation as the lightweight passes left it.

use serde_json::json;

use super::run::{Call, PrepareRequest, Sink};
use crate::compaction::config::{CompactionConfig, TailBudget};
use crate::compaction::cut::{cut_index, is_pair_closed};
use crate::compaction::memory::{flush_input, parse_facts};
use crate::compaction::prune::prune;
use crate::compaction::summary::{is_summary, prompt, summary_message};
use crate::compaction::truncate::truncate_args;
use crate::context::budget::InputBudget;
use crate::context::{Transform, prepare};
use crate::limits;
use crate::message::{Message, Role};
use crate::model::{Model, ModelError, ModelInfo, ModelReply, Purpose};
use crate::tools::memory::flush_facts;

/// Why compaction is forced: a provider overflow, with the sizes it reported when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Force {
    /// (actual, maximum) input tokens by the provider's count.
    pub reported: Option<(u64, u64)>,
}

/// What the stage did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Reduced {
    pub transforms: Vec<Transform>,
    /// A summary replaced a prefix.
    pub summarised: bool,
}

/// Why one compaction request (a summary or a memory flush) got no answer.
enum AskFailure {
    /// The model reported an overflow (its sizes when it gave them), for a request we
    /// estimated at `estimated` tokens with `reserve` output tokens requested.
    Overflow {
        actual: Option<u64>,
        max: Option<u64>,
        estimated: u64,
        reserve: u64,
    },
    /// Anything else, as a short reason: a preparation error kind (the request was not sent),
    /// a model error kind, or a reason of the caller's.
    Other(String),
}

impl AskFailure {
    fn reason(&self) -> String {
        match self {
            AskFailure::Overflow { .. } => "context_overflow".to_string(),
            AskFailure::Other(reason) => reason.clone(),
        }
    }
}

impl Call<'_> {
    /// Runs the compaction stage on the working history.
    pub(super) async fn reduce(
        &mut self,
        request_id: &str,
        allowance: u64,
        force: Option<Force>,
        sink: &mut Sink<'_>,
    ) -> Reduced {
        let inner = self.inner;
        let mut reduced = Reduced::default();
        let Some(config) = inner.compaction.clone() else {
            return reduced;
        };
        self.lighten(&config, &mut reduced.transforms);
        let tokens = self.history_tokens();
        let triggered = self.history.len() >= config.trigger_messages
            || tokens >= config.token_trigger(allowance);
        if !triggered && force.is_none() {
            return reduced;
        }
        let budget = self.tail_budget(&config, allowance, force, tokens, &mut reduced.transforms);
        let estimator = inner.policy.estimator.clone();
        let cut = cut_index(&self.history, budget, |m| estimator.message_tokens(m));
        assert!(
            is_pair_closed(&self.history, cut),
            "the compaction cut splits a tool exchange"
        );
        if cut == 0 {
            reduced.transforms.push(Transform::HistoryCompactionSkipped);
            return reduced;
        }
        self.record(
            "compaction/start",
            json!({
                "request": request_id, "forced": force.is_some(),
                "messages_before": self.history.len(), "tokens_before": tokens,
            }),
        );
        if config.flush_before_compact {
            reduced
                .transforms
                .extend(self.flush_memory(request_id, cut, sink).await);
        }
        let summary = self.summarise(request_id, cut, sink).await;
        let kept_input = self.open_input(cut, allowance);
        self.apply_summary(request_id, cut, tokens, summary, kept_input, &mut reduced);
        reduced
    }

    /// The user turn a compaction inside an open tool loop would summarise away: the last user
    /// message before `cut` when the kept tail holds none (the tail is then the loop that turn
    /// started), and it takes at most an eighth of the conversation `allowance` (half the
    /// dynamic tail's target). It is kept word for word after the summary, so the model still
    /// reads the question it is working on; a larger one is left to the summary.
    fn open_input(&self, cut: usize, allowance: u64) -> Option<Message> {
        let is_input = |message: &Message| message.role == Role::User && !is_summary(message);
        if self.history[cut..].iter().any(is_input) {
            return None;
        }
        let input = self.history[..cut].iter().rev().find(|m| is_input(m))?;
        let tokens = self.inner.policy.estimator.message_tokens(input);
        (tokens <= allowance / 8).then(|| input.clone())
    }

    /// The working history's tokens by the agent's estimator.
    fn history_tokens(&self) -> u64 {
        let estimator = self.inner.policy.estimator.as_ref();
        self.history
            .iter()
            .map(|m| estimator.message_tokens(m))
            .sum()
    }

    /// The lightweight passes, when configured: argument truncation, then the aggregate prune
    /// of tool outputs. Each pass that changed something adds its transform.
    fn lighten(&mut self, config: &CompactionConfig, transforms: &mut Vec<Transform>) {
        if let Some(truncate) = &config.truncate_args {
            let before = self.history_tokens();
            let count = truncate_args(&mut self.history, truncate, before);
            if count > 0 {
                transforms.push(Transform::ArgumentTruncation { messages: count });
            }
        }
        let estimator = self.inner.policy.estimator.as_ref();
        if let Some(prune_config) = &config.prune
            && let Some(pruned) = prune(&mut self.history, prune_config, estimator)
        {
            transforms.push(Transform::ToolOutputPrune {
                results: pruned.results,
                tokens_before: pruned.tokens_before,
                tokens_after: pruned.tokens_after,
            });
        }
    }

    /// What the summary keeps verbatim after the cut: the configured tail within `allowance`
    /// (a tail counted in messages is a transform), shrunk when compaction is forced.
    fn tail_budget(
        &self,
        config: &CompactionConfig,
        allowance: u64,
        force: Option<Force>,
        tokens: u64,
        transforms: &mut Vec<Transform>,
    ) -> TailBudget {
        let budget = config.tail_budget(allowance);
        if config.keep_tokens.is_none() && matches!(budget, TailBudget::Messages(_)) {
            transforms.push(Transform::CompactionTailInMessages);
        }
        let Some(force) = force else {
            return budget;
        };
        // The provider's limit may be far below ours: keep at most half of what it would
        // accept (scaled by its reported sizes), so the summary plus the tail shrink by more
        // than the excess. Without sizes, keep at most half the conversation.
        let fitting = match force.reported {
            Some((actual, max)) if actual > 0 => tokens.saturating_mul(max.min(actual)) / actual,
            _ => tokens,
        };
        match budget {
            TailBudget::Tokens(tail) => TailBudget::Tokens(tail.min(fitting / 2)),
            TailBudget::Messages(keep) => {
                TailBudget::Messages(keep.min(self.history.len() / 2).max(1))
            }
        }
    }

    /// Replaces `history[..cut]` with the summary, or records why there is none (the
    /// conversation stays as the lightweight passes left it); either way the stage's transform
    /// and its `compaction/end` record. `tokens` is the conversation's size before.
    fn apply_summary(
        &mut self,
        request_id: &str,
        cut: usize,
        tokens: u64,
        summary: Result<Message, String>,
        kept_input: Option<Message>,
        reduced: &mut Reduced,
    ) {
        match summary {
            Ok(summary) => {
                let mut history = vec![summary];
                history.extend(kept_input);
                history.extend(self.history.drain(cut..));
                self.history = history;
                let after = self.history_tokens();
                reduced
                    .transforms
                    .push(Transform::HistoryCompaction { messages: cut });
                reduced.summarised = true;
                self.record(
                    "compaction/end",
                    json!({
                        "request": request_id, "status": "completed",
                        "messages_before": cut + self.history.len() - 1, "tokens_before": tokens,
                        "messages_after": self.history.len(), "tokens_after": after,
                    }),
                );
            }
            Err(reason) => {
                reduced.transforms.push(Transform::HistoryCompactionFailed {
                    reason: reason.clone(),
                });
                self.record(
                    "compaction/end",
                    json!({
                        "request": request_id, "status": "failed", "reason": reason,
                        "messages_before": self.history.len(), "tokens_before": tokens,
                        "messages_after": self.history.len(), "tokens_after": tokens,
                    }),
                );
            }
        }
    }

    /// Asks the summary model for a summary of `history[..cut]`; the error is a short reason.
    async fn summarise(
        &mut self,
        request_id: &str,
        cut: usize,
        sink: &mut Sink<'_>,
    ) -> Result<Message, String> {
        let inner = self.inner;
        let Some(config) = inner.compaction.clone() else {
            return Err("disabled".to_string());
        };
        let model = config.model.clone().unwrap_or_else(|| inner.model.clone());
        let mut prompt_limit = self.prompt_limit(model.info());
        let mut last_error = "summary_failed".to_string();
        // The summariser's own count may exceed our estimate: on its overflow, shrink the input
        // (by its reported ratio, else by half) and try again, a bounded number of times.
        for attempt in 1..=limits::SUMMARY_ATTEMPTS_MAX {
            let summary_id = if attempt == 1 {
                format!("{request_id}/summary")
            } else {
                format!("{request_id}/summary.{attempt}")
            };
            match self
                .summary_attempt(&summary_id, cut, prompt_limit, model.as_ref(), sink)
                .await
            {
                Ok(message) => return Ok(message),
                Err(AskFailure::Overflow {
                    actual,
                    max,
                    estimated,
                    reserve,
                }) => {
                    last_error = "context_overflow".to_string();
                    // Scale our estimate by how much the summariser over-counts it, with 5 % room.
                    prompt_limit = match (actual, max) {
                        (Some(actual), Some(max)) if actual > reserve && max > reserve => {
                            estimated.saturating_mul(max - reserve) / (actual - reserve) * 95 / 100
                        }
                        _ => prompt_limit / 2,
                    };
                }
                Err(AskFailure::Other(reason)) => return Err(reason),
            }
        }
        Err(last_error)
    }

    /// The tokens a compaction prompt may take for `model`: its input limit less the System
    /// material every request carries, and a little room for the wrapper.
    fn prompt_limit(&self, model: &ModelInfo) -> u64 {
        let inner = self.inner;
        let estimator = inner.policy.estimator.as_ref();
        let budget = InputBudget::compute(model.context_window, &inner.policy.budget());
        let system_tokens: u64 = inner
            .instructions
            .iter()
            .map(|m| estimator.text_tokens(&m.text))
            .sum::<u64>()
            + inner
                .sys_prompt
                .as_deref()
                .map_or(0, |p| estimator.text_tokens(p));
        budget.input_limit.saturating_sub(system_tokens + 64)
    }

    /// One summary request with the prompt fitted to `prompt_limit` tokens.
    async fn summary_attempt(
        &mut self,
        summary_id: &str,
        cut: usize,
        prompt_limit: u64,
        model: &dyn Model,
        sink: &mut Sink<'_>,
    ) -> Result<Message, AskFailure> {
        let inner = self.inner;
        let Some(config) = inner.compaction.clone() else {
            return Err(AskFailure::Other("disabled".to_string()));
        };
        let estimator = inner.policy.estimator.clone();
        let text = prompt(
            &config.summary_prompt,
            &self.history[..cut],
            prompt_limit,
            estimator.as_ref(),
        );
        let reply = self
            .ask(summary_id, Purpose::Summary, text, model, sink)
            .await?;
        let text = reply.message.text();
        if text.trim().is_empty() {
            return Err(AskFailure::Other("blank_summary".to_string()));
        }
        let covered: Vec<&Message> = self.history[..cut].iter().collect();
        let summary = summary_message(
            &text,
            &covered,
            &model.info().name,
            inner.session_log.is_some(),
        );
        let prefix_tokens: u64 = covered.iter().map(|m| estimator.message_tokens(m)).sum();
        if estimator.message_tokens(&summary) >= prefix_tokens {
            // A summary no smaller than what it replaces would only grow the request.
            return Err(AskFailure::Other("summary_not_smaller".to_string()));
        }
        Ok(summary)
    }

    /// Prepares one compaction request (`text` as its only user message, System material
    /// only), reports its preparation, and sends it to `model`, with the events and session
    /// log records of any model call.
    async fn ask(
        &mut self,
        request_id: &str,
        purpose: Purpose,
        text: String,
        model: &dyn Model,
        sink: &mut Sink<'_>,
    ) -> Result<ModelReply, AskFailure> {
        let inner = self.inner;
        let info = model.info().clone();
        let history = vec![Message::user(
            format!("{}-input", purpose_word(purpose)),
            text,
        )];
        let no_tools = Default::default();
        let request = PrepareRequest {
            call_id: request_id,
            purpose,
            model: &info,
            materials: &inner.instructions,
            tools: &no_tools,
            selection: None,
        };
        let input = request.input(inner, &[], &history, &[]);
        let prepared = match prepare(&input) {
            Ok(mut prepared) => {
                self.report_build(sink, &mut prepared.manifest, None);
                prepared
            }
            Err(mut rejected) => {
                self.report_build(sink, &mut rejected.manifest, Some(rejected.error.kind()));
                return Err(AskFailure::Other(rejected.error.kind().to_string()));
            }
        };
        self.call_model(request_id, purpose, model, &prepared.request, sink)
            .await
            .map_err(|error| match &error {
                ModelError::ContextOverflow {
                    actual_tokens,
                    max_tokens,
                    ..
                } => AskFailure::Overflow {
                    actual: *actual_tokens,
                    max: *max_tokens,
                    estimated: u64::try_from(prepared.manifest.estimated_input_tokens).unwrap_or(0),
                    reserve: prepared.request.max_output_tokens.unwrap_or(0),
                },
                other => AskFailure::Other(other.kind().to_string()),
            })
    }

    /// Best-effort: asks the memory model (else the summary model, else the agent's) to extract
    /// facts from `history[..cut]` (earlier summaries excluded, they were flushed when made)
    /// and appends the new ones to the memory store (`memory/facts.md`). Any failure is a
    /// `memory_flush_failed` transform and never blocks compaction; a reply with no fact, or
    /// only facts the memory holds, records nothing.
    async fn flush_memory(
        &mut self,
        request_id: &str,
        cut: usize,
        sink: &mut Sink<'_>,
    ) -> Vec<Transform> {
        let inner = self.inner;
        let Some(config) = inner.compaction.clone() else {
            return Vec::new();
        };
        let covered = flush_input(&self.history[..cut]);
        if covered.is_empty() {
            return Vec::new();
        }
        let model = config
            .memory_model
            .clone()
            .or_else(|| config.model.clone())
            .unwrap_or_else(|| inner.model.clone());
        let limit = self.prompt_limit(model.info());
        let text = prompt(
            &config.memory_prompt,
            &covered,
            limit,
            inner.policy.estimator.as_ref(),
        );
        let failed = |reason: String| vec![Transform::MemoryFlushFailed { reason }];
        let reply = match self
            .ask(
                &format!("{request_id}/memory"),
                Purpose::MemoryFlush,
                text,
                model.as_ref(),
                sink,
            )
            .await
        {
            Ok(reply) => reply,
            Err(failure) => return failed(failure.reason()),
        };
        let facts = parse_facts(&reply.message.text());
        if facts.is_empty() {
            return Vec::new();
        }
        match flush_facts(inner.workspace.as_ref(), &facts).await {
            Ok(0) => Vec::new(),
            Ok(count) => vec![Transform::MemoryFlush { facts: count }],
            Err(_) => failed("write".to_string()),
        }
    }
}

/// The word a compaction request's input message id starts with.
fn purpose_word(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::MemoryFlush => "memory",
        Purpose::Summary | Purpose::Reasoning => "summary",
    }
}
