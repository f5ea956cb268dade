//! The crate's module layering, checked from its sources.
//!
//! A module is a top-level file or folder of `src/` (`socket/` is one
//! module), and `lib.rs` is one more, `lib`. A module imports another
//! when its code outside comments, strings and `#[cfg(test)]` items names
//! a `crate::NAME` path (or a `super::` path that reaches the crate root);
//! a NAME that lib.rs re-exports counts as an import of the module it
//! comes from, and lib.rs imports each module it re-exports from.
//!
//! Forbidden:
//! - any import circle, of two modules or more, lib.rs included;
//! - any import circle among the parts of a folder below `src/`, its
//!   files and subfolders (`tcp.rs` and `socks.rs` are parts of
//!   `transport/`; `session.rs` and `engine/` parts of `reactor/`),
//!   whether a part names the other's path or a name some module's `use`
//!   brings in from it; a folder's `mod.rs` is the folder itself, which
//!   its parts may use and which may use them;
//! - any import of a thing lib.rs itself defines, or of a name whose
//!   origin lib.rs does not spell out (a glob re-export): lib.rs declares
//!   the modules and re-exports the public API, and modules import from
//!   the module that defines a thing;
//! - the lower rooms reaching up (pipes and patterns know nothing of the
//!   reactor or transports; transports know nothing of endpoints,
//!   sessions or sockets);
//! - the fabric connection core (`reactor/engine/fabric/conn.rs`, `rx.rs`,
//!   `tx.rs`, or folders of those names) naming `fabriq_ofi` in its code:
//!   the core does not import the libfabric binding (a test below shows
//!   the rule bites);
//! - any `.rs` file under `src/` with more than 800 lines of code, not
//!   counting its test-only items (`#[cfg(test)]`, `#[cfg(all(test, ..))]`
//!   and what they gate): a file that grows past it is split by what its
//!   code holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module -> the modules it imports, each with the names that tie them.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `src` without comments and with every string and char literal
/// emptied, so that braces and paths can be read from what is left. The
/// line breaks stay, so its lines are the source's.
fn strip(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            out.extend(s[start..i.min(s.len())].iter().filter(|c| **c == '\n'));
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !is_ident(s[i - 1]))
        {
            // A raw string: r"...", r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while s.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if s.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= s.len() {
                    break;
                }
                if s[j] == '"' && (0..hashes).all(|k| s.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            out.extend(s[i..j.min(s.len())].iter().filter(|c| **c == '\n'));
            i = j;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
            out.extend(s[start..i.min(s.len())].iter().filter(|c| **c == '\n'));
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where the next test-only attribute (`#[cfg(test)]`,
/// `#[cfg(all(test, ...))]`) of `s` starts, and its length.
fn next_test_attribute(s: &str) -> Option<(usize, usize)> {
    ["#[cfg(test)]", "#[cfg(all(test,", "#[cfg(all(test)"]
        .iter()
        .filter_map(|mark| s.find(mark))
        .min()
        .map(|at| (at, s[at..].find(']').map_or(s.len() - at, |k| k + 1)))
}

/// The test-only items of stripped source: where each starts (its
/// attribute) and ends (after its first `;` outside braces, or with its
/// first braced block).
fn test_items(stripped: &str) -> Vec<(usize, usize)> {
    let mut items = Vec::new();
    let mut from = 0;
    while let Some((at, len)) = next_test_attribute(&stripped[from..]) {
        let start = from + at;
        let item = &stripped[start + len..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        from = start + len + end;
        items.push((start, from));
    }
    items
}

/// Stripped `src` without its test-only items, and the names of the
/// test-only `mod NAME;` files it declares.
fn without_tests(stripped: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut kept = 0;
    for (start, end) in test_items(stripped) {
        out.push_str(&stripped[kept..start]);
        kept = end;
        let item = &stripped[start..end];
        let words: Vec<&str> = item
            .split(|c: char| !is_ident(c))
            .filter(|w| !w.is_empty())
            .collect();
        if item.ends_with(';') {
            if let Some(k) = words.iter().position(|w| *w == "mod") {
                if let Some(name) = words.get(k + 1) {
                    test_mods.push(name.to_string());
                }
            }
        }
    }
    out.push_str(&stripped[kept..]);
    (out, test_mods)
}

/// How many lines of `src` are code: not inside a test-only item
/// (`#[cfg(test)]`, `#[cfg(all(test, ...))]` and the item it gates, from
/// the attribute's line to the item's last). For a file whose tests are
/// one module at its end, the lines before that module.
fn code_lines(src: &str) -> usize {
    let stripped = strip(src);
    let line_of = |at: usize| stripped[..at].matches('\n').count();
    let mut test_lines = BTreeSet::new();
    for (start, end) in test_items(&stripped) {
        test_lines.extend(line_of(start)..=line_of(end.saturating_sub(1).max(start)));
    }
    let lines = src.lines().count();
    (0..lines).filter(|l| !test_lines.contains(l)).count()
}

/// The path that starts at `s[0]` (`a::b::C`, a group shown as `{..}`),
/// and its length (up to the group).
fn path_at(s: &[char]) -> (String, usize) {
    let mut path = String::new();
    let mut k = 0;
    loop {
        let ident: String = s[k..].iter().take_while(|c| is_ident(**c)).collect();
        if ident.is_empty() {
            if s.get(k) == Some(&'{') {
                path.push_str("{..}");
            }
            break;
        }
        k += ident.chars().count();
        path.push_str(&ident);
        let mut j = k;
        while s.get(j).is_some_and(|c| c.is_whitespace()) {
            j += 1;
        }
        if s.get(j) == Some(&':') && s.get(j + 1) == Some(&':') {
            j += 2;
            while s.get(j).is_some_and(|c| c.is_whitespace()) {
                j += 1;
            }
            path.push_str("::");
            k = j;
        } else {
            break;
        }
    }
    (path.trim_end_matches("::").to_string(), k.max(1))
}

/// The paths of the path or use tree that starts at `s[0]` (`a::b::C`;
/// `a::{B, c::{D, self}}` as `a::B`, `a::c::D` and `a::c`), and its
/// length.
fn tree_at(s: &[char]) -> (Vec<String>, usize) {
    let (path, len) = path_at(s);
    let Some(prefix) = path.strip_suffix("{..}") else {
        return (vec![path], len);
    };
    let prefix = prefix.trim_end_matches("::");
    let (inner, group_len) = group_paths(&s[len..]);
    let paths = inner
        .into_iter()
        .map(|p| match (prefix.is_empty(), p.as_str()) {
            (true, _) => p,
            (false, "self") => prefix.to_string(),
            (false, _) => format!("{prefix}::{}", p.trim_end_matches("::self")),
        })
        .collect();
    (paths, len + group_len)
}

/// The paths of a `{...}` group that starts at `s[0]` (nested groups
/// spelled out), and the length of the group.
fn group_paths(s: &[char]) -> (Vec<String>, usize) {
    let mut paths = Vec::new();
    let mut depth = 0usize;
    let mut at_item_start = true;
    let mut k = 0;
    while k < s.len() {
        let c = s[k];
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    at_item_start = true;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return (paths, k + 1);
                }
            }
            ',' if depth == 1 => at_item_start = true,
            c if depth == 1 && at_item_start && is_ident(c) => {
                let (found, len) = tree_at(&s[k..]);
                paths.extend(found);
                at_item_start = false;
                k += len;
                continue;
            }
            c if depth == 1 && at_item_start && !c.is_whitespace() => at_item_start = false,
            _ => {}
        }
        k += 1;
    }
    (paths, s.len())
}

