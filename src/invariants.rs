//! The invariant checker: an independent look at every preparation, request and commit of a run.
//!
//! [`check`] reads a finished [`RunOutput`] — the events of each step, the requests the mock
//! model received, each step's committed history and the final workspace — and reports every
//! broken invariant as a typed [`Violation`]. It shares no code path with the harness: pairing is
//! its own walk (not `context::pairs`), protected materials come from the scenario spec, and
//! offloaded files are compared with the tool output the trace recorded. [`check_determinism`]
//! compares two runs of the same scenario. The SPEC rows I1–I10 name what each kind guards;
//! the checks against the session log (I5) and the Todo list (I6) live in `durable`, the check
//! that nothing committed is lost between steps (I5) in `lost`, the check that session log files
//! only grow (I10) in `append_only`, the offload check (I4) in `offload`, the manifest-leak check
//! (I8) in `leak`.
//!
//! ```
//! use ctxbed::scenario::check::outcome::run;
//! use ctxbed::generate::generate;
//! use ctxbed::invariants::{check, check_determinism};
//! let scenario = generate(11);
//! let (first, second) = (run(&scenario).unwrap(), run(&scenario).unwrap());
//! assert!(check(&scenario, &first).is_empty());
//! assert!(check_determinism(&first, &second).is_none());
//! ```

use std::collections::BTreeSet;

use crate::scenario::check::outcome::{RunOutput, judge};
use crate::scenario::format::file::Scenario;
use crate::scenario::run::record::StepRecord;
use crate::scenario::run::runner::Simulated;
use ctxbed_harness::agent::AgentError;
use ctxbed_harness::agent::events::EventKind;
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::Transform;
use ctxbed_harness::context::manifest::{ContextManifest, ItemKind, Validation};
use ctxbed_harness::context::render::MATERIAL_KEY;
use ctxbed_harness::message::{ContentPart, Message, Role};

mod append_only;
mod durable;
mod leak;
mod lost;
mod offload;

/// What broke. Each kind names the SPEC invariant it guards ([`ViolationKind::invariant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// A request reached the model with an unpaired tool call or result (I1).
    UnpairedRequest,
    /// A passed preparation's estimate is over its input limit (I2).
    OverBudgetPassed,
    /// A manifest's totals disagree with its items, or its items with the request sent (I2).
    ManifestMismatch,
    /// Required or System material was omitted for budget, or an instruction is missing from a
    /// passed reasoning request (I3).
    ProtectedOmitted,
    /// An offload placeholder points to a missing file or one without the full text (I4).
    BrokenOffload,
    /// A committed message vanished from its session without a recorded compaction (I5).
    CommittedMessageLost,
    /// A reasoning request after a successful `todo_write` does not show every Todo item (I6).
    TodoLost,
    /// Rendered material (transient, reference or System) entered committed history (I7).
    MaterialInHistory,
    /// A manifest holds message body text (I8).
    ManifestLeak,
    /// Two runs of one seed rendered different traces (I9).
    Nondeterministic,
    /// A call changed a session log's committed lines, or touched a log it could not restore
    /// because it is corrupt (I10).
    SessionLogRewritten,
    /// A step's events end without `run_finished`: the harness task died (a panic).
    RunNotFinished,
    /// A step ran into the runner's virtual-time limit.
    StepHung,
    /// Running the scenario panicked outside the harness task.
    Panic,
    /// The runner could not set the scenario up (a generator or loader bug).
    RunFailed,
}

impl ViolationKind {
    /// Every kind, in report order.
    pub const ALL: [ViolationKind; 15] = [
        ViolationKind::UnpairedRequest,
        ViolationKind::OverBudgetPassed,
        ViolationKind::ManifestMismatch,
        ViolationKind::ProtectedOmitted,
        ViolationKind::BrokenOffload,
        ViolationKind::CommittedMessageLost,
        ViolationKind::TodoLost,
        ViolationKind::MaterialInHistory,
        ViolationKind::ManifestLeak,
        ViolationKind::Nondeterministic,
        ViolationKind::SessionLogRewritten,
        ViolationKind::RunNotFinished,
        ViolationKind::StepHung,
        ViolationKind::Panic,
        ViolationKind::RunFailed,
    ];

