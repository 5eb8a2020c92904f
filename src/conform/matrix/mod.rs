//! The peer matrix: one row per harness (with its version), one column per wire scenario, each
//! cell `pass`, `n/a` or the rules it broke, linked to its trace. Rows are grouped by what the
//! harness is and columns by what the scenario tests ([`groups`]); each row has a score (passed
//! of applicable, and per concern). Written as Markdown (`docs/peers.md`) and as an HTML page
//! beside it ([`markdown`], [`html`](mod@html)), with a page per harness in the directory of the
//! same name (`docs/peers/<harness>.md` and `.html`, [`harness_page`]) giving each failure's
//! cause in a line and the harness's bugs from the bug zoo ([`zoo`]). All are generated, never
//! edited by hand.

pub mod groups;
pub mod harness_page;
pub mod html;
pub mod markdown;
#[cfg(test)]
mod tests;
pub mod zoo;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Cell, CellReport};
use crate::scenario::check::golden::GoldenOutcome;
pub use groups::{Concern, Kind};
pub use zoo::Zoo;

/// Where the pages are written and what they link to.
pub struct Layout<'a> {
    /// The Markdown overview, absolute; the HTML one is beside it (`.html`), the harness pages
    /// in the directory of its stem (`docs/peers.md` → `docs/peers/`).
    pub path: PathBuf,
    /// The adapter directories, for each row's [`Kind`].
    pub peers_dir: PathBuf,
    /// Each report's trace, absolute.
    pub trace: &'a dyn Fn(&CellReport) -> PathBuf,
    /// The bug zoo, for the harness pages.
    pub zoo: Zoo,
}

impl Layout<'_> {
    /// The overview's directory.
    pub fn page_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// The directory of the harness pages.
    pub fn harness_dir(&self) -> PathBuf {
        self.path.with_extension("")
    }

    /// The file name of `harness`'s page, with extension `ext` (`md`, `html`).
    pub fn harness_file(harness: &str, ext: &str) -> String {
        let safe: String = harness
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{safe}.{ext}")
    }
}

/// Every page of the matrix, each with the path to write it to: the Markdown overview, the
/// HTML one, and a Markdown and an HTML page per harness.
pub fn pages(
    reports: &[CellReport],
    harnesses: &[String],
    layout: &Layout<'_>,
    elapsed: Duration,
) -> Vec<(PathBuf, String)> {
    let matrix = Matrix::of(reports, harnesses, &layout.peers_dir);
    let mut out = vec![
        (
            layout.path.clone(),
            markdown::overview(&matrix, layout, elapsed),
        ),
        (
            layout.path.with_extension("html"),
            html::overview(&matrix, layout),
        ),
    ];
    let dir = layout.harness_dir();
    for row in &matrix.rows {
        out.push((
            dir.join(Layout::harness_file(row.harness, "md")),
            harness_page::markdown(&matrix, row, layout),
        ));
        out.push((
            dir.join(Layout::harness_file(row.harness, "html")),
            harness_page::html(&matrix, row, layout),
        ));
    }
    out
}

/// The path of `target` relative to the directory `from`; both absolute (or both relative to the
/// same directory), so a link works wherever the page is written.
pub fn relative(from: &Path, target: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// How the row's harness manages its context, when its adapter says it is not its own.
fn context_note(context: &str) -> String {
    if context.is_empty() || context == "own" {
        String::new()
    } else {
        format!(" ({context})")
    }
}

/// A cell in a few words: `pass`, `n/a`, or the rules broken (`window, expect`); `(trace
/// changed)` after a run whose trace differs from its golden.
fn cell_text(report: &CellReport) -> String {
    let golden = match report.golden_outcome {
        Some(GoldenOutcome::Mismatch { .. }) => " (trace changed)",
        _ => "",
    };
    match &report.cell {
        Cell::Pass => format!("pass{golden}"),
        Cell::NotApplicable { .. } => "n/a".to_string(),
        Cell::Fail { rules } => format!("{}{golden}", rules.join(", ")),
    }
}

/// A cell's cause in one line: the first failing check as its trace words it, the reason a
/// scenario is not applicable, nothing for a pass. At most [`CAUSE_CHARS`] characters.
fn cause(report: &CellReport) -> String {
    let line = match &report.cell {
        Cell::Pass => return String::new(),
        Cell::NotApplicable { reason } => reason.clone(),
        Cell::Fail { rules } => report
            .failing_line(None)
            .unwrap_or_else(|| format!("{}: see the trace", rules.join(", "))),
    };
    let line = line.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(CAUSE_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

/// The longest cause a harness page shows (the trace has the rest).
pub const CAUSE_CHARS: usize = 240;

/// Passed of applicable runs (`n/a` and missing cells are not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Score {
    pub passed: usize,
    pub applicable: usize,
}

impl fmt::Display for Score {
    /// `27/37 (73 %)`; `n/a` when nothing applied.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.applicable == 0 {
            return write!(f, "n/a");
        }
        let percent = (self.passed * 100 + self.applicable / 2) / self.applicable;
        write!(f, "{}/{} ({percent} %)", self.passed, self.applicable)
    }
}

