//! Bug files (`bugs/<id>.toml`, docs/bug-format.md): one real, fixed bug of a harness, the
//! versions before and after its fix, its public reports, and the wire scenarios that tell the
//! two apart. Read with every mistake reported at once, each at its line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::conform::builtin;
use crate::scenario::format::diagnostic::{Diagnostic, Diagnostics, closest, from_toml};
use crate::scenario::format::shape::LazyShape;
use crate::scenario::format::source::read_source;

/// The rules a bug may be expected to break: the wire rules of `ctxbed conform`
/// (docs/peer-protocol.md) and `expect`, the scenario's own expectations.
pub const RULES: [&str; 20] = [
    "adapter",
    "api",
    "budget",
    "count_tokens",
    "duplicate_result",
    "expect",
    "input",
    "loop",
    "model_called",
    "overflow_retry",
    "pairing",
    "progress",
    "reasoning",
    "references",
    "refused",
    "reply",
    "retention",
    "retry_after",
    "system",
    "window",
];

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBug {
    #[schemars(with = "String")]
    id: Spanned<String>,
    #[schemars(with = "String")]
    harness: Spanned<String>,
    title: String,
    #[schemars(with = "Vec<String>")]
    references: Spanned<Vec<Spanned<String>>>,
    #[schemars(with = "Vec<String>")]
    scenarios: Spanned<Vec<Spanned<String>>>,
    #[schemars(with = "String")]
    rule: Spanned<String>,
    #[schemars(with = "BTreeMap<String, String>")]
    before: Spanned<BTreeMap<String, Spanned<String>>>,
    #[schemars(with = "BTreeMap<String, String>")]
    after: Spanned<BTreeMap<String, Spanned<String>>>,
    #[serde(default)]
    note: String,
    #[schemars(with = "Option<String>")]
    false_alarm: Option<Spanned<String>>,
    needs: Option<String>,
    /// A configuration of the adapter other than the row's own, as its README lists them, given
    /// to it as `CTXBED_PEER_VARIANT`.
    #[schemars(with = "Option<String>")]
    variant: Option<Spanned<String>>,
}

/// A wire scenario a bug runs: built in, or a file beside the bug file.
#[derive(Debug, Clone, PartialEq)]
pub enum ScenarioRef {
    Builtin(&'static str),
    File(PathBuf),
}

impl ScenarioRef {
    /// The name the page and the reports show.
    pub fn name(&self) -> String {
        match self {
            ScenarioRef::Builtin(name) => (*name).to_string(),
            ScenarioRef::File(path) => path.display().to_string(),
        }
    }
}

/// A checked bug file.
#[derive(Debug, Clone)]
pub struct Bug {
    pub id: String,
    pub harness: String,
    pub title: String,
    pub references: Vec<String>,
    pub scenarios: Vec<ScenarioRef>,
    pub rule: String,
    /// Package and version, sorted by package.
    pub before: Vec<(String, String)>,
    pub after: Vec<(String, String)>,
    pub note: String,
    pub false_alarm: Option<String>,
    pub needs: Option<String>,
    /// The adapter configuration the bug needs (`CTXBED_PEER_VARIANT`), when not the row's own.
    pub variant: Option<String>,
    /// The directory of the bug file (scenario paths and `locks/` are relative to it).
    pub dir: PathBuf,
}

impl Bug {
    /// The harness as reports show it: with its variant, when the bug needs one.
    pub fn row(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{} ({variant})", self.harness),
            None => self.harness.clone(),
        }
    }