    /// The kind's stable name, as reports and summaries show it.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::UnpairedRequest => "unpaired_request",
            ViolationKind::OverBudgetPassed => "over_budget_passed",
            ViolationKind::ManifestMismatch => "manifest_mismatch",
            ViolationKind::ProtectedOmitted => "protected_omitted",
            ViolationKind::BrokenOffload => "broken_offload",
            ViolationKind::CommittedMessageLost => "committed_message_lost",
            ViolationKind::TodoLost => "todo_lost",
            ViolationKind::MaterialInHistory => "material_in_history",
            ViolationKind::ManifestLeak => "manifest_leak",
            ViolationKind::Nondeterministic => "nondeterministic",
            ViolationKind::SessionLogRewritten => "session_log_rewritten",
            ViolationKind::RunNotFinished => "run_not_finished",
            ViolationKind::StepHung => "step_hung",
            ViolationKind::Panic => "panic",
            ViolationKind::RunFailed => "run_failed",
        }
    }

    /// The SPEC invariant row this kind guards (`-` for run-level failures).
    pub fn invariant(self) -> &'static str {
        match self {
            ViolationKind::UnpairedRequest => "I1",
            ViolationKind::OverBudgetPassed | ViolationKind::ManifestMismatch => "I2",
            ViolationKind::ProtectedOmitted => "I3",
            ViolationKind::BrokenOffload => "I4",
            ViolationKind::CommittedMessageLost => "I5",
            ViolationKind::TodoLost => "I6",
            ViolationKind::MaterialInHistory => "I7",
            ViolationKind::ManifestLeak => "I8",
            ViolationKind::Nondeterministic => "I9",
            ViolationKind::SessionLogRewritten => "I10",
            ViolationKind::RunNotFinished
            | ViolationKind::StepHung
            | ViolationKind::Panic
            | ViolationKind::RunFailed => "-",
        }
    }
}

impl std::fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The 1-based step, when the violation belongs to one.
    pub step: Option<usize>,
    /// What exactly was seen (ids, paths, counts; bounded).
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.kind, self.kind.invariant())?;
        if let Some(step) = self.step {
            write!(f, " at step {step}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// Characters of a message body whose head and tail windows are looked for in manifests.
/// Shorter bodies ("ok", "Done.") could match ids or names by accident.
pub const LEAK_WINDOW_CHARS: usize = 32;

/// Checks one run of `scenario` against every invariant except determinism.
pub fn check(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    let mut found = Vec::new();
    let plain = scenario.agent.react;
    for step in &output.trace.steps {
        let mut report = |kind: ViolationKind, detail: String| {
            found.push(Violation {
                kind,
                step: Some(step.index),
                detail: ctxbed_harness::format::snippet(
                    &detail,
                    ctxbed_harness::limits::SNIPPET_CHARS_MAX,
                ),
            });
        };
        run_finished(step, &mut report);
        if !plain && scenario.agent.pairing != PairingCheck::Unchecked {
            for request in &step.requests {
                if let Some(problem) = pairing_problem(&request.messages) {
                    report(
                        ViolationKind::UnpairedRequest,
                        format!("request {}: {problem}", request.call_id),
                    );
                }
            }
        }
        let manifests: Vec<(&ContextManifest, &str)> = step.manifests().collect();
        for (manifest, status) in &manifests {
            budget(manifest, status, &mut report);
            protected(scenario, manifest, &mut report);
        }
        if !plain {
            requests_match(step, &manifests, &mut report);
        }
        leak::no_leak(step, &manifests, &mut report);
        no_material(step, &mut report);
    }
    found.extend(offload::offloads(scenario, output));
    found.extend(lost::nothing_lost(scenario, output));
    found.extend(durable::durable_history(scenario, output));
    found.extend(durable::todo_survives(scenario, output));
    found.extend(append_only::session_logs_only_grow(scenario, output));
    found
}

/// Two runs of one scenario must render the same bytes.
pub fn check_determinism(first: &RunOutput, second: &RunOutput) -> Option<Violation> {
    if first.text == second.text {
        return None;
    }
    let line = first
        .text
        .lines()
        .zip(second.text.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| first.text.lines().count().min(second.text.lines().count()));
    Some(Violation {
        kind: ViolationKind::Nondeterministic,
        step: None,
        detail: format!("the two traces first differ at line {}", line + 1),
    })
}

/// Compares a second run's record, not yet rendered, with the first run: equal records render
/// equal traces, so the second is rendered only when it differs, to name the first line that
/// differs. A record that differs only where the trace does not show it (the requests, the
/// committed histories, the session files, the workspace, the session logs) is nondeterministic
/// too.
pub fn check_record_determinism(
    scenario: &Scenario,
    first: &RunOutput,
    second: Simulated,
) -> Option<Violation> {
    let differs: Vec<&str> = [
        (first.trace != second.trace, "the trace's records"),
        (first.workspace != second.workspace, "the workspace"),
        (
            first.session_logs != second.session_logs,
            "the session logs",
        ),
    ]
    .into_iter()
    .filter_map(|(differs, what)| differs.then_some(what))
    .collect();
    if differs.is_empty() {
        return None;
    }
    let second = judge(scenario, second);
    check_determinism(first, &second).or_else(|| {
        Some(Violation {
            kind: ViolationKind::Nondeterministic,
            step: None,
            detail: format!(
                "the two traces render the same, but the runs differ in {}",
                differs.join(" and ")
            ),
        })
    })
}

fn run_finished(step: &StepRecord, report: &mut impl FnMut(ViolationKind, String)) {
    if step.events.is_empty() {
        report(
            ViolationKind::StepHung,
            format!(
                "no event within {} h of virtual time",
                ctxbed_sim::limits::STEP_VIRTUAL_TIME_MAX_SECONDS / 3_600
            ),
        );
        return;
    }
    let finished = step
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RunFinished { .. }))
        .count();
    // A call the application cancelled (`cancel_at_ms`) ends without run_finished, interrupted.
    let cancelled = step.spec.cancel_at.is_some() && finished == 0;
    if !cancelled && (finished != 1 || matches!(step.outcome, Err(AgentError::Interrupted))) {
        report(
            ViolationKind::RunNotFinished,
            format!(
                "{finished} run_finished events in {} (the harness task stopped early)",
                step.events.len()
            ),
        );
    }
}

