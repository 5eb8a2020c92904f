//! Compaction settings and their defaults.
//!
//! ```
//! use ctxbed_harness::compaction::config::{CompactionConfig, TailBudget};
//! let config = CompactionConfig::default();
//! assert_eq!(config.trigger_messages, 50);
//! // The dynamic tail: 25 % of the allowance, bounded 2,000–8,000, capped at half the allowance.
//! assert_eq!(config.tail_budget(100_000), TailBudget::Tokens(8_000));
//! assert_eq!(config.tail_budget(20_000), TailBudget::Tokens(5_000));
//! assert_eq!(config.tail_budget(6_000), TailBudget::Tokens(2_000));
//! assert_eq!(config.tail_budget(3_000), TailBudget::Tokens(1_500));
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::model::Model;

/// The placeholder a summary prompt must contain.
pub const MESSAGES_PLACEHOLDER: &str = "{messages}";

/// The standard summary prompt.
pub const DEFAULT_SUMMARY_PROMPT: &str = "Summarise the conversation below so that work can continue \
from the summary alone. Use these sections:\n\
## Session intent\nWhat the user wants and why.\n\
## Summary\nDecisions, reasoning and rejected options.\n\
## Artifacts\nFiles, commands, results and identifiers that matter.\n\
## Next steps\nWhat remains to be done.\n\n\
Conversation:\n{messages}";

/// Argument truncation (off until configured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateArgsConfig {
    pub trigger_messages: usize,
    pub trigger_tokens: u64,
    /// The newest messages whose arguments are never truncated.
    pub protect_latest: usize,
    /// Strings longer than this are truncated.
    pub max_arg_length: usize,
    /// Appended to the first 20 characters of a truncated string.
    pub truncation_text: String,
}

impl Default for TruncateArgsConfig {
    fn default() -> Self {
        TruncateArgsConfig {
            trigger_messages: 25,
            trigger_tokens: 40_000,
            protect_latest: 20,
            max_arg_length: 2_000,
            truncation_text: "... [argument truncated] ...".to_string(),
        }
    }
}

/// Aggregate pruning of older tool output (on by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneConfig {
    /// The newest tool output, in tokens, that is never pruned.
    pub protect_tokens: u64,
    /// Prune only when at least this many tokens are prunable.
    pub minimum_prunable_tokens: u64,
    /// Characters kept in total (half at the head, half at the tail).
    pub preview_chars: usize,
    pub excluded_tools: BTreeSet<String>,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            protect_tokens: 40_000,
            minimum_prunable_tokens: 20_000,
            preview_chars: 2_000,
            excluded_tools: ["read_file", "memory_search", "memory_get", "session_search"]
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }
}

/// How much conversation the kept tail may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailBudget {
    Tokens(u64),
    Messages(usize),
}

/// Conversation compaction settings.
#[derive(Clone)]
pub struct CompactionConfig {
    pub trigger_messages: usize,
    /// 0 selects the dynamic conversation allowance; a positive value can lower it.
    pub trigger_tokens: u64,
    /// `None`: the dynamic tail; `Some(0)`: message mode (`keep_messages`); `Some(n)`: n tokens.
    pub keep_tokens: Option<u64>,
    pub keep_messages: usize,
    pub truncate_args: Option<TruncateArgsConfig>,
    pub prune: Option<PruneConfig>,
    /// A separate summary model (the agent's model when `None`).
    pub model: Option<Arc<dyn Model>>,
    /// Must contain `{messages}`.
    pub summary_prompt: String,
    /// Before summarising, ask a model to extract facts from the summarised messages into
    /// long-term memory (best-effort: a failure is a transform and compaction goes on).
    pub flush_before_compact: bool,
    /// The model the memory flush asks (the summary model when `None`, else the agent's).
    pub memory_model: Option<Arc<dyn Model>>,
    /// The extraction prompt; must contain `{messages}`.
    /// Default: [`DEFAULT_MEMORY_PROMPT`](super::memory::DEFAULT_MEMORY_PROMPT).
    pub memory_prompt: String,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            trigger_messages: 50,
            trigger_tokens: 0,
            keep_tokens: None,
            keep_messages: 20,
            truncate_args: None,
            prune: Some(PruneConfig::default()),
            model: None,
            summary_prompt: DEFAULT_SUMMARY_PROMPT.to_string(),
            flush_before_compact: true,
            memory_model: None,
            memory_prompt: super::memory::DEFAULT_MEMORY_PROMPT.to_string(),
        }
    }
}

