//! Enumerated choices of the file formats: each is an enum whose values have one name in
//! files, written once, in its [`Choice`] implementation (here for the harness's and the
//! simulator's enums; beside the enum, in `file::checked`, for the loader's own, so this module
//! imports nothing of the formats). The loader parses by it (`Checker::choice_of` in `mock_file`), the writer
//! and the trace header print by it, and the JSON Schemas list its names ([`ChoiceOf`]), so none
//! of them can drift from the others. The provider a mock imitates keeps its names in the
//! harness (`Provider::as_str`), which needs them too.

use std::borrow::Cow;
use std::marker::PhantomData;

use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::SummaryMode;

use ctxbed_harness::task::plan::PlanMode;

/// An enumerated choice of a file format.
pub trait Choice: Copy + PartialEq + 'static {
    /// What the schema calls it (`tool_pairs`).
    const WHAT: &'static str;
    /// Every value with its name in files, in the order help texts list them.
    const NAMES: &'static [(Self, &'static str)];

    /// The name of this value in files.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(value, _)| *value == self)
            .map(|(_, name)| *name)
            .expect("every value of a choice has a name in NAMES")
    }

    /// The value a name in a file stands for.
    fn parse(text: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(value, _)| *value)
    }

    /// Every name, in order.
    fn names() -> Vec<&'static str> {
        Self::NAMES.iter().map(|(_, name)| *name).collect()
    }
}

impl Choice for PairingCheck {
    const WHAT: &'static str = "tool_pairs";
    const NAMES: &'static [(Self, &'static str)] = &[
        (PairingCheck::Strict, "strict"),
        (PairingCheck::Repair, "repair"),
        (PairingCheck::Unchecked, "unchecked"),
    ];
}

impl Choice for Vocabulary {
    const WHAT: &'static str = "tokenizer";
    const NAMES: &'static [(Self, &'static str)] =
        &[(Vocabulary::O200k, "o200k"), (Vocabulary::Cl100k, "cl100k")];
}

impl Choice for SummaryMode {
    const WHAT: &'static str = "summary_mode";
    const NAMES: &'static [(Self, &'static str)] = &[
        (SummaryMode::Auto, "auto"),
        (SummaryMode::Scripted, "scripted"),
    ];
}

impl Choice for PlanMode {
    const WHAT: &'static str = "plan_mode";
    const NAMES: &'static [(Self, &'static str)] =
        &[(PlanMode::Plan, "plan"), (PlanMode::Build, "build")];
}

/// The schema of a choice: a string, one of its names. Raw structs name it with
/// `#[schemars(with = "Option<ChoiceOf<T>>")]`.
pub struct ChoiceOf<T>(PhantomData<T>);

impl<T: Choice> schemars::JsonSchema for ChoiceOf<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(T::WHAT)
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "enum": T::names() })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::format::file::{EstimatorChoice, Restart, SessionStorage};

    fn round_trips<T: Choice + std::fmt::Debug>() {
        let mut names = T::names();
        for (value, name) in T::NAMES {
            assert_eq!(value.name(), *name);
            assert_eq!(T::parse(name), Some(*value));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            T::NAMES.len(),
            "{} names are distinct",
            T::WHAT
        );
        assert_eq!(T::parse("no such name"), None);
    }

    #[test]
    fn every_choice_round_trips_by_name() {
        round_trips::<EstimatorChoice>();
        round_trips::<PairingCheck>();
        round_trips::<SessionStorage>();
        round_trips::<Vocabulary>();
        round_trips::<SummaryMode>();
        round_trips::<Restart>();
        round_trips::<PlanMode>();
    }
}
