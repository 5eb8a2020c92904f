//! The words of an error message, for matching by shape rather than by exact string.

/// A message lower-cased and split into words: runs of letters, digits and `_` (so
/// `max_tokens`, `tool_use_id` and `n_ctx` are one word each); everything else separates.
/// A dotted path (`messages.0.content.2.image`, `docs.anthropic.com`, `3.5`) or a URL names a
/// place, not a thing the message is about, so its words are left out: `messages` in
/// `messages.7.content: image exceeds ...` is no mention of the messages, nor is `tool-use` in a
/// link to documentation a mention of a tool call.
pub(super) struct Text {
    /// The lower-cased message, for the size parser.
    pub(super) lower: String,
    words: Vec<String>,
}

/// A character between words; `.` is kept for a while, to find the dotted paths.
fn separates(c: char) -> bool {
    !(c.is_alphanumeric() || c == '_' || c == '.')
}

impl Text {
    pub(super) fn new(message: &str) -> Self {
        let lower = message.to_lowercase();
        let words = lower
            .split_whitespace()
            .filter(|token| !token.contains("://"))
            .flat_map(|token| token.split(separates))
            .map(|chunk| chunk.trim_matches('.'))
            .filter(|word| !word.is_empty() && !word.contains('.'))
            .map(str::to_string)
            .collect();
        Text { lower, words }
    }

    /// Every word, in order.
    pub(super) fn words(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(String::as_str)
    }

    /// Whether one of `words` occurs as a whole word.
    pub(super) fn has_word(&self, words: &[&str]) -> bool {
        self.words().any(|word| words.contains(&word))
    }

    /// Whether a word starts with one of `prefixes`.
    pub(super) fn has_word_starting(&self, prefixes: &[&str]) -> bool {
        self.words()
            .any(|word| prefixes.iter().any(|prefix| word.starts_with(prefix)))
    }

    /// Whether a word, with its `_` removed, contains one of `parts` (`tool_use_id` and
    /// `toolUseId` both contain `tooluse`).
    pub(super) fn has_squashed(&self, parts: &[&str]) -> bool {
        self.words().any(|word| {
            let squashed = word.replace('_', "");
            parts.iter().any(|part| squashed.contains(part))
        })
    }

    /// Whether a word of `first` is followed, at most `within` words later, by a word of `then`
    /// (`after role`, `previous assistant message`, `last entry`).
    pub(super) fn has_near(&self, first: &[&str], then: &[&str], within: usize) -> bool {
        self.words.iter().enumerate().any(|(at, word)| {
            first.contains(&word.as_str())
                && self.words[at + 1..]
                    .iter()
                    .take(within)
                    .any(|next| then.contains(&next.as_str()))
        })
    }

    /// Whether one of `phrases` occurs as consecutive words.
    pub(super) fn has_phrase(&self, phrases: &[&[&str]]) -> bool {
        phrases.iter().any(|phrase| {
            !phrase.is_empty()
                && self
                    .words
                    .windows(phrase.len())
                    .any(|window| window.iter().zip(phrase.iter()).all(|(w, p)| w == p))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_identifiers_whole() {
        let text = Text::new("`tool_use` ids: Max_Tokens (n_ctx: 5) -- ok");
        let words: Vec<&str> = text.words().collect();
        assert_eq!(words, ["tool_use", "ids", "max_tokens", "n_ctx", "5", "ok"]);
        assert!(text.has_phrase(&[&["n_ctx", "5"]]));
        assert!(!text.has_phrase(&[&["ids", "n_ctx"], &[]]));
        assert!(text.has_squashed(&["tooluse"]));
        assert!(text.has_word_starting(&["max_"]));
        assert!(text.has_near(&["ids"], &["5"], 3));
        assert!(!text.has_near(&["ids"], &["ok"], 2));
    }

    #[test]
    fn dotted_paths_are_no_words() {
        let text = Text::new(
            "messages.7.content.2.image: image exceeds. See docs.x.ai, gpt 3.5. https://a.b/tool-use",
        );
        let words: Vec<&str> = text.words().collect();
        assert_eq!(words, ["image", "exceeds", "see", "gpt"]);
    }
}
