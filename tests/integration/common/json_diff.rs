//! Comparing two JSON documents as parsed values and naming the JSON
//! pointers where they differ — a 4 MB text diff helps nobody.

use serde_json::Value;

/// How two documents differ at one pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// The member exists only in the left (our) document.
    LeftOnly,
    /// The member exists only in the right (reference) document.
    RightOnly,
    /// Both have it, with different values (or types, or list lengths).
    Changed,
}

impl Difference {
    /// The word used for this kind in allow-lists.
    pub fn word(self) -> &'static str {
        match self {
            Self::LeftOnly => "ours-only",
            Self::RightOnly => "theirs-only",
            Self::Changed => "changed",
        }
    }
}

/// Every spot where `left` and `right` differ, as (pointer, kind), in
/// document order. Lists of different length count as one change.
pub fn diff(left: &Value, right: &Value) -> Vec<(String, Difference)> {
    let mut out = Vec::new();
    walk(left, right, &mut String::new(), &mut out);
    out
}

fn walk(left: &Value, right: &Value, at: &mut String, out: &mut Vec<(String, Difference)>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            for (k, lv) in l {
                let len = at.len();
                push_token(at, k);
                match r.get(k) {
                    Some(rv) => walk(lv, rv, at, out),
                    None => out.push((at.clone(), Difference::LeftOnly)),
                }
                at.truncate(len);
            }
            for k in r.keys().filter(|k| !l.contains_key(*k)) {
                let len = at.len();
                push_token(at, k);
                out.push((at.clone(), Difference::RightOnly));
                at.truncate(len);
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (lv, rv)) in l.iter().zip(r).enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                walk(lv, rv, at, out);
                at.truncate(len);
            }
        }
        (l, r) if l == r => {}
        _ => out.push((at.clone(), Difference::Changed)),
    }
}

fn push_token(at: &mut String, token: &str) {
    at.push('/');
    at.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

/// One allowed difference: a pointer pattern where `*` stands for exactly
/// one token, the kind of difference, and why it is right.
#[derive(Debug)]
pub struct Allowed {
    /// The pointer pattern.
    pub pattern: String,
    /// `ours-only`, `theirs-only` or `changed`.
    pub kind: String,
    /// The reason, for the reader.
    pub reason: String,
}

/// Reads an allow-list: one entry per line, `PATTERN KIND REASON…`;
/// blank lines and lines starting with `#` are skipped.
pub fn parse_allow_list(text: &str) -> Vec<Allowed> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, char::is_whitespace);
            let pattern = parts.next().unwrap_or_default().to_owned();
            let kind = parts.next().unwrap_or_default().to_owned();
            let reason = parts.next().unwrap_or_default().trim().to_owned();
            assert!(
                ["ours-only", "theirs-only", "changed"].contains(&kind.as_str())
                    && !reason.is_empty(),
                "allow-list line needs PATTERN KIND REASON: {l}"
            );
            Allowed { pattern, kind, reason }
        })
        .collect()
}

/// True when `pointer` matches `pattern` token by token (`*` = any one).
pub fn matches(pattern: &str, pointer: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let t: Vec<&str> = pointer.split('/').collect();
    p.len() == t.len() && p.iter().zip(&t).all(|(p, t)| *p == "*" || p == t)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn diff_names_each_differing_pointer() {
        let d = diff(
            &json!({"a": {"x/y": 1, "b": [1, 2]}, "l": 1}),
            &json!({"a": {"x/y": 2, "b": [1]}, "r": 1}),
        );
        assert_eq!(
            d,
            [
                ("/a/x~1y".to_owned(), Difference::Changed),
                ("/a/b".to_owned(), Difference::Changed),
                ("/l".to_owned(), Difference::LeftOnly),
                ("/r".to_owned(), Difference::RightOnly),
            ]
        );
    }

    #[test]
    fn star_matches_exactly_one_token() {
        assert!(matches("/paths/*/post", "/paths/~1a/post"));
        assert!(!matches("/paths/*/post", "/paths/a/b/post"));
    }
}
