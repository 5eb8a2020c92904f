//! Omission for budget: which optional materials leave the request when it does not fit.
//!
//! Candidates are materials that are neither required nor System. The default order is memory
//! (`MEMORY.md`), then knowledge files, then every other optional material; within a rank,
//! priority ascending, then id. A custom [`SelectionPolicy`] may return its own order; ids that
//! are unknown, repeated, required or System make the preparation fail.
//!
//! Omission is incremental: each omitted item's rendered cost is subtracted from the running
//! estimate, so dropping k items costs k item estimates, not k full re-estimates. One exact
//! re-measure follows, and only if the item estimates were too optimistic does it measure again,
//! one more omission at a time.

use std::borrow::Cow;
use std::collections::BTreeSet;

use super::block::{Material, MaterialKind, Placement};
use super::render;
use crate::tokens::TokenEstimator;

/// A custom omission order.
pub trait SelectionPolicy: Send + Sync {
    /// Ids of materials to omit, first omitted first. Only these are ever omitted.
    fn omission_order(&self, materials: &[Material]) -> Vec<String>;
}

/// A fixed omission order (what scenario files declare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedOrder(pub Vec<String>);

impl SelectionPolicy for FixedOrder {
    fn omission_order(&self, _materials: &[Material]) -> Vec<String> {
        self.0.clone()
    }
}

/// Why a selection policy's answer was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    #[error("the selection policy returned `{0}`, which is not a material of this request")]
    Unknown(String),
    #[error("the selection policy returned `{0}` twice")]
    Duplicate(String),
    #[error("the selection policy returned `{0}`, which is required and can never be omitted")]
    Required(String),
    #[error(
        "the selection policy returned `{0}`, which is a System instruction and can never be omitted"
    )]
    System(String),
}

/// The outcome of omission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection<'a> {
    /// The materials kept, in input order: the input itself when nothing was omitted (the
    /// usual step), so keeping everything copies nothing.
    pub kept: Cow<'a, [Material]>,
    /// Omitted ids, in omission order.
    pub omitted: Vec<String>,
}

/// Omission rank of a material kind under the default order.
fn rank(kind: MaterialKind) -> u8 {
    match kind {
        MaterialKind::Memory => 0,
        MaterialKind::Knowledge => 1,
        _ => 2,
    }
}

/// The default omission order over optional, non-System materials.
pub fn default_order(materials: &[Material]) -> Vec<String> {
    let mut candidates: Vec<&Material> = materials
        .iter()
        .filter(|m| !m.required && m.placement != Placement::System)
        .collect();
    candidates
        .sort_by(|a, b| (rank(a.kind), a.priority, &a.id).cmp(&(rank(b.kind), b.priority, &b.id)));
    candidates.into_iter().map(|m| m.id.clone()).collect()
}

/// Checks a custom order against the materials.
///
/// # Errors
/// An unknown, repeated, required or System id.
pub fn validate_order(order: &[String], materials: &[Material]) -> Result<(), SelectionError> {
    let mut seen = BTreeSet::new();
    for id in order {
        let Some(material) = materials.iter().find(|m| m.id == *id) else {
            return Err(SelectionError::Unknown(id.clone()));
        };
        if !seen.insert(id.as_str()) {
            return Err(SelectionError::Duplicate(id.clone()));
        }
        if material.placement == Placement::System {
            return Err(SelectionError::System(id.clone()));
        }
        if material.required {
            return Err(SelectionError::Required(id.clone()));
        }
    }
    Ok(())
}

