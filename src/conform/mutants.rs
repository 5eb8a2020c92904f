//! `ctxbed conform --mutants`: every wire scenario against the reference harness and against
//! each of its mutants ([`plant::MUTANTS`](super::plant::MUTANTS): the same harness with one
//! defect real harnesses have shown), and the kill matrix that results: which scenario fails
//! which mutant, on which rule.
//!
//! The matrix holds the suite to account ([`problems`]): the reference passes every scenario;
//! each scenario fails the mutants it declares (`defects = [...]`); each mutant fails at least
//! one scenario; and the two that do nothing (`no_results`, `no_history`) fail every scenario
//! where their rule had something to judge in the reference's run.
//!
//! **Invariant:** the page ([`markdown`]) depends on the verdicts only, never on timing, so the
//! committed `docs/mutants.md` is what the command writes on any machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::plant::{MUTANTS, PLANT_VARIABLE};
use super::{Cell, CellReport};

/// The name the reference harness's runs are reported under.
pub const REFERENCE: &str = "reference";

/// The prefix of a mutant's runs (`mutant-no_results`).
const PREFIX: &str = "mutant-";

/// The adapters a kill matrix runs, as `--adapter` command lines with their names: the
/// reference harness with nothing planted, then each mutant.
pub fn adapters() -> Vec<(String, String)> {
    let line = |plant: &str| format!("{PLANT_VARIABLE}={plant} exec \"$CTXBED_BIN\" peer");
    let mut adapters = vec![(REFERENCE.to_string(), line(""))];
    adapters.extend(
        MUTANTS
            .iter()
            .map(|(name, _)| (format!("{PREFIX}{name}"), line(name))),
    );
    adapters
}

/// What one mutant did on one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kill {
    /// It failed the scenario: the rules it broke (`adapter` for a crash or a hang).
    Killed(Vec<String>),
    Survived,
    NotApplicable,
}

/// One scenario's row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: String,
    pub defects: Vec<String>,
    pub allows: Vec<String>,
    /// The reference's verdict (it must pass).
    pub reference: Option<Cell>,
    pub applies: super::continuity::Applies,
    /// Per mutant (in [`MUTANTS`] order), what it did.
    pub kills: BTreeMap<&'static str, Kill>,
}

/// The rule a kill is shown by: the first rule broken other than `adapter` (whether a run that
/// also crossed the request limit was stopped before it ended depends on timing), else
/// `adapter`.
fn shown_rule(rules: &[String]) -> &str {
    rules
        .iter()
        .find(|rule| *rule != "adapter")
        .or(rules.first())
        .map_or("?", String::as_str)
}

