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
use std::collections::{BTreeSet, HashMap};

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

/// Omits the shortest prefix of `order` after which `measure(kept) <= limit`, or all of it
/// when even that does not fit.
///
/// `measure` returns the full request estimate for a set of kept materials; it is the truth
/// the decision follows, and dropping a material is assumed never to lengthen the request.
/// Ids in `order` that name no material, and repeats, are skipped.
///
/// The running estimate (item costs, and a wrapper's cost when its last item goes) guesses the
/// prefix length; `measure` then decides it. When the guess is right, `measure` is called 3
/// times (the whole request, the guess less one item, the guess); with `n` candidates it is
/// never called more than [`measure_calls_max`]`(n)` times, a wrong guess costing a gallop and
/// a bisection. Whatever `measure` answers, the result fits and the prefix one shorter does
/// not, or the result omits every candidate.
pub fn select<'a>(
    materials: &'a [Material],
    order: &[String],
    limit: u64,
    estimator: &dyn TokenEstimator,
    mut measure: impl FnMut(&[Material]) -> u64,
) -> Selection<'a> {
    let whole = measure(materials);
    let candidates = candidates(materials, order);
    if whole <= limit || candidates.is_empty() {
        return Selection {
            kept: Cow::Borrowed(materials),
            omitted: Vec::new(),
        };
    }
    let position: HashMap<&str, usize> = candidates
        .iter()
        .enumerate()
        .map(|(at, m)| (m.id.as_str(), at))
        .collect();
    let keep = |prefix: usize| -> Vec<Material> {
        materials
            .iter()
            .filter(|m| position.get(m.id.as_str()).is_none_or(|at| *at >= prefix))
            .cloned()
            .collect()
    };
    let guess = estimated_prefix(materials, &candidates, whole, limit, estimator);
    // The kept set of the shortest prefix known to fit, and of the whole order when it does not.
    let mut fitting: Option<(usize, Vec<Material>)> = None;
    let mut exhausted: Option<Vec<Material>> = None;
    let omit = shortest_fitting(candidates.len(), guess, |prefix| {
        let kept = keep(prefix);
        let fits = measure(&kept) <= limit;
        if fits {
            fitting = Some((prefix, kept));
        } else if prefix == candidates.len() {
            exhausted = Some(kept);
        }
        fits
    });
    // The set kept at `omit` was built already: `shortest_fitting` returns the last prefix that
    // fit, and when none fit it returns `candidates.len()`, which it measured.
    let kept = match (fitting, exhausted) {
        (Some((prefix, kept)), _) => {
            debug_assert_eq!(prefix, omit, "the last prefix that fit is the answer");
            kept
        }
        (None, Some(kept)) => {
            debug_assert_eq!(omit, candidates.len(), "nothing fit: every candidate goes");
            kept
        }
        (None, None) => keep(omit),
    };
    Selection {
        kept: Cow::Owned(kept),
        omitted: candidates[..omit].iter().map(|m| m.id.clone()).collect(),
    }
}

/// The most `measure` calls [`select`] makes with `candidates` materials to omit: the whole
/// request, then at most 2 + 2⌈log₂ n⌉ prefixes.
pub fn measure_calls_max(candidates: usize) -> usize {
    let log = candidates.next_power_of_two().trailing_zeros() as usize;
    3 + 2 * log
}

/// The materials `order` names, in its order, each once.
fn candidates<'a>(materials: &'a [Material], order: &[String]) -> Vec<&'a Material> {
    let by_id: HashMap<&str, &Material> =
        materials.iter().rev().map(|m| (m.id.as_str(), m)).collect();
    let mut seen = BTreeSet::new();
    order
        .iter()
        .filter(|id| seen.insert(id.as_str()))
        .filter_map(|id| by_id.get(id.as_str()).copied())
        .collect()
}