/// The first segment of a path.
fn head(path: &str) -> &str {
    path.split("::").next().unwrap_or(path)
}

/// Where a path starts, seen from the file it is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Anchor {
    /// `crate::`.
    Crate,
    /// `super::` this many times, counted from the file's own module
    /// (the `super::`s that only leave an inline module are not counted).
    Up(usize),
    /// `self::`, outside inline modules.
    Here,
}

/// The paths that `code` (stripped, without tests) names through
/// `crate::`, `super::` or `self::`, each with where it starts: `crate::a::B`,
/// `crate::{A, b::C}` (as `A` and `b::C`), `super::super::a::B`. A path
/// that stays inside the file's inline `mod NAME { ... }` blocks is left
/// out.
fn anchored_paths(code: &str) -> BTreeSet<(Anchor, String)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = BTreeSet::new();
    let word_at = |i: usize, word: &str| -> bool {
        let w: Vec<char> = word.chars().collect();
        s.len() >= i + w.len() && s[i..i + w.len()] == w[..] && (i == 0 || !is_ident(s[i - 1]))
    };
    let mut braces = 0usize;
    // The brace depths at which inline modules open.
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut mod_opens = false;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            '{' => {
                braces += 1;
                if mod_opens {
                    inline_mods.push(braces);
                    mod_opens = false;
                }
            }
            '}' => {
                if inline_mods.last() == Some(&braces) {
                    inline_mods.pop();
                }
                braces = braces.saturating_sub(1);
            }
            ';' => mod_opens = false,
            _ => {}
        }
        if word_at(i, "mod ") {
            mod_opens = true;
        }
        let mut found = None;
        if word_at(i, "crate::") {
            found = Some((Anchor::Crate, i + "crate::".len()));
        } else if word_at(i, "self::") && inline_mods.is_empty() {
            found = Some((Anchor::Here, i + "self::".len()));
        } else if word_at(i, "super::") {
            let mut j = i;
            let mut n = 0;
            while word_at(j, "super::") {
                j += "super::".len();
                n += 1;
                while j < s.len() && s[j].is_whitespace() {
                    j += 1;
                }
            }
            if n > inline_mods.len() {
                found = Some((Anchor::Up(n - inline_mods.len()), j));
            } else {
                i = j;
                continue;
            }
        }
        let Some((anchor, mut j)) = found else {
            i += 1;
            continue;
        };
        while j < s.len() && s[j].is_whitespace() {
            j += 1;
        }
        let (paths, len) = if s.get(j) == Some(&'{') {
            group_paths(&s[j..])
        } else {
            tree_at(&s[j..])
        };
        out.extend(
            paths
                .into_iter()
                .filter(|p| !p.is_empty() && head(p) != "self")
                .map(|p| (anchor, p)),
        );
        i = j + len.max(1);
    }
    out
}