    /// `package version, …` of one side, for reports.
    pub fn versions(side: &[(String, String)]) -> String {
        side.iter()
            .map(|(package, version)| format!("{package} {version}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The JSON Schema of the bug-file format (`ctxbed schema bug`).
pub fn schema() -> Value {
    crate::scenario::format::shape::titled(
        serde_json::to_value(schemars::schema_for!(RawBug)).unwrap_or_default(),
        "ctxbed bug file",
        "A real, fixed harness bug replayed by `ctxbed bugs` (bugs/<id>.toml). See docs/bug-format.md.",
    )
}

static SHAPE: LazyShape = LazyShape::new(schema);

/// Reads and checks a bug file.
///
/// # Errors
/// Every problem found, each with file, line, column and a hint.
pub fn load(path: &Path) -> Result<Bug, Diagnostics> {
    let label = path.display().to_string();
    let source = read_source(path, &label).map_err(|d| Diagnostics(vec![*d]))?;
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned());
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&label, &source, stem.as_deref(), &dir)
}

/// Parses and checks bug-file text; `stem` is the file's name without `.toml` (the id must
/// equal it), `dir` the directory scenario paths are relative to.
///
/// # Errors
/// Every problem found.
pub fn parse(
    label: &str,
    source: &str,
    stem: Option<&str>,
    dir: &Path,
) -> Result<Bug, Diagnostics> {
    let shape = SHAPE.problems(label, source);
    if !shape.is_empty() {
        return Err(Diagnostics(shape));
    }
    let raw: RawBug =
        toml::from_str(source).map_err(|e| Diagnostics(vec![from_toml(label, source, &e)]))?;
    let mut checker = Checker {
        label,
        source,
        problems: Vec::new(),
    };
    checker.id(&raw.id, stem);
    checker.name(&raw.harness, "harness");
    if let Some(variant) = &raw.variant {
        checker.variant(variant);
    }
    checker.references(&raw.references, raw.false_alarm.as_ref());
    let scenarios = checker.scenarios(&raw.scenarios, dir);
    checker.rule(&raw.rule);
    let before = checker.versions(&raw.before, "before");
    let after = checker.versions(&raw.after, "after");
    if !before.is_empty() && before == after {
        checker.problem(
            raw.after.span(),
            "after",
            "the versions after are those before",
            "name the first release without the bug",
        );
    }
    if !checker.problems.is_empty() {
        crate::scenario::format::diagnostic::sort(&mut checker.problems);
        return Err(Diagnostics(checker.problems));
    }
    Ok(Bug {
        id: raw.id.into_inner(),
        harness: raw.harness.into_inner(),
        title: raw.title,
        references: raw
            .references
            .into_inner()
            .into_iter()
            .map(Spanned::into_inner)
            .collect(),
        scenarios,
        rule: raw.rule.into_inner(),
        before,
        after,
        note: raw.note,
        false_alarm: raw.false_alarm.map(Spanned::into_inner),
        needs: raw.needs,
        variant: raw.variant.map(Spanned::into_inner),
        dir: dir.to_path_buf(),
    })
}

/// Checks a bug file's parts, collecting every problem with its place.
struct Checker<'a> {
    label: &'a str,
    source: &'a str,
    problems: Vec<Diagnostic>,
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// `owner/repo#N`, as GitHub writes a reference.
pub fn is_reference(text: &str) -> bool {
    let Some((repo, number)) = text.split_once('#') else {
        return false;
    };
    let Some((owner, name)) = repo.split_once('/') else {
        return false;
    };
    let word = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    word(owner) && word(name) && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
}

impl Checker<'_> {
    /// Records a problem at `span`, with a hint when `help` is not empty.
    fn problem(
        &mut self,
        span: std::ops::Range<usize>,
        field: &str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        let mut diagnostic = Diagnostic::at(self.label, self.source, span, message).field(field);
        let help = help.into();
        if !help.is_empty() {
            diagnostic = diagnostic.help(help);
        }
        self.problems.push(diagnostic);
    }

    fn id(&mut self, id: &Spanned<String>, stem: Option<&str>) {
        if !is_name(id.get_ref()) {
            self.problem(
                id.span(),
                "id",
                format!("`{}` is not a bug id", id.get_ref()),
                "lowercase letters, digits and single `-`, as `lc-summ-parallel-orphan`",
            );
        } else if let Some(stem) = stem.filter(|stem| *stem != id.get_ref()) {
            self.problem(
                id.span(),
                "id",
                format!("the id is `{}` but the file is `{stem}.toml`", id.get_ref()),
                "name the file after the id",
            );
        }
    }

    fn name(&mut self, name: &Spanned<String>, field: &str) {
        if !is_name(name.get_ref()) {
            self.problem(
                name.span(),
                field,
                format!("`{}` is not an adapter name", name.get_ref()),
                "the name of a directory under peers/, as `langchain`",
            );
        }
    }

    fn variant(&mut self, variant: &Spanned<String>) {
        if !is_name(variant.get_ref()) {
            self.problem(
                variant.span(),
                "variant",
                format!("`{}` is not a variant name", variant.get_ref()),
                "a configuration the adapter's README lists, as `sliding-window`",
            );
        }
    }

    fn references(
        &mut self,
        references: &Spanned<Vec<Spanned<String>>>,
        false_alarm: Option<&Spanned<String>>,
    ) {
        if references.get_ref().is_empty() {
            self.problem(
                references.span(),
                "references",
                "a bug needs its public reports",
                "the issue and the fixing pull request, as \"owner/repo#123\"",
            );
        }
        for (index, reference) in references.get_ref().iter().enumerate() {
            if !is_reference(reference.get_ref()) {
                self.problem(
                    reference.span(),
                    &format!("references[{index}]"),
                    format!("`{}` is not a reference", reference.get_ref()),
                    "write it as GitHub does: \"owner/repo#123\"",
                );
            }
        }
        if let Some(text) = false_alarm {
            let cites = text
                .get_ref()
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '(' || c == ')')
                .any(is_reference);
            if !cites {
                self.problem(
                    text.span(),
                    "false_alarm",
                    "an explained false alarm cites the other bug",
                    "name its report, as \"owner/repo#123\"",
                );
            }
        }
    }

