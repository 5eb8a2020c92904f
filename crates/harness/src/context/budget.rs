//! The input limit: how many tokens the prepared input may use.
//!
//! With a known window the output reservation is `min(4096, max(1, window / 8))`, raised to a
//! larger requested maximum output, and the safety margin is `max(1, window / 50)`; the limit is
//! `window − output − margin` (never negative). An unknown window uses a flat 64,000-token input
//! limit. A configured input cap then takes the minimum. Integer arithmetic throughout.
//!
//! ```
//! use ctxbed_harness::context::budget::{BudgetSettings, InputBudget};
//! let budget = InputBudget::compute(Some(128_000), &BudgetSettings::default());
//! assert_eq!((budget.output_reserve, budget.safety_margin, budget.input_limit), (4_096, 2_560, 121_344));
//! let small = InputBudget::compute(Some(4_096), &BudgetSettings::default());
//! assert_eq!((small.output_reserve, small.safety_margin, small.input_limit), (512, 81, 3_503));
//! assert_eq!(InputBudget::compute(None, &BudgetSettings::default()).input_limit, 64_000);
//! ```

/// Input limit used when the model's window is unknown.
pub const UNKNOWN_WINDOW_INPUT_LIMIT: u64 = 64_000;
/// Largest default output reservation.
pub const OUTPUT_RESERVE_DEFAULT_MAX: u64 = 4_096;

/// Explicit budget settings; `None` means "use the default".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetSettings {
    /// Cap on input tokens; the minimum with the window-derived limit is used.
    pub max_input_tokens: Option<u64>,
    /// Output reservation.
    pub output_reserve: Option<u64>,
    /// Safety margin.
    pub safety_margin: Option<u64>,
    /// The request's own max-output setting; a larger value raises the reservation.
    pub requested_max_output: Option<u64>,
}

/// The figures of one request's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputBudget {
    pub window: Option<u64>,
    pub output_reserve: u64,
    pub safety_margin: u64,
    pub input_limit: u64,
}

impl InputBudget {
    /// Computes the budget for a model window and settings. A setting of 0 means "the default",
    /// as `None` does.
    pub fn compute(window: Option<u64>, settings: &BudgetSettings) -> Self {
        let settings = &BudgetSettings {
            max_input_tokens: settings.max_input_tokens.filter(|v| *v > 0),
            output_reserve: settings.output_reserve.filter(|v| *v > 0),
            safety_margin: settings.safety_margin.filter(|v| *v > 0),
            requested_max_output: settings.requested_max_output.filter(|v| *v > 0),
        };
        let Some(window) = window else {
            let limit = cap(UNKNOWN_WINDOW_INPUT_LIMIT, settings.max_input_tokens);
            return InputBudget {
                window: None,
                output_reserve: settings.output_reserve.unwrap_or(0),
                safety_margin: settings.safety_margin.unwrap_or(0),
                input_limit: limit,
            };
        };
        let default_output = OUTPUT_RESERVE_DEFAULT_MAX.min((window / 8).max(1));
        let mut output_reserve = settings.output_reserve.unwrap_or(default_output);
        if let Some(requested) = settings.requested_max_output {
            output_reserve = output_reserve.max(requested);
        }
        let safety_margin = settings.safety_margin.unwrap_or((window / 50).max(1));
        let limit = window
            .saturating_sub(output_reserve)
            .saturating_sub(safety_margin);
        InputBudget {
            window: Some(window),
            output_reserve,
            safety_margin,
            input_limit: cap(limit, settings.max_input_tokens),
        }
    }
}

fn cap(limit: u64, max_input: Option<u64>) -> u64 {
    max_input.map_or(limit, |max| limit.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_and_requested_output() {
        let settings = BudgetSettings {
            max_input_tokens: Some(24_000),
            requested_max_output: Some(10_000),
            ..BudgetSettings::default()
        };
        let budget = InputBudget::compute(Some(128_000), &settings);
        assert_eq!(budget.output_reserve, 10_000);
        assert_eq!(budget.input_limit, 24_000);
        let tiny = InputBudget::compute(Some(1), &BudgetSettings::default());
        assert_eq!(tiny.input_limit, 0);
        let zeros = BudgetSettings {
            max_input_tokens: Some(0),
            output_reserve: Some(0),
            safety_margin: Some(0),
            requested_max_output: Some(0),
        };
        assert_eq!(
            InputBudget::compute(Some(128_000), &zeros),
            InputBudget::compute(Some(128_000), &BudgetSettings::default()),
            "0 selects the defaults"
        );
    }
}