/// The paths that `code` (stripped, without tests) takes from the crate
/// root: `crate::a::B`, `crate::{A, b::C}`, and `super::a::B` with as
/// many `super::` as the code is deep (`depth` for the file: 1 for
/// `src/x.rs` and `src/x/mod.rs`, 2 for `src/x/y.rs`...; one more inside
/// each inline `mod NAME { ... }`).
fn root_paths(code: &str, depth: usize) -> BTreeSet<String> {
    anchored_paths(code)
        .into_iter()
        .filter(|(anchor, _)| *anchor == Anchor::Crate || *anchor == Anchor::Up(depth))
        .map(|(_, path)| path)
        .collect()
}

/// What lib.rs holds: the modules it declares, the things it defines
/// (at its top level), the names it re-exports with the path each comes
/// from, and the heads of its glob re-exports.
#[derive(Debug, Default, PartialEq)]
struct Root {
    modules: BTreeSet<String>,
    defined: BTreeSet<String>,
    reexports: BTreeMap<String, String>,
    globs: BTreeSet<String>,
}

fn read_root(code: &str) -> Root {
    let mut root = Root::default();
    // Top-level items, split at `;` and at the end of top-level blocks.
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut item = String::new();
    for c in code.chars() {
        match c {
            '{' => {
                depth += 1;
                item.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                item.push(c);
                if depth == 0 {
                    items.push(std::mem::take(&mut item));
                }
            }
            ';' if depth == 0 => items.push(std::mem::take(&mut item)),
            _ => item.push(c),
        }
    }
    for item in items {
        // Drop the attributes in front of the item.
        let mut text = item.trim_start();
        while text.starts_with("#[") || text.starts_with("#![") {
            let mut depth = 0usize;
            let mut end = text.len();
            for (k, c) in text.char_indices() {
                match c {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            text = text[end..].trim_start();
        }
        let head: String = text.chars().take_while(|c| *c != '{').collect();
        let words: Vec<&str> = head
            .split(|c: char| !is_ident(c) && c != '!')
            .filter(|w| !w.is_empty())
            .collect();
        let words: Vec<&str> = words
            .into_iter()
            .skip_while(|w| *w == "pub" || *w == "crate" || *w == "super" || *w == "in")
            .collect();
        match words.first().copied() {
            Some("mod") => {
                if let Some(name) = words.get(1) {
                    root.modules.insert(name.to_string());
                }
            }
            Some("use") => {
                let at = text.find("use").unwrap_or(0);
                read_use(&text[at + "use".len()..], &mut root);
            }
            Some("fn" | "const" | "static" | "enum" | "struct" | "type" | "trait" | "union")
            | Some("macro_rules!") => {
                let name = words[1..].iter().find(|w| **w != "mut");
                if let Some(name) = name {
                    root.defined.insert(name.to_string());
                }
            }
            _ => {}
        }
    }
    root
}

/// Records what a lib.rs `use` tree (`text`, after `use`) brings in.
fn read_use(text: &str, root: &mut Root) {
    fn walk(prefix: &str, tree: &str, root: &mut Root) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let base = tree[..open].trim().trim_end_matches("::");
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let path = join(prefix, base);
            let mut depth = 0usize;
            let mut start = 0;
            for (k, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        walk(&path, &inner[start..k], root);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            walk(&path, &inner[start..], root);
            return;
        }
        if tree.is_empty() {
            return;
        }
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), Some(a.trim())),
            None => (tree, None),
        };
        let full = join(prefix, path);
        if let Some(base) = full.strip_suffix("::*") {
            root.globs.insert(base.to_string());
            return;
        }
        let last = full.rsplit("::").next().unwrap_or(&full);
        let name = match alias {
            Some(a) => a,
            None if last == "self" => full
                .trim_end_matches("::self")
                .rsplit("::")
                .next()
                .unwrap_or(""),
            None => last,
        };
        let source = full.trim_end_matches("::self").to_string();
        root.reexports.insert(name.to_string(), source);
    }
    fn join(prefix: &str, path: &str) -> String {
        match (prefix.is_empty(), path.is_empty()) {
            (true, _) => path.to_string(),
            (_, true) => prefix.to_string(),
            _ => format!("{prefix}::{path}"),
        }
    }
    walk("", text, root);
}

