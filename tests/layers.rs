//! The layers of `src/scenario` (ARCHITECTURE.md): `format` → `run` → `check`. A module may
//! import from its own layer and the layers before it, never after, and within a layer no
//! modules import each other round a circle. A module is a file directly in a layer's folder
//! together with its own folder of submodules (`format/file.rs` and `format/file/*.rs`).
//! Imports are read from the source: every `crate::scenario::…`, `super::…` and `self::…`
//! path outside comments and test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: [&str; 3] = ["format", "run", "check"];

/// One import of another module: where it is written and what it names.
#[derive(Debug, Clone)]
struct Import {
    at: String,
    to: ModuleId,
}

/// A module: its layer (an index into [`LAYERS`]) and its name.
type ModuleId = (usize, String);

/// The `src/scenario` modules, each with the imports of its files.
type Graph = BTreeMap<ModuleId, Vec<Import>>;

/// The module a file belongs to and its full module path below `scenario`
/// (`format/file/raw.rs` → ((0, "file"), ["format", "file", "raw"])).
fn module_of(relative: &Path) -> Result<Option<(ModuleId, Vec<String>)>, String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs").to_string();
    if parts.is_empty() {
        return if stem == "mod" {
            Ok(None)
        } else {
            Err(format!(
                "src/scenario/{last} is in no layer: move it into one of {LAYERS:?}"
            ))
        };
    }
    let layer = LAYERS
        .iter()
        .position(|layer| *layer == parts[0])
        .ok_or_else(|| format!("src/scenario/{} is no layer ({LAYERS:?})", parts[0]))?;
    if parts.len() == 1 && stem == "mod" {
        return Ok(None);
    }
    if stem == "tests" || parts.iter().any(|part| part == "tests") {
        return Ok(None);
    }
    let name = parts.get(1).cloned().unwrap_or_else(|| stem.clone());
    let mut path = parts;
    if stem != "mod" {
        path.push(stem);
    }
    Ok(Some(((layer, name), path)))
}

/// The code of a file without comments and without its test module (from `#[cfg(test)]` on).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(index, line)| (index + 1, line.split(" // ").next().unwrap_or(line)))
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The first segments named after `prefix::` (one, or each item of a `{…}` group).
fn first_segments(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0usize;
        let mut items = Vec::new();
        let mut current = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => items.push(std::mem::take(&mut current)),
                _ => current.push(c),
            }
        }
        items.push(current);
        items
            .iter()
            .map(|item| ident(item.trim()).to_string())
            .filter(|item| !item.is_empty())
            .collect()
    } else {
        vec![ident(rest).to_string()]
    }
}

