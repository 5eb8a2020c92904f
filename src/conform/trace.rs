//! The canonical trace of one (scenario, harness) run: per step, every request the mock
//! received (API, exact tokens, the shape of its messages, the answer), then how the step ended,
//! then the verdict. Tool-call ids are numbered in order of appearance (`#1`, `#2`, …), so a
//! deterministic harness gives the same bytes on every run, whatever ids it generated.

use std::collections::BTreeMap;
use std::fmt::Write;

use ctxbed_harness::format::snippet;
use ctxbed_harness::message::{ContentPart, Message, Role};
use ctxbed_harness::model::Purpose;
use ctxbed_sim::host::Exchange;

use super::checks::{StepEnd, StepRun, Violation, step_rules};
use super::file::WireScenario;

/// Characters of a reply or error message shown.
const SHOWN_CHARS: usize = 100;

/// How much of a step's error a trace shows: enough for the provider's whole message inside
/// the harness's wrapping.
const ERROR_CHARS: usize = 1_000;

/// A step's error as the trace shows it: its lines joined with ` | `, loopback ports (which
/// change from run to run) as `PORT`, at most [`ERROR_CHARS`] characters.
fn error_text(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut text = lines.join(" | ");
    for host in ["127.0.0.1:", "localhost:", "[::1]:"] {
        text = without_ports(&text, host);
    }
    snippet(&text, ERROR_CHARS)
}

