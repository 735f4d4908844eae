//! Kubernetes version ordering (docs/upstream.md#b-4-8; upstream
//! `apimachinery/pkg/version/helpers.go`).
//!
//! Kube-like versions match `v<major>[(alpha|beta)<minor>]` and sort before
//! any other string; among them GA beats beta beats alpha (the release
//! stage first!), then the larger major, then the larger minor. Other
//! versions sort among themselves as plain strings, ascending.

use std::cmp::Ordering;

/// Release stage, in increasing preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Alpha,
    Beta,
    Ga,
}

/// A parsed kube-like version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KubeVersion {
    stage: Stage,
    major: u64,
    minor: u64,
}

fn parse(v: &str) -> Option<KubeVersion> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (major, tail) = rest.split_at(digits);
    if major.is_empty() || major.starts_with('0') {
        return None;
    }
    let major = major.parse().ok()?;
    if tail.is_empty() {
        return Some(KubeVersion { stage: Stage::Ga, major, minor: 0 });
    }
    let (stage, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (Stage::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (Stage::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) || minor.starts_with('0') {
        return None;
    }
    Some(KubeVersion { stage, major, minor: minor.parse().ok()? })
}

/// Compares two versions by preference: `Ordering::Less` means `a` comes
/// first (is preferred). Sorting a list with it gives
/// `v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1, v11alpha2, foo1, foo10`.
#[must_use]
pub fn preference(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => {
            (y.stage, y.major, y.minor).cmp(&(x.stage, x.major, x.minor)).then_with(|| a.cmp(b))
        }
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_upstream_documents() {
        let mut v = vec![
            "v11alpha2",
            "foo10",
            "v1",
            "v10beta3",
            "v12alpha1",
            "foo1",
            "v3beta1",
            "v2",
            "v11beta2",
        ];
        v.sort_by(|a, b| preference(a, b));
        assert_eq!(
            v,
            [
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }

    #[test]
    fn stage_comes_before_numbers() {
        assert_eq!(preference("v1", "v2beta1"), Ordering::Less);
        assert_eq!(preference("v1beta1", "v2alpha1"), Ordering::Less);
    }

    #[test]
    fn malformed_versions_are_not_kube_like() {
        for v in ["v0", "v01", "v1beta", "v1beta0", "v1gamma1", "1", "V1", "v1beta1x", ""] {
            assert!(parse(v).is_none(), "{v}");
        }
        assert_eq!(preference("v1", "v1beta"), Ordering::Less);
    }

    #[test]
    fn order_is_total_and_consistent() {
        let vs = ["v1", "v2", "v1beta1", "v1alpha1", "x", "v10", "a", "v1beta2"];
        for a in vs {
            for b in vs {
                assert_eq!(preference(a, b), preference(b, a).reverse(), "{a} {b}");
            }
        }
    }
}
