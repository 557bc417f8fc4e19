//! What a command line names as a client: a package name (`kafka-python`), or a release of it
//! in the notation of its own package manager (`kafka-python==2.2.8` as pip writes it,
//! `kafkajs@1.16.0` as npm does, `samsa@0.1.8` as `cargo add` does). A release is installed into the release cache
//! ([`super::cache`]) and run from there; a bare name runs the client the interpreter at hand
//! has.

use std::fmt;

use super::clients::{self, ClientKind, Runtime};
use super::error::CheckError;

/// Longest version a spec may name (pip and npm versions are far shorter).
const MAX_VERSION_LEN: usize = 64;

/// One client as a command line names it.
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// The client.
    pub kind: ClientKind,
    /// The release to install and run; `None`: the installed one.
    pub version: Option<String>,
}

impl ClientSpec {
    /// The separator between name and version in `runtime`'s package manager.
    pub fn separator(runtime: Runtime) -> &'static str {
        match runtime {
            Runtime::Python => "==",
            Runtime::Node | Runtime::Rust => "@",
        }
    }
}

impl fmt::Display for ClientSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}{}{v}", self.kind.name, Self::separator(self.kind.runtime)),
            None => f.write_str(self.kind.name),
        }
    }
}

/// Reads one spec: `NAME`, `NAME==VERSION` (Python clients) or `NAME@VERSION` (kafkajs, Rust
/// crates). An
/// unknown name, the other runtime's separator, an empty or odd version is a named error.
pub fn parse(text: &str) -> Result<ClientSpec, CheckError> {
    let malformed = |why: String| CheckError::MalformedSpec { spec: text.to_string(), why };
    let (name, sep, version) = if let Some((n, v)) = text.split_once("==") {
        (n, "==", Some(v))
    } else if let Some((n, v)) = text.split_once('@') {
        (n, "@", Some(v))
    } else if text.contains('=') || text.contains(['<', '>', '~', '^', '!']) {
        return Err(malformed(
            "a release is named exactly: NAME==VERSION for a Python client, NAME@VERSION for \
             kafkajs and Rust crates (no ranges)"
                .into(),
        ));
    } else {
        (text, "", None)
    };
    let kind = clients::find(&[name.to_string()])?
        .into_iter()
        .next()
        .ok_or_else(|| malformed("no client named".into()))?;
    let Some(version) = version else {
        return Ok(ClientSpec { kind, version: None });
    };
    let want = ClientSpec::separator(kind.runtime);
    if sep != want {
        return Err(malformed(format!(
            "{} releases are named {}{want}VERSION",
            kind.name, kind.name
        )));
    }
    check_version(version).map_err(malformed)?;
    Ok(ClientSpec { kind, version: Some(version.to_string()) })
}

/// Whether `v` looks like one release's version: it starts with a digit and holds only
/// letters, digits and `.`, `-`, `+`, `_` (pip's and npm's exact versions), so it can name a
/// cache folder and reach pip or npm only as a version.
fn check_version(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("the version is empty".into());
    }
    if v.len() > MAX_VERSION_LEN {
        return Err(format!("the version is longer than {MAX_VERSION_LEN} characters"));
    }
    if !v.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("version {v:?} does not start with a digit"));
    }
    if let Some(c) = v.chars().find(|c| !(c.is_ascii_alphanumeric() || ".-+_".contains(*c))) {
        return Err(format!("version {v:?} holds {c:?} (an exact version is like 2.2.8)"));
    }
    if v.contains("..") {
        return Err(format!("version {v:?} holds \"..\""));
    }
    Ok(())
}

/// The leading numbers of a version (`0.7.1` -> `[0, 7, 1]`, `1.16.0-beta.7` -> `[1, 16, 0]`),
/// for comparing releases where a rule depends on one.
pub fn numbers(version: &str) -> Vec<u64> {
    version.split(['.', '-', '+']).map_while(|part| part.parse().ok()).collect()
}

/// Whether a client reporting version `reported` (`2.0.2`, or `2.3.0 (librdkafka 2.3.0)`: its
/// first word counts) is release `version`, numbers compared with trailing zeros ignored.
pub fn same_release(version: &str, reported: &str) -> bool {
    let first = reported.split_whitespace().next().unwrap_or_default();
    let trimmed = |v: &str| {
        let mut n = numbers(v);
        while n.last() == Some(&0) {
            n.pop();
        }
        n
    };
    first == version || (!numbers(version).is_empty() && trimmed(first) == trimmed(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_releases_in_each_package_managers_notation_are_read() {
        let s = parse("kafka-python==2.2.8").unwrap();
        assert_eq!((s.kind.name, s.version.as_deref()), ("kafka-python", Some("2.2.8")));
        let s = parse("kafkajs@1.16.0").unwrap();
        assert_eq!((s.kind.name, s.version.as_deref()), ("kafkajs", Some("1.16.0")));
        assert_eq!(parse("aiokafka").unwrap().version, None);
        assert_eq!(parse("confluent-kafka==2.3.0").unwrap().to_string(), "confluent-kafka==2.3.0");
    }

    #[test]
    fn malformed_specs_are_named_errors() {
        for (spec, says) in [
            ("kafka-python==", "the version is empty"),
            ("kafka-python@2.0.2", "kafka-python==VERSION"),
            ("kafkajs==1.16.0", "kafkajs@VERSION"),
            ("kafka-python>=2.0", "no ranges"),
            ("kafka-python=2.0.2", "no ranges"),
            ("kafka-python==v2", "does not start with a digit"),
            ("kafka-python==2.0 --index-url x", "holds ' '"),
            ("kafkajs@1..2", "\"..\""),
        ] {
            let e = parse(spec).unwrap_err().to_string();
            assert!(e.contains("malformed client spec") && e.contains(says), "{spec}: {e}");
        }
        let e = parse("kafka-pyton==2.0.2").unwrap_err().to_string();
        assert!(e.contains("unknown client \"kafka-pyton\""), "{e}");
    }

    #[test]
    fn a_reported_version_is_matched_to_the_release_asked_for() {
        assert!(same_release("2.3.0", "2.3.0 (librdkafka 2.3.0)"));
        assert!(same_release("2.2", "2.2.0"));
        assert!(same_release("1.16.0-beta.7", "1.16.0-beta.7"));
        assert!(!same_release("1.16.0", "2.2.4"));
        assert!(!same_release("2.0.2", "2.0.20"));
    }

    #[test]
    fn version_numbers_stop_at_the_first_non_number() {
        assert_eq!(numbers("0.7.1"), [0, 7, 1]);
        assert_eq!(numbers("1.16.0-beta.7"), [1, 16, 0]);
        assert_eq!(numbers("2.0.2rc1"), [2, 0]);
        assert!(numbers("0.7.1") < numbers("0.9"));
    }
}