/// `text` with the digits after each `host` replaced by `PORT`.
fn without_ports(text: &str, host: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(host) {
        let (before, after) = rest.split_at(at + host.len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("PORT");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Numbers tool-call ids in order of first appearance.
#[derive(Default)]
struct Ids(BTreeMap<String, usize>);

impl Ids {
    fn of(&mut self, id: &str) -> String {
        let next = self.0.len() + 1;
        format!("#{}", self.0.entry(id.to_string()).or_insert(next))
    }
}

fn shape(message: &Message, ids: &mut Ids) -> String {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut tags = Vec::new();
    let thought = message.parts.iter().any(|part| match part {
        ContentPart::Thinking { text, .. } => !text.is_empty(),
        ContentPart::RedactedThinking { .. } => true,
        _ => false,
    });
    if thought {
        tags.push("thinking".to_string());
    }
    for part in &message.parts {
        match part {
            ContentPart::ToolCall(call) => {
                tags.push(format!("call {} {}", ids.of(&call.id), call.name))
            }
            ContentPart::ToolResult(result) => {
                let error = if result.is_error { " error" } else { "" };
                tags.push(format!(
                    "result {}{error} {}c",
                    ids.of(&result.call_id),
                    result.text().chars().count()
                ));
            }
            _ => {}
        }
    }
    let text = message.text();
    if !text.is_empty() && message.role != Role::Tool {
        tags.push(format!("{}c", text.chars().count()));
    }
    // `image 1024x768 765t`: an attached image, its size and what the provider counts for it.
    for part in &message.parts {
        if let ContentPart::Image(image) = part {
            tags.push(format!(
                "image {}x{} {}t",
                image.width, image.height, image.tokens
            ));
        }
    }
    if tags.is_empty() {
        role.to_string()
    } else {
        format!("{role}({})", tags.join(", "))
    }
}

/// ` (cache 2304 read, 77%, 0 written)`: what an answered request read from the prompt cache,
/// as a share of its input, and wrote to it.
fn cache_note(exchange: &Exchange) -> String {
    let input = exchange.input_tokens.unwrap_or(0);
    let share = (exchange.cache.read * 100).checked_div(input).unwrap_or(0);
    format!(
        " (cache {} read, {share}%, {} written)",
        exchange.cache.read, exchange.cache.written
    )
}

/// The scenario's cache-read share over its answered requests.
fn cache_summary(steps: &[StepRun]) -> String {
    let answered = steps
        .iter()
        .flat_map(|run| &run.exchanges)
        .filter(|e| e.status == 200 && e.request.is_some());
    let (mut count, mut input, mut read, mut written) = (0u64, 0u64, 0u64, 0u64);
    for exchange in answered {
        count += 1;
        input += exchange.input_tokens.unwrap_or(0);
        read += exchange.cache.read;
        written += exchange.cache.written;
    }
    let share = (read * 100).checked_div(input).unwrap_or(0);
    format!(
        "prompt cache: {read} of {input} input tokens read ({share}%), {written} written, over {count} answered requests"
    )
}

fn request_line(exchange: &Exchange, report_cache: bool, ids: &mut Ids, out: &mut String) {
    let mut head = format!("  request {} {}", exchange.number, exchange.api.as_str());
    if exchange.stream {
        head.push_str(" stream");
    }
    if exchange.side {
        head.push_str(" side");
    }
    if let Some(request) = &exchange.request {
        if request.purpose != Purpose::Reasoning && !exchange.side {
            let _ = write!(head, " {}", request.purpose.as_str());
        }
        let _ = write!(head, " {} tokens", exchange.input_tokens.unwrap_or(0));
        if report_cache && exchange.status == 200 {
            head.push_str(&cache_note(exchange));
        }
        if let Some(output) = request.max_output_tokens {
            let _ = write!(head, " +{output} out");
        }
        let _ = write!(head, ", {} tools", request.tools.len());
    }
    let _ = writeln!(out, "{head} -> {} {}", exchange.status, exchange.outcome);
    if let Some(request) = &exchange.request {
        let shapes: Vec<String> = request.messages.iter().map(|m| shape(m, ids)).collect();
        let _ = writeln!(out, "    {}", shapes.join(" "));
    }
    if let Some(note) = &exchange.note {
        let _ = writeln!(out, "    note: {note}");
    }
}

/// The kind of error conform records for a step its adapter never answered (it is none of the
/// kinds an adapter may give).
const UNANSWERED_KIND: &str = "adapter";

/// The rules a step broke: its violations', and `adapter` first when its adapter never answered
/// it (a crash, a hang, a step given up): such a step never passes.
fn rules_of<'a>(run: &StepRun, number: usize, violations: &'a [Violation]) -> Vec<&'a str> {
    let mut rules = step_rules(violations, number);
    if matches!(&run.end, StepEnd::Error { kind, .. } if kind == UNANSWERED_KIND) {
        rules.insert(0, UNANSWERED_KIND);
    }
    rules
}

/// A step's own verdict line: the rules it broke, and the earlier steps that failed.
fn step_verdict(rules: &[&str], failed: &[usize]) -> String {
    let mut line = if rules.is_empty() {
        "  step verdict: pass".to_string()
    } else {
        format!("  step verdict: fail: {}", rules.join(", "))
    };
    if !failed.is_empty() {
        let list: Vec<String> = failed.iter().map(usize::to_string).collect();
        let _ = write!(line, " (after failed step {})", list.join(", "));
    }
    line
}

/// The harness a trace is of, as its adapter introduced it.
#[derive(Debug, Clone, Copy)]
pub struct Harness<'a> {
    pub name: &'a str,
    pub version: &'a str,
    /// Its context management as the adapter declares it (`own` is not shown).
    pub context: &'a str,
}

/// The trace's first lines: the scenario, the harness (and its context management unless its
/// own), the model and the window the harness was told of.
fn header(scenario: &WireScenario, harness: &Harness<'_>, window: Option<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario {}", scenario.name);
    let _ = writeln!(out, "harness {} {}", harness.name, harness.version);
    if !harness.context.is_empty() && harness.context != "own" {
        let _ = writeln!(out, "context management: {}", harness.context);
    }
    let window = window.map_or_else(|| "none".to_string(), |w| w.to_string());
    let advertised = if scenario.advertised_window.is_some() {
        ", advertised; the mock enforces its own"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "model {} (window {window}{advertised})",
        scenario.model
    );
    out
}

