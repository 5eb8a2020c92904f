//! Errors in scenario and mock-model files: file, line, column, field, and the fix.
//!
//! A [`Diagnostic`] renders like a compiler error, quoting the offending line with a caret:
//!
//! ```text
//! error: unknown field `sede`
//!   --> scenarios/basic/x.toml:2:1
//!    |
//!  2 | sede = 42
//!    | ^^^^
//!    = field: sede
//!    = help: did you mean `seed`?
//! ```

use std::fmt;
use std::ops::Range;

/// One problem found in an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line and column, when a position is known.
    pub position: Option<(usize, usize)>,
    /// The text of the offending line, when a position is known.
    pub line_text: Option<String>,
    /// Width of the caret underline.
    pub width: usize,
    /// The dotted path of the field, when known (e.g. `steps[2].input`).
    pub field: Option<String>,
    pub message: String,
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with no position (e.g. the file could not be read).
    pub fn file_level(file: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_string(),
            position: None,
            line_text: None,
            width: 1,
            field: None,
            message: message.into(),
            help: None,
        }
    }

    /// A diagnostic at a byte span of the source.
    pub fn at(file: &str, source: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        let start = span.start.min(source.len());
        let (line, column, line_text) = locate(source, start);
        let width = source[start..span.end.clamp(start, source.len())]
            .lines()
            .next()
            .map_or(1, |first| first.chars().count().max(1));
        Diagnostic {
            file: file.to_string(),
            position: Some((line, column)),
            line_text: Some(line_text),
            width,
            field: None,
            message: message.into(),
            help: None,
        }
    }

    /// Names the field.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Adds a hint telling the fix.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// `file:line:column` (or just the file).
    pub fn location(&self) -> String {
        match self.position {
            Some((line, column)) => format!("{}:{line}:{column}", self.file),
            None => self.file.clone(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        let gutter = self.position.map_or(1, |(line, _)| line.to_string().len());
        writeln!(f, "{:gutter$}--> {}", "", self.location())?;
        if let (Some((line, column)), Some(text)) = (self.position, &self.line_text) {
            let (shown, caret_column, width) = clip(text, column, self.width);
            writeln!(f, "{:gutter$} |", "")?;
            writeln!(f, "{line} | {shown}")?;
            let pad: String = shown
                .chars()
                .take(caret_column.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            writeln!(f, "{:gutter$} | {pad}{}", "", "^".repeat(width))?;
        }
        if let Some(field) = &self.field {
            writeln!(f, "{:gutter$} = field: {field}", "")?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "{:gutter$} = help: {help}", "")?;
        }
        Ok(())
    }
}

/// Characters of a source line shown around the caret; a longer line is clipped with `…`.
pub const SHOWN_LINE_CHARS_MAX: usize = 120;

/// The part of `text` to show around 1-based `column` (and the caret's column and width in it):
/// the whole line when it is short, else a window of [`SHOWN_LINE_CHARS_MAX`] characters around
/// the caret, marked with `…` where it was cut.
fn clip(text: &str, column: usize, width: usize) -> (String, usize, usize) {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= SHOWN_LINE_CHARS_MAX {
        return (text.to_string(), column, width);
    }
    let caret = column.saturating_sub(1).min(chars.len());
    let width = width.clamp(1, SHOWN_LINE_CHARS_MAX / 2);
    let start = caret.saturating_sub(SHOWN_LINE_CHARS_MAX / 3);
    let end = (start + SHOWN_LINE_CHARS_MAX).min(chars.len());
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    let caret_column = caret - start + 1 + usize::from(start > 0);
    (shown, caret_column, width)
}

/// Sorts diagnostics into reading order: by file, then line and column.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| (&a.file, a.position).cmp(&(&b.file, b.position)));
}

/// All problems found in one load, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, diagnostic) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{diagnostic}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// 1-based line and column (in characters) of a byte offset, and the line's text.
fn locate(source: &str, offset: usize) -> (usize, usize, String) {
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = source[line_start..offset].chars().count() + 1;
    let line_end = source[line_start..]
        .find('\n')
        .map_or(source.len(), |at| line_start + at);
    let text = source[line_start..line_end]
        .trim_end_matches('\r')
        .to_string();
    (line, column, text)
}