impl Score {
    /// `27/37`, for a sub-score; `n/a` when nothing applied.
    pub fn short(&self) -> String {
        if self.applicable == 0 {
            "n/a".to_string()
        } else {
            format!("{}/{}", self.passed, self.applicable)
        }
    }
}

/// One harness's row.
pub struct Row<'a> {
    pub harness: &'a str,
    pub kind: Kind,
    pub version: String,
    pub context: String,
    pub cells: BTreeMap<&'a str, &'a CellReport>,
}

impl Row<'_> {
    /// The row's score over `scenarios`.
    pub fn score<'s>(&self, scenarios: impl IntoIterator<Item = &'s str>) -> Score {
        let mut score = Score::default();
        for scenario in scenarios {
            match self.cells.get(scenario).map(|report| &report.cell) {
                Some(Cell::Pass) => {
                    score.passed += 1;
                    score.applicable += 1;
                }
                Some(Cell::Fail { .. }) => score.applicable += 1,
                Some(Cell::NotApplicable { .. }) | None => {}
            }
        }
        score
    }
}

/// The reports arranged: columns by concern, rows by kind then name.
pub struct Matrix<'a> {
    /// Each concern that has a scenario, with its scenarios sorted by name.
    pub concerns: Vec<(Concern, Vec<&'a str>)>,
    pub rows: Vec<Row<'a>>,
    pub reports: &'a [CellReport],
}

impl<'a> Matrix<'a> {
    /// The matrix of `reports`, with a row for each of `harnesses` that ran (a harness's kind
    /// from its adapter directory under `peers_dir`, or its `ready` line).
    pub fn of(reports: &'a [CellReport], harnesses: &[String], peers_dir: &Path) -> Matrix<'a> {
        let mut concerns: BTreeMap<Concern, Vec<&str>> = BTreeMap::new();
        let mut rows: BTreeMap<&str, Row<'a>> = BTreeMap::new();
        for report in reports {
            let concern = groups::concern_of(&report.scenario);
            let column = concerns.entry(concern).or_default();
            if !column.contains(&report.scenario.as_str()) {
                column.push(&report.scenario);
            }
            let row = rows.entry(&report.harness).or_insert_with(|| Row {
                harness: &report.harness,
                kind: Kind::Other,
                version: String::new(),
                context: String::new(),
                cells: BTreeMap::new(),
            });
            for (field, value) in [
                (&mut row.version, &report.version),
                (&mut row.context, &report.context),
            ] {
                if field.is_empty() && !value.is_empty() {
                    field.clone_from(value);
                }
            }
            row.cells.insert(&report.scenario, report);
        }
        let mut rows: Vec<Row<'a>> = rows
            .into_values()
            .filter(|row| harnesses.iter().any(|h| h == row.harness))
            .map(|mut row| {
                let declared = row.cells.values().find(|r| !r.kind.is_empty());
                let declared = declared.map_or("", |report| report.kind.as_str());
                row.kind = groups::kind_of(peers_dir, row.harness, declared);
                row
            })
            .collect();
        rows.sort_by(|a, b| (a.kind, a.harness).cmp(&(b.kind, b.harness)));
        for scenarios in concerns.values_mut() {
            scenarios.sort_by_key(|scenario| short_name(scenario));
        }
        Matrix {
            concerns: concerns.into_iter().collect(),
            rows,
            reports,
        }
    }

    /// Every scenario, concern by concern.
    pub fn scenarios(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.concerns.iter().flat_map(|(_, s)| s.iter().copied())
    }

    /// The rows, a group per kind, in order.
    pub fn groups(&self) -> Vec<(Kind, Vec<&Row<'a>>)> {
        let mut groups: Vec<(Kind, Vec<&Row<'a>>)> = Vec::new();
        for row in &self.rows {
            match groups.last_mut() {
                Some((kind, rows)) if *kind == row.kind => rows.push(row),
                _ => groups.push((row.kind, vec![row])),
            }
        }
        groups
    }
}

/// A scenario's name as a column shows it (`overflow-openai`).
fn short_name(scenario: &str) -> &str {
    scenario.trim_start_matches("wire/")
}
