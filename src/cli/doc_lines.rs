//! The code blocks of the pages people read, and the command lines of their `commands`
//! examples: shared by `tests/doc_blocks.rs`, which honours every block's marker, and the
//! binary's own tests, which parse each command line with the real argument parser.
//! Test code only.

/// One fenced block: where it is, its marker, its language and its text.
#[derive(Debug)]
pub struct Block {
    pub page: String,
    pub line: usize,
    pub marker: Option<String>,
    pub language: String,
    pub text: String,
}

impl Block {
    pub fn at(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

/// Pages a command writes (their blocks are its output, not examples).
const GENERATED: [&str; 3] = ["docs/peers.md", "docs/mutants.md", "docs/bugs.md"];

/// The pages whose blocks are examples: everything a reader is sent to.
pub fn pages() -> Vec<String> {
    let mut pages: Vec<String> = [
        "README.md",
        "BENCHMARKS.md",
        "ARCHITECTURE.md",
        "SPEC.md",
        "peers/README.md",
        "python/README.md",
        "npm/ctxbed/README.md",
        "npm/examples/ai-sdk/README.md",
    ]
    .map(String::from)
    .to_vec();
    let mut docs: Vec<String> = std::fs::read_dir("docs")
        .expect("docs/ is readable")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| path.to_string_lossy().replace('\\', "/"))
        .filter(|page| !GENERATED.contains(&page.as_str()))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

pub fn blocks_of(page: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(page).unwrap_or_else(|error| panic!("{page}: {error}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let Some(language) = lines[index].strip_prefix("```") else {
            index += 1;
            continue;
        };
        let end = (index + 1..lines.len())
            .find(|&at| lines[at].starts_with("```"))
            .unwrap_or_else(|| panic!("{page}:{}: an unclosed code block", index + 1));
        let marker = index
            .checked_sub(1)
            .map(|before| lines[before].trim())
            .filter(|before| before.starts_with("<!--") && before.ends_with("-->"))
            .map(|before| before[4..before.len() - 3].trim().to_string());
        found.push(Block {
            page: page.to_string(),
            line: index + 1,
            marker,
            language: language.trim().to_string(),
            text: lines[index + 1..end].join("\n"),
        });
        index = end + 1;
    }
    found
}

pub fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|page| blocks_of(page)).collect()
}

/// The command lines of a `commands` block: comments dropped, continuations joined, leading
/// `VAR=value` assignments dropped.
pub fn command_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.split(" #").next().unwrap_or("").trim_end();
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending).trim().to_string());
            }
        }
    }
    lines
        .into_iter()
        .map(|line| {
            let mut words = line.split_whitespace().peekable();
            while words.peek().is_some_and(|word| is_assignment(word)) {
                words.next();
            }
            words.collect::<Vec<_>>().join(" ")
        })
        .collect()
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}
