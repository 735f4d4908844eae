//! Unit tests of `discovery/forms.rs`, `proto.rs` and `yaml.rs` together:
//! the other forms say what the JSON says, carry its ETag, and are made
//! again only for what changed.

use std::sync::Arc;

use prost::Message;
use serde_json::Value;

use super::super::types::{APIGroupDiscovery, APIResourceDiscovery, APIVersionDiscovery, CURRENT};
use super::super::{
    DownstreamDiscovery, Plan, RankedDiscovery, Rendering, merge, proto, render, render_reusing,
};
use crate::body::rendered::Rendered;
use crate::wire::negotiate::{DiscoveryFormat, DiscoveryVersion};

fn groups(n: usize, changed: Option<usize>) -> DownstreamDiscovery {
    let group = |i: usize| {
        let mut resources = vec!["widgets", "gadgets"];
        if changed == Some(i) {
            resources.push("sprockets");
        }
        APIGroupDiscovery {
            metadata: super::super::types::ObjectMeta { name: format!("g{i}.example.com") },
            versions: vec![APIVersionDiscovery {
                version: "v1".into(),
                resources: resources
                    .into_iter()
                    .map(|r| APIResourceDiscovery {
                        resource: r.into(),
                        scope: "Namespaced".into(),
                        verbs: Some(vec!["get".into(), "list".into()]),
                        response_kind: Some(super::super::types::GroupVersionKind {
                            kind: "Widget".into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .collect(),
                freshness: CURRENT.into(),
            }],
        }
    };
    DownstreamDiscovery {
        core: vec![APIVersionDiscovery {
            version: "v1".into(),
            resources: vec![APIResourceDiscovery { resource: "pods".into(), ..Default::default() }],
            freshness: CURRENT.into(),
        }],
        groups: (0..n).map(|i| Arc::new(group(i))).collect(),
        fresh: true,
        ..Default::default()
    }
}

fn rendering(d: &DownstreamDiscovery) -> Rendering {
    render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: d }]))
}

/// A protobuf list as prost reads it, to compare with the JSON form.
#[derive(Clone, PartialEq, Message)]
struct List {
    #[prost(message, required, tag = "1")]
    metadata: proto::ListMeta,
    #[prost(message, repeated, tag = "2")]
    items: Vec<proto::APIGroupDiscovery>,
}

/// The envelope's type and the message in it.
fn unwrap(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(&proto::MAGIC[..]).expect("the magic");
    let unknown = proto::Unknown::decode(rest).expect("an Unknown");
    assert_eq!((unknown.content_encoding.as_str(), unknown.content_type.as_str()), ("", ""));
    (unknown.type_meta.api_version, unknown.type_meta.kind, unknown.raw)
}