/// The module a path of lib.rs starts in (`crate::a::B` and `a::B` are
/// both in `a`), if it is one of the crate's.
fn module_of(path: &str, root: &Root) -> Option<String> {
    let path = path
        .trim_start_matches("crate::")
        .trim_start_matches("self::");
    let head = path.split("::").next().unwrap_or("");
    if root.modules.contains(head) {
        Some(head.to_string())
    } else if let Some(source) = root.reexports.get(head) {
        if source == path {
            None
        } else {
            module_of(source, root)
        }
    } else if root.defined.contains(head) {
        Some("lib".to_string())
    } else {
        None
    }
}

/// A module file: the module it belongs to, how deep it is, its module
/// path (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`), its path.
struct SourceFile {
    module: String,
    depth: usize,
    at: Vec<String>,
    path: PathBuf,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The crate's source files, without lib.rs and without the files that
/// `#[cfg(test)] mod NAME;` declares.
fn source_files(root_dir: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut test_files = BTreeSet::new();
    let mut stack = vec![root_dir.to_path_buf()];
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
            let src = std::fs::read_to_string(&path).unwrap();
            let (_, test_mods) = without_tests(&strip(&src));
            // A file's child modules live beside it (lib.rs, mod.rs) or in
            // the folder of its name.
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let children = if stem == "mod" || stem == "lib" {
                dir.clone()
            } else {
                dir.join(&stem)
            };
            for m in test_mods {
                test_files.insert(children.join(format!("{m}.rs")));
                test_files.insert(children.join(&m));
            }
            files.push(path);
        }
    }
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root_dir).unwrap();
        if rel == Path::new("lib.rs")
            || test_files
                .iter()
                .any(|t| path == *t || (t.is_dir() && path.starts_with(t)))
        {
            continue;
        }
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        let module = parts[0].trim_end_matches(".rs").to_string();
        let depth = if parts.last().is_some_and(|p| p == "mod.rs") {
            parts.len() - 1
        } else {
            parts.len()
        };
        let mut at: Vec<String> = parts
            .iter()
            .map(|p| p.trim_end_matches(".rs").to_string())
            .collect();
        if at.last().is_some_and(|p| p == "mod") {
            at.pop();
        }
        out.push(SourceFile {
            module,
            depth,
            at,
            path,
        });
    }
    out
}

