//! The request-level checks of an expectation: per reasoning preparation (all, or the one
//! `request` names), its manifest's items, transforms, budget and layout, and the text sent.

use super::{Checks, request_text, sent_summary};
use crate::scenario::format::file::Expectation;
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::agent::EventKind;
use ctxbed_harness::context::manifest::{ContextManifest, ItemKind};

/// The request-level checks: manifests (items, transforms, layout) and sent requests.
pub(super) fn request_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    let manifests: Vec<&ContextManifest> = step.reasoning_manifests().collect();
    let selected: Vec<(usize, &ContextManifest)> = manifests
        .iter()
        .enumerate()
        .filter(|(index, _)| expectation.request.is_none_or(|n| n == index + 1))
        .map(|(index, m)| (index + 1, *m))
        .collect();
    if expectation.request.is_some() && selected.is_empty() {
        checks.push(
            format!("request {} exists", expectation.request.unwrap_or(0)),
            false,
            format!("{} preparation(s)", manifests.len()),
        );
    }
    for (number, manifest) in &selected {
        let at = format!("request {number}");
        let request = Request {
            at: &at,
            manifest,
            expectation,
        };
        request.item_checks(checks);
        request.transform_checks(checks);
        request.material_checks(checks);
        request.budget_checks(checks, step);
        if let Some(expected) = &expectation.layout {
            let found = layout_tags(manifest);
            checks.push(
                format!("{at} layout = [{}]", expected.join(", ")),
                found == *expected,
                format!("[{}]", found.join(", ")),
            );
        }
        let json = manifest.to_json().to_string();
        for secret in &expectation.manifest_lacks {
            checks.push(
                format!("{at} manifest lacks {secret:?}"),
                !json.contains(secret.as_str()),
                "present".to_string(),
            );
        }
        request.sent_text_checks(checks, step, *number);
    }
}

/// One selected preparation, with the expectation checked against it.
struct Request<'a> {
    /// `request <n>`, before each description.
    at: &'a str,
    manifest: &'a ContextManifest,
    expectation: &'a Expectation,
}

