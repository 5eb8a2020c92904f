//! Property-based conformance: drafts drawn from seeds ([`generate`](super::generate)) run
//! against a harness with the wire rules as the properties; a failing draft is made smaller
//! while it still breaks the same rule, and the smallest is written out as a wire scenario and
//! its mock model, ready to run with `ctxbed conform` and to pin.

use std::path::{Path, PathBuf};

use super::generate::Draft;
use super::{Cell, CellReport, ConformOptions, Source, run_source};

/// The most runs spent shrinking one failing seed, by default.
pub const SHRINK_RUNS_DEFAULT: usize = 40;

/// What one seed did against one harness.
#[derive(Debug, Clone)]
pub struct SeedOutcome {
    pub seed: u64,
    /// The rules the drawn draft broke (empty: it passed); `adapter` when the adapter failed.
    pub rules: Vec<String>,
    /// The smallest draft found that still breaks the first rule, when it failed.
    pub smallest: Option<Draft>,
    /// The files it was written to (scenario, mock model).
    pub written: Option<(PathBuf, PathBuf)>,
    /// Runs spent shrinking.
    pub shrink_runs: usize,
}

/// Runs `draft` against `harness`.
pub fn run_draft(draft: &Draft, harness: &str, options: &ConformOptions) -> CellReport {
    let (name, model) = (draft.name(), draft.model());
    let (scenario, mock) = (draft.scenario_toml(), draft.mock_toml());
    let source = Source {
        name: &name,
        origin: "generated",
        scenario: &scenario,
        model: &model,
        mock: &mock,
    };
    run_source(&source, harness, options)
}

/// The rules a run broke, `adapter` first when the adapter failed; empty when it passed.
pub fn broken_rules(report: &CellReport) -> Vec<String> {
    match &report.cell {
        Cell::Fail { rules } => rules.clone(),
        Cell::Pass | Cell::NotApplicable { .. } => Vec::new(),
    }
}

/// Draws seed `seed`, runs it against `harness`, and when it fails shrinks it and writes the
/// smallest failing draft under `out` (`scenarios/wire/gen-<seed>.toml`,
/// `mock-models/wire-gen-<seed>.toml`) — unless the first rule it broke is in `shrunk` (rules an
/// earlier seed was shrunk for), when it is only reported.
///
/// # Errors
/// The files cannot be written.
pub fn explore_seed(
    seed: u64,
    harness: &str,
    options: &ConformOptions,
    out: &Path,
    shrink_runs: usize,
    shrunk: &std::collections::BTreeSet<String>,
) -> std::io::Result<SeedOutcome> {
    let draft = Draft::draw(seed);
    let report = run_draft(&draft, harness, options);
    let rules = broken_rules(&report);
    let mut outcome = SeedOutcome {
        seed,
        rules: rules.clone(),
        smallest: None,
        written: None,
        shrink_runs: 0,
    };
    let Some(rule) = rules.first().filter(|rule| !shrunk.contains(*rule)) else {
        return Ok(outcome);
    };
    let (smallest, runs) = shrink(draft, rule, harness, options, shrink_runs);
    outcome.written = Some(write(&smallest, out)?);
    outcome.smallest = Some(smallest);
    outcome.shrink_runs = runs;
    Ok(outcome)
}

/// The smallest draft reachable from `draft` by [`Draft::smaller`] steps that still breaks
/// `rule`, trying at most `budget` runs; and the runs spent.
pub fn shrink(
    mut draft: Draft,
    rule: &str,
    harness: &str,
    options: &ConformOptions,
    budget: usize,
) -> (Draft, usize) {
    let mut runs = 0;
    'smaller: loop {
        for candidate in draft.smaller() {
            if runs >= budget || super::interrupted() {
                break 'smaller;
            }
            runs += 1;
            let report = run_draft(&candidate, harness, options);
            if broken_rules(&report).iter().any(|broken| broken == rule) {
                draft = candidate;
                continue 'smaller;
            }
        }
        break;
    }
    (draft, runs)
}

/// Writes `draft` as a suite under `out`; the scenario's and the mock model's paths.
///
/// # Errors
/// A directory or file cannot be written.
pub fn write(draft: &Draft, out: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    let scenarios = out.join("scenarios").join("wire");
    let models = out.join("mock-models");
    std::fs::create_dir_all(&scenarios)?;
    std::fs::create_dir_all(&models)?;
    let scenario = scenarios.join(format!("{}.toml", draft.name()));
    let mock = models.join(format!("{}.toml", draft.model()));
    std::fs::write(&scenario, draft.scenario_toml())?;
    std::fs::write(&mock, draft.mock_toml())?;
    Ok((scenario, mock))
}

/// One rule's tally while summarising: its name, the seeds that broke it, and the smallest
/// draft written for it with its file.
type Tally = (String, usize, Option<(Draft, PathBuf)>);

/// Per rule, how many seeds broke it and the smallest scenario written for it.
pub fn summary(outcomes: &[SeedOutcome]) -> Vec<(String, usize, Option<PathBuf>)> {
    let mut rules: Vec<Tally> = Vec::new();
    for outcome in outcomes {
        for rule in &outcome.rules {
            let at = match rules.iter().position(|(name, ..)| name == rule) {
                Some(at) => at,
                None => {
                    rules.push((rule.clone(), 0, None));
                    rules.len() - 1
                }
            };
            rules[at].1 += 1;
            let first = outcome.rules.first() == Some(rule);
            if let (true, Some(draft), Some((path, _))) =
                (first, &outcome.smallest, &outcome.written)
            {
                let smaller = rules[at]
                    .2
                    .as_ref()
                    .is_none_or(|(best, _)| draft.size() < best.size());
                if smaller {
                    rules[at].2 = Some((draft.clone(), path.clone()));
                }
            }
        }
    }
    rules.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    rules
        .into_iter()
        .map(|(rule, count, best)| (rule, count, best.map(|(_, path)| path)))
        .collect()
}
