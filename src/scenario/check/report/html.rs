//! The report page: the overview chart, then one section per preparation.
//!
//! The page is self-contained: inline CSS and SVG, system fonts, no script and no link to
//! anything outside itself but its own anchors.

use std::fmt::Write as _;

use super::svg::{chart, color, single};
use super::{
    Entry, MessageView, ModelOutcome, Preparation, Segment, Transform, escape, outcome_meaning,
    preparations, validation_meaning,
};
use crate::scenario::check::outcome::RunOutput;
use crate::scenario::format::file::Scenario;
use ctxbed_harness::format::duration;

/// Conversations longer than this show their head and tail, the middle folded.
const CONVERSATION_ENTRIES_SHOWN_MAX: usize = 24;
/// Entries shown before the fold.
const CONVERSATION_HEAD_ENTRIES: usize = 6;

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: #222; margin: 0 auto;
  max-width: 1340px; padding: 16px 24px 48px; background: #fafafa; line-height: 1.4; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 17px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: #444; }
code, pre { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12px; }
.description { color: #444; margin: 0 0 8px; }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px 16px;
  margin: 14px 0; }
section.failed { border-color: #d62728; }
.badge { font-size: 12px; padding: 1px 8px; border-radius: 10px; margin-left: 6px;
  vertical-align: middle; font-weight: normal; }
.badge.passed { background: #e3f1e0; color: #2d6a24; }
.badge.failed { background: #fbe0e0; color: #a11d1d; }
.badge.rejected { background: #fdecd2; color: #8a4b00; }
section.rejected { border-color: #e08a00; }
.muted { color: #666; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border-bottom: 1px solid #eee; padding: 2px 10px 2px 0; text-align: left;
  vertical-align: top; }
th { color: #555; font-weight: 600; }
td.num, th.num { text-align: right; padding-right: 14px; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
  border: 1px solid #999; }
.columns { display: flex; gap: 28px; flex-wrap: wrap; }
.columns > div { flex: none; } .columns > div.wide { flex: 1; min-width: 420px; }
.transform { margin: 0 0 8px; padding: 2px 0 2px 8px; border-left: 3px solid #b07aa1;
  font-size: 13px; } .transform code { overflow-wrap: anywhere; font-weight: 600; }
.conversation { font-size: 13px; }
.message, .exchange { margin: 3px 0; padding: 3px 8px; border-left: 4px solid #ccc;
  background: #f7f7f7; }
.exchange { border-left-color: #f28e2b; background: #fff7ef; }
.exchange .result { margin-left: 28px; }
.role { display: inline-block; min-width: 70px; font-weight: 600; }
.role-user { border-left-color: #4e79a7; } .role-assistant { border-left-color: #59a14f; }
.summary { border-left-color: #b07aa1; background: #f6eef4; }
.cut { margin: 4px 0; padding: 2px 8px; color: #7a3b6e; border-top: 2px dashed #b07aa1;
  font-size: 12px; }
.tokens { display: inline-block; min-width: 64px; text-align: right; margin-right: 10px;
  font-variant-numeric: tabular-nums; }
.error { color: #a11d1d; }
details summary { cursor: pointer; color: #555; }
svg { display: block; max-width: 100%; height: auto; }
";

/// The self-contained HTML report of a run.
pub fn html(output: &RunOutput, scenario: &Scenario) -> String {
    let preparations = preparations(&output.trace, scenario);
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>ctxbed report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&scenario.name)
    );
    page.push_str(&header(output, scenario, preparations.len()));
    page.push_str(
        "<section>\n<h2>Requests</h2>\n<p class=\"muted\">One bar per model request, \
        on one token scale. Click a label for the request's details; hover a segment for its \
        figure.</p>\n",
    );
    if preparations.is_empty() {
        page.push_str(
            "<p>No request went through the context pipeline (a <code>kind = \"react\"</code> \
             agent has none), so there is nothing to chart.</p>\n",
        );
    } else {
        page.push_str(&chart(&preparations));
    }
    page.push_str("</section>\n");
    for preparation in &preparations {
        page.push_str(&request_section(preparation));
    }
    page.push_str(&expectations(output));
    page.push_str("</body>\n</html>\n");
    page
}

fn header(output: &RunOutput, scenario: &Scenario, count: usize) -> String {
    let mut out = format!(
        "<header>\n<h1>{}</h1>\n<p class=\"description\">{}</p>\n",
        escape(&scenario.name),
        escape(&scenario.description)
    );
    let steps = output.trace.steps.len();
    let _ = writeln!(
        out,
        "<p>seed {} · {steps} step(s) · {count} request preparation(s) · model <code>{}</code>\
         </p>",
        scenario.seed,
        escape(&scenario.mock.info.name)
    );
    for step in &output.trace.steps {
        let outcome = match &step.outcome {
            Ok(reply) => format!("replied ({})", escape(&reply.id)),
            Err(error) => format!(
                "<span class=\"error\">failed: {}</span>",
                escape(error.kind())
            ),
        };
        let _ = writeln!(
            out,
            "<p class=\"muted\">step {}: {} in {} virtual time</p>",
            step.index,
            outcome,
            duration(step.elapsed)
        );
    }
    out.push_str("<details><summary>Effective configuration (the trace header)</summary><pre>");
    for line in &output.trace.header {
        let _ = writeln!(out, "{}", escape(line));
    }
    out.push_str("</pre></details>\n</header>\n");
    out
}

fn request_section(preparation: &Preparation<'_>) -> String {
    let build = preparation.build;
    // One badge tells what happened to the request: refused before sending, sent and rejected
    // by the model, or sent and answered.
    let (class, badge) = match (&preparation.outcome, build.status == "passed") {
        (_, false) => ("failed", format!("not sent: validation {}", build.status)),
        (ModelOutcome::Failed { kind, .. }, true) => (
            "rejected",
            format!("validation passed, then the model rejected it: {kind}"),
        ),
        (ModelOutcome::Replied { .. }, true) => ("passed", "passed, and answered".to_string()),
        (ModelOutcome::NotSent, true) => ("passed", "passed, not sent".to_string()),
    };
    let mut out = format!(
        "<section id=\"request-{}\" class=\"request {class}\">\n<h2>{}<span class=\"badge \
         {class}\">{}</span></h2>\n",
        preparation.number,
        escape(&preparation.label()),
        escape(&badge)
    );
    let position = preparation.reasoning_number.map_or(String::new(), |n| {
        format!(" · reasoning request {n} of step {}", preparation.step)
    });
    let _ = writeln!(
        out,
        "<p class=\"muted\">at {} · model <code>{}</code>{position}</p>",
        duration(preparation.at),
        escape(&preparation.manifest().model)
    );
    let _ = writeln!(
        out,
        "<p><b>Validation:</b> {}<br><b>Model:</b> {}</p>",
        escape(&validation_meaning(preparation)),
        escape(&outcome_meaning(preparation))
    );
    if preparation.breakdown.is_some() {
        out.push_str(&single(preparation));
    }
    out.push_str("<div class=\"columns\">\n<div>\n");
    out.push_str(&figures_table(preparation));
    out.push_str("</div>\n<div>\n");
    out.push_str(&breakdown_table(preparation));
    out.push_str("</div>\n<div class=\"wide\">\n");
    out.push_str(&transforms_table(preparation));
    out.push_str("</div>\n</div>\n");
    out.push_str(&conversation(preparation));
    out.push_str(&materials_and_schemas(preparation));
    out.push_str("</section>\n");
    out
}

fn figures_table(preparation: &Preparation<'_>) -> String {
    let manifest = preparation.manifest();
    let mut rows: Vec<(&str, String)> = vec![
        (
            "estimated input",
            manifest.estimated_input_tokens.to_string(),
        ),
        ("input limit", manifest.input_limit.to_string()),
        (
            "conversation allowance",
            manifest.conversation_allowance.to_string(),
        ),
    ];
    if let Some(budget) = preparation.budget {
        let window = budget
            .window
            .map_or("unknown".to_string(), |w| w.to_string());
        rows.push(("model window", window));
        rows.push(("output reserve", budget.output_reserve.to_string()));
        rows.push(("safety margin", budget.safety_margin.to_string()));
    }
    if let ModelOutcome::Failed { reported, .. } = &preparation.outcome {
        if let Some(tokens) = reported.tokens {
            rows.push(("provider's count (its error)", tokens.to_string()));
        }
        if let Some(limit) = reported.limit {
            rows.push(("provider's limit (its error)", limit.to_string()));
        }
    }
    let exact = if manifest.exact { "exact" } else { "estimate" };
    rows.push((
        "counting",
        format!("{} ({exact})", manifest.counting_method),
    ));
    let mut out = String::from("<h3>Figures (tokens)</h3>\n<table>\n");
    for (name, value) in rows {
        let _ = writeln!(
            out,
            "<tr><th>{name}</th><td class=\"num\">{}</td></tr>",
            escape(&value)
        );
    }
    out.push_str("</table>\n");
    out
}

fn breakdown_table(preparation: &Preparation<'_>) -> String {
    let mut out = String::from("<h3>Where the tokens go</h3>\n");
    let Some(breakdown) = preparation.breakdown else {
        out.push_str(
            "<p class=\"muted\">No figures: the preparation failed before counting.</p>\n",
        );
        return out;
    };
    let limit = u64::try_from(preparation.manifest().input_limit).unwrap_or(0);
    out.push_str(
        "<table>\n<tr><th>segment</th><th class=\"num\">tokens</th>\
         <th class=\"num\">of the limit</th></tr>\n",
    );
    for segment in Segment::ALL {
        let tokens = breakdown.get(segment);
        let _ = writeln!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>\
             <td class=\"num\">{tokens}</td><td class=\"num\">{}</td></tr>",
            color(segment),
            escape(segment.label()),
            percent(tokens, limit)
        );
    }
    let total = breakdown.total();
    let _ = writeln!(
        out,
        "<tr><th>total</th><th class=\"num\">{total}</th><th class=\"num\">{}</th></tr>\n</table>",
        percent(total, limit)
    );
    out
}

/// A whole-number percentage, `—` for a zero denominator.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "—".to_string();
    }
    format!(
        "{}%",
        (u128::from(part) * 100 + u128::from(whole) / 2) / u128::from(whole)
    )
}

fn transforms_table(preparation: &Preparation<'_>) -> String {
    let mut out = String::from("<h3>Transforms</h3>\n");
    if preparation.transforms.is_empty() {
        out.push_str(if preparation.breakdown.is_some() {
            "<p class=\"muted\">None: every item went into the request unchanged.</p>\n"
        } else {
            "<p class=\"muted\">None recorded.</p>\n"
        });
        return out;
    }
    for view in &preparation.transforms {
        let figures = view.figures.as_deref().map_or(String::new(), |figures| {
            format!("<div class=\"muted\">{}</div>", escape(figures))
        });
        let _ = writeln!(
            out,
            "<div class=\"transform\"><code>{}</code><div>{}</div>{figures}</div>",
            escape(&view.transform.to_string()),
            escape(&view.meaning)
        );
    }
    out
}

fn conversation(preparation: &Preparation<'_>) -> String {
    let entries = &preparation.conversation;
    let mut out = format!(
        "<h3>Conversation as prepared ({}; tool calls grouped with their results)</h3>\n\
         <div class=\"conversation\">\n",
        plural(entries.len(), "entry", "entries")
    );
    let compacted = preparation
        .transforms
        .iter()
        .find_map(|view| match view.transform {
            Transform::HistoryCompaction { messages } => Some(messages),
            _ => None,
        });
    let fold = (entries.len() > CONVERSATION_ENTRIES_SHOWN_MAX).then(|| {
        let tail = CONVERSATION_ENTRIES_SHOWN_MAX - CONVERSATION_HEAD_ENTRIES;
        (CONVERSATION_HEAD_ENTRIES, entries.len() - tail)
    });
    for (index, entry) in entries.iter().enumerate() {
        if let Some((start, end)) = fold {
            if index == start {
                let _ = writeln!(
                    out,
                    "<details><summary>{} more</summary>",
                    plural(end - start, "entry", "entries")
                );
            }
            if index == end {
                out.push_str("</details>\n");
            }
        }
        out.push_str(&entry_html(entry, compacted));
    }
    if entries.is_empty() {
        out.push_str("<p class=\"muted\">No conversation messages.</p>\n");
    }
    out.push_str("</div>\n");
    out
}

fn entry_html(entry: &Entry, compacted: Option<usize>) -> String {
    match entry {
        Entry::Message(view) => format!(
            "<div class=\"message role-{}\">{}</div>\n",
            view.role.as_str(),
            message_line(view, "")
        ),
        Entry::Summary(view) => {
            let cut = match compacted {
                Some(messages) => format!(
                    "compaction cut: in this request, {messages} older messages were replaced by \
                     the summary above"
                ),
                None => "compaction cut: an earlier compaction replaced the older messages with \
                         the summary above"
                    .to_string(),
            };
            format!(
                "<div class=\"message summary\">{}</div>\n<div class=\"cut\">✂ {}</div>\n",
                message_line(view, "compaction summary"),
                escape(&cut)
            )
        }
        Entry::Exchange { call, results } => {
            let calls: Vec<String> = call
                .calls
                .iter()
                .map(|(id, name)| format!("{name} ({id})"))
                .collect();
            let note = if calls.is_empty() {
                String::new()
            } else {
                format!("calls {}", calls.join(", "))
            };
            let mut out = format!("<div class=\"exchange\">{}\n", message_line(call, &note));
            for result in results {
                let answers: Vec<String> = result
                    .results
                    .iter()
                    .map(|(id, name, error)| {
                        let error = if *error { " — error" } else { "" };
                        format!("result of {name} ({id}){error}")
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "<div class=\"result\">{}</div>",
                    message_line(result, &answers.join(", "))
                );
            }
            let tool_calls = call.parts.split('+').filter(|p| *p == "tool_call").count();
            if results.len() < tool_calls {
                let _ = writeln!(
                    out,
                    "<div class=\"result error\">{} call(s) without a result message</div>",
                    tool_calls - results.len()
                );
            }
            out.push_str("</div>\n");
            out
        }
    }
}

fn message_line(view: &MessageView, note: &str) -> String {
    format!(
        "<span class=\"role\">{}</span><span class=\"tokens\">{} tok</span><code>{}</code> \
         <span class=\"muted\">{}</span> {}",
        view.role.as_str(),
        view.tokens,
        escape(&view.id),
        escape(&view.parts),
        escape(note)
    )
}

fn materials_and_schemas(preparation: &Preparation<'_>) -> String {
    use ctxbed_harness::context::manifest::ItemKind;
    let manifest = preparation.manifest();
    let mut rows = String::new();
    for item in &manifest.items {
        let (what, detail) = match &item.kind {
            ItemKind::Message { .. } => continue,
            ItemKind::ToolSchema => ("tool schema", String::new()),
            ItemKind::Material {
                kind,
                placement,
                required,
                priority,
                ..
            } => (
                "material",
                format!(
                    "{} in {}, priority {priority}{}",
                    kind.as_str(),
                    placement.as_str(),
                    if *required { ", required" } else { "" }
                ),
            ),
        };
        let _ = writeln!(
            rows,
            "<tr><td>{what}</td><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&item.id),
            item.tokens,
            escape(&detail)
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<h3>Material and tool schemas</h3>\n<table>\n<tr><th>item</th><th>id</th>\
         <th class=\"num\">tokens</th><th>kind and placement</th></tr>\n{rows}</table>\n"
    )
}

fn expectations(output: &RunOutput) -> String {
    if output.checks.is_empty() {
        return String::new();
    }
    let mut out = String::from("<section>\n<h2>Expectations</h2>\n<table>\n");
    for check in &output.checks {
        let verdict = if check.passed {
            "ok"
        } else {
            "<span class=\"error\">FAIL</span>"
        };
        let detail = if check.passed {
            String::new()
        } else {
            escape(&check.detail)
        };
        let _ = writeln!(
            out,
            "<tr><td>{verdict}</td><td>line {}</td><td>{}</td><td>{detail}</td></tr>",
            check.line,
            escape(&check.description)
        );
    }
    out.push_str("</table>\n</section>\n");
    out
}

/// `n` and the noun in the right number: `1 entry`, `2 entries`.
fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}