/// The prefix length, in `1..=candidates.len()`, after which the running estimate first fits
/// `limit`. Each omitted item takes its rendered cost; the last rendered item of the transient
/// or the reference message takes the message's wrapper too, and the last of both the System
/// message's guidance.
fn estimated_prefix(
    materials: &[Material],
    candidates: &[&Material],
    whole: u64,
    limit: u64,
    estimator: &dyn TokenEstimator,
) -> usize {
    let rendered = |m: &Material| !m.text.trim().is_empty();
    let wrapped = [Placement::Transient, Placement::Reference];
    let mut left = wrapped.map(|placement| {
        materials
            .iter()
            .filter(|m| m.placement == placement && rendered(m))
            .count()
    });
    let mut estimate = whole;
    for (at, material) in candidates.iter().enumerate() {
        if rendered(material) {
            let mut cost = estimator.text_tokens(&render::item_text(material));
            if let Some(slot) = wrapped.iter().position(|p| *p == material.placement) {
                left[slot] -= 1;
                if left[slot] == 0 {
                    cost += wrapper_tokens(material.placement, estimator);
                    if left == [0, 0] {
                        cost +=
                            estimator.text_tokens(&format!("\n\n{}", render::guidance_section()));
                    }
                }
            }
            estimate = estimate.saturating_sub(cost);
        }
        if estimate <= limit {
            return at + 1;
        }
    }
    candidates.len()
}

/// What the transient or reference message costs beyond its items.
fn wrapper_tokens(placement: Placement, estimator: &dyn TokenEstimator) -> u64 {
    let probe = Material {
        id: String::new(),
        kind: MaterialKind::Reference,
        placement,
        text: "x".to_string(),
        revision: String::new(),
        required: false,
        priority: 0,
    };
    let item = estimator.text_tokens(&render::item_text(&probe));
    render::material_message(std::slice::from_ref(&probe), placement).map_or(0, |message| {
        estimator.message_tokens(&message).saturating_sub(item)
    })
}

