//! The visual report of a run: why each model request looked the way it did.
//!
//! [`preparations`] turns a [`Trace`] and its [`Scenario`] into one [`Preparation`] per
//! `context_build` event (reasoning and summary purposes, in run order): the budget split into
//! [`Segment`]s, the input limit with the output reserve and safety margin around it, each
//! recorded [`Transform`] with its [`meaning`] in words and the token figures the trace holds,
//! and the kept conversation as [`Entry`]s (tool calls grouped with their results, the
//! compaction summary marked). [`html`] renders a self-contained page from it (inline CSS and
//! SVG, no script, no network); [`svg`] is the overview chart alone. `check::explain` prints
//! the same view as text.
//!
//! Everything here is pure: the same run renders the same bytes (virtual times only, no wall
//! clock). All text from the run is escaped with [`escape`].
//!
//! **Invariant:** the report reads only the trace and the scenario; it never re-runs a stage, so it
//! shows what the manifest recorded, not a reconstruction.
//!
//! ```
//! use ctxbed::scenario::check::{outcome::run, report};
//! use ctxbed::scenario::format::file::load;
//! let scenario = load(std::path::Path::new("scenarios/overflow/recover-once.toml")).unwrap();
//! let output = run(&scenario).unwrap();
//! let preparations = report::preparations(&output.trace, &scenario);
//! assert_eq!(preparations.len(), 4); // the request, the memory flush, the summary, the retry
//! assert!(report::html(&output, &scenario).contains("history_compaction"));
//! ```

mod conversation;
mod figures;
mod html;
mod svg;
mod transform;

use std::time::Duration;

pub use ctxbed_harness::context::transform::Transform;
pub use html::html;
pub use svg::svg;
pub use transform::meaning;

use conversation::conversation;
use figures::transform_view;

use crate::scenario::format::file::Scenario;
use crate::scenario::run::record::{StepRecord, Trace};
use ctxbed_harness::agent::events::{ContextBuildEvent, CustomValue, EventKind};
use ctxbed_harness::context::budget::InputBudget;
use ctxbed_harness::context::manifest::{ContextManifest, ItemKind, Validation};
use ctxbed_harness::context::render::{
    REFERENCE_MESSAGE_ID, SYSTEM_MESSAGE_ID, TRANSIENT_MESSAGE_ID,
};
use ctxbed_harness::message::Role;
use ctxbed_harness::model::Purpose;

/// One request preparation of the run, with everything the report shows about it.
#[derive(Debug, Clone)]
pub struct Preparation<'a> {
    /// 1-based over every preparation of the run (`ctxbed explain --request N`).
    pub number: usize,
    /// The step (agent call), 1-based.
    pub step: usize,
    /// 1-based among the step's reasoning preparations, as `[[expect]] request` counts them;
    /// `None` for a summary preparation.
    pub reasoning_number: Option<usize>,
    /// Virtual time of the `context_build` event.
    pub at: Duration,
    pub build: &'a ContextBuildEvent,
    /// The budget around the input limit, when the scenario's model settings reproduce the
    /// manifest's limit.
    pub budget: Option<InputBudget>,
    /// Tokens per segment; `None` when the preparation failed before counting.
    pub breakdown: Option<Breakdown>,
    /// What the model did with the request.
    pub outcome: ModelOutcome,
    /// The previous preparation of the same purpose that has figures, for before/after figures.
    pub previous: Option<Previous>,
    pub transforms: Vec<TransformView>,
    /// The kept conversation (System, transient and reference messages excluded).
    pub conversation: Vec<Entry>,
}

impl Preparation<'_> {
    /// The manifest recorded for this preparation.
    pub fn manifest(&self) -> &ContextManifest {
        &self.build.manifest
    }

    /// A one-line label: `#2 step 1 call-1/r1.retry reasoning`.
    pub fn label(&self) -> String {
        format!(
            "#{} step {} {} {}",
            self.number,
            self.step,
            self.build.call_id,
            self.build.purpose.as_str()
        )
    }
}