/// The strict-provider rule, walked independently: each assistant message's calls are answered
/// by the tool messages right after it, each result answers such a call, ids are non-blank and
/// no call id repeats in the request.
pub fn pairing_problem<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Option<String> {
    let mut waiting: Vec<&str> = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (index, message) in messages.into_iter().enumerate() {
        for part in &message.parts {
            match part {
                ContentPart::ToolCall(call) if call.id.trim().is_empty() => {
                    return Some(format!("message {index} has a call with a blank id"));
                }
                ContentPart::ToolCall(call) if !seen.insert(call.id.as_str()) => {
                    return Some(format!("call id `{}` repeats at message {index}", call.id));
                }
                _ => {}
            }
        }
        if message.role == Role::Tool {
            for result in message.tool_results() {
                match waiting.iter().position(|id| *id == result.call_id) {
                    Some(at) => {
                        waiting.remove(at);
                    }
                    None => {
                        return Some(format!(
                            "result `{}` at message {index} answers no open call",
                            result.call_id
                        ));
                    }
                }
            }
            continue;
        }
        if let Some(id) = waiting.first() {
            return Some(format!("call `{id}` has no result before message {index}"));
        }
        if message.role == Role::Assistant {
            waiting = message.tool_calls().map(|call| call.id.as_str()).collect();
        } else if message.tool_results().next().is_some() {
            return Some(format!(
                "message {index} carries a result outside a tool message"
            ));
        }
    }
    waiting
        .first()
        .map(|id| format!("call `{id}` has no result at the end of the request"))
}

fn budget(
    manifest: &ContextManifest,
    status: &str,
    report: &mut impl FnMut(ViolationKind, String),
) {
    let passed = manifest.validation == Validation::Passed;
    if passed != (status == "passed") {
        report(
            ViolationKind::ManifestMismatch,
            format!(
                "{}: event status {status} with validation {}",
                manifest.call_id,
                manifest.validation.as_str()
            ),
        );
    }
    if !passed {
        return;
    }
    let estimated = manifest.estimated_input_tokens;
    let limit = manifest.input_limit;
    if estimated < 0 || limit < 0 || estimated > limit {
        report(
            ViolationKind::OverBudgetPassed,
            format!(
                "{}: passed with {estimated} of {limit} tokens",
                manifest.call_id
            ),
        );
    }
    // The whole estimate is the request overhead, every message and every schema; material
    // items only say what the messages hold.
    let items: u64 = manifest
        .items
        .iter()
        .filter(|item| !matches!(item.kind, ItemKind::Material { .. }))
        .map(|item| item.tokens)
        .sum();
    let total = items + ctxbed_harness::tokens::REQUEST_OVERHEAD_TOKENS;
    if i64::try_from(total).ok() != Some(estimated) {
        report(
            ViolationKind::ManifestMismatch,
            format!(
                "{}: items add up to {total} tokens, the estimate is {estimated}",
                manifest.call_id
            ),
        );
    }
}