/// The import graph, and the complaints about names that modules take
/// from lib.rs itself or whose origin lib.rs does not spell out.
fn graph() -> (Graph, Vec<String>) {
    let dir = src_dir();
    let root_src = std::fs::read_to_string(dir.join("lib.rs")).unwrap();
    let root = read_root(&without_tests(&strip(&root_src)).0);
    let mut graph = Graph::new();
    let mut complaints = Vec::new();
    for (name, source) in &root.reexports {
        if let Some(m) = module_of(source, &root) {
            graph
                .entry("lib".into())
                .or_default()
                .entry(m)
                .or_default()
                .insert(name.clone());
        }
    }
    for file in source_files(&dir) {
        let src = std::fs::read_to_string(&file.path).unwrap();
        let code = without_tests(&strip(&src)).0;
        let deps = graph.entry(file.module.clone()).or_default();
        for path in root_paths(&code, file.depth) {
            let name = head(&path).to_string();
            let rel = file.path.strip_prefix(&dir).unwrap().display();
            let target = if root.modules.contains(&name) {
                Some(name.clone())
            } else if root.defined.contains(&name) {
                complaints.push(format!("src/{rel} takes crate::{name}, defined in lib.rs"));
                Some("lib".to_string())
            } else if let Some(source) = root.reexports.get(&name) {
                module_of(source, &root)
            } else {
                complaints.push(format!(
                    "src/{rel} takes crate::{name}, which lib.rs does not name \
                     (a glob re-export?): import it from its module"
                ));
                None
            };
            if let Some(t) = target.filter(|t| *t != file.module) {
                deps.entry(t).or_default().insert(path);
            }
        }
    }
    (graph, complaints)
}

/// A module's code for the scan inside folders: its module path and its
/// code (stripped, without tests).
struct ModuleCode {
    at: Vec<String>,
    code: String,
}

/// The module path that `path` (`crate::a::B`, `super::b::C`, `self::c`,
/// or `d::E` for a child module `d` of the file) names, seen from the
/// module at `at`; `None` for another crate's.
fn absolute(at: &[String], path: &str, modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut rest = path;
    let mut base: Vec<String> = if let Some(r) = rest.strip_prefix("crate::") {
        rest = r;
        Vec::new()
    } else if rest.starts_with("super::") {
        let mut n = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
            n += 1;
        }
        at[..at.len().checked_sub(n)?].to_vec()
    } else if let Some(r) = rest.strip_prefix("self::") {
        rest = r;
        at.to_vec()
    } else {
        let mut child = at.to_vec();
        child.push(head(rest).to_string());
        if !modules.contains(&child) {
            return None;
        }
        at.to_vec()
    };
    base.extend(rest.split("::").map(str::to_string));
    Some(base)
}

/// The module `path` (from the crate root) lands in, following the names
/// that modules' `use`s bring in (`uses`: module -> name -> path).
fn landing(
    mut path: Vec<String>,
    modules: &BTreeSet<Vec<String>>,
    uses: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Vec<String> {
    for _ in 0..8 {
        let m = (0..=path.len())
            .rev()
            .find(|k| *k == 0 || modules.contains(&path[..*k]))
            .unwrap_or(0);
        let through = path.get(m).and_then(|name| uses.get(&path[..m])?.get(name));
        match through {
            Some(target) => {
                let mut next = target.clone();
                next.extend(path[m + 1..].iter().cloned());
                path = next;
            }
            None => {
                path.truncate(m);
                return path;
            }
        }
    }
    path
}

/// For each folder below the crate root (`reactor`, `reactor::engine`,
/// ...), the import graph of its parts: the files and folders in it
/// (its `mod.rs` is the folder itself, which its parts may use and
/// which may use them). A part imports another when code in it names a
/// path into the other, directly or through a name that a module's
/// `use` brings in (a re-export).
fn folder_graphs(files: &[ModuleCode]) -> BTreeMap<String, Graph> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.at.clone()).collect();
    let mut uses = BTreeMap::new();
    for f in files {
        let names: BTreeMap<String, Vec<String>> = read_root(&f.code)
            .reexports
            .into_iter()
            .filter_map(|(name, source)| Some((name, absolute(&f.at, &source, &modules)?)))
            .collect();
        uses.insert(f.at.clone(), names);
    }
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for f in files {
        for (anchor, path) in anchored_paths(&f.code) {
            let written = match anchor {
                Anchor::Crate => format!("crate::{path}"),
                Anchor::Up(n) => format!("{}{path}", "super::".repeat(n)),
                Anchor::Here => format!("self::{path}"),
            };
            let Some(full) = absolute(&f.at, &written, &modules) else {
                continue;
            };
            let lands = landing(full, &modules, &uses);
            for k in 1..f.at.len() {
                let (part, other) = (&f.at[k], lands.get(k));
                if lands.len() > k && lands[..k] == f.at[..k] && other != Some(part) {
                    graphs
                        .entry(f.at[..k].join("::"))
                        .or_default()
                        .entry(part.clone())
                        .or_default()
                        .entry(lands[k].clone())
                        .or_default()
                        .insert(written.clone());
                }
            }
        }
    }
    graphs
}