/// The figures of an earlier preparation that later transforms are measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Previous {
    pub number: usize,
    pub estimated_tokens: u64,
    pub conversation_tokens: u64,
    /// The provider answered it with a context overflow (so the next compaction was forced).
    pub overflowed: bool,
}

/// The parts of a request's budget, in the order the bar shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Segment {
    System,
    ToolSchemas,
    Conversation,
    Transient,
    References,
    /// The fixed per-request overhead the estimator adds.
    Overhead,
}

impl Segment {
    /// Every segment, in bar order.
    pub const ALL: [Segment; 6] = [
        Segment::System,
        Segment::ToolSchemas,
        Segment::Conversation,
        Segment::Transient,
        Segment::References,
        Segment::Overhead,
    ];

    /// The label shown in legends and tables.
    pub fn label(self) -> &'static str {
        match self {
            Segment::System => "System message",
            Segment::ToolSchemas => "tool schemas",
            Segment::Conversation => "conversation",
            Segment::Transient => "transient (runtime)",
            Segment::References => "references",
            Segment::Overhead => "request overhead",
        }
    }

    /// A CSS-safe name.
    pub fn class(self) -> &'static str {
        match self {
            Segment::System => "system",
            Segment::ToolSchemas => "schemas",
            Segment::Conversation => "conversation",
            Segment::Transient => "transient",
            Segment::References => "references",
            Segment::Overhead => "overhead",
        }
    }
}

/// Tokens of each [`Segment`] of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Breakdown {
    pub system: u64,
    pub tool_schemas: u64,
    pub conversation: u64,
    pub transient: u64,
    pub references: u64,
    pub overhead: u64,
}

impl Breakdown {
    /// Splits a manifest's items: messages `system`, `transient` and `references` are their own
    /// segments, every other message is conversation; material items are already inside those
    /// messages and are not counted again. The overhead is what the estimate holds beyond the
    /// items.
    pub fn of(manifest: &ContextManifest) -> Option<Breakdown> {
        let estimated = u64::try_from(manifest.estimated_input_tokens).ok()?;
        let mut breakdown = Breakdown::default();
        for item in &manifest.items {
            match &item.kind {
                ItemKind::Message { .. } => match item.id.as_str() {
                    SYSTEM_MESSAGE_ID => breakdown.system += item.tokens,
                    TRANSIENT_MESSAGE_ID => breakdown.transient += item.tokens,
                    REFERENCE_MESSAGE_ID => breakdown.references += item.tokens,
                    _ => breakdown.conversation += item.tokens,
                },
                ItemKind::ToolSchema => breakdown.tool_schemas += item.tokens,
                ItemKind::Material { .. } => {}
            }
        }
        let counted = breakdown.total();
        breakdown.overhead = estimated.saturating_sub(counted);
        Some(breakdown)
    }

    /// Tokens of one segment.
    pub fn get(&self, segment: Segment) -> u64 {
        match segment {
            Segment::System => self.system,
            Segment::ToolSchemas => self.tool_schemas,
            Segment::Conversation => self.conversation,
            Segment::Transient => self.transient,
            Segment::References => self.references,
            Segment::Overhead => self.overhead,
        }
    }

    /// The sum of every segment.
    pub fn total(&self) -> u64 {
        Segment::ALL.iter().map(|segment| self.get(*segment)).sum()
    }
}

/// What the model did with a prepared request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelOutcome {
    /// The preparation failed, or the run ended before the call.
    NotSent,
    /// The model answered; usage as it reported.
    Replied {
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
    },
    /// The model call failed.
    Failed {
        kind: &'static str,
        message: String,
        /// What the provider's error said it counted, and its own limit, when it says (a
        /// context overflow such as `3152 tokens > 1500 maximum`).
        reported: ReportedSizes,
    },
}

/// The sizes a provider's overflow error states: its count of the request and its limit.
/// Either may be missing; both are the provider's figures, not the harness's estimate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportedSizes {
    /// The size the provider compared with its limit.
    pub tokens: Option<u64>,
    /// The provider's own limit.
    pub limit: Option<u64>,
}

