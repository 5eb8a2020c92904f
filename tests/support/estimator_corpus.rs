#![allow(
    dead_code,
    reason = "shared by a test and a bench; each uses part of it"
)]

//! The token-estimation corpus under `tests/data/estimator/`, shared by `tests/estimator.rs`
//! and `benches/suite/estimation.rs`.
//!
//! Every file is hand-written for ctxbed. Files at the top level calibrated the weights of
//! `approx-v1` (approx-v2 is fitted on `calibration/fit/` instead, and tested on this corpus too);
//! files under `holdout/` were written afterwards and only measured (the CJK
//! ones among them also set the final CJK prices; `holdout/cjk-zh-chat.txt` and
//! `holdout/cjk-ja-docs.txt` were written after that and never fitted). Each JSON document
//! counts twice: as written (pretty) and re-serialised compactly.

use std::path::{Path, PathBuf};

/// Kinds of content the estimator must track within ±10 % of exact o200k.
pub const REQUIRED_CATEGORIES: [&str; 9] = [
    "prose",
    "code-rust",
    "code-python",
    "code-js",
    "json-pretty",
    "json-compact",
    "log",
    "cjk-zh",
    "cjk-ja",
];

/// One text of the corpus.
pub struct Sample {
    pub category: &'static str,
    /// Path under `tests/data/estimator/`, with `[compact]` for re-serialised JSON.
    pub name: String,
    pub held_out: bool,
    pub text: String,
}

fn category_of(file_name: &str) -> Option<&'static str> {
    let prefixes = [
        ("prose-", "prose"),
        ("code-rust", "code-rust"),
        ("code-python", "code-python"),
        ("code-js", "code-js"),
        ("json-", "json-pretty"),
        ("log-", "log"),
        ("cjk-zh", "cjk-zh"),
        ("cjk-ja", "cjk-ja"),
        ("scripts-", "other-scripts"),
    ];
    prefixes
        .iter()
        .find(|(prefix, _)| file_name.starts_with(prefix))
        .map(|(_, category)| *category)
}

fn files_in(directory: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(directory) else {
        panic!("the corpus directory {} is readable", directory.display());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    paths
}

/// Every sample, in a fixed order: calibration files, then held-out files.
pub fn load() -> Vec<Sample> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/estimator");
    let mut samples = Vec::new();
    for (directory, held_out) in [(root.clone(), false), (root.join("holdout"), true)] {
        for path in files_in(&directory) {
            let Some(file_name) = path.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            let Some(category) = category_of(file_name) else {
                panic!("{} has no category; name it after one", path.display());
            };
            let Ok(text) = std::fs::read_to_string(&path) else {
                panic!("{} is UTF-8 text", path.display());
            };
            let name = match held_out {
                true => format!("holdout/{file_name}"),
                false => file_name.to_string(),
            };
            if category == "json-pretty" {
                let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
                    panic!("{} is valid JSON", path.display());
                };
                samples.push(Sample {
                    category: "json-compact",
                    name: format!("{name}[compact]"),
                    held_out,
                    text: value.to_string(),
                });
            }
            samples.push(Sample {
                category,
                name,
                held_out,
                text,
            });
        }
    }
    samples
}

/// All samples of one category joined with blank lines, for per-category figures.
pub fn joined(samples: &[Sample], category: &str) -> String {
    samples
        .iter()
        .filter(|sample| sample.category == category)
        .map(|sample| sample.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Every category present, in a fixed order (required ones first).
pub fn categories(samples: &[Sample]) -> Vec<&'static str> {
    let mut categories: Vec<&'static str> = REQUIRED_CATEGORIES.to_vec();
    for sample in samples {
        if !categories.contains(&sample.category) {
            categories.push(sample.category);
        }
    }
    categories
}

/// LangChain's documented approximation for one text: `chars_per_token = 4.0`, rounded up
/// (`langchain_core.messages.utils.count_tokens_approximately`; its extra 3 tokens per
/// message do not apply to a single text).
pub fn chars_over_four(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Signed relative error of `estimate` against `exact`, in tenths of a percent.
pub fn error_permille(estimate: u64, exact: u64) -> i64 {
    assert!(exact > 0, "a corpus text has tokens");
    let difference = estimate as i64 - exact as i64;
    (difference * 1000) / exact as i64
}

/// `-12.3%`-style rendering of a per-mille error.
pub fn percent(permille: i64) -> String {
    let sign = if permille < 0 { "-" } else { "+" };
    let magnitude = permille.unsigned_abs();
    format!("{sign}{}.{}%", magnitude / 10, magnitude % 10)
}

/// Largest chunk of a calibration family, as `tools/calibration/gather.py` cuts them.
pub const CHUNK_BYTES: usize = 20 * 1024;

/// Half of the calibration corpus under `tests/data/estimator/calibration/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The chunks the weights were fitted on.
    Fit,
    /// The chunks never used for fitting: every reported figure is on these.
    HeldOut,
}

impl Split {
    fn directory(self) -> &'static str {
        match self {
            Split::Fit => "fit",
            Split::HeldOut => "held-out",
        }
    }
}

/// One family of the calibration corpus (a kind of log, a language, a kind of code) in one
/// split, cut into chunks of at most [`CHUNK_BYTES`] at line ends.
pub struct Family {
    /// The file's name without `.txt`, e.g. `log-dpkg` or `cjk-ja`.
    pub name: String,
    pub chunks: Vec<String>,
}

impl Family {
    /// The family's category: `log`, `code`, `cjk`, … (the name up to its first `-`).
    pub fn category(&self) -> &str {
        self.name.split('-').next().unwrap_or(&self.name)
    }

    /// The whole text of the family in this split.
    pub fn text(&self) -> String {
        self.chunks.concat()
    }
}

/// Cuts `text` into chunks of at most [`CHUNK_BYTES`] at line ends; a longer line is a chunk
/// of its own.
pub fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if !current.is_empty() && current.len() + line.len() > CHUNK_BYTES {
            out.push(std::mem::take(&mut current));
        }
        current.push_str(line);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Every family of one split, in file-name order.
pub fn calibration(split: Split) -> Vec<Family> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/estimator/calibration")
        .join(split.directory());
    files_in(&directory)
        .into_iter()
        .filter_map(|path| {
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".txt")?
                .to_string();
            let Ok(text) = std::fs::read_to_string(&path) else {
                panic!("{} is UTF-8 text", path.display());
            };
            Some(Family {
                name,
                chunks: chunks(&text),
            })
        })
        .collect()
}
