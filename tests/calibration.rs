//! Token counts against real providers (issue 52): every countable request of the recorded
//! exchanges in `../shared/calibration/exchanges.jsonl.gz` (beside the repository, never in it)
//! is counted exactly as `ctxbed serve` counts it for the window check
//! ([`ProviderHost::count_body`]: the body read back as the host reads its API, then
//! `host::counting`), and compared with the input tokens the provider reported.
//!
//! Targets (issue 52): OpenAI (Chat Completions and Responses) within ±1 % or ±3 tokens on at
//! least 95 % of the requests, and at most 1 in 100 under by more than that; Anthropic within
//! ±5 % on at least 90 %, and at most 1 in 100 under by more than 5 %. The table printed per API
//! and model family is the one BENCHMARKS.md ("Token counts against real providers") quotes:
//! `cargo test --test calibration -- --nocapture`.
//!
//! Without the file the test says so and passes, unless `CI=true`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;

use ctxbed_harness::model::ModelInfo;
use ctxbed_sim::host::counting::Family;
use ctxbed_sim::host::{Api, HostFaults, ProviderHost};
use ctxbed_sim::mock::{MockModel, MockScript};
use serde_json::Value;

/// One recorded exchange: what was asked, and what the provider counted.
struct Recorded {
    api: String,
    model: String,
    status: u64,
    provider: u64,
    /// The provider's usage object, as recorded.
    usage: Value,
    body: Value,
}

fn corpus_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/calibration/exchanges.jsonl.gz")
}

/// The recorded exchanges, or `None` when the file is not there.
fn load() -> Option<Vec<Recorded>> {
    let file = std::fs::File::open(corpus_path()).ok()?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let mut rows = Vec::new();
    for line in reader.lines() {
        let line = line.expect("the corpus reads as gzip text");
        let row: Value = serde_json::from_str(&line).expect("each line is JSON");
        let text = |key: &str| row[key].as_str().unwrap_or_default().to_string();
        rows.push(Recorded {
            api: text("api"),
            model: text("model"),
            status: row["status"].as_u64().unwrap_or(0),
            provider: provider_tokens(&row),
            usage: row["usage"].clone(),
            body: row["body"].clone(),
        });
    }
    Some(rows)
}

/// The input tokens the provider counted. For Anthropic the corpus's figure already holds the
/// tokens read from and written to the prompt cache (`input_tokens` + `cache_read_input_tokens`
/// + `cache_creation_input_tokens`), as the window counts them.
fn provider_tokens(row: &Value) -> u64 {
    row["provider_input_tokens"].as_u64().unwrap_or(0)
}

/// Tool types each API runs itself (a client tool is `function`, or untyped/`custom` on
/// Anthropic).
fn server_tool(api: &str, tool: &Value) -> bool {
    let kind = tool.get("type").and_then(Value::as_str);
    match api {
        "chat" | "responses" => kind != Some("function"),
        _ => !matches!(kind, None | Some("custom")),
    }
}

/// Content parts and input items that hold what the body alone does not show: files and
/// documents (their text is extracted by the provider), audio, and the calls and results of
/// tools the provider ran itself.
const UNCOUNTABLE_PARTS: [(&str, &str); 6] = [
    (
        "document",
        "documents or files (text extracted by the provider)",
    ),
    (
        "file",
        "documents or files (text extracted by the provider)",
    ),
    (
        "input_file",
        "documents or files (text extracted by the provider)",
    ),
    (
        "container_upload",
        "documents or files (text extracted by the provider)",
    ),
    ("input_audio", "audio"),
    ("compaction", "server-side compaction or context state"),
];

