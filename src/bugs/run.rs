//! Running one bug: the harness's environment at the versions before and after the fix (built
//! by the peers directory's `env` script), each of the bug's scenarios run against the adapter
//! in each, and the bug classified from the two verdicts.
//!
//! **Invariant:** a bug is *detected* only when some scenario fails the expected rule before
//! and every scenario passes after; anything else says why it is not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::file::{Bug, ScenarioRef};
use crate::conform::{self, Cell, CellReport, ConformOptions};
use crate::scenario::check::golden::GoldenMode;

/// Where a bug run finds its adapters and writes its logs.
#[derive(Debug, Clone)]
pub struct BugOptions {
    /// The adapters (`<dir>/<harness>/run`) and the environment builder (`<dir>/env`).
    pub peers_dir: PathBuf,
    /// Logs of each run: `<dir>/<bug>/<before|after>/…`.
    pub logs_dir: PathBuf,
    /// The `ctxbed` executable, for adapters that run it.
    pub ctxbed_bin: PathBuf,
}

/// One side of the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Before => "before",
            Side::After => "after",
        }
    }
}

/// One scenario's verdict at one side.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioVerdict {
    pub scenario: String,
    /// The rules broken, in order; empty when it passed.
    pub rules: Vec<String>,
    /// Why the harness could not speak the scenario's API, when it could not.
    pub not_applicable: Option<String>,
    /// The first violation of the bug's rule, as the trace words it.
    pub failing_line: Option<String>,
    /// What went wrong with the adapter, if anything.
    pub problem: Option<String>,
    pub log: PathBuf,
}

impl ScenarioVerdict {
    fn of(report: &CellReport, rule: &str) -> ScenarioVerdict {
        let (rules, not_applicable) = match &report.cell {
            Cell::Pass => (Vec::new(), None),
            Cell::Fail { rules } => (rules.clone(), None),
            Cell::NotApplicable { reason } => (Vec::new(), Some(reason.clone())),
        };
        let failing_line = report.failing_line(Some(rule));
        ScenarioVerdict {
            scenario: report.scenario.trim_start_matches("wire/").to_string(),
            rules,
            not_applicable,
            failing_line,
            problem: report.problem.clone(),
            log: report.log.clone(),
        }
    }

    /// True when only the adapter failed (it could not run the scenario at all).
    fn unrunnable(&self) -> bool {
        self.not_applicable.is_some()
            || (!self.rules.is_empty() && self.rules.iter().all(|rule| rule == "adapter"))
    }
}

/// What one side came to.
#[derive(Debug, Clone, PartialEq)]
pub enum SideRun {
    /// The environment could not be built.
    NoEnvironment {
        why: String,
    },
    Ran {
        verdicts: Vec<ScenarioVerdict>,
    },
}

/// The bug's classification.
#[derive(Debug, Clone, PartialEq)]
pub enum Classification {
    Detected,
    /// Passes before, or fails only other rules.
    Missed {
        why: String,
    },
    /// Fails after: explained (another real bug, cited in the file) or not (our fault).
    FalseAlarm {
        explanation: Option<String>,
    },
    NotReproducible {
        why: String,
    },
}

impl Classification {
    pub fn label(&self) -> &'static str {
        match self {
            Classification::Detected => "detected",
            Classification::Missed { .. } => "missed",
            Classification::FalseAlarm {
                explanation: Some(_),
            } => "false alarm (explained)",
            Classification::FalseAlarm { explanation: None } => "false alarm",
            Classification::NotReproducible { .. } => "not reproducible",
        }
    }

    /// True when the outcome fails a `ctxbed bugs` run: a miss, or a false alarm nobody explained.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            Classification::Missed { .. } | Classification::FalseAlarm { explanation: None }
        )
    }
}

/// One bug, run.
#[derive(Debug, Clone)]
pub struct BugRun {
    pub bug: Bug,
    pub before: Option<SideRun>,
    pub after: Option<SideRun>,
    pub classification: Classification,
    pub elapsed: Duration,
}

