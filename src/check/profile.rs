//! Which profile a server shows when `--profile` names none.
//!
//! Pointed at an aggregated API server with openapi-proxy's expectations,
//! three rules failed on behaviour that is correct there; pointed at a
//! cluster, the root's headers did. The evidence already says which kind
//! of server answered, so the profile is read from it, and the report
//! says which was picked and why.

use serde_json::Value;

use super::evidence::json_ok;
use super::{Evidence, Profile};

/// The profile `evidence` shows, and why.
#[must_use]
pub fn pick(evidence: &Evidence) -> (Profile, String) {
    if let Some(why) = aggregated_apiserver(evidence) {
        return (Profile::AggregatedApiserver, why);
    }
    if let Some(o) = &evidence.openapi
        && let Ok(root) = &o.root.outcome
        && root.status == 200
        && root.header("etag").is_none()
    {
        return (
            Profile::KubeApiserver,
            "the OpenAPI v3 root has no ETag, as kube-aggregator serves it".into(),
        );
    }
    (Profile::OpenapiProxy, "nothing marks a kube-apiserver or an aggregated API server".into())
}

/// What marks a generic apiserver answering for itself.
fn aggregated_apiserver(evidence: &Evidence) -> Option<String> {
    if let Some(d) = &evidence.discovery
        && let Some(list) = json_ok(&d.apis_json)
        && list.get("kind").and_then(Value::as_str) == Some("APIGroupList")
    {
        if list.get("apiVersion").is_none() {
            return Some("legacy /apis has no apiVersion, as a generic apiserver's".into());
        }
        let cidrs = list
            .get("groups")
            .and_then(Value::as_array)
            .is_some_and(|gs| gs.iter().any(|g| g.get("serverAddressByClientCIDRs").is_some()));
        if cidrs {
            return Some(
                "legacy /apis carries serverAddressByClientCIDRs, as a generic apiserver's".into(),
            );
        }
        if d.api_legacy.outcome.as_ref().is_ok_and(|r| r.status == 404) {
            return Some("/apis answers but /api is 404: no core group".into());
        }
    }
    if let Some(o) = &evidence.openapi
        && let Ok(r) = &o.unknown_key.outcome
        && r.status == 200
        && r.length == 0
    {
        return Some(
            "an unknown OpenAPI v3 key is 200 with an empty body, as handler3 alone answers it"
                .into(),
        );
    }
    None
}
