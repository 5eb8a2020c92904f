//! Deterministic generated text of an exact length, in several kinds of content.
//!
//! Scripted tools and generated histories use it so a scenario can ask for "a 400,000-character
//! log" without shipping one. The same kind, length and seed give the same text.
//!
//! ```
//! use ctxbed_sim::text::{TextKind, generate_text};
//! let text = generate_text(TextKind::Cjk, 10, 7);
//! assert_eq!(text.chars().count(), 10);
//! assert_eq!(text, generate_text(TextKind::Cjk, 10, 7));
//! ```

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// The kind of content to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TextKind {
    Prose,
    Code,
    Json,
    Log,
    Cjk,
}

impl TextKind {
    /// Every kind, in a fixed order.
    pub const ALL: [TextKind; 5] = [
        TextKind::Prose,
        TextKind::Code,
        TextKind::Json,
        TextKind::Log,
        TextKind::Cjk,
    ];

    /// The name used in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            TextKind::Prose => "prose",
            TextKind::Code => "code",
            TextKind::Json => "json",
            TextKind::Log => "log",
            TextKind::Cjk => "cjk",
        }
    }

    /// Parses a scenario-file name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

const WORDS: &[&str] = &[
    "the",
    "export",
    "report",
    "failed",
    "because",
    "column",
    "order",
    "changed",
    "after",
    "release",
    "we",
    "checked",
    "account",
    "amount",
    "date",
    "format",
    "test",
    "passes",
    "again",
    "with",
    "a",
    "fix",
    "to",
    "parser",
    "and",
    "writer",
    "module",
    "user",
    "requested",
    "review",
];
const IDENTIFIERS: &[&str] = &[
    "report", "rows", "writer", "column", "index", "value", "buffer", "result", "config", "item",
];
const CJK: &[&str] = &[
    "导出", "报告", "失败", "因为", "列的", "顺序", "发生", "变化", "我们", "检查", "账户", "金额",
    "日期", "格式", "测试", "通过", "修复", "解析", "模块", "用户",
];

/// Text of exactly `chars` characters of the given kind.
pub fn generate_text(kind: TextKind, chars: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut text = String::with_capacity(chars.saturating_mul(2).min(1 << 28));
    let mut produced = 0usize;
    let mut line = 0u64;
    while produced < chars {
        // Each piece is written straight into the text; what it added is counted.
        let before = text.len();
        match kind {
            TextKind::Prose => prose_sentence(&mut rng, &mut text),
            TextKind::Code => code_line(&mut rng, &mut text),
            TextKind::Json => json_object(&mut rng, line, &mut text),
            TextKind::Log => log_line(&mut rng, line, &mut text),
            TextKind::Cjk => cjk_sentence(&mut rng, &mut text),
        }
        produced += text[before..].chars().count();
        line += 1;
    }
    if let Some((cut, _)) = text.char_indices().nth(chars) {
        text.truncate(cut);
    }
    text
}

fn pick<'a>(rng: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    let index = (rng.next_u32() as usize) % items.len();
    items[index]
}

fn prose_sentence(rng: &mut ChaCha8Rng, text: &mut String) {
    let count = 6 + (rng.next_u32() % 10) as usize;
    for index in 0..count {
        if index > 0 {
            text.push(' ');
        }
        text.push_str(pick(rng, WORDS));
    }
    text.push_str(". ");
}

fn code_line(rng: &mut ChaCha8Rng, text: &mut String) {
    let a = pick(rng, IDENTIFIERS);
    let b = pick(rng, IDENTIFIERS);
    let n = rng.next_u32() % 1000;
    let _ = writeln!(text, "    let {a}_{n} = {b}.get({n}).unwrap_or_default();");
}

fn json_object(rng: &mut ChaCha8Rng, line: u64, text: &mut String) {
    let key = pick(rng, IDENTIFIERS);
    let word = pick(rng, WORDS);
    let n = rng.next_u32() % 100_000;
    let _ = writeln!(
        text,
        "{{\"id\":{line},\"{key}\":\"{word}\",\"amount\":{n}}}"
    );
}

fn log_line(rng: &mut ChaCha8Rng, line: u64, text: &mut String) {
    let level = ["INFO", "WARN", "DEBUG", "ERROR"][(rng.next_u32() % 4) as usize];
    let word = pick(rng, WORDS);
    let n = rng.next_u32() % 10_000;
    let _ = writeln!(
        text,
        "2026-01-01T00:00:{:02}Z {level} export[{n}]: {word} row={line}",
        line % 60
    );
}

fn cjk_sentence(rng: &mut ChaCha8Rng, text: &mut String) {
    let count = 4 + (rng.next_u32() % 8) as usize;
    for _ in 0..count {
        text.push_str(pick(rng, CJK));
    }
    text.push('。');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_length_for_every_kind() {
        for kind in TextKind::ALL {
            for chars in [0, 1, 17, 1_000] {
                let text = generate_text(kind, chars, 3);
                assert_eq!(text.chars().count(), chars, "{kind:?} {chars}");
            }
        }
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(
            generate_text(TextKind::Prose, 200, 1),
            generate_text(TextKind::Prose, 200, 2)
        );
    }
}