/// Why a recorded request cannot be counted from its body alone, or `None` when it can.
fn exclusion(row: &Recorded) -> Option<&'static str> {
    let body = &row.body;
    if row.status != 200 {
        return Some("not answered (status other than 200)");
    }
    // OpenRouter's usage carries its `cost` and `is_byok`: the request went to whatever model
    // OpenRouter routed it to (the replies name moonshotai/kimi-k2 for a gpt-4.1-mini
    // request), whose tokenizer is not OpenAI's.
    if ["cost", "is_byok"]
        .iter()
        .any(|key| row.usage.get(*key).is_some())
    {
        return Some("not served by the provider (routed through OpenRouter)");
    }
    if row.provider == 0 {
        return Some("no count reported (a background response not yet run)");
    }
    if ["previous_response_id", "conversation"]
        .iter()
        .any(|key| body.get(*key).is_some_and(|v| !v.is_null()))
    {
        return Some("stored state (previous_response_id, conversation)");
    }
    if [
        "context_management",
        "mcp_servers",
        "container",
        "web_search_options",
    ]
    .iter()
    .any(|key| body.get(*key).is_some_and(|v| !v.is_null()))
        || body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| server_tool(&row.api, tool)))
    {
        return Some("server-side tools or context management");
    }
    let items = body["messages"]
        .as_array()
        .or(body["input"].as_array())
        .cloned()
        .unwrap_or_default();
    for item in &items {
        if let Some(reason) = item_exclusion(&row.api, item) {
            return Some(reason);
        }
    }
    None
}

/// Why one message or input item makes a request uncountable.
fn item_exclusion(api: &str, item: &Value) -> Option<&'static str> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    let readable = [
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
    ];
    if api == "responses" && !readable.contains(&kind) {
        return Some("server-side tool calls or items in the history");
    }
    if kind == "reasoning" && item.get("encrypted_content").is_some_and(|v| !v.is_null()) {
        return Some("encrypted reasoning carried back (its tokens are hidden)");
    }
    parts_exclusion(item)
}

/// Why the content parts of `item` (a message, or a block that holds parts of its own, as an
/// Anthropic `tool_result` does) make a request uncountable.
fn parts_exclusion(item: &Value) -> Option<&'static str> {
    let parts = item["content"].as_array().cloned().unwrap_or_default();
    for part in &parts {
        if let Some(reason) = parts_exclusion(part) {
            return Some(reason);
        }
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some((_, reason)) = UNCOUNTABLE_PARTS.iter().find(|(k, _)| *k == kind) {
            return Some(reason);
        }
        let server = kind.contains("server_tool")
            || kind.starts_with("mcp_")
            || (kind.ends_with("_tool_result") && kind != "tool_result")
            || kind == "tool_addition";
        if server {
            return Some("server-side tool calls or items in the history");
        }
        let url = part["image_url"]["url"]
            .as_str()
            .or(part["image_url"].as_str())
            .or(part["source"]["url"].as_str());
        let by_url = url.is_some_and(|url| !url.starts_with("data:"))
            || part["source"]["type"].as_str() == Some("url");
        if by_url {
            return Some("image given by URL (not fetched)");
        }
        if part["source"]["type"].as_str() == Some("file") {
            return Some("documents or files (text extracted by the provider)");
        }
    }
    None
}

/// The host's API for a recorded one.
fn host_api(api: &str) -> Api {
    match api {
        "chat" => Api::OpenAi,
        "responses" => Api::Responses,
        _ => Api::Anthropic,
    }
}

/// Whether a count is within the target's band, and whether it is under it.
#[derive(Clone, Copy)]
struct Target {
    /// Relative tolerance, in hundredths of a percent.
    basis_points: u64,
    /// Absolute tolerance in tokens (OpenAI's ±3).
    tokens: u64,
    within_share_min: f64,
}

const OPENAI: Target = Target {
    basis_points: 100,
    tokens: 3,
    within_share_min: 0.95,
};
const ANTHROPIC: Target = Target {
    basis_points: 500,
    tokens: 0,
    within_share_min: 0.90,
};

impl Target {
    fn tolerance(self, provider: u64) -> u64 {
        (provider * self.basis_points / 10_000).max(self.tokens)
    }
    fn within(self, count: u64, provider: u64) -> bool {
        count.abs_diff(provider) <= self.tolerance(provider)
    }
    fn under(self, count: u64, provider: u64) -> bool {
        count < provider && !self.within(count, provider)
    }
}