/// Every module of `scenario` a line's paths name, as module paths below `scenario`.
fn named_paths(line: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let mut index = 0;
    while index < line.len() {
        let boundary = index == 0
            || !(bytes[index - 1].is_ascii_alphanumeric()
                || bytes[index - 1] == b'_'
                || bytes[index - 1] == b':');
        let rest = &line[index..];
        if boundary {
            if let Some(after) = rest.strip_prefix("crate::scenario::") {
                let layer = ident(after);
                let tail = &after[layer.len()..];
                for module in tail
                    .strip_prefix("::")
                    .map(first_segments)
                    .unwrap_or_default()
                {
                    found.push(vec![layer.to_string(), module]);
                }
                if tail.strip_prefix("::").is_none() {
                    found.push(vec![layer.to_string()]);
                }
                index += "crate::scenario::".len();
                continue;
            }
            if rest.starts_with("super::") || rest.starts_with("self::") {
                let mut base = here.to_vec();
                let mut tail = rest;
                if let Some(after) = tail.strip_prefix("self::") {
                    tail = after;
                } else {
                    while let Some(after) = tail.strip_prefix("super::") {
                        base.pop();
                        tail = after;
                    }
                }
                for segment in first_segments(tail) {
                    let mut path = base.clone();
                    path.push(segment);
                    found.push(path);
                }
                index += rest.len() - tail.len();
                continue;
            }
        }
        index += rest.chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// The module graph of `files` (paths relative to `src/scenario`, with their text).
fn graph(files: &[(PathBuf, String)]) -> Result<Graph, Vec<String>> {
    let mut graph = Graph::new();
    let mut problems = Vec::new();
    let mut modules = BTreeSet::new();
    let mut parsed = Vec::new();
    for (relative, text) in files {
        match module_of(relative) {
            Ok(Some((module, path))) => {
                modules.insert(module.clone());
                parsed.push((relative, text, module, path));
            }
            Ok(None) => {}
            Err(problem) => problems.push(problem),
        }
    }
    for (relative, text, module, path) in parsed {
        let entry = graph.entry(module.clone()).or_default();
        for (number, line) in code_lines(text) {
            for named in named_paths(line, &path) {
                let Some(layer) = named
                    .first()
                    .and_then(|l| LAYERS.iter().position(|x| x == l))
                else {
                    continue;
                };
                let Some(name) = named.get(1) else { continue };
                let to = (layer, name.clone());
                if to == module || !modules.contains(&to) {
                    continue;
                }
                entry.push(Import {
                    at: format!("src/scenario/{}:{number}", relative.display()),
                    to,
                });
            }
        }
    }
    if problems.is_empty() {
        Ok(graph)
    } else {
        Err(problems)
    }
}

fn label((layer, name): &ModuleId) -> String {
    format!("{}::{name}", LAYERS[*layer])
}

/// Every import that runs back up, from a layer to a later one.
fn upward(graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    for (from, imports) in graph {
        for import in imports.iter().filter(|import| import.to.0 > from.0) {
            found.push(format!(
                "{}: {} imports {}, of a later layer (the {} layer may import only {:?})",
                import.at,
                label(from),
                label(&import.to),
                LAYERS[from.0],
                &LAYERS[..=from.0],
            ));
        }
    }
    found
}

/// Every circle of more than one module (strongly connected components, Tarjan's algorithm),
/// each with the imports that close it.
fn circles(graph: &Graph) -> Vec<String> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g ModuleId, usize>,
        low: BTreeMap<&'g ModuleId, usize>,
        stack: Vec<&'g ModuleId>,
        on_stack: BTreeSet<&'g ModuleId>,
        found: Vec<Vec<&'g ModuleId>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g ModuleId) {
            let number = self.index.len();
            self.index.insert(node, number);
            self.low.insert(node, number);
            self.stack.push(node);
            self.on_stack.insert(node);
            for import in self.graph.get(node).into_iter().flatten() {
                let Some((next, _)) = self.graph.get_key_value(&import.to) else {
                    continue;
                };
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top);
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    tarjan
        .found
        .iter()
        .map(|component| {
            let members: BTreeSet<_> = component.iter().copied().collect();
            let edges: Vec<String> = members
                .iter()
                .flat_map(|from| {
                    graph[*from]
                        .iter()
                        .filter(|import| members.contains(&import.to))
                        .map(|import| {
                            format!("{} ({} → {})", import.at, label(from), label(&import.to))
                        })
                })
                .collect();
            let names: Vec<String> = members.iter().map(|m| label(m)).collect();
            format!("a circle of {}: {}", names.join(", "), edges.join("; "))
        })
        .collect()
}

fn read_tree(root: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).expect("a readable folder");
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a UTF-8 source file");
                let relative = path
                    .strip_prefix(root)
                    .expect("under the root")
                    .to_path_buf();
                files.push((relative, text));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn scenario_imports_run_one_way_and_round_no_circle() {
    let files = read_tree(Path::new("src/scenario"));
    let graph = graph(&files).unwrap_or_else(|problems| panic!("{}", problems.join("\n")));
    assert!(
        graph.len() >= 15,
        "{} modules found: {:?}",
        graph.len(),
        graph.keys()
    );
    let mut problems = upward(&graph);
    problems.extend(circles(&graph));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_finds_an_upward_import_and_a_circle() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let files = vec![
        file("mod.rs", "pub mod format;"),
        file("format/mod.rs", "pub mod a;"),
        file(
            "format/a.rs",
            "use super::b::Thing;\n// use crate::scenario::check::c;\n",
        ),
        file("format/b.rs", "use crate::scenario::format::{a, c::X};\n"),
        file(
            "format/c.rs",
            "pub fn f() { crate::scenario::check::d::g() }\n",
        ),
        file("format/c/inner.rs", "use super::super::a::Y;\n"),
        file(
            "check/d.rs",
            "pub fn g() {}\n#[cfg(test)]\nuse crate::scenario::format::b;\n",
        ),
    ];
    let graph = graph(&files).expect("a graph");
    let up = upward(&graph);
    assert_eq!(up.len(), 1, "{up:?}");
    assert!(
        up[0].starts_with("src/scenario/format/c.rs:1: format::c imports check::d"),
        "{up:?}"
    );
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("a circle of format::a, format::b, format::c:"),
        "{found:?}"
    );
    assert!(
        found[0].contains("src/scenario/format/c/inner.rs:1 (format::c → format::a)"),
        "{found:?}"
    );
    let stray = graph_of_stray();
    assert!(
        stray
            .iter()
            .any(|p| p.contains("src/scenario/loose.rs is in no layer")),
        "{stray:?}"
    );
}

fn graph_of_stray() -> Vec<String> {
    let files = vec![(PathBuf::from("loose.rs"), String::new())];
    graph(&files).err().unwrap_or_default()
}
