//! The wire suite built into the binary: every scenario of `scenarios/wire/` with its mock model,
//! so `ctxbed conform --scenario NAME` and `ctxbed serve --builtin MODEL` work from any
//! directory, with no checkout of ctxbed beside them.
//!
//! **Invariant:** the list is the directory: a test checks that every `scenarios/wire/*.toml` is
//! here under its file name, with the mock model it names, and nothing else.

/// One built-in wire scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The scenario's name: its file name under `scenarios/wire/`, without `.toml`.
    pub name: &'static str,
    /// The scenario file's text.
    pub scenario: &'static str,
    /// The mock model it names (a file name under `mock-models/`, without `.toml`).
    pub model: &'static str,
    /// The mock model's text.
    pub mock: &'static str,
}

macro_rules! builtin {
    ($name:literal, $model:literal) => {
        Builtin {
            name: $name,
            scenario: include_str!(concat!("../../scenarios/wire/", $name, ".toml")),
            model: $model,
            mock: include_str!(concat!("../../mock-models/", $model, ".toml")),
        }
    };
}

/// Every built-in wire scenario, sorted by name.
pub const SUITE: &[Builtin] = &[
    builtin!("advertised-window", "wire-advertised"),
    builtin!("basic-tool-round", "wire-basic"),
    builtin!("cache-prefix", "wire-cache-prefix"),
    builtin!("chat-reasoning", "wire-deepseek-reasoning"),
    builtin!("completion-budget", "wire-completion-budget"),
    builtin!("count-tokens", "wire-count-tokens"),
    builtin!("cut-stream", "wire-cut-stream"),
    builtin!("empty-text-tool-call", "wire-empty-text"),
    builtin!("first-input-too-large", "wire-first-input"),
    builtin!("gateway-overflow", "wire-gateway-overflow"),
    builtin!("huge-tool-arguments", "wire-big-arguments"),
    builtin!("huge-tool-result", "wire-huge-result"),
    builtin!("images", "wire-images"),
    builtin!("images-anthropic", "wire-images-anthropic"),
    builtin!("invalid-tool-arguments", "wire-bad-arguments"),
    builtin!("long-session", "wire-long-session"),
    builtin!("malformed-reply", "wire-malformed"),
    builtin!("many-steps", "wire-many-steps"),
    builtin!("overflow-anthropic", "wire-overflow-anthropic"),
    builtin!("overflow-openai", "wire-overflow-openai"),
    builtin!("parallel-tools", "wire-parallel"),
    builtin!("parallel-tools-anthropic", "wire-parallel-anthropic"),
    builtin!("rate-limit-retry", "wire-rate-limit"),
    builtin!("rate-limit-storm", "wire-rate-limit-storm"),
    builtin!("responses-overflow", "wire-overflow-openai"),
    builtin!("responses-overflow-stream", "wire-overflow-openai"),
    builtin!("responses-reasoning", "wire-reasoning"),
    builtin!("resumed-session", "wire-resumed-session"),
    builtin!("second-overflow", "wire-second-overflow"),
    builtin!("summary-cut-fan-out", "wire-fan-out"),
    builtin!("thinking-compaction", "wire-thinking-loop"),
    builtin!("tool-error", "wire-tool-error"),
    builtin!("tool-results-languages", "wire-languages"),
    builtin!("tool-schemas-fill-window", "wire-many-tools"),
    builtin!("trim-starts-with-tool-result", "wire-two-reads"),
    builtin!("two-sessions", "wire-two-sessions"),
    builtin!("window-cjk", "wire-window-8k-cjk"),
    builtin!("window-cjk-no-usage", "wire-window-8k-cjk"),
    builtin!("window-english", "wire-window-8k-english"),
    builtin!("window-english-no-usage", "wire-window-8k-english"),
];

/// The built-in scenario `name` names (`overflow-openai`, or `wire/overflow-openai` as the suite
/// names it).
pub fn scenario(name: &str) -> Option<&'static Builtin> {
    let name = name.strip_prefix("wire/").unwrap_or(name);
    let name = name.strip_suffix(".toml").unwrap_or(name);
    SUITE.iter().find(|builtin| builtin.name == name)
}

/// The text of the built-in mock model `name` (`wire-window-8k-english`).
pub fn mock(name: &str) -> Option<&'static str> {
    let name = name.strip_suffix(".toml").unwrap_or(name);
    SUITE
        .iter()
        .find(|builtin| builtin.model == name)
        .map(|builtin| builtin.mock)
}

/// Every built-in mock model's name, sorted, each once.
pub fn mock_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = SUITE.iter().map(|builtin| builtin.model).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A scenario's one-line description (its `description` field), for `--list`.
pub fn description(builtin: &Builtin) -> String {
    toml::from_str::<toml::Table>(builtin.scenario)
        .ok()
        .and_then(|table| table.get("description")?.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_is_every_wire_scenario_with_the_model_it_names() {
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir("scenarios/wire")
            .expect("scenarios/wire")
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "toml"))
            .map(|path| {
                let text = std::fs::read_to_string(&path).expect("a scenario");
                let table: toml::Table = toml::from_str(&text).expect("TOML");
                let model = table["model"].as_str().expect("a model").to_string();
                let name = path
                    .file_stem()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned();
                (name, model)
            })
            .collect();
        on_disk.sort();
        let built_in: Vec<(String, String)> = SUITE
            .iter()
            .map(|b| (b.name.to_string(), b.model.to_string()))
            .collect();
        assert_eq!(built_in, on_disk, "update SUITE in src/conform/builtin.rs");
    }

    #[test]
    fn scenarios_and_mocks_are_found_by_either_name() {
        assert_eq!(
            scenario("wire/overflow-openai").map(|b| b.model),
            Some("wire-overflow-openai")
        );
        assert!(scenario("overflow-openai.toml").is_some());
        assert!(scenario("no-such").is_none());
        assert!(mock("wire-window-8k-english").is_some_and(|text| text.contains("window")));
        assert_eq!(mock_names().len(), 36);
        assert!(description(&SUITE[0]).len() > 10);
    }
}
