//! The workspace's rooms, checked: every crate's modules import one way (no module imports a
//! module that, directly or through others, imports it back), no hand-written source file grows
//! past 1,000 lines, the sans-IO cores keep their dependencies (neither depends on tokio or
//! turmoil; the member never depends on the coordinator), and the oracle sees only the history
//! (neither the history nor the checker depends on a core).
//!
//! The import graph is read from the source text: a module's edges are the paths it names
//! (`use crate::a::X`, `super::b::f()`, an inline `crate::c::T`), resolved to the module that
//! defines the item by following `pub use` re-exports. `mod x;` declarations are structure, not
//! imports; inline `#[cfg(test)]` modules and the crate root's own re-exports (its facade) are
//! left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: &[&str] = &["wire", "coordinator", "member", "history", "checker", "sim", "live"];
const MAX_LINES: usize = 1_000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Source text without comments, string contents and inline test modules.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // a char literal such as '{' must not count as a brace
            out.push_str("' '");
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    drop_test_modules(&out)
}

fn drop_test_modules(src: &str) -> String {
    let mut s = src.to_string();
    while let Some(start) = find_test_module(&s) {
        let open = start + s[start..].find('{').expect("test module body");
        let mut depth = 0;
        let mut end = open;
        for (k, ch) in s[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        s.replace_range(start..end, "");
    }
    s
}

fn find_test_module(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = s[from..].find("#[cfg(") {
        let at = from + k;
        let rest = &s[at + 6..];
        if rest.starts_with("test") || rest.starts_with("all(test") {
            let close = at + s[at..].find(']')? + 1;
            let after = s[close..].trim_start();
            let after = after.strip_prefix("pub ").unwrap_or(after);
            let body = after.find('{');
            let decl = after.find(';');
            if after.starts_with("mod ") && body.is_some() && (decl.is_none() || body < decl) {
                return Some(at);
            }
        }
        from = at + 6;
    }
    None
}

/// Expands a use tree such as `a::{b, c::{d, e as f}}` into paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![path.split_whitespace().collect()];
    };
    let prefix: String = tree[..open].split_whitespace().collect();
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            '{' => {
                depth += 1;
                cur.push(ch)
            }
            '}' => {
                depth -= 1;
                cur.push(ch)
            }
            _ => cur.push(ch),
        }
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts.iter().filter(|p| !p.trim().is_empty()) {
        for e in expand(p) {
            out.push(if e == "self" {
                prefix.trim_end_matches(':').to_string()
            } else {
                format!("{prefix}{e}")
            });
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

struct Crate {
    /// Module path ("" for the root) -> stripped source.
    modules: BTreeMap<String, String>,
}

impl Crate {
    fn load(root: &Path) -> Crate {
        let src = root.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut modules = BTreeMap::new();
        for f in files {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut segs: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if segs == ["main"] || segs.first().is_some_and(|s| s == "bin") {
                continue;
            }
            if segs.last().is_some_and(|s| s == "mod") {
                segs.pop();
            }
            if segs == ["lib"] {
                segs.clear();
            }
            let text = std::fs::read_to_string(&f).unwrap();
            modules.insert(segs.join("::"), strip(&text));
        }
        Crate { modules }
    }

    /// `path` as named in `module`, made absolute (segments from the crate root).
    fn absolute(&self, module: &str, path: &str) -> Option<Vec<String>> {
        let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> =
            if module.is_empty() { vec![] } else { module.split("::").map(String::from).collect() };
        match *segs.first()? {
            "crate" => {
                base.clear();
                segs.remove(0);
            }
            "super" | "self" => {
                while let Some(&s) = segs.first() {
                    match s {
                        "super" => {
                            base.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    segs.remove(0);
                }
            }
            first => {
                // Relative to this module: only a child module counts.
                let mut cand = base.clone();
                cand.push(first.to_string());
                if !self.modules.contains_key(&cand.join("::")) {
                    return None;
                }
            }
        }
        base.extend(segs.into_iter().map(String::from));
        Some(base)
    }

    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut reexports: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        let mut uses: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
        for (m, text) in &self.modules {
            for (public, tree) in use_statements(text) {
                for path in expand(&tree) {
                    let Some(abs) = self.absolute(m, &path) else { continue };
                    if public {
                        if let Some(name) = abs.last() {
                            reexports.insert((m.clone(), name.clone()), abs.clone());
                        }
                    }
                    uses.entry(m.clone()).or_default().push(abs);
                }
            }
            for path in inline_paths(text) {
                if let Some(abs) = self.absolute(m, &path) {
                    uses.entry(m.clone()).or_default().push(abs);
                }
            }
        }
        let resolve = |segs: &[String]| -> Option<String> {
            let mut segs = segs.to_vec();
            for _ in 0..10 {
                let k = (0..=segs.len())
                    .rev()
                    .find(|&k| self.modules.contains_key(&segs[..k].join("::")))?;
                let module = segs[..k].join("::");
                match segs.get(k).and_then(|n| reexports.get(&(module.clone(), n.clone()))) {
                    Some(target) if *target != segs => {
                        let mut next = target.clone();
                        next.extend(segs[k + 1..].iter().cloned());
                        segs = next;
                    }
                    _ => return Some(module),
                }
            }
            None
        };
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, paths) in uses {
            if m.is_empty() {
                continue; // the crate root's re-exports are its facade
            }
            for p in paths {
                if let Some(t) = resolve(&p) {
                    if t != m {
                        edges.entry(m.clone()).or_default().insert(t);
                    }
                }
            }
        }
        edges
    }
}

fn use_statements(text: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find("use ") {
        let at = from + k;
        from = at + 4;
        if at > 0 && is_ident(text[..at].chars().next_back().unwrap()) {
            continue;
        }
        let Some(end) = text[at..].find(';') else { break };
        let before = text[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        out.push((public, text[at + 4..at + end].to_string()));
        from = at + end;
    }
    out
}

fn inline_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(k) = text[from..].find(head) {
            let at = from + k;
            from = at + head.len();
            if at > 0 && is_ident(text[..at].chars().next_back().unwrap()) {
                continue;
            }
            let path: String =
                text[at..].chars().take_while(|&c| is_ident(c) || c == ':').collect();
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

/// Strongly connected components with more than one module.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &str) {
            let n = self.index.len();
            self.index.insert(v.to_string(), n);
            self.low.insert(v.to_string(), n);
            self.stack.push(v.to_string());
            self.on.insert(v.to_string());
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[v].min(self.low[w]);
                    self.low.insert(v.to_string(), l);
                } else if self.on.contains(w) {
                    let l = self.low[v].min(self.index[w]);
                    self.low.insert(v.to_string(), l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(&w);
                    let done = w == v;
                    comp.push(w);
                    if done {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on: BTreeSet::new(),
        out: vec![],
    };
    let nodes: BTreeSet<&String> = edges.keys().chain(edges.values().flatten()).collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut problems = Vec::new();
    for name in CRATES {
        let krate = Crate::load(&workspace().join(name));
        assert!(krate.modules.len() > 3, "{name}: found only {} modules", krate.modules.len());
        for comp in cycles(&krate.edges()) {
            problems.push(format!("{name}: {}", comp.join(" <-> ")));
        }
    }
    assert!(problems.is_empty(), "import circles:\n{}", problems.join("\n"));
}

#[test]
fn the_cycle_finder_sees_a_circle_through_three_modules_and_none_in_a_chain() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    fn add(edges: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str) {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    add(&mut edges, "a", "b");
    add(&mut edges, "b", "c");
    add(&mut edges, "c", "d");
    assert!(cycles(&edges).is_empty());
    add(&mut edges, "c", "a");
    assert_eq!(cycles(&edges), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}

#[test]
fn use_trees_expand_and_paths_resolve_through_reexports() {
    assert_eq!(
        expand("crate::{a::X, b::{self, Y as Z}}"),
        vec!["crate::a::X", "crate::b", "crate::b::Y"]
    );
    let krate = Crate {
        modules: BTreeMap::from([
            (String::new(), String::new()),
            ("leaf".into(), "pub struct T;".into()),
            ("facade".into(), "pub use crate::leaf::T;".into()),
            ("user".into(), "use crate::facade::T; fn f() { super::leaf::g(); }".into()),
        ]),
    };
    let edges = krate.edges();
    assert_eq!(edges["user"], BTreeSet::from(["leaf".to_string()]));
    assert_eq!(edges["facade"], BTreeSet::from(["leaf".to_string()]));
}

#[test]
fn no_hand_written_source_file_exceeds_a_thousand_lines() {
    let mut files = Vec::new();
    for dir in
        ["wire", "coordinator", "member", "history", "checker", "sim", "live", "cli", "scenarios"]
    {
        rust_files(&workspace().join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let first = text.lines().next().unwrap_or("");
            let generated = first.contains("@generated") || first.starts_with("//! GENERATED");
            let lines = text.lines().count();
            (!generated && lines > MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:?}");
}

/// The names in a manifest's `[dependencies]` table (not dev- or build-dependencies), with
/// whether each is optional.
fn dependencies(krate: &str) -> BTreeMap<String, bool> {
    let text = std::fs::read_to_string(workspace().join(krate).join("Cargo.toml")).unwrap();
    let mut in_deps = false;
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap().trim().to_string();
            out.insert(name, line.contains("optional = true"));
        }
    }
    out
}

/// The simulation library stands below the real-time tools, and both below the command line:
/// a user's test that depends on `groupsim` builds neither sockets nor a CLI.
#[test]
fn the_library_depends_on_neither_the_real_time_tools_nor_the_command_line() {
    let sim = dependencies("sim");
    for above in ["groupsim-live", "groupsim-cli", "anyhow", "tracing-subscriber", "mimalloc"] {
        assert!(!sim.contains_key(above), "the library must not depend on {above}: {sim:?}");
    }
    let live = dependencies("live");
    assert!(live.contains_key("groupsim"), "{live:?}");
    assert!(!live.contains_key("groupsim-cli"), "{live:?}");
    let cli = dependencies("cli");
    assert!(cli.contains_key("groupsim") && cli.contains_key("groupsim-live"), "{cli:?}");
}

#[test]
fn the_sans_io_cores_depend_on_neither_tokio_nor_turmoil_and_the_member_not_on_the_coordinator() {
    for core in ["coordinator", "member"] {
        let deps = dependencies(core);
        assert!(deps.contains_key("groupsim-wire"), "{core} depends on groupsim-wire: {deps:?}");
        for banned in ["tokio", "turmoil"] {
            assert!(!deps.contains_key(banned), "{core} must not depend on {banned}");
        }
    }
    assert!(!dependencies("member").contains_key("groupsim-coordinator"));
    // The wire crate's socket half is optional, so the cores never build it.
    assert_eq!(dependencies("wire").get("tokio"), Some(&true));
}

/// Every Rust file under `sim/src/<dir>`, with its text stripped of comments, strings and inline
/// test modules.
fn sim_sources(dir: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&workspace().join("sim/src").join(dir), &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = strip(&std::fs::read_to_string(&f).unwrap());
            (f, text)
        })
        .collect()
}

/// Whether `text` names the turmoil crate (not the `world::turmoil` module).
fn names_turmoil_crate(text: &str) -> bool {
    let text = text.replace("world::turmoil", "").replace("super::turmoil", "");
    text.match_indices("turmoil").any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = &text[i + "turmoil".len()..];
        let starts = before.is_none_or(|c| !is_ident(c));
        starts && (after.starts_with("::") || text[..i].trim_end().ends_with("use"))
    })
}

#[test]
fn only_the_turmoil_world_imports_turmoil() {
    let files = sim_sources("");
    assert!(files.len() > 50, "found only {} sim source files", files.len());
    let turmoil_world = workspace().join("sim/src/world/turmoil");
    let offenders: Vec<String> = files
        .iter()
        .filter(|(f, text)| !f.starts_with(&turmoil_world) && names_turmoil_crate(text))
        .map(|(f, _)| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "files outside sim/src/world/turmoil/ use turmoil: {offenders:?}"
    );
    let inside =
        files.iter().filter(|(f, t)| f.starts_with(&turmoil_world) && names_turmoil_crate(t));
    assert!(inside.count() >= 2, "the turmoil world no longer uses turmoil: is the check blind?");
}

#[test]
fn the_turmoil_check_tells_the_crate_from_the_world_module() {
    assert!(names_turmoil_crate("use turmoil::net::TcpStream;"));
    assert!(names_turmoil_crate("let s = ::turmoil::Builder::new();"));
    assert!(!names_turmoil_crate("use crate::world::turmoil::run; world::turmoil::run(spec)"));
    assert!(!names_turmoil_crate("fn run_in_turmoil() {} let turmoil_world = 1;"));
}

#[test]
fn the_shared_stage_imports_neither_world() {
    let files = sim_sources("world/stage");
    assert!(files.len() >= 4, "found only {} stage files", files.len());
    for (f, text) in &files {
        for world in ["world::event", "world::turmoil", "super::event", "super::turmoil"] {
            assert!(!text.contains(world), "{} names {world}", f.display());
        }
        assert!(!names_turmoil_crate(text), "{} uses turmoil", f.display());
    }
}

/// Every dependency a manifest names, in any table: `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, their `[target.*]` forms, and `[dependencies.<name>]` headers.
fn every_dependency(krate: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join(krate).join("Cargo.toml")).unwrap();
    let mut in_deps = false;
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            let table = header.rsplit_once('.').filter(|(t, _)| t.ends_with("dependencies"));
            if let Some((_, name)) = table {
                out.insert(name.trim_matches('"').to_string());
                in_deps = false;
            } else {
                in_deps = header.ends_with("dependencies");
            }
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            out.insert(line.split(['=', '.']).next().unwrap().trim().to_string());
        }
    }
    out
}

#[test]
fn the_history_and_the_checker_never_see_the_coordinator_or_the_member() {
    // The manifest reader sees test-only dependencies (the member tests with proptest).
    assert!(every_dependency("member").contains("proptest"));
    for krate in ["history", "checker"] {
        let deps = every_dependency(krate);
        assert!(deps.contains("groupsim-wire"), "{krate} names its dependencies: {deps:?}");
        for core in ["groupsim-coordinator", "groupsim-member"] {
            assert!(!deps.contains(core), "{krate} must not depend on {core}: {deps:?}");
        }
        let mut files = Vec::new();
        rust_files(&workspace().join(krate), &mut files);
        assert!(!files.is_empty(), "{krate}: no sources found");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for core in ["groupsim_coordinator", "groupsim_member"] {
                assert!(!text.contains(core), "{} names {core}", f.display());
            }
        }
    }
    assert!(every_dependency("checker").contains("groupsim-history"));
}
