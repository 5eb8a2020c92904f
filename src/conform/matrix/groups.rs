//! How the matrix groups its rows and columns: each harness by its [`Kind`] (the reference,
//! Python libraries, TypeScript libraries, CLIs), each scenario by the [`Concern`] it tests.
//!
//! **Invariant:** [`CONCERNS`] is the one place a built-in scenario's concern is said; a test
//! checks that every scenario of the built-in suite has one. A user's scenario has none and is
//! shown under [`Concern::Other`].

use std::path::Path;

/// What a scenario tests, in the order the matrix shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Concern {
    /// Keeping each request inside the window: trimming, counting, budgets.
    Window,
    /// Every tool call answered, and each step making progress.
    Pairing,
    /// Recovering from an overflow or a rate limit.
    Recovery,
    /// Sessions kept apart, continued and retained.
    Sessions,
    /// What one API needs beyond the others.
    Apis,
    /// Broken streams and replies.
    Faults,
    /// A scenario without a concern (a user's own file).
    Other,
}

impl Concern {
    /// Every concern, in the matrix's order.
    pub const ALL: [Concern; 7] = [
        Concern::Window,
        Concern::Pairing,
        Concern::Recovery,
        Concern::Sessions,
        Concern::Apis,
        Concern::Faults,
        Concern::Other,
    ];

    /// The heading of its columns.
    pub fn title(self) -> &'static str {
        match self {
            Concern::Window => "Window",
            Concern::Pairing => "Pairing and progress",
            Concern::Recovery => "Recovery",
            Concern::Sessions => "Sessions and retention",
            Concern::Apis => "APIs",
            Concern::Faults => "Faults",
            Concern::Other => "Other",
        }
    }

    /// Its title as a Markdown heading's anchor (`pairing-and-progress`).
    pub fn anchor(self) -> String {
        self.title().to_lowercase().replace(' ', "-")
    }
}

/// The concern of every built-in wire scenario, by name.
pub const CONCERNS: &[(&str, Concern)] = &[
    ("advertised-window", Concern::Window),
    ("basic-tool-round", Concern::Pairing),
    ("cache-prefix", Concern::Sessions),
    ("chat-reasoning", Concern::Apis),
    ("completion-budget", Concern::Window),
    ("count-tokens", Concern::Window),
    ("cut-stream", Concern::Faults),
    ("empty-text-tool-call", Concern::Pairing),
    ("first-input-too-large", Concern::Window),
    ("gateway-overflow", Concern::Recovery),
    ("huge-tool-arguments", Concern::Window),
    ("huge-tool-result", Concern::Window),
    ("images", Concern::Window),
    ("images-anthropic", Concern::Window),
    ("invalid-tool-arguments", Concern::Pairing),
    ("long-session", Concern::Sessions),
    ("malformed-reply", Concern::Faults),
    ("many-steps", Concern::Sessions),
    ("overflow-anthropic", Concern::Recovery),
    ("overflow-openai", Concern::Recovery),
    ("parallel-tools", Concern::Pairing),
    ("parallel-tools-anthropic", Concern::Pairing),
    ("rate-limit-retry", Concern::Recovery),
    ("rate-limit-storm", Concern::Recovery),
    ("responses-overflow", Concern::Recovery),
    ("responses-overflow-stream", Concern::Recovery),
    ("responses-reasoning", Concern::Apis),
    ("resumed-session", Concern::Sessions),
    ("second-overflow", Concern::Recovery),
    ("summary-cut-fan-out", Concern::Pairing),
    ("thinking-compaction", Concern::Pairing),
    ("tool-error", Concern::Pairing),
    ("tool-results-languages", Concern::Window),
    ("tool-schemas-fill-window", Concern::Window),
    ("trim-starts-with-tool-result", Concern::Pairing),
    ("two-sessions", Concern::Sessions),
    ("window-cjk", Concern::Window),
    ("window-cjk-no-usage", Concern::Window),
    ("window-english", Concern::Window),
    ("window-english-no-usage", Concern::Window),
];

/// The concern of a scenario as the suite names it (`wire/overflow-openai`, or `overflow-openai`).
pub fn concern_of(scenario: &str) -> Concern {
    let name = scenario.strip_prefix("wire/").unwrap_or(scenario);
    CONCERNS
        .iter()
        .find(|(known, _)| *known == name)
        .map_or(Concern::Other, |(_, concern)| *concern)
}

