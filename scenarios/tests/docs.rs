//! The documentation, checked: README.md stays a short front page (at most 200 lines) that
//! names the test command CI runs, and every relative link in README.md and under docs/ leads
//! somewhere.
//!
//! A link is the target of a markdown inline link or image (`[text](target)`, `![alt](target)`)
//! or of a reference definition (`[name]: target`), outside fenced code blocks and inline code.
//! Targets with a scheme (`https:`, `mailto:`) are left alone. A relative target must name an
//! existing file or folder, resolved from the folder of the page that holds it. An anchor
//! (`page.md#section`, or `#section` on the same page) must name a heading of that markdown
//! page, spelled as GitHub spells heading anchors: lower case, spaces to hyphens, punctuation
//! other than `-` and `_` dropped, a repeated heading suffixed `-1`, `-2`, …; anchors into files
//! that are not markdown are not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The front page's length limit: past it, content belongs in a page under docs/.
const README_MAX_LINES: usize = 200;

/// The test command CI runs; the README must show it.
const TEST_COMMAND: &str = "cargo test --workspace";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// README.md and every markdown file under docs/, sorted.
fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// `line` without its inline code spans (text between backticks).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for ch in line.chars() {
        if ch == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(ch);
        }
    }
    out
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            out.push((i + 1, line));
        }
    }
    out
}

/// Every link target in a markdown page, with the line it is on.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, raw) in prose_lines(text) {
        let line = without_code_spans(raw);
        // Reference definitions: `[name]: target`.
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix('[') {
            if let Some(close) = rest.find("]:") {
                if let Some(target) = rest[close + 2..].split_whitespace().next() {
                    out.push((n, target.to_string()));
                }
                continue;
            }
        }
        // Inline links and images: `](target)` or `](target "title")`.
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let inside = after[..end].trim();
            let target = inside.split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() {
                out.push((n, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    out
}

/// Whether a link target leaves the repository (has a URL scheme such as `https:`).
fn is_external(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    })
}

/// The anchor GitHub gives a heading's text.
fn slug(heading: &str) -> String {
    heading
        .replace('`', "")
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown page's headings, repeated headings numbered as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start();
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 6 || !trimmed[level..].starts_with(' ') {
            continue;
        }
        let base = slug(trimmed[level..].trim().trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut k = 0;
        while seen.contains(&anchor) {
            k += 1;
            anchor = format!("{base}-{k}");
        }
        seen.insert(anchor);
    }
    seen
}

/// What is wrong with one link of `page` (None when it resolves).
fn broken(page: &Path, target: &str) -> Option<String> {
    if is_external(target) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page is in a folder").join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no such file {}", file.display()));
    }
    match anchor {
        Some(a) if file.extension().is_some_and(|e| e == "md") => {
            let text = std::fs::read_to_string(&file).expect("a markdown file reads");
            (!anchors(&text).contains(a))
                .then(|| format!("{target}: no heading with anchor #{a} in {}", file.display()))
        }
        _ => None,
    }
}

#[test]
fn readme_is_at_most_200_lines() {
    let text = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move detail into a page under docs/"
    );
}

#[test]
fn readme_shows_the_test_command_ci_runs() {
    let text = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    assert!(text.contains(TEST_COMMAND), "README.md does not show `{TEST_COMMAND}`");
}

#[test]
fn every_relative_link_in_readme_and_docs_resolves() {
    let root = workspace();
    let mut problems = Vec::new();
    let mut links = 0;
    for page in pages(&root) {
        let text = std::fs::read_to_string(&page).expect("a page reads");
        for (line, target) in link_targets(&text) {
            links += 1;
            if let Some(why) = broken(&page, &target) {
                let shown = page.strip_prefix(&root).unwrap_or(&page).display().to_string();
                problems.push(format!("{shown}:{line}: {why}"));
            }
        }
    }
    assert!(links > 0, "no links found: the page walk or the link reader is broken");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn link_reader_finds_inline_image_and_reference_links_but_not_code() {
    let text = "See [a](docs/a.md) and ![pic](p.png \"title\").\n\
                `[not](code.md)` stays code.\n\
                ```\n[fenced](nope.md)\n```\n\
                [ref]: ../b.md#part\n\
                Two on a line: [x](x.md#y), [z](https://example.org/z).\n";
    let targets: Vec<String> = link_targets(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(targets, ["docs/a.md", "p.png", "../b.md#part", "x.md#y", "https://example.org/z"]);
    assert!(is_external("https://example.org/z"));
    assert!(!is_external("docs/a.md"));
}

#[test]
fn anchors_follow_github_heading_slugs() {
    let text = "# The two commands\n## `groupsim serve`: real sockets\n## Faults\n## Faults\n\
                ```\n# not a heading\n```\n";
    let got = anchors(text);
    let want: BTreeSet<String> =
        ["the-two-commands", "groupsim-serve-real-sockets", "faults", "faults-1"]
            .into_iter()
            .map(String::from)
            .collect();
    assert_eq!(got, want);
}

#[test]
fn a_missing_file_or_anchor_is_reported() {
    let root = workspace();
    let readme = root.join("README.md");
    assert!(broken(&readme, "docs/no-such-page.md").is_some());
    assert!(broken(&readme, "#no-such-heading-anywhere").is_some());
    assert!(broken(&readme, "Cargo.toml").is_none());
}