#[test]
fn protobuf_lists_hold_what_the_json_lists_hold() {
    for n in [0, 1, 70] {
        let r = rendering(&groups(n, None));
        for (v, json) in
            [(DiscoveryVersion::V2, &r.apis_v2), (DiscoveryVersion::V2beta1, &r.apis_v2beta1)]
        {
            let body = r.aggregated(false, v, DiscoveryFormat::Protobuf).unwrap();
            let (api_version, kind, raw) = unwrap(&body.plain().unwrap());
            assert_eq!(
                (api_version.as_str(), kind.as_str()),
                (v.api_version(), "APIGroupDiscoveryList")
            );
            let list = List::decode(&raw[..]).expect("a list");
            let from_json: Value = serde_json::from_slice(&json.plain().unwrap()).unwrap();
            let expected: Vec<proto::APIGroupDiscovery> = from_json["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| proto::group_discovery(&serde_json::from_value(i.clone()).unwrap()))
                .collect();
            assert_eq!(list.items, expected, "{n} groups");
            assert_eq!(body.etag, json.etag, "the ETag of the JSON form");
            assert_eq!(body.content_type, v.content_type_as(DiscoveryFormat::Protobuf));
        }
    }
}

#[test]
fn yaml_lists_parse_to_the_json_lists() {
    for n in [0, 1, 70] {
        let r = rendering(&groups(n, None));
        for core in [true, false] {
            for (v, json) in if core {
                [(DiscoveryVersion::V2, &r.api_v2), (DiscoveryVersion::V2beta1, &r.api_v2beta1)]
            } else {
                [(DiscoveryVersion::V2, &r.apis_v2), (DiscoveryVersion::V2beta1, &r.apis_v2beta1)]
            } {
                let body = r.aggregated(core, v, DiscoveryFormat::Yaml).unwrap();
                let text = body.plain().unwrap();
                let yaml: Value = serde_yaml_ng::from_slice(&text).unwrap();
                let json_value: Value = serde_json::from_slice(&json.plain().unwrap()).unwrap();
                assert_eq!(yaml, json_value, "{n} groups, core {core}");
                assert_eq!(body.etag, json.etag);
                assert!(text.starts_with(format!("apiVersion: {}\n", v.api_version()).as_bytes()));
            }
        }
    }
}

#[test]
fn gzip_of_the_other_forms_inflates_to_their_bodies() {
    let r = rendering(&groups(70, None));
    for format in [DiscoveryFormat::Yaml, DiscoveryFormat::Protobuf] {
        let body = r.aggregated(false, DiscoveryVersion::V2, format).unwrap();
        let gz = body.gzip.as_ref().expect("compressible");
        let inflated = crate::body::rendered::inflate(gz, body.len()).unwrap();
        assert_eq!(inflated, body.plain().unwrap());
    }
}

/// Large lists are held gzipped only (as large OpenAPI documents are),
/// and still inflate to the whole list.
#[test]
fn large_lists_are_held_gzipped_only() {
    let r = rendering(&groups(600, None));
    for format in [DiscoveryFormat::Yaml, DiscoveryFormat::Protobuf] {
        let body = r.aggregated(false, DiscoveryVersion::V2, format).unwrap();
        assert!(body.len() > crate::body::rendered::GZIP_ONLY_MIN, "{format:?}: {}", body.len());
        assert!(body.held().is_none(), "{format:?}");
        let plain = body.plain().unwrap();
        assert_eq!(plain.len(), body.len());
        assert!(plain.ends_with(if format == DiscoveryFormat::Yaml {
            b"kind: APIGroupDiscoveryList\nmetadata: {}\n".as_slice()
        } else {
            b"\x1a\x00\x22\x00".as_slice()
        }));
    }
    assert!(r.apis_v2.held().is_some(), "the JSON list keeps its plain bytes");
}

/// The known bytes of legacy `/api` (`APIVersions`, whose JSON has no
/// `apiVersion`): the envelope kube-apiserver writes, field by field.
#[test]
fn legacy_api_protobuf_is_the_kubernetes_envelope_byte_for_byte() {
    let json = br#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:443"}]}"#;
    let forms =
        super::LegacyForms::new(Arc::new(Rendered::json(&json[..])), super::LegacyKind::Versions);
    let body = forms.get(DiscoveryFormat::Protobuf).unwrap();
    let mut expected = b"k8s\0".to_vec();
    expected.extend_from_slice(b"\x0a\x0f\x0a\x00\x12\x0bAPIVersions");
    expected.extend_from_slice(b"\x12\x1f\x0a\x02v1\x12\x19\x0a\x090.0.0.0/0\x12\x0c10.0.0.1:443");
    expected.extend_from_slice(b"\x1a\x00\x22\x00");
    assert_eq!(body.plain().unwrap(), expected);
    assert_eq!(body.content_type, "application/vnd.kubernetes.protobuf");
    assert_eq!(body.etag, Rendered::json(&json[..]).etag);
    let yaml = forms.get(DiscoveryFormat::Yaml).unwrap();
    assert_eq!(
        std::str::from_utf8(&yaml.plain().unwrap()).unwrap(),
        "kind: APIVersions\nserverAddressByClientCIDRs:\n- clientCIDR: 0.0.0.0/0\n  \
         serverAddress: 10.0.0.1:443\nversions:\n- v1\n"
    );
    assert_eq!(yaml.content_type, "application/yaml");
}

#[test]
fn a_null_verbs_list_is_absent_and_an_empty_one_present() {
    let json = br#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"g/v1","resources":[
        {"name":"a","singularName":"a","namespaced":true,"kind":"A","verbs":null},
        {"name":"b","singularName":"b","namespaced":false,"kind":"B","verbs":[],"storageVersionHash":"x="}]}"#;
    let forms = super::LegacyForms::new(
        Arc::new(Rendered::json(&json[..])),
        super::LegacyKind::ResourceList,
    );
    let (api_version, kind, raw) =
        unwrap(&forms.get(DiscoveryFormat::Protobuf).unwrap().plain().unwrap());
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "APIResourceList"));
    let list = proto::APIResourceList::decode(&raw[..]).unwrap();
    assert_eq!(list.group_version, "g/v1");
    assert_eq!(list.resources[0].verbs, None);
    assert_eq!(list.resources[1].verbs, Some(proto::Verbs { items: vec![] }));
    assert_eq!(list.resources[1].storage_version_hash, "x=");
    assert!(!list.resources[1].namespaced);
}

#[test]
fn a_body_that_does_not_parse_has_no_other_form() {
    let forms =
        super::LegacyForms::new(Arc::new(Rendered::json(&b"[1,2]"[..])), super::LegacyKind::Group);
    assert!(forms.get(DiscoveryFormat::Protobuf).is_err());
    assert!(forms.get(DiscoveryFormat::Json).is_ok());
}