/// Omits materials in `order` until `measure(kept) <= limit` or the order is exhausted.
///
/// `measure` returns the full request estimate for a set of kept materials.
pub fn select<'a>(
    materials: &'a [Material],
    order: &[String],
    limit: u64,
    estimator: &dyn TokenEstimator,
    mut measure: impl FnMut(&[Material]) -> u64,
) -> Selection<'a> {
    let mut estimate = measure(materials);
    let mut omitted: Vec<String> = Vec::new();
    let mut next = order.iter();
    while estimate > limit {
        let Some(id) = next.next() else { break };
        let Some(material) = materials.iter().find(|m| m.id == *id) else {
            continue;
        };
        let cost = if material.text.trim().is_empty() {
            0
        } else {
            estimator.text_tokens(&render::item_text(material))
        };
        estimate = estimate.saturating_sub(cost);
        omitted.push(id.clone());
    }
    if omitted.is_empty() {
        return Selection {
            kept: Cow::Borrowed(materials),
            omitted,
        };
    }
    let keep = |omitted: &[String]| -> Vec<Material> {
        materials
            .iter()
            .filter(|m| !omitted.contains(&m.id))
            .cloned()
            .collect()
    };
    let mut kept = keep(&omitted);
    // Item estimates can be optimistic (envelopes, guidance); correct with exact measures.
    let mut exact = measure(&kept);
    while exact > limit {
        let Some(id) = next.next() else { break };
        omitted.push(id.clone());
        kept = keep(&omitted);
        exact = measure(&kept);
    }
    let kept = Cow::Owned(kept);
    Selection { kept, omitted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::block::ContextBlock;
    use crate::tokens::RatioEstimator;

    fn material(id: &str, kind: MaterialKind, priority: i32) -> Material {
        let mut m = Material::from_block(
            "s",
            &ContextBlock::reference(id, "x".repeat(100)).with_priority(priority),
        );
        m.id = id.to_string();
        m.kind = kind;
        m
    }

    #[test]
    fn default_order_is_memory_knowledge_then_others_by_priority_then_id() {
        let materials = vec![
            material("b", MaterialKind::Reference, 0),
            material("a", MaterialKind::Runtime, 0),
            material("low", MaterialKind::Reference, -1),
            material("workspace:knowledge/k", MaterialKind::Knowledge, 0),
            material("workspace:MEMORY.md", MaterialKind::Memory, 0),
            Material::instruction("i", "never"),
        ];
        assert_eq!(
            default_order(&materials),
            vec![
                "workspace:MEMORY.md",
                "workspace:knowledge/k",
                "low",
                "a",
                "b"
            ]
        );
    }

    #[test]
    fn custom_orders_are_checked() {
        let materials = vec![
            material("a", MaterialKind::Reference, 0),
            Material::instruction("i", "x"),
        ];
        let required = Material {
            required: true,
            ..material("r", MaterialKind::Runtime, 0)
        };
        let all = [materials.clone(), vec![required]].concat();
        assert_eq!(
            validate_order(&["zz".into()], &all),
            Err(SelectionError::Unknown("zz".into()))
        );
        assert_eq!(
            validate_order(&["a".into(), "a".into()], &all),
            Err(SelectionError::Duplicate("a".into()))
        );
        assert_eq!(
            validate_order(&["r".into()], &all),
            Err(SelectionError::Required("r".into()))
        );
        assert_eq!(
            validate_order(&["instruction/i".into()], &all),
            Err(SelectionError::System("instruction/i".into()))
        );
        assert!(validate_order(&["a".into()], &all).is_ok());
    }

    #[test]
    fn omission_is_incremental_and_stops_when_it_fits() {
        let materials: Vec<Material> = (0..50)
            .map(|i| material(&format!("m{i:02}"), MaterialKind::Reference, 0))
            .collect();
        let order = default_order(&materials);
        let mut measures = 0;
        let selection = select(&materials, &order, 1_000, &RatioEstimator, |kept| {
            measures += 1;
            kept.iter()
                .map(|m| RatioEstimator.text_tokens(&render::item_text(m)))
                .sum()
        });
        assert!(measures <= 3, "measured {measures} times");
        let kept: u64 = selection
            .kept
            .iter()
            .map(|m| RatioEstimator.text_tokens(&render::item_text(m)))
            .sum();
        assert!(kept <= 1_000);
        assert_eq!(selection.kept.len() + selection.omitted.len(), 50);
        assert_eq!(selection.omitted[0], "m00");
    }
}