/// The counts of one group of requests: (ours, the provider's).
#[derive(Default)]
struct Group {
    pairs: Vec<(u64, u64)>,
}

impl Group {
    /// Relative errors in percent, sorted.
    fn errors(&self) -> Vec<f64> {
        let mut errors: Vec<f64> = self
            .pairs
            .iter()
            .map(|&(ours, theirs)| (ours as f64 - theirs as f64) * 100.0 / theirs.max(1) as f64)
            .collect();
        errors.sort_by(f64::total_cmp);
        errors
    }

    fn share(&self, test: impl Fn(u64, u64) -> bool) -> f64 {
        let hits = self.pairs.iter().filter(|&&(a, b)| test(a, b)).count();
        hits as f64 / self.pairs.len().max(1) as f64
    }

    fn row(&self, name: &str, target: Target) -> String {
        let errors = self.errors();
        let median = errors.get(errors.len() / 2).copied().unwrap_or(0.0);
        let worst = errors
            .iter()
            .copied()
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
            .unwrap_or(0.0);
        format!(
            "| {name:<26} | {:>4} | {:>6.1} % | {:>+7.1} % | {:>+8.1} % | {:>5.1} % |",
            self.pairs.len(),
            self.share(|a, b| target.within(a, b)) * 100.0,
            median,
            worst,
            self.share(|a, b| target.under(a, b)) * 100.0,
        )
    }
}

fn host() -> ProviderHost {
    let info = ModelInfo {
        name: "calibration".into(),
        context_window: None,
        max_output_tokens: None,
    };
    ProviderHost::new(
        MockModel::new(MockScript::new(info, Vec::new())),
        HostFaults::default(),
    )
}

/// The provider side of a recorded API: OpenAI's two APIs share a target.
fn provider_of(api: &str) -> &'static str {
    if api == "chat" || api == "responses" {
        "openai"
    } else {
        "anthropic"
    }
}

/// Where the counts stood when they were last improved, per provider: at least this many
/// requests within the band and at most this many under it. Counting may only get better; the issue's
/// own targets are [`OPENAI`] and [`ANTHROPIC`], checked by
/// `issue_targets_are_met` (ignored until they are: see BENCHMARKS.md).
const REACHED: [(&str, usize, usize); 2] = [("openai", 335, 13), ("anthropic", 161, 20)];

/// Every countable recorded request counted as `serve` counts it, per API, family and provider;
/// `None` when the corpus is not there (outside CI).
fn counted() -> Option<BTreeMap<&'static str, Group>> {
    let Some(rows) = load() else {
        let path = corpus_path();
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the calibration corpus {} is missing",
            path.display()
        );
        eprintln!(
            "calibration skipped: {} is not there (CI clones shared/ beside the repository)",
            path.display()
        );
        return None;
    };
    let host = host();
    let mut excluded: BTreeMap<&str, usize> = BTreeMap::new();
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let mut providers: BTreeMap<&str, Group> = BTreeMap::new();
    for row in &rows {
        if let Some(reason) = exclusion(row) {
            *excluded.entry(reason).or_default() += 1;
            continue;
        }
        let count = host.count_body(host_api(&row.api), &row.body);
        let pair = (count, row.provider);
        if let Ok(path) = std::env::var("CTXBED_CALIBRATION_DUMP") {
            dump(&path, row, count);
        }
        let family = Family::of(&row.model).name().to_string();
        groups
            .entry((row.api.clone(), family))
            .or_default()
            .pairs
            .push(pair);
        providers
            .entry(provider_of(&row.api))
            .or_default()
            .pairs
            .push(pair);
    }
    report(&rows, &excluded, &groups, &providers);
    Some(providers)
}

