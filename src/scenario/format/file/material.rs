//! Checking the material a scenario puts into context: `[[instructions]]` and the scripted
//! `[[sources]]` with their blocks.

use std::collections::BTreeSet;
use std::time::Duration;

use ctxbed_sim::scripted::{BlockSpec, SourceFailure};
use toml::Spanned;

use super::checked::{InstructionSpec, SourceSpec};
use super::raw::{RawInstruction, RawSource};
use crate::scenario::format::mock_file::Checker;

pub(super) fn instruction_specs(
    checker: &mut Checker<'_>,
    raw: &[Spanned<RawInstruction>],
) -> Vec<InstructionSpec> {
    let mut specs: Vec<InstructionSpec> = Vec::new();
    for (index, instruction) in raw.iter().enumerate() {
        let instruction = instruction.get_ref();
        let name = instruction.name.get_ref();
        if !ctxbed_harness::context::source::is_valid_name(name) {
            let problem = checker
                .at(
                    &instruction.name,
                    format!("invalid instruction name `{name}`"),
                )
                .field(format!("instructions[{index}].name"))
                .help("start with a letter or digit and use only letters, digits, `_`, `.` or `-`");
            checker.problems.push(problem);
            continue;
        }
        if let Some(first) = specs.iter().position(|spec| spec.name == *name) {
            let problem = checker
                .at(
                    &instruction.name,
                    format!("an instruction named `{name}` is already defined (instructions[{first}])"),
                )
                .field(format!("instructions[{index}].name"))
                .help("instruction names must be unique: rename one, or merge the two texts into one entry");
            checker.problems.push(problem);
            continue;
        }
        specs.push(InstructionSpec {
            name: name.clone(),
            text: instruction.text.clone(),
        });
    }
    specs
}

/// One `[[sources]]` entry: a valid name, its timeout, failure handling and blocks.
pub(super) fn source_spec(
    checker: &mut Checker<'_>,
    index: usize,
    spanned: &Spanned<RawSource>,
) -> Option<SourceSpec> {
    let raw = spanned.get_ref();
    let field = format!("sources[{index}]");
    let before = checker.problems.len();
    let name = raw.name.get_ref();
    if !ctxbed_harness::context::source::is_valid_name(name) {
        let problem = checker
            .at(&raw.name, format!("invalid source name `{name}`"))
            .field(format!("{field}.name"))
            .help("start with a letter or digit and use only letters, digits, `_`, `.` or `-`");
        checker.problems.push(problem);
    }
    let timeout = raw.timeout_ms.as_ref().and_then(|value| {
        let millis = checker.count(value, &format!("{field}.timeout_ms"), 1)?;
        Some(Duration::from_millis(
            millis.min(crate::limits::LATENCY_MS_MAX),
        ))
    });
    let omit = omit_on_failure(checker, &field, raw);
    let latency = checker.latency(raw.latency_ms.as_ref(), &format!("{field}.latency_ms"));
    let failure = scripted_failure(checker, &field, raw);
    let blocks = source_blocks(checker, &field, raw);
    if checker.problems.len() != before {
        return None;
    }
    Some(SourceSpec {
        name: name.clone(),
        timeout,
        omit_on_failure: omit?,
        latency,
        failure,
        fail_loads: raw.fail_loads.clone(),
        blocks,
    })
}

/// `on_failure`: whether the source's blocks are omitted (`"omit"`) rather than the request
/// failing (`"fail"`, the default).
fn omit_on_failure(checker: &mut Checker<'_>, field: &str, raw: &RawSource) -> Option<bool> {
    raw.on_failure.as_ref().map_or(Some(false), |value| {
        checker.choice(
            value,
            &format!("{field}.on_failure"),
            &["fail", "omit"],
            |v| match v {
                "fail" => Some(false),
                "omit" => Some(true),
                _ => None,
            },
        )
    })
}

/// `failure`: how the scripted source fails, when it does.
fn scripted_failure(
    checker: &mut Checker<'_>,
    field: &str,
    raw: &RawSource,
) -> Option<SourceFailure> {
    raw.failure.as_ref().and_then(|value| {
        checker.choice(
            value,
            &format!("{field}.failure"),
            &["error", "no_list", "never", "panic"],
            |v| match v {
                "error" => Some(SourceFailure::Error),
                "no_list" => Some(SourceFailure::NoList),
                "never" => Some(SourceFailure::Never),
                "panic" => Some(SourceFailure::Panic),
                _ => None,
            },
        )
    })
}

/// The source's blocks, each `runtime` or `reference` (never System material).
fn source_blocks(checker: &mut Checker<'_>, field: &str, raw: &RawSource) -> Vec<BlockSpec> {
    let mut blocks = Vec::new();
    for (position, block) in raw.blocks.iter().enumerate() {
        let spec = block.get_ref();
        if spec.kind.get_ref() == "system" {
            let problem = checker
                .at(&spec.kind, "a source block cannot be System material")
                .field(format!("{field}.blocks[{position}].kind"))
                .help("dynamic blocks are `runtime` or `reference`; trusted System text belongs in an `[[instructions]]` entry");
            checker.problems.push(problem);
            continue;
        }
        let runtime = checker.choice(
            &spec.kind,
            &format!("{field}.blocks[{position}].kind"),
            &["runtime", "reference"],
            |k| match k {
                "runtime" => Some(true),
                "reference" => Some(false),
                _ => None,
            },
        );
        if let Some(runtime) = runtime {
            blocks.push(BlockSpec {
                id: spec.id.clone(),
                runtime,
                text: spec.text.clone(),
                required: spec.required,
                priority: spec.priority,
                revision: spec.revision.clone(),
            });
        }
    }
    blocks
}

pub(super) fn check_unique_sources(checker: &mut Checker<'_>, sources: &[Spanned<RawSource>]) {
    let mut seen = BTreeSet::new();
    for (index, source) in sources.iter().enumerate() {
        let name = source.get_ref().name.get_ref();
        if !seen.insert(name.clone()) {
            let problem = checker
                .at(
                    &source.get_ref().name,
                    format!("a source named `{name}` is already defined"),
                )
                .field(format!("sources[{index}].name"))
                .help("source names must be unique; rename or remove one");
            checker.problems.push(problem);
        }
    }
}