    fn scenarios(
        &mut self,
        scenarios: &Spanned<Vec<Spanned<String>>>,
        dir: &Path,
    ) -> Vec<ScenarioRef> {
        if scenarios.get_ref().is_empty() {
            self.problem(
                scenarios.span(),
                "scenarios",
                "a bug needs a scenario that tells before from after",
                "a built-in wire scenario (`ctxbed conform --list`) or a .toml file beside the bug",
            );
        }
        let mut found = Vec::new();
        for (index, scenario) in scenarios.get_ref().iter().enumerate() {
            let text = scenario.get_ref();
            let field = format!("scenarios[{index}]");
            if text.ends_with(".toml") {
                let path = dir.join(text);
                if path.is_file() {
                    found.push(ScenarioRef::File(path));
                } else {
                    self.problem(
                        scenario.span(),
                        &field,
                        format!("no scenario file {}", path.display()),
                        "a path relative to the bug file",
                    );
                }
            } else if let Some(builtin) = builtin::scenario(text) {
                found.push(ScenarioRef::Builtin(builtin.name));
            } else {
                let names: Vec<&str> = builtin::SUITE.iter().map(|builtin| builtin.name).collect();
                let help = closest(text, names.iter().copied()).map_or_else(
                    || "`ctxbed conform --list` names the built-in scenarios".to_string(),
                    |best| format!("did you mean `{best}`?"),
                );
                self.problem(
                    scenario.span(),
                    &field,
                    format!("no built-in scenario `{text}`"),
                    help,
                );
            }
        }
        found
    }

    fn rule(&mut self, rule: &Spanned<String>) {
        if !RULES.contains(&rule.get_ref().as_str()) {
            let help = closest(rule.get_ref(), RULES).map_or_else(
                || format!("one of: {}", RULES.join(", ")),
                |best| format!("did you mean `{best}`?"),
            );
            self.problem(
                rule.span(),
                "rule",
                format!("no rule `{}`", rule.get_ref()),
                help,
            );
        }
    }

    fn versions(
        &mut self,
        side: &Spanned<BTreeMap<String, Spanned<String>>>,
        field: &str,
    ) -> Vec<(String, String)> {
        if side.get_ref().is_empty() {
            self.problem(
                side.span(),
                field,
                "no package named",
                "package = \"version\", as langchain = \"1.1.1\"",
            );
        }
        let package_ok = |name: &str| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | '/'))
        };
        let version_ok = |version: &str| {
            version.starts_with(|c: char| c.is_ascii_digit())
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        };
        let mut found = Vec::new();
        for (package, version) in side.get_ref() {
            let at = format!("{field}.{package}");
            if !package_ok(package) {
                self.problem(
                    side.span(),
                    &at,
                    format!("`{package}` is not a package name"),
                    "",
                );
            } else if !version_ok(version.get_ref()) {
                self.problem(
                    version.span(),
                    &at,
                    format!("`{}` is not a version", version.get_ref()),
                    "an exact published version, as \"1.1.2\"",
                );
            } else {
                found.push((package.clone(), version.get_ref().clone()));
            }
        }
        found
    }
}
