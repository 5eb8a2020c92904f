//! The generated context material: instructions, scripted sources with their blocks and
//! failures, workspace files, and a custom omission order over the optional ones.

use std::time::Duration;

use super::Draw;
use crate::scenario::format::file::{InstructionSpec, SourceSpec};
use ctxbed_sim::scripted::{BlockSpec, SourceFailure};

/// Up to two System instructions.
pub(super) fn instructions(draw: &mut Draw) -> Vec<InstructionSpec> {
    let names = ["change-policy", "style", "safety"];
    let count = draw.range(0, 2) as usize;
    names[..count]
        .iter()
        .map(|name| {
            let chars = draw.range(1, 300) as usize;
            InstructionSpec {
                name: (*name).to_string(),
                text: draw.text(chars),
            }
        })
        .collect()
}

/// Scripted context sources, each with its blocks, latency and way of failing.
pub(super) fn sources(draw: &mut Draw) -> Vec<SourceSpec> {
    let names = ["change-record", "ticket", "docs"];
    let count = draw.range(0, 3) as usize;
    names[..count]
        .iter()
        .map(|name| {
            let omit_on_failure = draw.percent(50);
            let failure = draw.percent(20).then(|| match draw.below(100) {
                0..40 => SourceFailure::Error,
                40..65 => SourceFailure::NoList,
                65..97 => SourceFailure::Never,
                _ => SourceFailure::Panic,
            });
            // A source that fails every load under FAIL stops every step; mostly fail some.
            let fail_loads = if draw.percent(if omit_on_failure { 50 } else { 15 }) {
                Vec::new()
            } else {
                (1..=6).filter(|_| draw.percent(30)).collect()
            };
            let block_count = draw.range(0, 3);
            let blocks = (0..block_count)
                .map(|index| block(draw, index, omit_on_failure))
                .collect();
            SourceSpec {
                name: (*name).to_string(),
                timeout: draw.percent(40).then(|| draw.millis(1_000, 10_000)),
                omit_on_failure,
                latency: source_latency(draw),
                failure,
                fail_loads,
                blocks,
            }
        })
        .collect()
}

/// Latencies cluster around the default 5 s timeout, on both sides of it.
fn source_latency(draw: &mut Draw) -> Duration {
    match draw.below(100) {
        0..55 => Duration::ZERO,
        55..85 => draw.millis(1, 3_000),
        _ => draw.millis(4_000, 6_000),
    }
}

/// One block of a source: runtime or reference, now and then required, with a priority; rarely
/// a structural problem (a repeated id, a blank revision).
fn block(draw: &mut Draw, index: u64, omit_on_failure: bool) -> BlockSpec {
    let chars = if draw.percent(5) {
        draw.range(1_000, 6_000) as usize
    } else {
        draw.range(0, 200) as usize
    };
    let mut text = draw.text(chars);
    if draw.percent(30) {
        text.push_str(" (load {load})");
    }
    // A required block from an OMIT source is a structural error; keep it rare.
    let required = draw.percent(if omit_on_failure { 2 } else { 20 });
    // Rarely a structural problem no failure policy hides: a repeated id or a blank revision.
    let id = if index > 0 && draw.percent(2) {
        format!("b{}", index - 1)
    } else {
        format!("b{index}")
    };
    let revision = match draw.below(100) {
        0..30 => Some("v{load}".to_string()),
        30..31 => Some(" ".to_string()),
        _ => None,
    };
    BlockSpec {
        id,
        runtime: draw.percent(50),
        text,
        required,
        priority: draw.range(0, 15) as i32 - 5,
        revision,
    }
}

/// Now and then a custom omission order over the optional materials the scenario will have, in
/// a random order; rarely with an id the policy must refuse (unknown or required).
pub(super) fn omission_order(
    draw: &mut Draw,
    sources: &[SourceSpec],
    files: &std::collections::BTreeMap<String, String>,
) -> Option<Vec<String>> {
    if !draw.percent(10) {
        return None;
    }
    let mut ids: Vec<String> = files
        .keys()
        .filter(|path| *path == "MEMORY.md" || path.starts_with("knowledge/"))
        .map(|path| format!("workspace:{path}"))
        .collect();
    for source in sources {
        for block in source.blocks.iter().filter(|b| !b.required) {
            ids.push(format!("source/{}/{}", source.name, block.id));
        }
    }
    let mut order = Vec::new();
    while !ids.is_empty() {
        let index = draw.below(ids.len() as u64) as usize;
        let id = ids.remove(index);
        if draw.percent(80) {
            order.push(id);
        }
    }
    if draw.percent(10) {
        order.push((*draw.pick(&["source/nowhere/x", "instruction/style"])).to_string());
    }
    Some(order)
}

/// Workspace files: `AGENTS.md`, `MEMORY.md`, knowledge files and a large log, each now and
/// then.
pub(super) fn workspace_files(draw: &mut Draw) -> std::collections::BTreeMap<String, String> {
    let mut files = std::collections::BTreeMap::new();
    if draw.percent(30) {
        let chars = draw.range(1, 500) as usize;
        files.insert("AGENTS.md".to_string(), draw.text(chars));
    }
    if draw.percent(30) {
        let facts: Vec<String> = (0..draw.range(1, 5))
            .map(|_| {
                let chars = draw.range(5, 120) as usize;
                format!("- Fact: {}", draw.text(chars).replace('\n', " "))
            })
            .collect();
        files.insert("MEMORY.md".to_string(), facts.join("\n"));
    }
    for name in ["knowledge/export.md", "knowledge/columns.md"] {
        if draw.percent(15) {
            let chars = draw.size().min(4_000);
            files.insert(name.to_string(), draw.text(chars));
        }
    }
    if draw.percent(10) {
        let chars = draw.size();
        files.insert("logs/big.log".to_string(), draw.text(chars));
    }
    files
}