/// The shortest prefix length in `1..=n` that `fits`, or `n` when none does, given that the
/// empty prefix does not fit; starting from `guess` (in `1..=n`).
///
/// It asks `guess - 1` and then `guess`, so a right guess costs two calls and ends on the
/// answer; otherwise it gallops (steps 1, 2, 4, …) away from the guess until the answer is
/// bracketed, then bisects the bracket. At most 2 + 2⌈log₂ n⌉ calls. Whatever `fits` answers,
/// the answer fits and the prefix one shorter does not, or the answer is `n`.
fn shortest_fitting(n: usize, guess: usize, mut fits: impl FnMut(usize) -> bool) -> usize {
    debug_assert!((1..=n).contains(&guess), "guess {guess} of {n}");
    // `lo` does not fit; `hi` fits; lo < hi.
    let mut lo = 0;
    let mut hi;
    if guess > 1 && fits(guess - 1) {
        hi = guess - 1;
        let mut step = 1;
        // Down while the probes fit; a probe that does not ends the gallop (hi - lo = step).
        while hi - lo > step {
            let probe = hi - step;
            if fits(probe) {
                hi = probe;
                step *= 2;
            } else {
                lo = probe;
            }
        }
    } else {
        if fits(guess) {
            return guess;
        }
        lo = guess;
        let mut step = 1;
        loop {
            if lo == n {
                return n;
            }
            let probe = (lo + step).min(n);
            if fits(probe) {
                hi = probe;
                break;
            }
            lo = probe;
            step *= 2;
        }
    }
    while hi - lo > 1 {
        let middle = lo + (hi - lo) / 2;
        if fits(middle) {
            hi = middle;
        } else {
            lo = middle;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::block::ContextBlock;
    use crate::tokens::RatioEstimator;

    /// A material of `kind` in `placement` whose text is `len` characters.
    fn sized(id: &str, kind: MaterialKind, placement: Placement, len: usize) -> Material {
        Material {
            id: id.to_string(),
            kind,
            placement,
            text: "y".repeat(len),
            revision: "1".to_string(),
            required: false,
            priority: 0,
        }
    }

    /// What a request of these materials costs, as `prepare` lays it out: a System message
    /// (a prompt, the System materials, guidance while anything is tagged), then the transient
    /// and reference messages.
    fn layout(kept: &[Material]) -> u64 {
        let transient = render::material_message(kept, Placement::Transient);
        let reference = render::material_message(kept, Placement::Reference);
        let guidance = transient.is_some() || reference.is_some();
        let system = render::system_message(Some("Be careful."), kept, &[], guidance);
        [system, transient, reference]
            .iter()
            .flatten()
            .map(|m| RatioEstimator.message_tokens(m))
            .sum()
    }

    /// Memory and knowledge (the only reference material), then three runtime blocks of
    /// different sizes, and one required runtime block.
    fn workspace_and_runtime() -> Vec<Material> {
        let mut required = sized(
            "source/s/req",
            MaterialKind::Runtime,
            Placement::Transient,
            30,
        );
        required.required = true;
        vec![
            Material::instruction("policy", "Preserve the API."),
            sized(
                "workspace:MEMORY.md",
                MaterialKind::Memory,
                Placement::Reference,
                200,
            ),
            sized(
                "workspace:knowledge/k.md",
                MaterialKind::Knowledge,
                Placement::Reference,
                150,
            ),
            sized(
                "source/s/a",
                MaterialKind::Runtime,
                Placement::Transient,
                120,
            ),
            sized(
                "source/s/b",
                MaterialKind::Runtime,
                Placement::Transient,
                60,
            ),
            sized(
                "source/s/c",
                MaterialKind::Runtime,
                Placement::Transient,
                90,
            ),
            required,
        ]
    }

    /// The materials left when the first `prefix` ids of `order` are omitted.
    fn kept_after(materials: &[Material], order: &[String], prefix: usize) -> Vec<Material> {
        materials
            .iter()
            .filter(|m| !order[..prefix].contains(&m.id))
            .cloned()
            .collect()
    }

    /// The shortest prefix of `order` whose omission fits, by measuring every prefix.
    fn brute_force(materials: &[Material], order: &[String], limit: u64) -> usize {
        (0..=order.len())
            .find(|&prefix| layout(&kept_after(materials, order, prefix)) <= limit)
            .unwrap_or(order.len())
    }

    /// The selection, and the sizes of the kept sets `measure` was asked about, in order.
    fn run(
        materials: &[Material],
        order: &[String],
        limit: u64,
    ) -> (Selection<'static>, Vec<usize>) {
        let mut measured = Vec::new();
        let selection = select(materials, order, limit, &RatioEstimator, |kept| {
            measured.push(kept.len());
            layout(kept)
        });
        let selection = Selection {
            kept: Cow::Owned(selection.kept.into_owned()),
            omitted: selection.omitted,
        };
        (selection, measured)
    }

    #[test]
    fn a_cap_just_above_memory_and_knowledge_keeps_the_next_source() {
        let materials = workspace_and_runtime();
        let order = default_order(&materials);
        assert_eq!(
            &order[..2],
            ["workspace:MEMORY.md", "workspace:knowledge/k.md"]
        );
        let without_workspace: Vec<Material> = materials
            .iter()
            .filter(|m| !m.id.starts_with("workspace:"))
            .cloned()
            .collect();
        // The reference message leaves with its last item: its wrapper is saved too.
        let limit = layout(&without_workspace) + 3;
        let (selection, measured) = run(&materials, &order, limit);
        assert_eq!(
            selection.omitted,
            ["workspace:MEMORY.md", "workspace:knowledge/k.md"]
        );
        assert_eq!(selection.kept.as_ref(), without_workspace.as_slice());
        // The running estimate guessed right: the whole, one item fewer omitted, the answer.
        assert_eq!(measured, [7, 6, 5]);
    }

    #[test]
    fn every_limit_omits_the_shortest_fitting_prefix() {
        let materials = workspace_and_runtime();
        let order = default_order(&materials);
        let everything = layout(&materials);
        let protected = [materials[0].clone(), materials[6].clone()];
        let minimum = layout(&protected);
        for limit in minimum.saturating_sub(60)..=everything + 2 {
            let (selection, measured) = run(&materials, &order, limit);
            let expected = brute_force(&materials, &order, limit);
            assert_eq!(selection.omitted, order[..expected], "limit {limit}");
            assert_eq!(
                selection.kept.len() + expected,
                materials.len(),
                "limit {limit}"
            );
            assert!(
                measured.len() <= measure_calls_max(order.len()),
                "limit {limit}: {} measures",
                measured.len()
            );
        }
    }

    #[test]
    fn a_request_exactly_at_the_limit_keeps_its_materials_and_one_over_omits() {
        let materials = workspace_and_runtime();
        let order = default_order(&materials);
        let everything = layout(&materials);
        let (selection, measured) = run(&materials, &order, everything);
        assert!(selection.omitted.is_empty());
        assert_eq!(measured, [7]);
        let untouched = select(&materials, &order, everything, &RatioEstimator, layout);
        assert!(
            matches!(untouched.kept, Cow::Borrowed(_)),
            "nothing omitted, nothing copied"
        );
        let (selection, _) = run(&materials, &order, everything - 1);
        assert_eq!(selection.omitted, ["workspace:MEMORY.md"]);
        // Each prefix: exactly at its cost it is enough; a token less needs the next item.
        for prefix in 1..order.len() {
            let kept = kept_after(&materials, &order, prefix);
            let cost = layout(&kept);
            let (at, _) = run(&materials, &order, cost);
            assert_eq!(at.omitted, order[..prefix], "at {cost}");
            assert_eq!(at.kept.as_ref(), kept.as_slice(), "at {cost}");
            let (over, _) = run(&materials, &order, cost - 1);
            assert_eq!(over.omitted, order[..=prefix], "at {}", cost - 1);
        }
    }

    #[test]
    fn the_running_estimate_guesses_every_prefix_at_its_exact_cost() {
        // Each omitted item takes its cost, the last of a message its wrapper, the last of
        // both the guidance: at every prefix's own cost the guess is right, so `measure` is
        // asked about the whole, the prefix one shorter and the prefix, nothing else.
        let materials = workspace_and_runtime();
        let order = default_order(&materials);
        for prefix in 1..=order.len() {
            let kept = kept_after(&materials, &order, prefix);
            let (selection, measured) = run(&materials, &order, layout(&kept));
            assert_eq!(selection.omitted, order[..prefix]);
            let before = materials.len() - prefix + 1;
            let expected: &[usize] = if prefix == 1 {
                &[materials.len(), kept.len()]
            } else {
                &[materials.len(), before, kept.len()]
            };
            assert_eq!(measured, expected, "prefix {prefix}");
        }
    }

    #[test]
    fn the_guidance_leaves_with_the_last_tagged_item() {
        // Nothing required outside the System message: omitting the reference and the runtime
        // block removes both messages and the guidance the System message carried for them.
        // An empty block (rendered nowhere) comes after them in the order; the guess must not
        // run on to it.
        let materials = vec![
            Material::instruction("policy", "Preserve the API."),
            sized("ref", MaterialKind::Reference, Placement::Reference, 200),
            sized("run", MaterialKind::Runtime, Placement::Transient, 120),
            sized("empty", MaterialKind::Runtime, Placement::Transient, 0),
        ];
        let order: Vec<String> = ["ref", "run", "empty"].map(String::from).to_vec();
        let kept = [materials[0].clone(), materials[3].clone()];
        let (selection, measured) = run(&materials, &order, layout(&kept));
        assert_eq!(selection.omitted, ["ref", "run"]);
        assert_eq!(measured, [4, 3, 2], "the whole, one omitted, the answer");
        // A token less: nothing fits (the empty block saves nothing), and the guess is the
        // whole order, not the prefix before it.
        let (selection, measured) = run(&materials, &order, layout(&kept) - 1);
        assert_eq!(selection.omitted, order);
        assert_eq!(measured, [4, 2, 1]);
    }

    #[test]
    fn nothing_fits_omits_every_candidate() {
        let materials = workspace_and_runtime();
        let order = default_order(&materials);
        let (selection, measured) = run(&materials, &order, 0);
        assert_eq!(selection.omitted, order);
        let protected: Vec<&str> = selection.kept.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(protected, ["instruction/policy", "source/s/req"]);
        assert!(measured.len() <= measure_calls_max(order.len()));
        // No candidate at all: nothing to omit, the input itself comes back.
        let (selection, measured) = run(&materials, &[], 0);
        assert!(selection.omitted.is_empty() && selection.kept.len() == materials.len());
        assert_eq!(measured, [7]);
    }

    #[test]
    fn unknown_and_repeated_ids_are_skipped() {
        let materials = workspace_and_runtime();
        let order: Vec<String> = ["zz", "source/s/b", "source/s/b", "source/s/a"]
            .map(String::from)
            .to_vec();
        let (selection, _) = run(&materials, &order, 0);
        assert_eq!(selection.omitted, ["source/s/b", "source/s/a"]);
        assert_eq!(selection.kept.len(), 5);
    }

    /// `shortest_fitting` over every length, guess and boundary: the answer, and the bound.
    #[test]
    fn the_search_finds_the_boundary_within_its_bound() {
        for n in 1..=130 {
            for guess in 1..=n {
                for boundary in 1..=n + 1 {
                    let mut calls = 0;
                    let answer = shortest_fitting(n, guess, |prefix| {
                        assert!((1..=n).contains(&prefix));
                        calls += 1;
                        prefix >= boundary
                    });
                    assert_eq!(answer, boundary.min(n), "n {n} guess {guess}");
                    assert!(
                        calls < measure_calls_max(n),
                        "n {n} guess {guess} boundary {boundary}: {calls} calls"
                    );
                }
            }
        }
    }

    #[test]
    fn a_guess_off_by_one_costs_at_most_three_calls() {
        let calls = |n: usize, guess: usize, boundary: usize| {
            let mut calls = 0;
            let answer = shortest_fitting(n, guess, |prefix| {
                calls += 1;
                prefix >= boundary
            });
            assert_eq!(answer, boundary, "n {n} guess {guess}");
            calls
        };
        for n in 2..=130 {
            for guess in 1..=n {
                assert_eq!(calls(n, guess, guess), if guess == 1 { 1 } else { 2 });
                if guess >= 2 {
                    // At a boundary of 1 the empty prefix, known not to fit, ends the search.
                    let expected = if guess == 2 { 1 } else { 2 };
                    assert_eq!(calls(n, guess, guess - 1), expected, "one too many");
                }
                if guess < n {
                    let expected = if guess == 1 { 2 } else { 3 };
                    assert_eq!(calls(n, guess, guess + 1), expected, "one too few");
                }
            }
        }
    }

    /// Whatever `fits` answers (every answer table up to 12 prefixes, from every guess), the
    /// answer fits and the prefix one shorter does not, or it is the whole order; within the
    /// bound.
    #[test]
    fn the_search_is_locally_minimal_for_any_answers() {
        for n in 1..=12usize {
            for table in 0..1u32 << n {
                let answers = |prefix: usize| table & (1 << (prefix - 1)) != 0;
                for guess in 1..=n {
                    let mut calls = 0;
                    let answer = shortest_fitting(n, guess, |prefix| {
                        calls += 1;
                        answers(prefix)
                    });
                    if answers(answer) {
                        assert!(
                            answer == 1 || !answers(answer - 1),
                            "{table:b} from {guess}"
                        );
                    } else {
                        assert_eq!(answer, n, "{table:b} from {guess}");
                    }
                    assert!(calls < measure_calls_max(n), "{table:b} from {guess}");
                }
            }
        }
    }

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
    fn a_fixed_order_is_its_list_whatever_the_materials() {
        let order = FixedOrder(vec!["b".into(), "a".into()]);
        assert_eq!(order.omission_order(&[]), ["b", "a"]);
        let materials = vec![material("a", MaterialKind::Reference, 0)];
        assert_eq!(order.omission_order(&materials), ["b", "a"]);
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