/// What a harness is, in the order the matrix shows its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// ctxbed's own harness (`ctxbed`, `ctxbed-ratio`): the rows others are read against.
    Reference,
    Python,
    TypeScript,
    /// A coding-agent CLI (its adapter's `ready` says `"kind":"cli"`).
    Cli,
    /// Neither: a command-line adapter (`--adapter`), or a directory of unknown language.
    Other,
}

impl Kind {
    /// The heading of its rows.
    pub fn title(self) -> &'static str {
        match self {
            Kind::Reference => "Reference",
            Kind::Python => "Python libraries",
            Kind::TypeScript => "TypeScript libraries",
            Kind::Cli => "CLIs",
            Kind::Other => "Other adapters",
        }
    }
}

/// The reference harnesses' adapter directories.
pub const REFERENCE: [&str; 2] = ["ctxbed", "ctxbed-ratio"];

/// The kind of `harness`: a CLI when its `ready` line `declared` so, the reference by name,
/// else the language of its adapter directory under `peers_dir` (`requirements.in` or
/// `requirements.txt`: Python; `package.json`: TypeScript). A directory with neither whose `run`
/// starts another adapter (`../<name>/run`) has that adapter's language.
pub fn kind_of(peers_dir: &Path, harness: &str, declared: &str) -> Kind {
    if declared == "cli" {
        return Kind::Cli;
    }
    if REFERENCE.contains(&harness) {
        return Kind::Reference;
    }
    let dir = peers_dir.join(harness);
    match language(&dir) {
        Kind::Other => std::fs::read_to_string(dir.join("run"))
            .ok()
            .and_then(|run| delegate(&run))
            .filter(|other| other != harness)
            .map_or(Kind::Other, |other| language(&peers_dir.join(other))),
        kind => kind,
    }
}

/// The language of an adapter directory, by the files that describe its environment.
fn language(dir: &Path) -> Kind {
    if ["requirements.in", "requirements.txt"]
        .iter()
        .any(|file| dir.join(file).is_file())
    {
        Kind::Python
    } else if dir.join("package.json").is_file() {
        Kind::TypeScript
    } else {
        Kind::Other
    }
}

/// The sibling adapter a `run` script starts (`exec "$here/../openai-agents/run"`), if any.
fn delegate(run: &str) -> Option<String> {
    let (before, _) = run.split_once("/run")?;
    let name = before.rsplit_once("../")?.1;
    (!name.is_empty() && !name.contains(['/', '"', ' ', '$'])).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::builtin::SUITE;

    #[test]
    fn every_built_in_scenario_has_a_concern_and_no_other_has() {
        for builtin in SUITE {
            assert_ne!(
                concern_of(&format!("wire/{}", builtin.name)),
                Concern::Other,
                "{}: add it to CONCERNS in src/conform/matrix/groups.rs",
                builtin.name
            );
        }
        let names: Vec<&str> = CONCERNS.iter().map(|(name, _)| *name).collect();
        let suite: Vec<&str> = SUITE.iter().map(|builtin| builtin.name).collect();
        assert_eq!(names, suite, "CONCERNS lists the suite, sorted, each once");
        assert_eq!(concern_of("wire/my-own-scenario"), Concern::Other);
        assert_eq!(concern_of("window-english"), Concern::Window);
    }

    #[test]
    fn kinds_come_from_the_ready_line_the_name_or_the_adapters_files() {
        let peers = tempfile::tempdir().expect("temp dir");
        let make = |name: &str, file: &str, text: &str| {
            let dir = peers.path().join(name);
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(dir.join(file), text).expect("file");
        };
        make("py", "requirements.in", "x\n");
        make("ts", "package.json", "{}\n");
        make("py-chat", "run", "#!/bin/sh\nexec \"$here/../py/run\"\n");
        make("odd", "run", "#!/bin/sh\nexec ./thing\n");
        let kind = |name: &str, declared: &str| kind_of(peers.path(), name, declared);
        assert_eq!(kind("ctxbed", ""), Kind::Reference);
        assert_eq!(kind("ctxbed-ratio", ""), Kind::Reference);
        assert_eq!(kind("py", ""), Kind::Python);
        assert_eq!(kind("py", "cli"), Kind::Cli);
        assert_eq!(kind("ts", "library"), Kind::TypeScript);
        assert_eq!(kind("py-chat", ""), Kind::Python);
        assert_eq!(kind("odd", ""), Kind::Other);
        assert_eq!(kind("adapter", ""), Kind::Other);
    }
}
