//! URLs as they may be shown: in errors, logs and reports.
//!
//! A URL written `http://user:password@host` carries a secret in its
//! userinfo. The configuration refuses such URLs, and the refusal used to
//! quote the URL — password included — in the error. Every place that puts
//! a server URL into a message goes through [`redact_url`], which keeps the
//! user name and replaces the password (`http://user:***@host`), or the
//! whole userinfo when it has no `:` (a bare token, `https://TOKEN@host`).
//!
//! It works on text that is not a valid URL too (that is when errors quote
//! it): the userinfo is everything between the scheme's `://` (or the
//! start) and the last `@`, so a password holding `/`, `?`, `#` or `@` is
//! hidden whole. Text without `@` is returned as it is.

use std::borrow::Cow;

/// What replaces a secret.
const HIDDEN: &str = "***";

/// `url` with the password of its userinfo (or a userinfo without user
/// name) replaced by `***`.
#[must_use]
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    let Some(at) = rest.rfind('@') else { return Cow::Borrowed(url) };
    let userinfo = &rest[..at];
    // The user name is shown only when it plainly is one: followed by a
    // `:` and holding nothing that would end an authority.
    let shown = match userinfo.split_once(':') {
        Some((user, _)) if !user.is_empty() && !user.contains(['/', '?', '#']) => {
            format!("{user}:{HIDDEN}")
        }
        _ => HIDDEN.to_owned(),
    };
    Cow::Owned(format!("{}{shown}{}", &url[..start], &rest[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_replaced_and_the_user_kept() {
        assert_eq!(redact_url("http://user:pass@host"), "http://user:***@host");
        assert_eq!(
            redact_url("https://admin:s3cr3t@10.0.0.1:6443/base"),
            "https://admin:***@10.0.0.1:6443/base"
        );
    }

    #[test]
    fn a_userinfo_without_password_may_be_a_token_and_is_hidden_whole() {
        assert_eq!(redact_url("https://ghp_TOKEN@host/x"), "https://***@host/x");
        assert_eq!(redact_url("http://:pass@host"), "http://***@host");
    }

    #[test]
    fn passwords_that_break_the_url_are_hidden_whole() {
        for (url, shown) in [
            ("http://user:pa/ss@host", "http://user:***@host"),
            ("http://user:pa ss@host", "http://user:***@host"),
            ("http://user:p@ss@host", "http://user:***@host"),
            ("http://user:p?s#s@host", "http://user:***@host"),
            ("user:pass@host", "user:***@host"),
            ("ftp://u:secret@host", "ftp://u:***@host"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn urls_without_userinfo_are_unchanged() {
        for url in ["http://host", "https://10.0.0.1:6443/", "not a url", ""] {
            assert!(matches!(redact_url(url), Cow::Borrowed(u) if u == url), "{url}");
        }
    }
}