/// Ids a scenario protects from omission: instructions, `AGENTS.md` and required blocks.
fn protected_ids(scenario: &Scenario) -> BTreeSet<String> {
    let mut ids: BTreeSet<String> = scenario
        .instructions
        .iter()
        .map(|i| format!("instruction/{}", i.name))
        .collect();
    ids.insert("workspace:AGENTS.md".to_string());
    for source in &scenario.sources {
        for block in source.blocks.iter().filter(|b| b.required) {
            ids.insert(format!("source/{}/{}", source.name, block.id));
        }
    }
    ids
}

fn protected(
    scenario: &Scenario,
    manifest: &ContextManifest,
    report: &mut impl FnMut(ViolationKind, String),
) {
    let protected = protected_ids(scenario);
    for transform in &manifest.transforms {
        if let Transform::OmittedForBudget { item_id: id } = transform
            && (protected.contains(id) || id.starts_with("instruction/"))
        {
            report(
                ViolationKind::ProtectedOmitted,
                format!("{}: `{id}` omitted for budget", manifest.call_id),
            );
        }
    }
    let reasoning = manifest.purpose == ctxbed_harness::model::Purpose::Reasoning;
    if !reasoning || manifest.validation != Validation::Passed {
        return;
    }
    for instruction in &scenario.instructions {
        let id = format!("instruction/{}", instruction.name);
        if !instruction.text.trim().is_empty() && manifest.material(&id).is_none() {
            report(
                ViolationKind::ProtectedOmitted,
                format!(
                    "{}: instruction `{id}` is not in the request",
                    manifest.call_id
                ),
            );
        }
    }
}

/// Every request the model received was described by a passed manifest of the same id: its
/// message items are the request's messages, its schema items the request's tools.
fn requests_match(
    step: &StepRecord,
    manifests: &[(&ContextManifest, &str)],
    report: &mut impl FnMut(ViolationKind, String),
) {
    for request in &step.requests {
        let Some((manifest, _)) = manifests
            .iter()
            .find(|(m, status)| m.call_id == request.call_id && *status == "passed")
        else {
            report(
                ViolationKind::ManifestMismatch,
                format!("request {} has no passed manifest", request.call_id),
            );
            continue;
        };
        let described: Vec<(String, Option<Role>)> = manifest
            .items
            .iter()
            .filter_map(|item| match &item.kind {
                ItemKind::Message { role, .. } => Some((item.id.clone(), Some(*role))),
                ItemKind::ToolSchema => Some((item.id.clone(), None)),
                ItemKind::Material { .. } => None,
            })
            .collect();
        let sent: Vec<(String, Option<Role>)> = request
            .messages
            .iter()
            .map(|m| (m.id.clone(), Some(m.role)))
            .chain(request.tools.iter().map(|t| (t.name.clone(), None)))
            .collect();
        if described != sent {
            report(
                ViolationKind::ManifestMismatch,
                format!(
                    "request {}: the manifest lists {} messages and schemas, the model got {}",
                    request.call_id,
                    described.len(),
                    sent.len()
                ),
            );
        }
    }
}

