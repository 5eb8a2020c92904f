//! How a served request ended: the typed outcome an exchange records, and its stable name in
//! traces, records and summaries (`as_str`, `Display`).

use ctxbed_harness::model::ModelErrorKind;

/// How one request to a host ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The connection was reset before any answer (a scripted fault).
    Reset,
    /// A 200 with text.
    Reply,
    /// A 200 with tool calls.
    ToolCalls,
    /// A streamed 200 cut halfway (a scripted fault).
    CutStream,
    /// Anthropic's `count_tokens` answered.
    CountTokens,
    /// The body was not JSON.
    NotJson,
    /// The provider refuses the request as written (its 400).
    InvalidRequest,
    /// The model's scripted or provider error.
    Error(ModelErrorKind),
}

impl Outcome {
    /// The stable name (`reply`, `tool_calls`, `context_overflow`, `reset`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Reset => "reset",
            Outcome::Reply => "reply",
            Outcome::ToolCalls => "tool_calls",
            Outcome::CutStream => "cut_stream",
            Outcome::CountTokens => "count_tokens",
            Outcome::NotJson => "not_json",
            Outcome::InvalidRequest => "invalid_request",
            Outcome::Error(kind) => kind.as_str(),
        }
    }

    /// True for a context-overflow error.
    pub fn is_overflow(self) -> bool {
        self == Outcome::Error(ModelErrorKind::ContextOverflow)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_name() {
        let mut all = vec![
            Outcome::Reset,
            Outcome::Reply,
            Outcome::ToolCalls,
            Outcome::CutStream,
            Outcome::CountTokens,
            Outcome::NotJson,
            Outcome::InvalidRequest,
        ];
        all.extend(ModelErrorKind::ALL.map(Outcome::Error));
        let mut names: Vec<&str> = all.iter().map(|o| o.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "{names:?}");
        assert!(Outcome::Error(ModelErrorKind::ContextOverflow).is_overflow());
        assert!(!Outcome::Reply.is_overflow());
        assert_eq!(Outcome::ToolCalls.to_string(), "tool_calls");
    }
}
