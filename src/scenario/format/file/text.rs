//! Settings of generated text, shared by tools, history and workspace files: a length within
//! the tool-result limit and a text kind.

use ctxbed_harness::limits;
use ctxbed_sim::text::TextKind;
use toml::Spanned;

use crate::scenario::format::mock_file::Checker;

pub(super) fn text_kind(
    checker: &mut Checker<'_>,
    value: Option<&Spanned<String>>,
    field: &str,
) -> Option<TextKind> {
    match value {
        Some(value) => {
            let names = TextKind::ALL.map(TextKind::as_str);
            checker.choice(value, field, &names, TextKind::parse)
        }
        None => Some(TextKind::Prose),
    }
}

pub(super) fn result_chars(
    checker: &mut Checker<'_>,
    value: &Spanned<i64>,
    field: &str,
) -> Option<usize> {
    let chars = checker.count(value, field, 0)?;
    if chars > limits::TOOL_RESULT_CHARS_MAX as u64 {
        let problem = checker
            .at(
                value,
                format!(
                    "`{field}` is {chars}; at most {} characters",
                    limits::TOOL_RESULT_CHARS_MAX
                ),
            )
            .field(field.to_string());
        checker.problems.push(problem);
        return None;
    }
    usize::try_from(chars).ok()
}