/// The candidate closest to `name` by edit distance, when close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let distance = edit_distance(name, candidate);
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    let limit = (name.chars().count() / 3).max(2);
    best.filter(|(distance, _)| *distance <= limit)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// Turns a TOML parse error into a diagnostic, adding a "did you mean" for unknown fields.
pub fn from_toml(file: &str, source: &str, error: &toml::de::Error) -> Diagnostic {
    let message = error.message().trim().to_string();
    let mut diagnostic = match error.span() {
        Some(span) => Diagnostic::at(file, source, span, first_line(&message)),
        None => Diagnostic::file_level(file, first_line(&message)),
    };
    if let Some((unknown, expected)) = unknown_field(&message) {
        // The suggestion (or the list, when nothing is close) goes in the hint.
        diagnostic.message = format!("unknown field `{unknown}`");
        diagnostic = diagnostic.field(unknown.clone());
        let candidates: Vec<&str> = expected.iter().map(String::as_str).collect();
        diagnostic = match closest(&unknown, candidates.iter().copied()) {
            Some(best) => diagnostic.help(format!("did you mean `{best}`?")),
            None => diagnostic.help(format!("expected one of: {}", expected.join(", "))),
        };
    } else if let Some(rest) = message.lines().nth(1) {
        diagnostic = diagnostic.help(rest.trim().to_string());
    }
    diagnostic
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("invalid TOML").to_string()
}

/// Parses serde's "unknown field `x`, expected one of `a`, `b`" wording.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (name, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((name.to_string(), expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_counts_lines_and_characters() {
        let source = "a = 1\nbé = 2\n";
        let offset = source.find('=').unwrap();
        assert_eq!(locate(source, offset).0, 1);
        let second = source.rfind('=').unwrap();
        assert_eq!(locate(source, second), (2, 4, "bé = 2".to_string()));
    }

    #[test]
    fn closest_suggests_typos_only() {
        assert_eq!(closest("sede", ["seed", "steps"]), Some("seed"));
        assert_eq!(
            closest("gpt-overflw", ["gpt-overflow", "echo"]),
            Some("gpt-overflow")
        );
        assert_eq!(closest("zzzzzz", ["seed"]), None);
    }

    #[test]
    fn unknown_field_wording_is_parsed() {
        let (name, expected) =
            unknown_field("unknown field `sede`, expected one of `seed`, `steps`").unwrap();
        assert_eq!(name, "sede");
        assert_eq!(expected, vec!["seed", "steps"]);
    }

    #[test]
    fn rendering_points_at_the_column() {
        let source = "seed = 1\nsede = 2\n";
        let d = Diagnostic::at("x.toml", source, 9..13, "unknown field `sede`")
            .field("sede")
            .help("did you mean `seed`?");
        let text = d.to_string();
        assert!(text.contains(" --> x.toml:2:1"), "{text}");
        assert!(text.contains("2 | sede = 2\n  | ^^^^"), "{text}");
        assert!(text.contains("  = help: did you mean `seed`?"), "{text}");
    }
}

#[cfg(test)]
mod clip_tests {
    use super::*;

    #[test]
    fn a_long_line_is_clipped_around_the_caret() {
        let line = format!("{}key = \"{}\"", "x".repeat(50_000), "y".repeat(50_000));
        let source = format!("{line}\n");
        let at = line.find("key").expect("the key");
        let diagnostic = Diagnostic::at("f.toml", &source, at..at + 3, "unknown field `key`");
        let shown = diagnostic.to_string();
        assert!(shown.len() < 1_000, "{} bytes", shown.len());
        let lines: Vec<&str> = shown.lines().collect();
        let text = lines
            .iter()
            .find(|l| l.starts_with("1 | "))
            .expect("the source line");
        let caret = lines
            .iter()
            .find(|l| l.contains('^'))
            .expect("the caret line");
        assert!(text.starts_with("1 | …") && text.ends_with('…'), "{text}");
        let key_at = text
            .chars()
            .position(|c| c == 'k')
            .expect("the key is shown");
        let caret_at = caret.chars().position(|c| c == '^').expect("a caret");
        assert_eq!(key_at, caret_at, "\n{text}\n{caret}");
        assert!(
            shown.contains("f.toml:1:50001"),
            "the location keeps the real column"
        );
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let diagnostic = Diagnostic::at("f.toml", "seed = 1\n", 7..8, "m");
        assert!(
            diagnostic
                .to_string()
                .contains("1 | seed = 1\n  |        ^")
        );
    }
}