impl ReportedSizes {
    fn of(error: &ctxbed_harness::model::ModelError) -> Self {
        match error {
            ctxbed_harness::model::ModelError::ContextOverflow {
                actual_tokens,
                max_tokens,
                ..
            } => ReportedSizes {
                tokens: *actual_tokens,
                limit: *max_tokens,
            },
            _ => ReportedSizes::default(),
        }
    }
}

/// One transform with its meaning and figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformView {
    /// As the manifest records it.
    pub transform: Transform,
    /// What happened, in words.
    pub meaning: String,
    /// Token or character figures before and after, where the trace has them.
    pub figures: Option<String>,
}

/// One message of the kept conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageView {
    pub id: String,
    pub role: Role,
    pub tokens: u64,
    /// Part kinds joined with `+`.
    pub parts: String,
    /// Tool calls it makes: call id and tool name (from the sent request, when it was sent).
    pub calls: Vec<(String, String)>,
    /// Tool results it carries: call id, tool name and whether it is an error.
    pub results: Vec<(String, String, bool)>,
}

/// The kept conversation, grouped for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A plain message.
    Message(MessageView),
    /// A compaction summary: every older message was cut and replaced by it.
    Summary(MessageView),
    /// An assistant message with tool calls and the tool messages answering it.
    Exchange {
        call: MessageView,
        results: Vec<MessageView>,
    },
}

/// Every preparation of the run, in order.
pub fn preparations<'a>(trace: &'a Trace, scenario: &Scenario) -> Vec<Preparation<'a>> {
    let mut preparations: Vec<Preparation<'a>> = Vec::new();
    for step in &trace.steps {
        let mut reasoning_count = 0;
        for (position, event) in step.events.iter().enumerate() {
            let EventKind::Custom {
                value: CustomValue::ContextBuild(build),
                ..
            } = &event.kind
            else {
                continue;
            };
            let reasoning_number = (build.purpose == Purpose::Reasoning).then(|| {
                reasoning_count += 1;
                reasoning_count
            });
            let manifest = &build.manifest;
            let request = step
                .requests
                .iter()
                .find(|request| request.call_id == build.call_id);
            let previous = previous_figures(&preparations, build.purpose);
            let mut preparation = Preparation {
                number: preparations.len() + 1,
                step: step.index,
                reasoning_number,
                at: event.at,
                build,
                budget: budget(scenario, manifest),
                breakdown: Breakdown::of(manifest),
                outcome: outcome(step, position, &build.call_id),
                previous,
                transforms: Vec::new(),
                conversation: conversation(manifest, request),
            };
            preparation.transforms = manifest
                .transforms
                .iter()
                .map(|transform| {
                    transform_view(transform, &preparation, &preparations, step, request)
                })
                .collect();
            preparations.push(preparation);
        }
    }
    preparations
}

/// The validation outcome in words, with its figures.
pub fn validation_meaning(preparation: &Preparation<'_>) -> String {
    let manifest = preparation.manifest();
    let (estimated, limit) = (manifest.estimated_input_tokens, manifest.input_limit);
    let error = preparation.build.error_kind.unwrap_or("none recorded");
    match manifest.validation {
        Validation::Passed => format!(
            "passed: tool pairing holds and the estimate {estimated} is within the input limit \
             {limit} ({} to spare)",
            limit - estimated
        ),
        Validation::BudgetExceeded => format!(
            "budget_exceeded: the estimate {estimated} is {} over the input limit {limit} with \
             every optional material already left out; the request was not sent",
            estimated - limit
        ),
        Validation::InvalidToolPairs => "invalid_tool_pairs: a tool call lacks its result, or a \
             result its call; the request was not sent"
            .to_string(),
        Validation::BuildFailed => format!(
            "build_failed: the preparation failed before anything was counted (error \
             {error}); the request was not sent"
        ),
        other => format!(
            "{}: the preparation was refused (error {error}); the request was not sent",
            other.as_str()
        ),
    }
}

