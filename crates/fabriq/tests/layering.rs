//! The crate's module layering, checked from its sources: which top-level
//! module imports which (`crate::NAME` paths outside `#[cfg(test)]`
//! blocks), that no import circle is larger than a pair, and that the
//! lower rooms do not reach up (pipes and patterns know nothing of the
//! reactor or transports; transports know nothing of endpoints, sessions
//! or sockets).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// `crate::NAME` references in `src`, skipping test-only code.
fn references(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut skip_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut pending_test = false;
    for line in src.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count();
        let closes = line.matches('}').count();
        if pending_test {
            pending_test = false;
            if opens > closes {
                skip_depth = Some(depth);
            }
            depth = depth + opens - closes.min(depth + opens);
            continue;
        }
        if skip_depth.is_none() && !trimmed.starts_with("//") {
            let mut rest = line;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        }
        depth = (depth + opens).saturating_sub(closes);
        if skip_depth.is_some_and(|d| depth <= d) {
            skip_depth = None;
        }
    }
    out
}

fn graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().map_or(true, |e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap();
            let first = rel.components().next().unwrap().as_os_str();
            let top = first.to_string_lossy().trim_end_matches(".rs").to_string();
            if top == "lib" {
                continue;
            }
            let refs = references(&std::fs::read_to_string(&path).unwrap());
            graph.entry(top).or_default().extend(refs);
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (name, deps) in graph.iter_mut() {
        deps.retain(|d| modules.contains(d) && d != name);
    }
    graph
}

/// Strongly connected components (Tarjan).
fn components(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_import_circle_is_larger_than_a_pair() {
    let graph = graph();
    assert!(graph.len() > 10, "found the modules: {graph:?}");
    for comp in components(&graph) {
        assert!(comp.len() <= 2, "an import circle: {comp:?}\n{graph:#?}");
    }
}

#[test]
fn lower_rooms_do_not_reach_up() {
    let graph = graph();
    let forbidden = [
        (
            "pipe",
            &["reactor", "transport", "socket", "context", "pattern"][..],
        ),
        (
            "pattern",
            &["reactor", "transport", "socket", "context"][..],
        ),
        (
            "transport",
            &["reactor", "endpoint", "socket", "pattern", "pipe"][..],
        ),
        ("monitor", &["context", "socket", "inproc", "reactor"][..]),
        ("reactor", &["socket", "context", "pattern", "inproc"][..]),
    ];
    for (module, not) in forbidden {
        let deps = &graph[module];
        for n in not {
            assert!(!deps.contains(*n), "{module} imports {n}: {deps:?}");
        }
    }
}

#[test]
fn the_reference_scan_sees_through_test_blocks() {
    let src = "use crate::a::X;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\nfn f() { crate::c::g() }\n";
    let refs = references(src);
    assert_eq!(
        refs,
        ["a", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
}