fn no_material(step: &StepRecord, report: &mut impl FnMut(ViolationKind, String)) {
    // The second path compares texts; a System message holding only the prompt is no rendered
    // material (a user may well type the prompt's words), so only tagged messages count.
    let rendered: BTreeSet<String> = step
        .requests
        .iter()
        .flat_map(|r| &r.messages)
        .filter(|m| m.metadata.contains_key(MATERIAL_KEY))
        .map(Message::text)
        .filter(|text| {
            ["<context_item", "<instruction", "<guidance>"]
                .iter()
                .any(|tag| text.contains(tag))
        })
        .collect();
    for message in &step.committed_history {
        if message.metadata.contains_key(MATERIAL_KEY) {
            report(
                ViolationKind::MaterialInHistory,
                format!("committed message `{}` is rendered material", message.id),
            );
        } else if rendered.contains(&message.text()) {
            report(
                ViolationKind::MaterialInHistory,
                format!(
                    "committed message `{}` repeats a rendered material message",
                    message.id
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::leak::{for_each_string, for_each_window};
    use super::*;

    #[test]
    fn windows_are_every_run_of_32_characters() {
        let windows_of = |text: &str| -> Vec<String> {
            let mut windows = Vec::new();
            for_each_window(text, &mut |window| windows.push(window.to_string()));
            windows
        };
        let by_rule = |text: &str| -> Vec<String> {
            let chars: Vec<char> = text.chars().collect();
            chars
                .windows(LEAK_WINDOW_CHARS)
                .map(|w| w.iter().collect())
                .collect()
        };
        let ascii = "abcdefghijklmnopqrstuvwxyz0123456789";
        let mixed = "报告 abcdefghijklmnopqrstuvwxyz0123456789 é";
        for text in [
            "",
            "short",
            &ascii[..31],
            &ascii[..32],
            ascii,
            mixed,
            "报告报告",
        ] {
            assert_eq!(windows_of(text), by_rule(text), "{text:?}");
        }
        assert_eq!(windows_of(ascii).len(), 5);
    }

    #[test]
    fn the_pairing_walk_finds_each_problem() {
        let call = |id: &str| {
            Message::assistant_tool_calls(
                "a",
                vec![ContentPart::tool_call(id, "execute", serde_json::json!({}))],
            )
        };
        let result = |id: &str| Message::tool_result("t", id, "execute", "ok", false);
        let user = Message::user("u", "go");
        assert_eq!(
            pairing_problem(&[user.clone(), call("c1"), result("c1")]),
            None
        );
        assert!(pairing_problem(&[call("c1"), user.clone()]).is_some());
        assert!(pairing_problem(&[call("c1")]).is_some());
        assert!(pairing_problem(&[user.clone(), result("c1")]).is_some());
        assert!(pairing_problem(&[call("c1"), result("c1"), result("c1")]).is_some());
        assert!(pairing_problem(&[call("c1"), result("c1"), call("c1"), result("c1")]).is_some());
        assert!(pairing_problem(&[call(" "), result(" ")]).is_some());
    }

    /// The second run is compared as recorded: an equal record passes unrendered, a change the
    /// trace shows is named by its first line, and one it does not show by what differs.
    #[test]
    fn a_second_record_is_compared_with_the_first_run() {
        use crate::scenario::check::outcome::{run, simulate};
        let scenario = crate::generate::generate(11);
        let first = run(&scenario).expect("seed 11 runs");
        let same = simulate(&scenario).expect("seed 11 runs");
        assert!(check_record_determinism(&scenario, &first, same).is_none());

        let mut shown = simulate(&scenario).expect("seed 11 runs");
        shown.trace.header.push("an extra header line".to_string());
        let violation =
            check_record_determinism(&scenario, &first, shown).expect("a line more in the trace");
        assert_eq!(violation.kind, ViolationKind::Nondeterministic);
        assert!(
            violation
                .detail
                .starts_with("the two traces first differ at line")
        );

        let mut unshown = simulate(&scenario).expect("seed 11 runs");
        let step = unshown.trace.steps.first_mut().expect("seed 11 has a step");
        step.committed_history.clear();
        unshown.workspace.clear();
        let violation =
            check_record_determinism(&scenario, &first, unshown).expect("a shorter history");
        assert_eq!(
            violation.detail,
            "the two traces render the same, but the runs differ in the trace's records and \
             the workspace"
        );
    }

    #[test]
    fn kinds_have_unique_names() {
        let names: BTreeSet<&str> = ViolationKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ViolationKind::ALL.len());
    }

    /// The strings read from the JSON text are every key and string of the value, unescaped,
    /// in order (the walk over a parsed value this replaced).
    #[test]
    fn strings_of_json_text_are_those_of_the_value() {
        fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::String(text) => out.push(text.clone()),
                serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
                serde_json::Value::Object(map) => {
                    for (key, item) in map {
                        out.push(key.clone());
                        walk(item, out);
                    }
                }
                _ => {}
            }
        }
        let value = serde_json::json!({
            "call_id": "call-1",
            "a \"quoted\" key\\": ["line\nbreak", "tab\tand \\ backslash", 12, null, true],
            "nested": {"empty": "", "unicode": "报告 é \u{1F600}", "control": "\u{0001}\u{001f}"},
            "": [[], {}, {"k": "v"}],
            "numbers": [-1.5e10, 0, 18446744073709551615u64],
        });
        let mut expected = Vec::new();
        walk(&value, &mut expected);
        let mut seen = Vec::new();
        for_each_string(&value.to_string(), &mut |text| seen.push(text.to_string()));
        assert_eq!(seen, expected);
    }
}