#[test]
fn host_counts_are_no_worse_than_last_measured() {
    let Some(providers) = counted() else { return };
    for (provider, within_min, under_max) in REACHED {
        let target = if provider == "openai" {
            OPENAI
        } else {
            ANTHROPIC
        };
        let group = &providers[provider];
        let _ = verdict(provider, target, group);
        let count = |test: &dyn Fn(u64, u64) -> bool| {
            group.pairs.iter().filter(|&&(a, b)| test(a, b)).count()
        };
        let within = count(&|a, b| target.within(a, b));
        let under = count(&|a, b| target.under(a, b));
        assert!(
            within >= within_min,
            "{provider}: {within} requests within the band, fewer than the {within_min} before"
        );
        assert!(
            under <= under_max,
            "{provider}: {under} requests under by more than the band, more than the {under_max} before"
        );
    }
}

/// Issue 52's targets. Not met yet (BENCHMARKS.md says where each provider stands and why);
/// run with `cargo test --test calibration -- --ignored`.
#[test]
#[ignore = "issue 52's calibration targets are not met yet; see BENCHMARKS.md"]
fn issue_targets_are_met() {
    let Some(providers) = counted() else { return };
    let unmet: Vec<String> = [("openai", OPENAI), ("anthropic", ANTHROPIC)]
        .into_iter()
        .flat_map(|(provider, target)| verdict(provider, target, &providers[provider]))
        .collect();
    assert!(
        unmet.is_empty(),
        "issue 52's targets are not met:\n  {}",
        unmet.join("\n  ")
    );
}

/// Each target `provider`'s counts miss, in words (none when all are met), after printing
/// where they stand.
fn verdict(provider: &str, target: Target, group: &Group) -> Vec<String> {
    let within = group.share(|a, b| target.within(a, b));
    let under = group.share(|a, b| target.under(a, b));
    let n = group.pairs.len() as f64;
    println!(
        "{provider}: {:.1} % within (target {:.0} %), {:.1} % under ({:.0} of {n:.0}; target at most 1 %)",
        within * 100.0,
        target.within_share_min * 100.0,
        under * 100.0,
        under * n,
    );
    let mut unmet = Vec::new();
    if within < target.within_share_min {
        unmet.push(format!(
            "{provider}: {:.1} % within the band, {:.0} % needed",
            within * 100.0,
            target.within_share_min * 100.0
        ));
    }
    if under > 0.01 {
        unmet.push(format!(
            "{provider}: {:.1} % under by more than the band ({:.0} requests), at most 1 % allowed",
            under * 100.0,
            under * n
        ));
    }
    unmet
}

/// Appends one counted request's id-free figures to `path` (outside the repository), for
/// looking into a family's errors.
fn dump(path: &str, row: &Recorded, count: u64) {
    use std::io::Write;
    let line = serde_json::json!({
        "api": row.api, "model": row.model, "ours": count, "provider": row.provider,
        "body": row.body,
    });
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

fn report(
    rows: &[Recorded],
    excluded: &BTreeMap<&str, usize>,
    groups: &BTreeMap<(String, String), Group>,
    providers: &BTreeMap<&str, Group>,
) {
    let counted: usize = providers.values().map(|g| g.pairs.len()).sum();
    println!(
        "{} recorded exchanges: {counted} counted, {} excluded",
        rows.len(),
        rows.len() - counted
    );
    for (reason, n) in excluded {
        println!("  excluded {n:>4}: {reason}");
    }
    println!(
        "| API × family               |    n | within    | median    | worst      | under   |"
    );
    println!(
        "| -------------------------- | ---- | --------- | --------- | ---------- | ------- |"
    );
    for ((api, family), group) in groups {
        let target = if provider_of(api) == "openai" {
            OPENAI
        } else {
            ANTHROPIC
        };
        println!("{}", group.row(&format!("{api} {family}"), target));
    }
    for (provider, group) in providers {
        let target = if *provider == "openai" {
            OPENAI
        } else {
            ANTHROPIC
        };
        println!("{}", group.row(&format!("all {provider}"), target));
    }
}