/// What the model did with the request, in words.
pub fn outcome_meaning(preparation: &Preparation<'_>) -> String {
    match &preparation.outcome {
        ModelOutcome::Replied {
            input_tokens: Some(input),
            output_tokens: Some(output),
        } => format!("the model replied; it reported {input} input and {output} output tokens"),
        ModelOutcome::Replied { .. } => "the model replied (no usage reported)".to_string(),
        ModelOutcome::Failed {
            kind,
            message,
            reported,
        } => {
            let manifest = preparation.manifest();
            let sizes = match (reported.tokens, reported.limit) {
                (Some(tokens), Some(limit)) => format!(
                    " The provider counted {tokens} tokens against its own limit of {limit} \
                     (the red line on the bar); this harness estimated {} against an input \
                     limit of {}.",
                    manifest.estimated_input_tokens, manifest.input_limit
                ),
                (None, Some(limit)) => format!(
                    " The provider's own limit is {limit} tokens (the red line on the bar); this \
                     harness's input limit was {}.",
                    manifest.input_limit
                ),
                (Some(tokens), None) => format!(
                    " The provider counted {tokens} tokens; this harness estimated {}.",
                    manifest.estimated_input_tokens
                ),
                (None, None) => String::new(),
            };
            format!(
                "the model call failed with {kind}: {}.{sizes}",
                ctxbed_harness::format::snippet(message, ctxbed_harness::limits::SNIPPET_CHARS_MAX)
            )
        }
        ModelOutcome::NotSent if preparation.build.status != "passed" => format!(
            "not sent: the preparation failed ({})",
            preparation
                .build
                .error_kind
                .unwrap_or("no error kind recorded")
        ),
        ModelOutcome::NotSent => "not sent: the run ended before the model call".to_string(),
    }
}

/// Escapes text for HTML and SVG, in element content and in quoted attributes. Control,
/// invisible and direction-changing characters become visible `\u{..}` escapes, as in traces,
/// so the page shows what the text is, not what it would display as.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            '\n' => escaped.push('\n'),
            c if c.is_control() || ctxbed_harness::format::unusual_character(c).is_some() => {
                escaped.extend(c.escape_default());
            }
            _ => escaped.push(c),
        }
    }
    escaped
}

/// The budget of the manifest's model, when the scenario's settings reproduce its input limit.
fn budget(scenario: &Scenario, manifest: &ContextManifest) -> Option<InputBudget> {
    let limit = u64::try_from(manifest.input_limit).ok()?;
    let window = std::iter::once(&scenario.mock)
        .chain(scenario.agent.summary_model.as_ref())
        .find(|mock| mock.info.name == manifest.model)
        .map(|mock| mock.info.context_window)?;
    let budget = InputBudget::compute(window, &scenario.agent.budget);
    (budget.input_limit == limit).then_some(budget)
}

fn previous_figures(preparations: &[Preparation<'_>], purpose: Purpose) -> Option<Previous> {
    preparations
        .iter()
        .rev()
        .filter(|earlier| earlier.build.purpose == purpose)
        .find_map(|earlier| {
            let breakdown = earlier.breakdown?;
            Some(Previous {
                number: earlier.number,
                estimated_tokens: u64::try_from(earlier.manifest().estimated_input_tokens).ok()?,
                conversation_tokens: breakdown.conversation,
                overflowed: matches!(
                    earlier.outcome,
                    ModelOutcome::Failed {
                        kind: "context_overflow",
                        ..
                    }
                ),
            })
        })
}

/// The model call that followed the `context_build` event at `position`, if any.
fn outcome(step: &StepRecord, position: usize, call_id: &str) -> ModelOutcome {
    for event in &step.events[position + 1..] {
        match &event.kind {
            EventKind::ModelCallFinished { request_id, usage } if request_id == call_id => {
                return ModelOutcome::Replied {
                    input_tokens: usage.map(|u| u.input_tokens),
                    output_tokens: usage.map(|u| u.output_tokens),
                };
            }
            EventKind::ModelCallFailed { request_id, error } if request_id == call_id => {
                return ModelOutcome::Failed {
                    kind: error.kind(),
                    message: error.to_string(),
                    reported: ReportedSizes::of(error),
                };
            }
            EventKind::Custom {
                value: CustomValue::ContextBuild(build),
                ..
            } if build.call_id == call_id => break,
            _ => {}
        }
    }
    ModelOutcome::NotSent
}

#[cfg(test)]
mod tests;
