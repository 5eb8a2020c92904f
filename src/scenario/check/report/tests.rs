//! Unit tests of the report view: transform meanings, the budget split, conversation grouping,
//! escaping, and the page's self-containment on a real run.

use std::sync::Arc;

use super::*;
use ctxbed_harness::context::block::{MaterialKind, Placement};
use ctxbed_harness::context::manifest::ManifestItem;

fn meaning_of(text: &str) -> String {
    meaning(
        &text
            .parse::<Transform>()
            .expect("a transform the stages record"),
    )
}

#[test]
fn every_recorded_transform_kind_has_a_meaning() {
    for (text, shown) in [
        (
            "tool_result_offload:call_0001:large_tool_results/agent/call_0001-9458d160fc6fa70e",
            "tool call call_0001 was over the offload limit: it was saved to \
             large_tool_results/agent/call_0001-9458d160fc6fa70e",
        ),
        (
            "tool_result_offload:../../../etc/passwd:large_tool_results/agent/_etc_passwd-4c",
            "tool call ../../../etc/passwd was over",
        ),
        (
            "tool_result_offload_failed:call_0001",
            "the result of tool call call_0001 failed",
        ),
        (
            "omitted_for_budget:workspace:MEMORY.md",
            "optional material workspace:MEMORY.md was left out",
        ),
        (
            "source_unavailable:source/hung/:timeout",
            "context source hung did not load (timeout)",
        ),
        (
            "history_compaction:17 messages -> 1 summary",
            "replaced the 17 oldest",
        ),
        (
            "history_compaction_failed:blank_summary",
            "failed (blank_summary)",
        ),
        (
            "history_compaction_skipped:nothing_before_the_tail",
            "nothing to summarise (nothing_before_the_tail)",
        ),
        (
            "compaction_tail:keep_messages (token cap is 0)",
            "counted in messages: keep_messages (token cap is 0)",
        ),
        (
            "tool_output_prune:8 results, 64000 -> 6512 tokens",
            "8 older tool results were pruned",
        ),
        ("argument_truncation:1", "truncated in 1 older message(s)"),
        (
            "memory_flush:2 facts",
            "2 new one(s) were written to memory",
        ),
        (
            "memory_flush_failed:write",
            "the memory store refused the facts",
        ),
        (
            "memory_flush_failed:context_overflow",
            "the memory model failed: context_overflow",
        ),
        (
            "memory_flush_failed:context_budget_exceeded",
            "the extraction request did not fit the memory model",
        ),
        (
            "tool_pairs_repaired:dropped_result:toolu_lost",
            "a tool result for toolu_lost had no call",
        ),
        (
            "tool_pairs_repaired:closed_call:toolu_open",
            "tool call toolu_open had no result",
        ),
        ("tool_pairs_unchecked", "tool pairing was not checked"),
        (
            "workspace_skipped:workspace:knowledge/format.md",
            "workspace file workspace:knowledge/format.md was skipped",
        ),
        (
            "workspace_truncated:workspace:MEMORY.md",
            "workspace file workspace:MEMORY.md was cut",
        ),
        (
            "todo_receipt_shortened:m3",
            "receipt in message m3 was shortened",
        ),
        ("todo_list_projected:4", "the Todo list of revision 4"),
    ] {
        let words = meaning_of(text);
        assert!(words.contains(shown), "{text}: {words}");
    }
}

#[test]
fn ids_in_meanings_are_escaped_and_bounded() {
    let words = meaning(&Transform::OmittedForBudget {
        item_id: "source/docs/\u{202e}evil".to_string(),
    });
    assert!(words.contains("source/docs/\\u{202e}evil"), "{words}");
    let words = meaning(&Transform::ToolPairsClosedCall {
        call_id: "c".repeat(10_000),
    });
    assert!(words.len() < 1_000, "{words}");
}

