//! The memory store, `memory_search`, `memory_get` and `flush_facts`.

use serde_json::json;

use super::Bench;
use crate::storage::{MemoryStorage, Storage, WorkspacePath};
use crate::tools::memory::{flush_facts, load_memory, parse_entries, search, words};

const MEMORY: &str = "\
# Project memory

The export job runs nightly at 02:00 UTC.

## Release
- Run the release checklist in docs/release.md before tagging.
- Tag releases as vX.Y.Z.
  Never reuse a tag.

## Code
```
# not a heading
fn main() {}
```
";

fn entry_summary(path: &str, text: &str) -> Vec<String> {
    let path = WorkspacePath::parse(path).unwrap();
    parse_entries(&path, text)
        .iter()
        .map(|entry| {
            format!(
                "{} [{}] {}-{} {:?}",
                entry.id,
                entry.section.as_deref().unwrap_or("-"),
                entry.id.line,
                entry.last_line,
                entry.text
            )
        })
        .collect()
}

#[test]
fn files_split_into_paragraphs_and_list_items_under_sections() {
    assert_eq!(
        entry_summary("MEMORY.md", MEMORY),
        vec![
            "MEMORY.md:3 [Project memory] 3-3 \"The export job runs nightly at 02:00 UTC.\"",
            "MEMORY.md:6 [Release] 6-6 \"- Run the release checklist in docs/release.md before tagging.\"",
            "MEMORY.md:7 [Release] 7-8 \"- Tag releases as vX.Y.Z.\\n  Never reuse a tag.\"",
            "MEMORY.md:11 [Code] 11-14 \"```\\n# not a heading\\nfn main() {}\\n```\"",
        ]
    );
    assert_eq!(entry_summary("memory/x.md", ""), Vec::<String>::new());
    assert_eq!(
        entry_summary("memory/x.md", "1. first\n2) second\nplain\n\n#tag is text"),
        vec![
            "memory/x.md:1 [-] 1-1 \"1. first\"",
            "memory/x.md:2 [-] 2-3 \"2) second\\nplain\"",
            "memory/x.md:5 [-] 5-5 \"#tag is text\"",
        ]
    );
}

#[test]
fn words_are_lower_cased_distinct_and_skip_common_ones() {
    let found: Vec<String> = words("The Export, the EXPORT! a 7 v2 导出报告")
        .into_iter()
        .collect();
    assert_eq!(found, vec!["export", "v2", "出", "告", "导", "报"]);
}

#[test]
fn search_ranks_by_shared_words_then_by_id() {
    let bench = Bench::new(&[
        ("MEMORY.md", MEMORY),
        (
            "memory/2026-01-02.md",
            "The release train leaves on Fridays.\n",
        ),
        (
            "memory/notes.txt",
            "release checklist, but not a memory file\n",
        ),
    ]);
    bench.check(
        "memory_search",
        json!({"query": "release checklist"}),
        false,
        "[3 entries match \"release checklist\" (searched 5 entries in 2 files); best first]\n\
         MEMORY.md:6 (2 of 2 words, section \"Release\"): - Run the release checklist in docs/release.md before tagging.\n\
         MEMORY.md:7 (1 of 2 words, section \"Release\"): - Tag releases as vX.Y.Z. Never reuse a tag.\n\
         memory/2026-01-02.md:1 (1 of 2 words): The release train leaves on Fridays.\n\
         [memory_get with an id shows the whole entry]",
    );
    bench.check(
        "memory_search",
        json!({"query": "release", "limit": 1}),
        false,
        "[3 entries match \"release\" (searched 5 entries in 2 files); the best 1 shown]\n\
         MEMORY.md:6 (1 of 1 words, section \"Release\"): - Run the release checklist in docs/release.md before tagging.\n\
         [memory_get with an id shows the whole entry]",
    );
}

#[test]
fn search_without_matches_or_memory_says_so() {
    let bench = Bench::new(&[("MEMORY.md", MEMORY)]);
    bench.check(
        "memory_search",
        json!({"query": "kubernetes"}),
        false,
        "[no memory entry matches \"kubernetes\"; searched 4 entries in 1 file; try other words]",
    );
    bench.check(
        "memory_search",
        json!({"query": "the a !!"}),
        true,
        "the query \"the a !!\" has no searchable words (two or more letters or digits; common words are ignored); search for a few distinctive words, e.g. \"release checklist\"",
    );
    bench.check(
        "memory_search",
        json!({"query": "x", "limit": 50}),
        true,
        "invalid memory_search arguments: `limit` must be an integer from 1 to 20, got 50 (an integer)\nexpected: {\"query\": string (required), \"limit\": integer}",
    );
    Bench::new(&[("notes.md", "release")]).check(
        "memory_search",
        json!({"query": "release"}),
        false,
        "[memory is empty: no MEMORY.md and no memory/*.md files]",
    );
}