/// Issue 27 with issue 16's rule: after one group changes, the other
/// forms encode that group's run again and take every other run's
/// encoded items over, and the result is what a whole rendering makes.
#[test]
fn one_change_encodes_one_run_again() {
    let m0 = merge(&[RankedDiscovery {
        name: "d",
        priority: 1,
        order: 0,
        discovery: &groups(300, None),
    }]);
    let m1 = merge(&[RankedDiscovery {
        name: "d",
        priority: 1,
        order: 0,
        discovery: &groups(300, Some(150)),
    }]);
    let r0 = render(&m0);
    for format in [DiscoveryFormat::Yaml, DiscoveryFormat::Protobuf] {
        r0.aggregated(false, DiscoveryVersion::V2, format).unwrap();
    }
    let r1 = render_reusing(&Plan::of(&m1), Some(&r0));
    assert!(r1.ordered_runs.len() > 2, "several runs");
    let made: Vec<bool> = r1
        .ordered_runs
        .iter()
        .map(|r| {
            r.protobuf.get().is_some_and(Result::is_ok) && r.yaml.get().is_some_and(Result::is_ok)
        })
        .collect();
    assert_eq!(made.iter().filter(|m| !**m).count(), 1, "one run to encode again: {made:?}");
    let whole = render(&m1);
    for format in [DiscoveryFormat::Yaml, DiscoveryFormat::Protobuf] {
        for v in [DiscoveryVersion::V2, DiscoveryVersion::V2beta1] {
            let (a, b) = (
                r1.aggregated(false, v, format).unwrap(),
                whole.aggregated(false, v, format).unwrap(),
            );
            assert_eq!(a.plain().unwrap(), b.plain().unwrap());
            assert_eq!((&a.gzip, &a.etag), (&b.gzip, &b.etag));
        }
    }
}

#[test]
fn legacy_forms_are_carried_over_while_their_json_is() {
    let mut d = groups(3, None);
    d.legacy.insert("apis/g0.example.com/v1".into(), Arc::new(Rendered::json(
        &br#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"g0.example.com/v1","resources":[]}"#[..],
    )));
    let r0 = rendering(&d);
    let f0 = r0.resource_forms("apis/g0.example.com/v1").unwrap();
    let g0 = r0.group_forms("g1.example.com").unwrap();
    let m1 = merge(&[RankedDiscovery {
        name: "d",
        priority: 1,
        order: 0,
        discovery: &groups(3, Some(1)),
    }]);
    let mut d1 = groups(3, Some(1));
    d1.legacy = d.legacy.clone();
    let m1b = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &d1 }]);
    drop(m1);
    let r1 = render_reusing(&Plan::of(&m1b), Some(&r0));
    assert!(
        Arc::ptr_eq(&f0, &r1.resource_forms("apis/g0.example.com/v1").unwrap()),
        "same JSON, kept"
    );
    assert!(
        !Arc::ptr_eq(&g0, &r1.group_forms("g1.example.com").unwrap()),
        "changed group, made again"
    );
    assert!(r1.group_forms("nope.example.com").is_none());
    let g = r1.group_forms("g1.example.com").unwrap();
    let (api_version, kind, raw) =
        unwrap(&g.get(DiscoveryFormat::Protobuf).unwrap().plain().unwrap());
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "APIGroup"));
    let group = proto::APIGroup::decode(&raw[..]).unwrap();
    assert_eq!(group.name, "g1.example.com");
    assert_eq!(group.preferred_version.group_version, "g1.example.com/v1");
}

/// Strings a downstream may list (control characters, quotes, YAML
/// indicators, non-ASCII) have a YAML form that reads back the same, and a
/// protobuf form: no discovery body fails to be made for its strings.
#[test]
fn any_string_has_both_forms() {
    let odd = [
        "a\u{1}b",
        "- x",
        "#c",
        "\"q\"",
        "'s'",
        "k: v",
        "\u{feff}bom",
        "line\nbreak",
        "tab\t",
        "ünï",
        "\u{fffe}",
        "null",
        "~",
        "0x1F",
        "1e3",
        "yes",
    ];
    let mut d = groups(1, None);
    let g = Arc::make_mut(&mut d.groups[0]);
    g.versions[0].resources[0].short_names = odd.iter().map(|s| (*s).to_owned()).collect();
    g.versions[0].resources[0].singular_resource = odd.concat();
    let r = rendering(&d);
    let yaml = r.aggregated(false, DiscoveryVersion::V2, DiscoveryFormat::Yaml).unwrap();
    let back: Value = serde_yaml_ng::from_slice(&yaml.plain().unwrap()).unwrap();
    let json: Value = serde_json::from_slice(&r.apis_v2.plain().unwrap()).unwrap();
    assert_eq!(back, json);
    assert!(r.aggregated(false, DiscoveryVersion::V2, DiscoveryFormat::Protobuf).is_ok());
}