/// Classifies a bug from its two sides (see the module's invariant).
pub fn classify(bug: &Bug, before: &SideRun, after: &SideRun) -> Classification {
    let verdicts = match before {
        SideRun::NoEnvironment { why } => {
            return Classification::NotReproducible {
                why: format!("the version before cannot be installed: {why}"),
            };
        }
        SideRun::Ran { verdicts } => verdicts,
    };
    let caught = verdicts
        .iter()
        .any(|verdict| verdict.rules.contains(&bug.rule));
    if !caught {
        let stuck = verdicts.iter().find(|verdict| verdict.unrunnable());
        if let Some(stuck) = stuck.filter(|_| verdicts.iter().all(ScenarioVerdict::unrunnable)) {
            let why = stuck
                .not_applicable
                .clone()
                .or_else(|| stuck.problem.clone())
                .unwrap_or_else(|| "the adapter failed".into());
            return Classification::NotReproducible {
                why: format!("the version before cannot run {}: {why}", stuck.scenario),
            };
        }
        let broken: Vec<String> = verdicts
            .iter()
            .filter(|verdict| !verdict.rules.is_empty())
            .map(|verdict| format!("{} fails {}", verdict.scenario, verdict.rules.join(", ")))
            .collect();
        let why = if broken.is_empty() {
            "every scenario passes before the fix".to_string()
        } else {
            format!("{}, not {}", broken.join("; "), bug.rule)
        };
        return Classification::Missed { why };
    }
    match after {
        SideRun::NoEnvironment { why } => Classification::NotReproducible {
            why: format!("the version after cannot be installed: {why}"),
        },
        SideRun::Ran { verdicts }
            if verdicts
                .iter()
                .any(|verdict| !verdict.rules.is_empty() || verdict.not_applicable.is_some()) =>
        {
            Classification::FalseAlarm {
                explanation: bug.false_alarm.clone(),
            }
        }
        SideRun::Ran { .. } => Classification::Detected,
    }
}

/// Runs one bug: both sides, unless it declares what it `needs`.
pub fn run_bug(bug: &Bug, options: &BugOptions) -> BugRun {
    let started = Instant::now();
    if let Some(needs) = &bug.needs {
        return BugRun {
            bug: bug.clone(),
            before: None,
            after: None,
            classification: Classification::NotReproducible {
                why: format!("needs {needs}"),
            },
            elapsed: started.elapsed(),
        };
    }
    let before = run_side(bug, Side::Before, options);
    let after = run_side(bug, Side::After, options);
    let classification = classify(bug, &before, &after);
    BugRun {
        bug: bug.clone(),
        before: Some(before),
        after: Some(after),
        classification,
        elapsed: started.elapsed(),
    }
}

fn run_side(bug: &Bug, side: Side, options: &BugOptions) -> SideRun {
    let versions = match side {
        Side::Before => &bug.before,
        Side::After => &bug.after,
    };
    let env = match environment(bug, versions, &options.peers_dir) {
        Ok(env) => env,
        Err(why) => return SideRun::NoEnvironment { why },
    };
    let label = format!("{}@{}", bug.harness, side.name());
    let run = options.peers_dir.join(&bug.harness).join("run");
    let variant = bug
        .variant
        .as_deref()
        .map(|variant| format!("CTXBED_PEER_VARIANT={} ", shell_quote(variant)))
        .unwrap_or_default();
    let line = format!(
        "{variant}CTXBED_PEER_ENV={} exec {}",
        shell_quote(&env.to_string_lossy()),
        shell_quote(&run.to_string_lossy())
    );
    let conform_options = ConformOptions {
        peers_dir: options.peers_dir.clone(),
        logs_dir: options.logs_dir.join(&bug.id).join(side.name()),
        ctxbed_bin: options.ctxbed_bin.clone(),
        mode: GoldenMode::Skip,
        adapters: vec![(label.clone(), line)],
        reuse: false,
    };
    let verdicts = bug
        .scenarios
        .iter()
        .map(|scenario| {
            let report = match scenario {
                ScenarioRef::Builtin(name) => match conform::builtin::scenario(name) {
                    Some(builtin) => conform::run_builtin(builtin, &label, &conform_options),
                    None => return missing_builtin(name),
                },
                ScenarioRef::File(path) => conform::run_one(path, &label, &conform_options),
            };
            ScenarioVerdict::of(&report, &bug.rule)
        })
        .collect();
    SideRun::Ran { verdicts }
}

fn missing_builtin(name: &str) -> ScenarioVerdict {
    ScenarioVerdict {
        scenario: name.to_string(),
        rules: vec!["scenario".into()],
        not_applicable: None,
        failing_line: None,
        problem: Some(format!("no built-in scenario {name}")),
        log: PathBuf::new(),
    }
}

