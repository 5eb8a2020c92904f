//! The bug zoo beside the matrix: each harness's bugs (`bugs/*.toml`, field `harness`) with
//! their classification as the zoo's page records it (`docs/bugs.md`, written by `ctxbed bugs
//! --page`). Nothing is run here: a bug the page does not list is shown as not on it, and with
//! no page the bugs are listed without a classification.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One bug of the zoo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZooBug {
    pub id: String,
    pub harness: String,
    pub title: String,
    /// The rule the bug is expected to break.
    pub rule: String,
    /// As the zoo's page records it (`detected`, `missed`, …); `None` when the page does not
    /// list the bug, or there is no page.
    pub classification: Option<String>,
}

/// The bugs, and the page that records their classification.
#[derive(Debug, Clone, Default)]
pub struct Zoo {
    /// Sorted by id.
    pub bugs: Vec<ZooBug>,
    /// The zoo's page, absolute, when it exists (bug links point at its anchors).
    pub page: Option<PathBuf>,
}

impl Zoo {
    /// The bug files under `bugs_dir` and the classifications of the page at `page`. A bug
    /// file that does not load is left out with a warning; no directory is no bugs.
    pub fn load(bugs_dir: &Path, page: &Path) -> Zoo {
        let files = crate::bugs::discover(&[bugs_dir.to_path_buf()]).unwrap_or_default();
        let text = std::fs::read_to_string(page).ok();
        let recorded = text.as_deref().map(classifications).unwrap_or_default();
        let mut bugs: Vec<ZooBug> = files
            .iter()
            .filter_map(|file| match crate::bugs::load(file) {
                Ok(bug) => Some(ZooBug {
                    classification: recorded.get(&bug.id).cloned(),
                    id: bug.id,
                    harness: bug.harness,
                    title: bug.title,
                    rule: bug.rule,
                }),
                Err(problems) => {
                    tracing::warn!(file = %file.display(), %problems, "a bug file does not load; the harness pages leave it out");
                    None
                }
            })
            .collect();
        bugs.sort_by(|a, b| a.id.cmp(&b.id));
        Zoo {
            bugs,
            page: text.map(|_| page.to_path_buf()),
        }
    }

    /// The bugs of `harness`.
    pub fn of<'a>(&'a self, harness: &'a str) -> impl Iterator<Item = &'a ZooBug> + 'a {
        self.bugs.iter().filter(move |bug| bug.harness == harness)
    }
}

/// The classification of each bug in the table of the zoo's page: a row
/// `| [id](#id) | … | verdict |` gives its last cell.
pub fn classifications(page: &str) -> BTreeMap<String, String> {
    page.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("| [")?;
            let (id, _) = rest.split_once("](#")?;
            let verdict = line.trim_end().strip_suffix('|')?.rsplit(" | ").next()?;
            Some((id.to_string(), verdict.trim().to_string()))
        })
        .collect()
}