#[test]
fn unreadable_memory_files_are_skipped_with_a_note() {
    let bench = Bench::new(&[("MEMORY.md", "Deploys happen on Fridays.\n")]);
    bench.put("memory/broken.md", &[0xFF, 0xFE]);
    bench.check(
        "memory_search",
        json!({"query": "deploys"}),
        false,
        "[1 entry matches \"deploys\" (searched 1 entry in 1 file); best first]\n\
         MEMORY.md:1 (1 of 1 words): Deploys happen on Fridays.\n\
         [memory_get with an id shows the whole entry]\n\
         [memory/broken.md is not UTF-8 text and was skipped]",
    );
}

#[test]
fn get_shows_a_whole_entry() {
    let bench = Bench::new(&[("MEMORY.md", MEMORY)]);
    bench.check(
        "memory_get",
        json!({"id": "MEMORY.md:7"}),
        false,
        "[MEMORY.md: lines 7-8, section \"Release\"]\n- Tag releases as vX.Y.Z.\n  Never reuse a tag.",
    );
    bench.check(
        "memory_get",
        json!({"id": "MEMORY.md:3"}),
        false,
        "[MEMORY.md: line 3, section \"Project memory\"]\nThe export job runs nightly at 02:00 UTC.",
    );
}

#[test]
fn get_errors_name_the_id_and_what_exists() {
    let bench = Bench::new(&[
        ("MEMORY.md", MEMORY),
        ("notes.md", "n"),
        ("memory/empty.md", "\n"),
    ]);
    bench.check(
        "memory_get",
        json!({"id": "MEMORY.md:99"}),
        true,
        "no memory entry `MEMORY.md:99`; entries in MEMORY.md start at lines 3, 6, 7, 11; memory_search finds entries",
    );
    bench.check(
        "memory_get",
        json!({"id": "memory/gone.md:1"}),
        true,
        "no memory entry `memory/gone.md:1`: memory/gone.md does not exist; memory_search finds entries",
    );
    bench.check(
        "memory_get",
        json!({"id": "memory/empty.md:1"}),
        true,
        "no memory entry `memory/empty.md:1`: memory/empty.md holds no entries; memory_search finds entries",
    );
    for id in ["m-42", "MEMORY.md:", "MEMORY.md:0", "MEMORY.md:x"] {
        bench.check(
            "memory_get",
            json!({ "id": id }),
            true,
            &format!(
                "memory ids look like `MEMORY.md:12` (memory file and first line, as memory_search shows them); got \"{id}\""
            ),
        );
    }
    bench.check(
        "memory_get",
        json!({"id": "notes.md:1"}),
        true,
        "`notes.md` is not a memory file; memory lives in MEMORY.md and memory/*.md (read other files with read_file)",
    );
    bench.check(
        "memory_get",
        json!({"id": "../MEMORY.md:1"}),
        true,
        "path `../MEMORY.md` leaves the workspace through `..`; paths must stay inside the workspace",
    );
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn flush_appends_new_facts_once() {
    let storage = MemoryStorage::new();
    block_on(async {
        let root = WorkspacePath::parse("MEMORY.md").unwrap();
        storage
            .write(&root, b"- Exports use UTF-8.\n".to_vec())
            .await
            .unwrap();
        let facts: Vec<String> = [
            "exports   use utf-8.",
            "  ",
            "The parser lives in src/parse.rs.",
            "- the parser lives in  src/parse.rs.",
            "Line one\nline two",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(flush_facts(&storage, &facts).await.unwrap(), 2);
        assert_eq!(flush_facts(&storage, &facts).await.unwrap(), 0);
        let file = storage
            .read(&WorkspacePath::parse("memory/facts.md").unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(file).unwrap(),
            "# Facts\n\n- The parser lives in src/parse.rs.\n- Line one line two\n"
        );
        let memory = load_memory(&storage).await.unwrap();
        let hits = search(&memory, "parser", 5);
        assert_eq!(hits[0].entry.id.to_string(), "memory/facts.md:3");
    });
}

#[test]
fn flush_bounds_facts_and_reports_failures() {
    let storage = MemoryStorage::new();
    block_on(async {
        let long = vec!["w".repeat(crate::limits::MEMORY_FACT_CHARS_MAX + 10)];
        assert_eq!(flush_facts(&storage, &long).await.unwrap(), 1);
        let memory = load_memory(&storage).await.unwrap();
        let text = &memory.entries[0].text;
        assert_eq!(
            text.chars().count(),
            2 + crate::limits::MEMORY_FACT_CHARS_MAX
        );
        assert!(text.ends_with('…'));
        let many: Vec<String> = (0..150).map(|i| format!("fact number {i}")).collect();
        assert_eq!(
            flush_facts(&storage, &many).await.unwrap(),
            crate::limits::MEMORY_FLUSH_FACTS_MAX
        );
        storage.fail_writes_under("memory/");
        let error = flush_facts(&storage, &["a new fact".to_string()])
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "write to `memory/facts.md` failed: injected write failure"
        );
    });
    let broken = MemoryStorage::new();
    block_on(async {
        let path = WorkspacePath::parse("memory/facts.md").unwrap();
        broken.write(&path, vec![0xFF]).await.unwrap();
        let error = flush_facts(&broken, &["x y".to_string()])
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "read of `memory/facts.md` failed: not UTF-8 text, so facts cannot be appended"
        );
        assert_eq!(broken.read(&path).await.unwrap(), Some(vec![0xFF]));
    });
}
