//! The crate's layering: which top-level modules each one's non-test code names
//! (`crate::x`), with no cycle among them, and the leaf modules naming none of the
//! engines.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The code of a source file without its comments and its `#[cfg(test)] mod tests`.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules that `code` names through `crate::`.
fn named_modules(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .filter(|name| !name.is_empty() && name.chars().next().unwrap().is_ascii_lowercase())
        .collect()
}

fn add_file(graph: &mut Graph, module: &str, path: &Path) {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return;
    }
    let text = fs::read_to_string(path).unwrap();
    let mut uses = named_modules(&code(&text));
    uses.remove(module);
    graph.entry(module.to_string()).or_default().extend(uses);
}

fn add_dir(graph: &mut Graph, module: &str, dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            add_dir(graph, module, &path);
        } else if path.extension().is_some_and(|e| e == "rs") {
            add_file(graph, module, &path);
        }
    }
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            add_dir(&mut graph, &stem, &path);
        } else if stem != "lib" && path.extension().is_some_and(|e| e == "rs") {
            add_file(&mut graph, &stem, &path);
        }
    }
    graph
}

/// A cycle through `start`, if any: the modules on it in order.
fn cycle_through(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((module, path)) = stack.pop() {
        for next in graph.get(&module).into_iter().flatten() {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_module_level_import_cycle() {
    let graph = graph();
    assert!(graph.contains_key("float") && graph.contains_key("hard"));
    for module in graph.keys() {
        if let Some(cycle) = cycle_through(&graph, module) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn shared_types_and_the_spec_do_not_reach_into_the_engines() {
    let graph = graph();
    let engines = ["float", "hard", "model"];
    for module in ["grid", "simd", "spec", "relax", "gates", "wiring", "error"] {
        let uses = &graph[module];
        for engine in engines {
            assert!(!uses.contains(engine), "{module} imports {engine}");
        }
    }
    for leaf in ["grid", "simd"] {
        assert!(graph[leaf].is_empty(), "{leaf} imports {:?}", graph[leaf]);
    }
}
