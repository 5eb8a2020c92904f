//! `[[tools]]` and `[[sources]]` entries: the scripted tools and context sources.

use ctxbed_sim::scripted::SourceFailure;

use super::WriteError;
use super::task::plan_mode;
use super::value::{at, count, json_object, millis, name};
use crate::scenario::format::file::raw::{RawBlock, RawResponse, RawSource, RawTool, RawWrite};
use crate::scenario::format::file::{SourceSpec, ToolOutputSpec, ToolSpec};

pub(super) fn tool(spec: &ToolSpec) -> Result<RawTool, WriteError> {
    let parameters = match &spec.parameters {
        Some(parameters) => Some(json_object(parameters, "tool parameters")?),
        None => None,
    };
    let mut raw = RawTool {
        name: at(spec.name.clone()),
        description: spec.description.clone(),
        parameters,
        text: None,
        texts: None,
        result_chars: None,
        content: None,
        latency_ms: Some(millis(spec.latency)?),
        fail: spec.fail.clone(),
        writes: spec.writes.as_ref().map(|(path, text)| RawWrite {
            path: at(path.clone()),
            text: text.clone(),
        }),
        sets_plan_mode: spec.sets_plan_mode.map(|mode| name(plan_mode(mode))),
        responses: Vec::new(),
        exit_code: None,
    };
    match &spec.output {
        ToolOutputSpec::Fixed(text) => raw.text = Some(text.clone()),
        ToolOutputSpec::Sequence(texts) => raw.texts = Some(texts.clone()),
        ToolOutputSpec::Generated { chars, kind } => {
            raw.result_chars = Some(count(*chars as u64)?);
            raw.content = Some(name(kind.as_str()));
        }
        // The fallback's exit code marks the tool as choosing by arguments, even with no
        // responses.
        ToolOutputSpec::ByArguments {
            responses,
            fallback,
        } => {
            raw.text = Some(fallback.text.clone());
            raw.exit_code = Some(fallback.exit_code);
            raw.responses = responses
                .iter()
                .map(|r| RawResponse {
                    when_args_contain: r.when_args_contain.clone(),
                    text: r.text.clone(),
                    exit_code: r.exit_code,
                })
                .collect();
        }
    }
    Ok(raw)
}

pub(super) fn source(spec: &SourceSpec) -> Result<RawSource, WriteError> {
    let failure = spec.failure.map(|failure| {
        name(match failure {
            SourceFailure::Error => "error",
            SourceFailure::NoList => "no_list",
            SourceFailure::Never => "never",
            SourceFailure::Panic => "panic",
        })
    });
    let blocks = spec.blocks.iter().map(|block| {
        at(RawBlock {
            id: block.id.clone(),
            kind: name(if block.runtime {
                "runtime"
            } else {
                "reference"
            }),
            text: block.text.clone(),
            required: block.required,
            priority: block.priority,
            revision: block.revision.clone(),
        })
    });
    Ok(RawSource {
        name: at(spec.name.clone()),
        timeout_ms: spec.timeout.map(millis).transpose()?,
        on_failure: Some(name(if spec.omit_on_failure { "omit" } else { "fail" })),
        latency_ms: Some(millis(spec.latency)?),
        failure,
        fail_loads: spec.fail_loads.clone(),
        blocks: blocks.collect(),
    })
}