/// One lock per environment (harness and versions): two jobs that need the same environment
/// never run its builder at once, whatever the builder does about it (one job could otherwise
/// remove or rewrite an environment another is building or already running in).
static BUILDING: Mutex<BTreeMap<String, Arc<Mutex<()>>>> = Mutex::new(BTreeMap::new());

fn building_lock(harness: &str, versions: &[(String, String)]) -> Arc<Mutex<()>> {
    let mut pins: Vec<String> = versions
        .iter()
        .map(|(package, version)| format!("{package}=={version}"))
        .collect();
    pins.sort();
    let key = format!("{harness} {}", pins.join(" "));
    let mut locks = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(locks.entry(key).or_default())
}

/// Builds (or finds) the harness's environment at `versions` with `<peers>/env`, returning its
/// directory (the script's last line of output). Builds of one environment are serialised.
fn environment(bug: &Bug, versions: &[(String, String)], peers: &Path) -> Result<PathBuf, String> {
    let lock = building_lock(&bug.harness, versions);
    let _building = lock.lock().unwrap_or_else(PoisonError::into_inner);
    let script = peers.join("env");
    if !script.is_file() {
        return Err(format!(
            "no {} to build environments with (the repository's peers/env)",
            script.display()
        ));
    }
    if !peers.join(&bug.harness).join("run").is_file() {
        return Err(format!(
            "no adapter {}",
            peers.join(&bug.harness).join("run").display()
        ));
    }
    let pins = versions
        .iter()
        .map(|(package, version)| format!("{package}=={version}"));
    let output = Command::new(&script)
        .arg(&bug.harness)
        .arg(bug.dir.join("locks"))
        .args(pins)
        .output()
        .map_err(|error| format!("{}: {error}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(tail.join("\n"));
    }
    stdout
        .lines()
        .last()
        .map(|line| PathBuf::from(line.trim()))
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| format!("{} printed no environment directory", script.display()))
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bug(rule: &str, false_alarm: Option<&str>) -> Bug {
        Bug {
            id: "b".into(),
            harness: "h".into(),
            title: "t".into(),
            references: vec!["o/r#1".into()],
            scenarios: vec![ScenarioRef::Builtin("basic-tool-round")],
            rule: rule.into(),
            before: vec![("p".into(), "1".into())],
            after: vec![("p".into(), "2".into())],
            note: String::new(),
            false_alarm: false_alarm.map(str::to_string),
            needs: None,
            variant: None,
            dir: PathBuf::new(),
        }
    }

    fn ran(rules: &[&str]) -> SideRun {
        SideRun::Ran {
            verdicts: vec![ScenarioVerdict {
                scenario: "s".into(),
                rules: rules.iter().map(|rule| rule.to_string()).collect(),
                not_applicable: None,
                failing_line: None,
                problem: None,
                log: PathBuf::new(),
            }],
        }
    }

    #[test]
    fn detected_needs_the_rule_before_and_a_pass_after() {
        let b = bug("pairing", None);
        assert_eq!(
            classify(&b, &ran(&["pairing"]), &ran(&[])),
            Classification::Detected
        );
        assert!(matches!(
            classify(&b, &ran(&["window"]), &ran(&[])),
            Classification::Missed { .. }
        ));
        assert!(matches!(
            classify(&b, &ran(&[]), &ran(&[])),
            Classification::Missed { .. }
        ));
        assert_eq!(
            classify(&b, &ran(&["pairing"]), &ran(&["window"])),
            Classification::FalseAlarm { explanation: None }
        );
        assert!(matches!(
            classify(&b, &ran(&["adapter"]), &ran(&[])),
            Classification::NotReproducible { .. }
        ));
        let gone = SideRun::NoEnvironment { why: "x".into() };
        assert!(matches!(
            classify(&b, &gone, &ran(&[])),
            Classification::NotReproducible { .. }
        ));
    }

    #[test]
    fn a_false_alarm_is_explained_only_by_the_file() {
        let b = bug("pairing", Some("another bug, o/r#2"));
        assert_eq!(
            classify(&b, &ran(&["pairing"]), &ran(&["pairing"])),
            Classification::FalseAlarm {
                explanation: Some("another bug, o/r#2".into())
            }
        );
        assert!(!classify(&b, &ran(&["pairing"]), &ran(&["pairing"])).fails());
        assert!(classify(&bug("pairing", None), &ran(&[]), &ran(&[])).fails());
    }
}