/// Every scenario's row, in the order the scenarios ran.
pub fn matrix(reports: &[CellReport]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for report in reports {
        let index = match rows.iter().position(|row| row.scenario == report.scenario) {
            Some(index) => index,
            None => {
                rows.push(Row {
                    scenario: report.scenario.clone(),
                    defects: report.defects.clone(),
                    allows: report.allows.clone(),
                    reference: None,
                    applies: Default::default(),
                    kills: BTreeMap::new(),
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        if report.harness == REFERENCE {
            row.reference = Some(report.cell.clone());
            row.applies = report.applies;
            continue;
        }
        let Some(mutant) = report
            .harness
            .strip_prefix(PREFIX)
            .and_then(|name| MUTANTS.iter().find(|(known, _)| *known == name))
        else {
            continue;
        };
        let kill = match &report.cell {
            Cell::Pass => Kill::Survived,
            Cell::Fail { rules } => Kill::Killed(rules.clone()),
            Cell::NotApplicable { .. } => Kill::NotApplicable,
        };
        row.kills.insert(mutant.0, kill);
    }
    rows
}

/// What the matrix says is wrong with the suite (empty: nothing).
pub fn problems(rows: &[Row]) -> Vec<String> {
    let mut found = Vec::new();
    for row in rows {
        if !matches!(row.reference, Some(Cell::Pass)) {
            found.push(format!(
                "{}: the reference harness does not pass it ({:?}), so no kill there means anything",
                row.scenario, row.reference
            ));
        }
        let mut must: Vec<&str> = row.defects.iter().map(String::as_str).collect();
        if row.applies.progress {
            must.push("no_results");
        }
        if row.applies.retention {
            must.push("no_history");
        }
        must.dedup();
        for mutant in &row.allows {
            if let Some(Kill::Killed(rules)) = row.kills.get(mutant.as_str()) {
                found.push(format!(
                    "{}: mutant {mutant} fails it ({}), but its description promises that behaviour passes (`allows`)",
                    row.scenario,
                    rules.join(", ")
                ));
            }
        }
        for mutant in must {
            if matches!(row.kills.get(mutant), Some(Kill::Survived)) {
                let why = if row.defects.iter().any(|d| d == mutant) {
                    "declared in its defects"
                } else {
                    "its rule had something to judge in the reference's run"
                };
                found.push(format!(
                    "{}: mutant {mutant} survives it ({why})",
                    row.scenario
                ));
            }
        }
    }
    for (mutant, _) in MUTANTS {
        let killed = rows
            .iter()
            .any(|row| matches!(row.kills.get(mutant), Some(Kill::Killed(_))));
        let ran = rows.iter().any(|row| row.kills.contains_key(mutant));
        if ran && !killed {
            found.push(format!("mutant {mutant} survives every scenario"));
        }
    }
    found
}

/// The kill matrix as a Markdown page: per mutant, the scenarios that kill it and how; per
/// scenario, what it kills, and whether it kills what it declares.
pub fn markdown(rows: &[Row]) -> String {
    let mut page = String::from(
        "# The kill matrix\n\nGenerated by `ctxbed conform --mutants --matrix docs/mutants.md`; do not edit by hand.\n\n\
         Each mutant is ctxbed's own harness (the reference row of docs/peers.md) with one defect real harnesses have shown \
         (`src/conform/plant.rs`). A scenario *kills* a mutant when the mutant fails it; the rule named is the first rule it broke \
         other than `adapter` (`adapter` alone: it crashed or hung). A scenario must kill the mutants it declares (`defects`), must not kill those whose \
         behaviour its description promises is acceptable (`allows`), and every scenario where a tool call was made, or a \
         session went on, must kill `no_results`, or `no_history`.\n\n",
    );
    mutants_table(rows, &mut page);
    scenarios_table(rows, &mut page);
    page
}

/// Per mutant: its defect, how many scenarios kill it and declare it, the rules that did.
fn mutants_table(rows: &[Row], page: &mut String) {
    let _ = writeln!(page, "## Mutants\n");
    let _ = writeln!(
        page,
        "| mutant | its defect | killed by | declared by | first rules broken |"
    );
    let _ = writeln!(page, "| --- | --- | --- | --- | --- |");
    for (mutant, defect) in MUTANTS {
        let killers: Vec<&Row> = rows
            .iter()
            .filter(|row| matches!(row.kills.get(mutant), Some(Kill::Killed(_))))
            .collect();
        let declared = rows
            .iter()
            .filter(|row| row.defects.iter().any(|d| d == mutant))
            .count();
        let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
        for row in &killers {
            if let Some(Kill::Killed(broken)) = row.kills.get(mutant) {
                *rules.entry(shown_rule(broken)).or_default() += 1;
            }
        }
        let rules: Vec<String> = rules
            .iter()
            .map(|(rule, count)| format!("{rule} ({count})"))
            .collect();
        let _ = writeln!(
            page,
            "| `{mutant}` | {defect} | {} of {} | {declared} | {} |",
            killers.len(),
            rows.len(),
            rules.join(", ")
        );
    }
}

/// Per scenario: what it declares, what it allows, what it kills.
fn scenarios_table(rows: &[Row], page: &mut String) {
    let _ = writeln!(page, "\n## Scenarios\n");
    let _ = writeln!(
        page,
        "| scenario | declares | allows | kills (first rule broken) |"
    );
    let _ = writeln!(page, "| --- | --- | --- | --- |");
    for row in rows {
        let kills: Vec<String> = row
            .kills
            .iter()
            .filter_map(|(mutant, kill)| match kill {
                Kill::Killed(rules) => Some(format!("{mutant} ({})", shown_rule(rules))),
                _ => None,
            })
            .collect();
        let quoted = |names: &[String]| {
            names
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            page,
            "| {} | {} | {} | {} |",
            row.scenario.trim_start_matches("wire/"),
            quoted(&row.defects),
            quoted(&row.allows),
            kills.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::continuity::Applies;

    fn row(defects: &[&str], kills: &[(&'static str, Kill)], applies: Applies) -> Row {
        Row {
            scenario: "wire/s".into(),
            defects: defects.iter().map(|d| d.to_string()).collect(),
            allows: Vec::new(),
            reference: Some(Cell::Pass),
            applies,
            kills: kills.iter().cloned().collect(),
        }
    }

    #[test]
    fn a_declared_survivor_a_mutant_nobody_kills_and_a_failing_reference_are_problems() {
        let killed = Kill::Killed(vec!["window".into()]);
        let every: Vec<(&'static str, Kill)> = MUTANTS
            .iter()
            .map(|(name, _)| (*name, killed.clone()))
            .collect();
        assert!(problems(&[row(&["chars4"], &every, Applies::default())]).is_empty());

        let mut survives = every.clone();
        survives[MUTANTS
            .iter()
            .position(|(n, _)| *n == "chars4")
            .expect("chars4")]
        .1 = Kill::Survived;
        let found = problems(&[row(&["chars4"], &survives, Applies::default())]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("mutant chars4 survives it (declared"));
        assert!(found[1].contains("mutant chars4 survives every scenario"));

        let mut lazy = every.clone();
        lazy[0].1 = Kill::Survived;
        let applies = Applies {
            progress: true,
            retention: false,
        };
        let found = problems(&[
            row(&[], &lazy, applies),
            row(&[], &every, Applies::default()),
        ]);
        assert_eq!(
            found,
            [
                "wire/s: mutant no_results survives it (its rule had something to judge in the reference's run)"
            ]
        );

        let mut promised = row(&[], &every, Applies::default());
        promised.allows = vec!["no_retry".into()];
        assert_eq!(
            problems(&[promised]),
            [
                "wire/s: mutant no_retry fails it (window), but its description promises that behaviour passes (`allows`)"
            ]
        );

        let mut broken = row(&[], &every, Applies::default());
        broken.reference = Some(Cell::Fail {
            rules: vec!["window".into()],
        });
        assert!(problems(&[broken])[0].contains("reference harness does not pass"));
    }
}
