//! Group and version names as Kubernetes validates them, for every name
//! that comes from a downstream (docs/wire.md#a-4, #a-7).
//!
//! A name a downstream lists becomes part of a URL: the proxy requests
//! `/apis/<group>/<version>` from that downstream with its own token, and
//! republishes the name in discovery and in `/openapi/v3/<key>`. A name
//! such as `../../api/v1/namespaces/kube-system/secrets?x=` would be
//! requested as written, and one with `?`, `#`, a space or `%` gives a URL
//! that does not lead back to it. Kubernetes itself never serves such
//! names: an API group is a DNS-1123 subdomain (`IsDNS1123Subdomain`, what
//! CRD and APIService validation apply) and a version a DNS-1035 label
//! (`IsDNS1035Label`). Names that fail those checks are refused; the core
//! group's empty name is handled by the callers, where it is allowed.

/// Longest group name (`validation.DNS1123SubdomainMaxLength`).
pub const MAX_GROUP_LEN: usize = 253;
/// Longest version name (`validation.DNS1035LabelMaxLength`).
pub const MAX_VERSION_LEN: usize = 63;

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// One label of a DNS-1123 subdomain: lower-case letters, digits and `-`,
/// starting and ending with a letter or digit.
fn dns1123_label(label: &[u8]) -> bool {
    match (label.first(), label.last()) {
        (Some(&first), Some(&last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && label.iter().all(|&b| lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

/// Whether `name` is a valid API group name: a DNS-1123 subdomain of at
/// most 253 characters (`apps`, `networking.k8s.io`). The core group's
/// empty name is not (see [`is_group_or_core`]).
#[must_use]
pub fn is_group_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_GROUP_LEN
        && name.as_bytes().split(|&b| b == b'.').all(dns1123_label)
}

/// Whether `name` names a group where the core group may appear too: the
/// empty name, or a valid group name.
#[must_use]
pub fn is_group_or_core(name: &str) -> bool {
    name.is_empty() || is_group_name(name)
}

/// Whether `name` is a valid API version name: a DNS-1035 label of at most
/// 63 characters, lower-case letters, digits and `-`, starting with a
/// letter and ending with a letter or digit (`v1`, `v1beta2`).
#[must_use]
pub fn is_version_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() <= MAX_VERSION_LEN && b.first().is_some_and(u8::is_ascii_lowercase) && dns1123_label(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_group_names_are_valid() {
        for g in [
            "apps",
            "networking.k8s.io",
            "apiextensions.k8s.io",
            "metrics.k8s.io",
            "x-k8s.io",
            "cluster.x-k8s.io",
            "a",
            "0a.b9",
            "group000.downstream001.example.com",
        ] {
            assert!(is_group_name(g), "{g}");
            assert!(is_group_or_core(g), "{g}");
        }
        assert!(is_group_name(&format!("{}.io", "a".repeat(250))));
    }

    #[test]
    fn hostile_or_malformed_group_names_are_refused() {
        for g in [
            "",
            "../../api/v1/namespaces/kube-system/secrets?x=",
            "a/b",
            "a?b",
            "a#b",
            "a b",
            "a%2Fb",
            "Apps",
            "apps.",
            ".apps",
            "a..b",
            "-apps",
            "apps-",
            "a.-b",
            "a_b",
            "ä",
            "a\nb",
            ".",
            "..",
        ] {
            assert!(!is_group_name(g), "{g:?}");
        }
        assert!(!is_group_name(&format!("{}.io", "a".repeat(251))), "254 characters");
        assert!(is_group_or_core(""), "the core group");
    }

    #[test]
    fn kubernetes_version_names_are_valid() {
        for v in ["v1", "v1beta1", "v2alpha3", "v1-rc", "a", &"v".repeat(63)] {
            assert!(is_version_name(v), "{v}");
        }
    }

    #[test]
    fn hostile_or_malformed_version_names_are_refused() {
        for v in [
            "",
            "1",
            "1v",
            "V1",
            "v1-",
            "-v1",
            "v1.0",
            "v1/x",
            "v1?x",
            "v1#x",
            "v 1",
            "v%31",
            "..",
            &"v".repeat(64),
        ] {
            assert!(!is_version_name(v), "{v:?}");
        }
    }
}