/// How the mock counted the requests' input tokens, by the APIs they spoke (none when no
/// request reached it).
fn counts_line(steps: &[StepRun]) -> String {
    let methods: std::collections::BTreeSet<&str> = steps
        .iter()
        .flat_map(|step| &step.exchanges)
        .map(|exchange| ctxbed_sim::host::counting::method(exchange.api))
        .collect();
    if methods.is_empty() {
        return String::new();
    }
    let methods: Vec<&str> = methods.into_iter().collect();
    format!("counts: {}\n", methods.join("; "))
}

/// The trace's text.
pub fn render(
    scenario: &WireScenario,
    harness: Harness<'_>,
    window: Option<u64>,
    steps: &[StepRun],
    problem: Option<&str>,
    violations: &[Violation],
) -> String {
    let mut out = header(scenario, &harness, window);
    out.push_str(&counts_line(steps));
    let mut ids = Ids::default();
    let mut failed: Vec<usize> = Vec::new();
    for (index, run) in steps.iter().enumerate() {
        let step = &scenario.steps[index];
        if step.restart {
            let _ = writeln!(out, "\nrestart: a new process serves the steps from here");
        }
        let _ = writeln!(
            out,
            "\nstep {} {}/{}: {}",
            index + 1,
            step.user,
            step.session,
            snippet(&step.input, SHOWN_CHARS)
        );
        for exchange in &run.exchanges {
            request_line(exchange, scenario.report_cache, &mut ids, &mut out);
        }
        if run.count_tokens > 0 {
            let _ = writeln!(out, "  count_tokens calls: {}", run.count_tokens);
        }
        let _ = match &run.end {
            StepEnd::Reply(text) => writeln!(out, "  reply: {}", snippet(text, SHOWN_CHARS)),
            StepEnd::Error { kind, message } => {
                writeln!(out, "  error {kind}: {}", error_text(message))
            }
        };
        let rules = rules_of(run, index + 1, violations);
        let _ = writeln!(out, "{}", step_verdict(&rules, &failed));
        if !rules.is_empty() {
            failed.push(index + 1);
        }
    }
    if scenario.report_cache {
        let _ = writeln!(out, "\n{}", cache_summary(steps));
    }
    if let Some(problem) = problem {
        let _ = writeln!(out, "\nadapter: {problem}");
    }
    if violations.is_empty() && problem.is_none() {
        let _ = writeln!(out, "\nverdict: pass");
    } else {
        let _ = writeln!(out, "\nverdict: fail");
        for violation in violations {
            let _ = writeln!(out, "  {}: {}", violation.rule, violation.detail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::checks::{StepEnd, StepRun};
    use crate::conform::file::parse;

    #[test]
    fn a_steps_error_is_shown_whole_with_loopback_ports_hidden() {
        let scenario = parse(
            "t.toml",
            "description = \"t\"\nmodel = \"m\"\n[[steps]]\ninput = \"Why?\"\n",
            "wire/t",
        )
        .expect("a valid scenario");
        let provider = format!(
            "Error code: 400 - {{'error': {{'message': \"This model's maximum context length is 8000 tokens. However, you requested 9088 tokens (7088 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.\", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}}} from http://127.0.0.1:{}/v1",
            40_000 + 123
        );
        let steps = [StepRun {
            end: StepEnd::Error {
                kind: "context_overflow".into(),
                message: format!("Traceback:\n  raised\n{provider}"),
            },
            exchanges: Vec::new(),
            count_tokens: 0,
        }];
        let harness = Harness {
            name: "h",
            version: "1",
            context: "own",
        };
        let trace = render(&scenario, harness, Some(8_000), &steps, None, &[]);
        assert!(
            trace.contains("Please reduce the length of the messages or completion.\""),
            "{trace}"
        );
        assert!(
            trace.contains("'code': 'context_length_exceeded'"),
            "{trace}"
        );
        assert!(
            trace.contains("Traceback: | raised | Error code: 400"),
            "{trace}"
        );
        assert!(trace.contains("http://127.0.0.1:PORT/v1"), "{trace}");
    }
}