fn message(id: &str, role: Role, parts: &[&'static str], tokens: u64) -> ManifestItem {
    ManifestItem {
        kind: ItemKind::Message {
            role,
            part_kinds: parts.to_vec(),
        },
        id: id.to_string(),
        tokens,
        content_hash: "0000000000000000".to_string(),
    }
}

fn manifest(items: Vec<ManifestItem>, estimated: i64) -> ContextManifest {
    ContextManifest {
        call_id: "call-1/r1".to_string(),
        purpose: Purpose::Reasoning,
        model: "m".to_string(),
        estimated_input_tokens: estimated,
        input_limit: 1_000,
        conversation_allowance: 500,
        counting_method: "approx-chars/2.5".to_string(),
        exact: false,
        items: items.into_iter().map(Arc::new).collect(),
        transforms: Vec::new(),
        validation: Validation::Passed,
        task_revision: None,
        policy_version: None,
    }
}

#[test]
fn the_breakdown_splits_layout_messages_and_counts_material_once() {
    let items = vec![
        message(SYSTEM_MESSAGE_ID, Role::System, &["text"], 100),
        message("m0001", Role::User, &["text"], 20),
        message(TRANSIENT_MESSAGE_ID, Role::User, &["text"], 30),
        message(REFERENCE_MESSAGE_ID, Role::User, &["text"], 40),
        ManifestItem {
            kind: ItemKind::Material {
                kind: MaterialKind::Runtime,
                placement: Placement::Transient,
                revision: "v1".to_string(),
                required: false,
                priority: 0,
            },
            id: "source/s/b".to_string(),
            tokens: 25,
            content_hash: "0000000000000000".to_string(),
        },
        ManifestItem {
            kind: ItemKind::ToolSchema,
            id: "execute".to_string(),
            tokens: 37,
            content_hash: "0000000000000000".to_string(),
        },
    ];
    let breakdown = Breakdown::of(&manifest(items, 230)).expect("figures");
    assert_eq!(
        breakdown,
        Breakdown {
            system: 100,
            tool_schemas: 37,
            conversation: 20,
            transient: 30,
            references: 40,
            overhead: 3,
        }
    );
    assert_eq!(breakdown.total(), 230);
    assert_eq!(Breakdown::of(&manifest(Vec::new(), -1)), None);
}

#[test]
fn tool_calls_are_grouped_with_their_results_and_the_summary_is_marked() {
    let items = vec![
        message(SYSTEM_MESSAGE_ID, Role::System, &["text"], 100),
        message("summary-0123", Role::User, &["text"], 112),
        message("h0004", Role::Assistant, &["tool_call", "tool_call"], 64),
        message("h0005", Role::Tool, &["tool_result"], 19),
        message("h0006", Role::Tool, &["tool_result"], 19),
        message("m0007", Role::User, &["text"], 11),
        message("orphan", Role::Tool, &["tool_result"], 5),
    ];
    let entries = conversation(&manifest(items, 333), None);
    let ids = |entry: &Entry| match entry {
        Entry::Message(view) => format!("message {}", view.id),
        Entry::Summary(view) => format!("summary {}", view.id),
        Entry::Exchange { call, results } => {
            let results: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
            format!("exchange {} [{}]", call.id, results.join(" "))
        }
    };
    let shown: Vec<String> = entries.iter().map(ids).collect();
    assert_eq!(
        shown,
        [
            "summary summary-0123",
            "exchange h0004 [h0005 h0006]",
            "message m0007",
            "message orphan"
        ]
    );
}

#[test]
fn the_summariser_input_is_not_a_compaction_summary() {
    let mut summary_request = manifest(
        vec![message("summary-input", Role::User, &["text"], 400)],
        403,
    );
    summary_request.purpose = Purpose::Summary;
    let entries = conversation(&summary_request, None);
    assert!(matches!(entries.as_slice(), [Entry::Message(_)]));
}

#[test]
fn escaping_covers_markup_quotes_and_invisible_characters() {
    assert_eq!(
        escape("<script>alert('x') & \"y\"</script>"),
        "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
    );
    assert_eq!(escape("a\u{202e}b\u{7}"), "a\\u{202e}b\\u{7}");
}

fn recover_once() -> (Scenario, crate::scenario::check::outcome::RunOutput) {
    let path = std::path::Path::new("scenarios/overflow/recover-once.toml");
    let scenario = crate::scenario::format::file::load(path).expect("the scenario loads");
    let output = crate::scenario::check::outcome::run(&scenario).expect("the scenario runs");
    (scenario, output)
}

#[test]
fn a_run_gives_budgets_outcomes_and_before_after_figures() {
    let (scenario, output) = recover_once();
    let all = preparations(&output.trace, &scenario);
    let labels: Vec<String> = all.iter().map(Preparation::label).collect();
    assert_eq!(
        labels,
        [
            "#1 step 1 call-1/r1 reasoning",
            "#2 step 1 call-1/r1.retry/memory memory_flush",
            "#3 step 1 call-1/r1.retry/summary summary",
            "#4 step 1 call-1/r1.retry reasoning"
        ]
    );
    let reasoning: Vec<Option<usize>> = all.iter().map(|p| p.reasoning_number).collect();
    assert_eq!(reasoning, [Some(1), None, None, Some(2)]);
    let budget = all[0].budget.expect("the scenario reproduces the limit");
    assert_eq!(
        (
            budget.output_reserve,
            budget.safety_margin,
            budget.input_limit
        ),
        (2_000, 320, 13_680)
    );
    assert!(matches!(
        all[0].outcome,
        ModelOutcome::Failed {
            kind: "context_overflow",
            reported: ReportedSizes {
                tokens: Some(3_152),
                limit: Some(1_500)
            },
            ..
        }
    ));
    let retry = &all[3];
    assert_eq!(retry.previous.map(|p| p.number), Some(1));
    assert_eq!(
        retry.transforms[0].figures.as_deref(),
        Some(
            "conversation 3707 tok in request #1 → 820 tok here; whole request 3710 → 823 tok \
             (forced: the provider rejected request #1 as too long)"
        )
    );
    assert!(matches!(retry.conversation[0], Entry::Summary(_)));
    let Entry::Exchange { call, results } = &retry.conversation[1] else {
        panic!("the tail starts with a tool exchange");
    };
    assert_eq!(
        call.calls,
        [("hist_0_8".to_string(), "execute".to_string())]
    );
    assert_eq!(results.len(), 1);
}

#[test]
fn the_page_is_self_contained_and_deterministic() {
    let (scenario, output) = recover_once();
    let page = html(&output, &scenario);
    assert_eq!(page, html(&output, &scenario));
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "no script");
    assert!(!page.contains("<link"), "no external stylesheet");
    assert!(!page.contains("@import") && !page.contains("url(http"));
    let outside = page
        .match_indices("http")
        .filter(|(at, _)| !page[*at..].starts_with("http://www.w3.org/2000/svg"))
        .count();
    assert_eq!(outside, 0, "the only URL is the SVG namespace");
    for id in ["request-1", "request-2", "request-3"] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(page.contains("✂ compaction cut"));
    // The request the provider rejected reads as one story, not a green badge beside a red one.
    let rejected = page
        .split("<section ")
        .find(|s| s.contains("then the model rejected it: context_overflow"))
        .expect("the rejected request's section");
    assert!(
        rejected.starts_with("id=\"request-1\" class=\"request rejected\""),
        "{}",
        &rejected[..80]
    );
    assert!(!rejected.contains("badge passed"));
    assert!(page.contains("<span class=\"badge passed\">passed, and answered</span>"));
    assert!(!page.contains("1 entries"), "plurals");
}