impl std::fmt::Debug for CompactionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionConfig")
            .field("trigger_messages", &self.trigger_messages)
            .field("trigger_tokens", &self.trigger_tokens)
            .field("keep_tokens", &self.keep_tokens)
            .field("keep_messages", &self.keep_messages)
            .field("truncate_args", &self.truncate_args)
            .field("prune", &self.prune)
            .field("model", &self.model.as_ref().map(|m| m.info().name.clone()))
            .field("flush_before_compact", &self.flush_before_compact)
            .field(
                "memory_model",
                &self.memory_model.as_ref().map(|m| m.info().name.clone()),
            )
            .finish()
    }
}

/// Why a compaction configuration was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error(
        "the summary prompt has no `{{messages}}` placeholder; add it where the conversation goes"
    )]
    MissingPlaceholder,
    #[error(
        "the memory prompt has no `{{messages}}` placeholder; add it where the conversation goes"
    )]
    MissingMemoryPlaceholder,
    #[error("keep_messages must be at least 1")]
    ZeroKeepMessages,
}

/// Lower bound of the dynamic tail.
pub const DYNAMIC_TAIL_MIN: u64 = 2_000;
/// Upper bound of the dynamic tail.
pub const DYNAMIC_TAIL_MAX: u64 = 8_000;

impl CompactionConfig {
    /// Checks the configuration.
    ///
    /// # Errors
    /// A summary or memory prompt without `{messages}`, or `keep_messages = 0`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.summary_prompt.contains(MESSAGES_PLACEHOLDER) {
            return Err(ConfigError::MissingPlaceholder);
        }
        if !self.memory_prompt.contains(MESSAGES_PLACEHOLDER) {
            return Err(ConfigError::MissingMemoryPlaceholder);
        }
        if self.keep_messages == 0 {
            return Err(ConfigError::ZeroKeepMessages);
        }
        Ok(())
    }

    /// The token trigger for a conversation allowance.
    pub fn token_trigger(&self, allowance: u64) -> u64 {
        if self.trigger_tokens == 0 {
            allowance
        } else {
            self.trigger_tokens.min(allowance)
        }
    }

    /// The kept tail's budget for a conversation allowance.
    ///
    /// The dynamic tail is 25 % of the allowance, bounded to 2,000–8,000 tokens and capped at
    /// half the allowance. When that cap is 0 (an allowance of 0 or 1) there is no token budget
    /// left for a tail; the tail then falls back to `keep_messages`, and the caller records it.
    pub fn tail_budget(&self, allowance: u64) -> TailBudget {
        match self.keep_tokens {
            Some(0) => TailBudget::Messages(self.keep_messages),
            Some(tokens) => TailBudget::Tokens(tokens),
            None => {
                let cap = allowance / 2;
                if cap == 0 {
                    return TailBudget::Messages(self.keep_messages);
                }
                let target = (allowance / 4).clamp(DYNAMIC_TAIL_MIN, DYNAMIC_TAIL_MAX);
                TailBudget::Tokens(target.min(cap))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_its_field() {
        assert_eq!(CompactionConfig::default().validate(), Ok(()));
        let no_placeholder = CompactionConfig {
            summary_prompt: "Summarise.".to_string(),
            ..CompactionConfig::default()
        };
        assert_eq!(
            no_placeholder.validate(),
            Err(ConfigError::MissingPlaceholder)
        );
        let no_memory_placeholder = CompactionConfig {
            memory_prompt: "Remember.".to_string(),
            ..CompactionConfig::default()
        };
        assert_eq!(
            no_memory_placeholder.validate(),
            Err(ConfigError::MissingMemoryPlaceholder)
        );
        let keep_none = CompactionConfig {
            keep_messages: 0,
            ..CompactionConfig::default()
        };
        assert_eq!(keep_none.validate(), Err(ConfigError::ZeroKeepMessages));
    }

    #[test]
    fn debug_shows_the_settings_not_the_prompts() {
        let shown = format!("{:?}", CompactionConfig::default());
        assert!(shown.starts_with("CompactionConfig {"), "{shown}");
        assert!(shown.contains("keep_messages: 20"), "{shown}");
        assert!(shown.contains("model: None"), "{shown}");
        assert!(!shown.contains(MESSAGES_PLACEHOLDER), "{shown}");
    }
}
