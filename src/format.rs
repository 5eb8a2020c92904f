//! Small, deterministic text formatting shared by errors and traces.
//!
//! ```
//! use ctxbed::format::{duration, snippet};
//! assert_eq!(duration(std::time::Duration::from_millis(5_000)), "5s");
//! assert_eq!(duration(std::time::Duration::from_millis(1_250)), "1.250s");
//! assert_eq!(snippet("abcdef", 4), "abc…");
//! ```

use std::time::Duration;

/// A duration as `Nms`, `Ns` or `N.mmms`; never a raw float.
pub fn duration(value: Duration) -> String {
    let millis = value.as_millis();
    if millis < 1_000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1_000) {
        format!("{}s", millis / 1_000)
    } else {
        format!("{}.{:03}s", millis / 1_000, millis % 1_000)
    }
}

/// At most `max_chars` characters, with `…` marking a cut; control characters escaped.
pub fn snippet(text: &str, max_chars: usize) -> String {
    let escaped: String = text
        .chars()
        .flat_map(|c| {
            if c == '\n' || c == '\r' || c == '\t' || c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if escaped.chars().count() <= max_chars {
        return escaped;
    }
    let keep = max_chars.saturating_sub(1);
    let mut cut: String = escaped.chars().take(keep).collect();
    cut.push('…');
    cut
}

/// A quoted, escaped, bounded rendering of text for one trace line.
pub fn quoted(text: &str, max_chars: usize) -> String {
    let inner = snippet(text, max_chars).replace('"', "\\\"");
    format!("\"{inner}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_escapes_and_bounds() {
        assert_eq!(snippet("a\nb", 10), "a\\nb");
        assert_eq!(snippet("héllo", 5), "héllo");
        assert_eq!(snippet("héllo!", 5), "héll…");
        assert_eq!(quoted("say \"hi\"", 20), "\"say \\\"hi\\\"\"");
    }

    #[test]
    fn durations_are_integers() {
        assert_eq!(duration(Duration::ZERO), "0ms");
        assert_eq!(duration(Duration::from_secs(600)), "600s");
    }
}