#[test]
fn the_limit_the_providers_error_names_is_the_one_the_bar_draws() {
    let (scenario, output) = recover_once();
    let chart = svg(&output.trace, &scenario);
    // Every bar spans the window (16,000 tokens) on a 700-pixel bar starting at x = 290: the
    // provider's 1,500 lands at 290 + 700 × 1500 / 16000 = 355.6.
    assert!(chart.contains("full width = 16000 tokens"));
    let marker = "<line x1=\"355.6\" y1=\"";
    assert_eq!(
        chart.matches(marker).count(),
        1,
        "one provider-limit marker, on the rejected request's bar, at 1500 of 16000"
    );
    assert!(chart.contains("the provider's own limit: 1500 tokens, as its error states"));
    assert!(chart.contains(">model context_overflow: 3152 / 1500 (provider)</text>"));
    // The harness's own figures stay beside it, named as such.
    assert!(chart.contains(">estimate 3710 / limit 13680 · passed</text>"));
    let page = html(&output, &scenario);
    assert!(page.contains("<tr><th>provider's limit (its error)</th><td class=\"num\">1500</td>"));
    assert!(page.contains("<tr><th>provider's count (its error)</th><td class=\"num\">3152</td>"));
    assert!(page.contains(
        "The provider counted 3152 tokens against its own limit of 1500 (the red line on the \
         bar); this harness estimated 3710 against an input limit of 13680."
    ));
    // A request answered normally has no provider figures.
    let answered = page
        .split("<section ")
        .find(|s| s.starts_with("id=\"request-3\""))
        .expect("the retry's section");
    assert!(!answered.contains("provider's limit"));
}