/// The crate's modules' code, for [`folder_graphs`].
fn module_codes() -> Vec<ModuleCode> {
    source_files(&src_dir())
        .into_iter()
        .map(|file| {
            let src = std::fs::read_to_string(&file.path).unwrap();
            ModuleCode {
                at: file.at,
                code: without_tests(&strip(&src)).0,
            }
        })
        .collect()
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
        let deps = s.graph.get(v).into_iter().flat_map(|d| d.keys());
        for w in deps {
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
            comp.sort();
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

/// Each import circle of `graph`, told edge by edge with the names that
/// tie it.
fn circles(graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for comp in components(graph) {
        if comp.len() < 2 {
            continue;
        }
        let mut text = format!("an import circle: {comp:?}");
        for a in &comp {
            for (b, names) in &graph[a] {
                if comp.contains(b) {
                    text.push_str(&format!("\n  {a} -> {b}: {names:?}"));
                }
            }
        }
        out.push(text);
    }
    out
}

#[test]
fn no_import_circle() {
    let (graph, _) = graph();
    assert!(graph.len() > 10, "found the modules: {graph:?}");
    assert!(
        graph["socket"].contains_key("pattern") && graph["lib"].contains_key("socket"),
        "the scan sees imports: {graph:#?}"
    );
    let found = circles(&graph);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Each import circle among the parts of a folder.
fn folder_circles(graphs: &BTreeMap<String, Graph>) -> Vec<String> {
    graphs
        .iter()
        .flat_map(|(folder, graph)| {
            circles(graph)
                .into_iter()
                .map(move |c| format!("inside {folder}: {c}"))
        })
        .collect()
}

#[test]
fn no_import_circle_inside_a_folder() {
    let graphs = folder_graphs(&module_codes());
    assert!(
        graphs["reactor"]["session"].contains_key("engine")
            && graphs["transport"]["tcp"].contains_key("socks"),
        "the scan sees imports inside folders: {graphs:#?}"
    );
    let found = folder_circles(&graphs);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The most lines of code (outside test-only items) a source file has.
const MOST_LINES: usize = 800;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_file_has_more_than_800_lines_of_code() {
    let files = rust_files(&src_dir());
    assert!(files.len() > 50, "found the files: {files:?}");
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, code_lines(&std::fs::read_to_string(f).unwrap())))
        .filter(|(_, n)| *n > MOST_LINES)
        .map(|(f, n)| format!("{} has {n} lines of code", f.display()))
        .collect();
    assert!(
        long.is_empty(),
        "over {MOST_LINES} lines outside test-only items; split by what the code holds:\n{}",
        long.join("\n")
    );
}

#[test]
fn modules_import_nothing_lib_rs_defines() {
    let (_, complaints) = graph();
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

#[test]
fn lower_rooms_do_not_reach_up() {
    let (graph, _) = graph();
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
            assert!(!deps.contains_key(*n), "{module} imports {n}: {deps:?}");
        }
    }
}

/// The lines of `src` whose code (not comments or strings) names the
/// `fabriq_ofi` crate.
fn ofi_lines(src: &str) -> Vec<String> {
    strip(src)
        .lines()
        .filter(|line| {
            line.match_indices("fabriq_ofi").any(|(k, _)| {
                let before = line[..k].chars().next_back();
                let after = line[k + "fabriq_ofi".len()..].chars().next();
                !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
            })
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// The files of the fabric connection core: under
/// `reactor/engine/fabric/`, `conn.rs`, `rx.rs`, `tx.rs`, or what lies in
/// folders of those names.
fn fabric_core_files(fabric: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![fabric.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(fabric).unwrap();
            let first = rel.components().next().unwrap().as_os_str();
            let first = first.to_string_lossy();
            let core = ["conn", "rx", "tx"]
                .iter()
                .any(|c| first == *c || first == format!("{c}.rs"));
            if core && path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn the_fabric_connection_core_does_not_import_fabriq_ofi() {
    let fabric = src_dir().join("reactor/engine/fabric");
    for file in fabric_core_files(&fabric) {
        let src = std::fs::read_to_string(&file).unwrap();
        let lines = ofi_lines(&src);
        assert!(
            lines.is_empty(),
            "{} names fabriq_ofi: {lines:?}",
            file.display()
        );
    }
}

// ---- the scan itself

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_scan_skips_comments_strings_and_test_items() {
    let src = "use crate::a::X;\n// crate::b\n/* crate::c /* nested */ crate::d */\n\
               #[cfg(test)]\nmod tests {\n    use crate::e;\n}\n\
               fn f() { let _ = \"crate::f\"; let _ = r#\"crate::g\"#; let _ = '{'; crate::h::g() }\n\
               #[cfg(all(test, not(loom)))]\nfn only_in_tests() { crate::i::j() }\n\
               #[cfg(test)]\nmod more_tests;\n";
    let (code, test_mods) = without_tests(&strip(src));
    assert_eq!(root_paths(&code, 1), set(&["a::X", "h::g"]));
    assert_eq!(test_mods, ["more_tests"]);
}

#[test]
fn the_scan_reads_groups_and_paths_through_super() {
    let src = "use crate::{\n    a::X,\n    b::{Y, Z},\n    C,\n    self as me,\n};\n\
               use super::super::d::W;\nuse super::e;\nfn f() -> super::super::F { todo!() }\n\
               mod inner {\n    use super::super::super::g::{V, v::U};\n}\n";
    let code = without_tests(&strip(src)).0;
    let heads = |paths: BTreeSet<String>| -> BTreeSet<String> {
        paths.iter().map(|p| head(p).to_string()).collect()
    };
    assert_eq!(
        root_paths(&code, 2),
        set(&["C", "F", "a::X", "b::Y", "b::Z", "d::W", "g::V", "g::v::U"])
    );
    // From src/x.rs, `super::super` is beyond the root; in `inner`, so is
    // `super::super::super`.
    assert_eq!(heads(root_paths(&code, 1)), set(&["C", "a", "b", "e"]));
}

#[test]
fn the_scan_reads_what_lib_rs_declares_defines_and_re_exports() {
    let src = "#![deny(unsafe_code)]\nmod a;\n#[cfg(feature = \"x\")]\npub mod b;\n\
               pub use a::{A, sub::B as Bee};\npub use b::C::{self, *};\npub use dep::D;\n\
               /// Doc.\npub const K: i32 = 1;\npub enum E { V { x: u8 } }\n\
               impl E { pub fn not_top_level(&self) {} }\npub fn f() {}\n";
    let root = read_root(&without_tests(&strip(src)).0);
    assert_eq!(root.modules, set(&["a", "b"]));
    assert_eq!(root.defined, set(&["E", "K", "f"]));
    assert_eq!(root.globs, set(&["b::C"]));
    assert_eq!(root.reexports["Bee"], "a::sub::B");
    assert_eq!(module_of("a::sub::B", &root).as_deref(), Some("a"));
    assert_eq!(module_of(&root.reexports["C"], &root).as_deref(), Some("b"));
    assert_eq!(module_of(&root.reexports["D"], &root), None);
    assert_eq!(module_of("E", &root).as_deref(), Some("lib"));
}

#[test]
fn a_circle_of_two_is_found() {
    let mut graph = Graph::new();
    for (a, b) in [("x", "y"), ("y", "x"), ("y", "z")] {
        graph
            .entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .insert("N".into());
    }
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("x -> y") && found[0].contains("y -> x"));
}

#[test]
fn the_fabric_rule_sees_fabriq_ofi_paths_only_in_code() {
    let src = "//! Not fabriq_ofi in a comment.\nuse fabriq_ofi::Domain;\n\
               fn f() { let _ = \"fabriq_ofi\"; ::fabriq_ofi::x(); not_fabriq_ofi(); }\n";
    assert_eq!(
        ofi_lines(src),
        [
            "use fabriq_ofi::Domain;",
            "fn f() { let _ = \"\"; ::fabriq_ofi::x(); not_fabriq_ofi(); }"
        ]
    );
    let dir = std::env::temp_dir().join(format!("fabriq-layering-{}", std::process::id()));
    let fabric = dir.join("fabric");
    std::fs::create_dir_all(fabric.join("rx")).unwrap();
    for f in ["conn.rs", "rx/ring.rs", "tx.rs", "mod.rs", "provider.rs"] {
        std::fs::write(fabric.join(f), "").unwrap();
    }
    let mut found: Vec<String> = fabric_core_files(&fabric)
        .iter()
        .map(|p| p.strip_prefix(&fabric).unwrap().display().to_string())
        .collect();
    found.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, ["conn.rs", "rx/ring.rs", "tx.rs"]);
}

#[test]
fn a_circle_inside_a_folder_is_found_also_through_a_re_export() {
    let file = |at: &str, src: &str| ModuleCode {
        at: at.split("::").map(str::to_string).collect(),
        code: without_tests(&strip(src)).0,
    };
    let files = [
        // transport/mod.rs re-exports tcp's connect, which socks takes
        // from it; tcp names socks directly. The folder's own mod.rs is
        // no part: its children use it and it uses them.
        file(
            "transport",
            "mod socks;\nmod tcp;\npub(crate) use tcp::connect as tcp_connect;\n\
             pub(crate) trait Stream {}\nfn lookup() { tcp::Tcp; }\n",
        ),
        file(
            "transport::tcp",
            "use super::Stream;\npub(crate) fn connect() { super::socks::Socks5::start() }\n",
        ),
        file(
            "transport::socks",
            "use super::{Stream, tcp_connect};\n\
             #[cfg(test)]\nmod tests { use super::super::tcp::Tcp; }\n",
        ),
        // A deep file reaches up and across: reactor/engine/fabric/node.rs
        // names reactor/session.rs, which names reactor/engine/.
        file("reactor", "mod engine;\nmod session;\n"),
        file("reactor::engine", "pub(crate) mod fabric;\n"),
        file("reactor::engine::fabric", "pub(crate) mod node;\n"),
        file(
            "reactor::engine::fabric::node",
            "fn f() { crate::reactor::session::Base::new() }\n",
        ),
        file(
            "reactor::session",
            "use super::engine::{self, fabric::node};\n",
        ),
    ];
    let graphs = folder_graphs(&files);
    let found = folder_circles(&graphs);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("inside reactor: ") && found[0].contains("engine -> session"));
    assert!(
        found[1].starts_with("inside transport: ")
            && found[1].contains("socks -> tcp: {\"super::tcp_connect\"}")
            && found[1].contains("tcp -> socks: {\"super::socks::Socks5::start\"}"),
        "{found:#?}"
    );
    assert!(
        !graphs.contains_key(""),
        "the crate root is the module graph's"
    );
    // Without the re-export, no circle.
    let mut files = files;
    files[2] = file("transport::socks", "use super::Stream;\n");
    assert_eq!(
        folder_circles(&folder_graphs(&files[..3])),
        Vec::<String>::new()
    );
}

#[test]
fn lines_of_code_leave_out_test_items_wherever_they_are() {
    let lines = |n: usize| "fn f() {}\n".repeat(n);
    assert_eq!(code_lines(&lines(801)), 801);
    // A test module declared at the top hides nothing after it.
    let declared_first = format!("mod a;\n#[cfg(test)]\nmod tests;\n{}", lines(800));
    assert_eq!(code_lines(&declared_first), 801);
    // A test module at the end, a test helper between, and strings and
    // comments that span lines.
    let src = format!(
        "{}#[cfg(all(test, not(loom)))]\nfn helper() {{\n    let _ = \"}}\";\n}}\n\
         const S: &str = \"a\nb\";\n/* one\ntwo */\n{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        lines(10),
        lines(5),
        lines(900)
    );
    assert_eq!(code_lines(&src), 10 + 2 + 2 + 5);
}