impl Request<'_> {
    /// `items_present` and `items_absent`: material items by id, tool schemas as
    /// `schema/<name>`.
    fn item_checks(&self, checks: &mut Checks) {
        let at = self.at;
        let materials: Vec<String> = self
            .manifest
            .items
            .iter()
            .filter_map(|item| match item.kind {
                ItemKind::Material { .. } => Some(item.id.clone()),
                ItemKind::ToolSchema => Some(format!("schema/{}", item.id)),
                _ => None,
            })
            .collect();
        for id in &self.expectation.items_present {
            checks.push(
                format!("{at} has item {id}"),
                materials.contains(id),
                format!("{materials:?}"),
            );
        }
        for id in &self.expectation.items_absent {
            checks.push(
                format!("{at} lacks item {id}"),
                !materials.contains(id),
                format!("{materials:?}"),
            );
        }
    }

    /// `transforms_include` and `transforms_absent`. Expectations name a transform by its full
    /// text form, as traces print it, or by a prefix of it ending in `*`.
    fn transform_checks(&self, checks: &mut Checks) {
        let at = self.at;
        let recorded: Vec<String> = self
            .manifest
            .transforms
            .iter()
            .map(|t| t.to_string())
            .collect();
        for transform in &self.expectation.transforms_include {
            checks.push(
                format!("{at} transform {transform}"),
                transform_recorded(transform, &recorded),
                format!("{recorded:?}"),
            );
        }
        for transform in &self.expectation.transforms_absent {
            checks.push(
                format!("{at} no transform {transform}"),
                !transform_recorded(transform, &recorded),
                format!("{recorded:?}"),
            );
        }
    }

    /// `item_revisions` and `item_placements` of material items.
    fn material_checks(&self, checks: &mut Checks) {
        let at = self.at;
        for (id, revision) in &self.expectation.item_revisions {
            let found = match self.manifest.material(id).map(|item| &item.kind) {
                Some(ItemKind::Material { revision, .. }) => revision.clone(),
                _ => "absent".to_string(),
            };
            checks.push(
                format!("{at} item {id} revision = {revision}"),
                &found == revision,
                found,
            );
        }
        for (id, placement) in &self.expectation.item_placements {
            let found = match self.manifest.material(id).map(|item| &item.kind) {
                Some(ItemKind::Material { placement, .. }) => placement.as_str().to_string(),
                _ => "absent".to_string(),
            };
            checks.push(
                format!("{at} item {id} placement = {placement}"),
                &found == placement,
                found,
            );
        }
    }

    /// `input_limit`, `usage` (as the reply to this request reported it) and `allowance`.
    fn budget_checks(&self, checks: &mut Checks, step: &StepRecord) {
        let (at, manifest) = (self.at, self.manifest);
        if let Some(expected) = self.expectation.input_limit {
            checks.push(
                format!("{at} input_limit = {expected}"),
                manifest.input_limit == expected,
                manifest.input_limit.to_string(),
            );
        }
        if let Some((input, output)) = self.expectation.usage {
            let reported = step.events.iter().find_map(|event| match &event.kind {
                EventKind::ModelCallFinished { request_id, usage }
                    if *request_id == manifest.call_id =>
                {
                    Some(*usage)
                }
                _ => None,
            });
            let passed = matches!(reported, Some(Some(usage))
                if usage.input_tokens == input && usage.output_tokens == output);
            let found = match reported {
                Some(Some(usage)) => {
                    format!("{} in, {} out", usage.input_tokens, usage.output_tokens)
                }
                Some(None) => "a reply with no usage".to_string(),
                None => "no reply".to_string(),
            };
            checks.push(
                format!("{at} usage = {input} in, {output} out"),
                passed,
                found,
            );
        }
        if let Some(expected) = self.expectation.allowance {
            let found = manifest.conversation_allowance;
            checks.push(
                format!("{at} allowance = {expected}"),
                found == expected,
                found.to_string(),
            );
        }
    }

    /// `request_contains` and `request_lacks`: the text sent as the step's `number`-th
    /// reasoning request.
    fn sent_text_checks(&self, checks: &mut Checks, step: &StepRecord, number: usize) {
        let at = self.at;
        let sent = step
            .reasoning_requests()
            .get(number - 1)
            .map(|r| request_text(r));
        for needle in &self.expectation.request_contains {
            let passed = sent
                .as_ref()
                .is_some_and(|text| text.contains(needle.as_str()));
            checks.push(
                format!("{at} sent text contains {needle:?}"),
                passed,
                sent_summary(sent.as_deref()),
            );
        }
        for needle in &self.expectation.request_lacks {
            let passed = sent
                .as_ref()
                .is_some_and(|text| !text.contains(needle.as_str()));
            checks.push(
                format!("{at} sent text lacks {needle:?}"),
                passed,
                sent_summary(sent.as_deref()),
            );
        }
    }
}

/// Whether `pattern` (a full transform text, or a prefix ending in `*`) matches a recorded one.
fn transform_recorded(pattern: &str, recorded: &[String]) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => recorded.iter().any(|t| t.starts_with(prefix)),
        None => recorded.iter().any(|t| t == pattern),
    }
}

/// Role or rendered-material tag of each prepared message, in order.
fn layout_tags(manifest: &ContextManifest) -> Vec<String> {
    manifest
        .items
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Message { role, .. } => Some(match item.id.as_str() {
                ctxbed_harness::context::render::TRANSIENT_MESSAGE_ID => "transient".to_string(),
                ctxbed_harness::context::render::REFERENCE_MESSAGE_ID => "reference".to_string(),
                _ => role.as_str().to_string(),
            }),
            _ => None,
        })
        .collect()
}
