use proptest::prelude::*;
use serde_json::Value;

use super::render::write_str;
use super::*;

/// Parses `text` both ways; when `serde_json` accepts it, the tree must
/// render to `serde_json`'s bytes and convert to its `Value`; when it
/// refuses, so must the tree parser.
fn agrees_with_serde_json(text: &[u8]) -> Result<(), String> {
    let theirs = serde_json::from_slice::<Value>(text);
    let ours = parse(text);
    match (theirs, ours) {
        (Ok(v), Ok(n)) => {
            let expected = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
            let got = n.to_vec();
            if n.rendered_len() != got.len() {
                return Err(format!("rendered_len {} for {} bytes", n.rendered_len(), got.len()));
            }
            if got != expected {
                return Err(format!(
                    "rendered {} but serde_json wrote {}",
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&expected)
                ));
            }
            if n.to_value() != v {
                return Err("to_value differs from serde_json's Value".into());
            }
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        (Ok(_), Err(e)) => Err(format!("serde_json accepts, tree parser refuses: {e}")),
        (Err(e), Ok(_)) => Err(format!("tree parser accepts, serde_json refuses: {e}")),
    }
}

#[track_caller]
fn agree(text: &str) {
    if let Err(e) = agrees_with_serde_json(text.as_bytes()) {
        panic!("{text:?}: {e}");
    }
}

#[test]
fn documents_render_as_serde_json_writes_them() {
    for text in [
        r#"{"b":1,"a":[true,false,null],"c":{"d":"e"}}"#,
        " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
        "[]",
        "{}",
        "[[],{},[{}]]",
        r#""just a string""#,
        "null",
        "true",
    ] {
        agree(text);
    }
}

#[test]
fn escapes_are_decoded_and_written_back_as_serde_json_does() {
    for text in [
        r#""a\"b\\c\/d\b\f\n\r\t""#,
        r#""\u0041\u00e9\u4e2d\u0000\u001f\u007f""#,
        r#""\u003cscript\u003e & \u0026""#,
        r#"{"k\u0065y":"v","key":"w"}"#,
        r#""tab	inside""#,
    ] {
        agree(text);
    }
    let n = parse(br#""\u003c\n""#).unwrap();
    assert_eq!(n.as_str(), Some("<\n"));
}

#[test]
fn surrogate_pairs_decode_and_lone_halves_are_refused() {
    let n = parse(br#""\ud83d\ude00 \uD83D\uDE00""#).unwrap();
    assert_eq!(n.as_str(), Some("\u{1F600} \u{1F600}"));
    for text in [
        r#""\ud83d""#,
        r#""\ud83d x""#,
        r#""\ud83d\u0041""#,
        r#""\ude00""#,
        r#""\ud83d\ud83d""#,
        r#""\u12""#,
        r#""\uzzzz""#,
        r#""\x""#,
    ] {
        agree(text);
        assert!(parse(text.as_bytes()).is_err(), "{text} accepted");
    }
}

#[test]
fn numbers_keep_serde_json_values_and_formatting() {
    for text in [
        "0",
        "-0",
        "1",
        "-1",
        "42",
        "1.0",
        "1.50",
        "-0.0",
        "1e2",
        "1E+2",
        "2.5e-3",
        "123456789012345678",
        "-123456789012345678",
        "1234567890123456789",
        "-1234567890123456789",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "0.1",
        "3.141592653589793",
        "1e308",
        "5e-324",
        "1e400",
        "-1e400",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "+1",
        "[1,-2,3.5,4e1]",
    ] {
        agree(text);
    }
}

// Issue 14, cause 4: serde_json reads these as floats and writes
// `1.8446744073709552e19`; the tree keeps the integer as written.
#[test]
fn integers_beyond_64_bits_keep_their_digits() {
    for text in ["-9223372036854775809", "18446744073709551616", "99999999999999999999999"] {
        let n = parse(text.as_bytes()).unwrap();
        assert_eq!(n, Node::Number(Number::Big(Text::plain(text))));
        assert_eq!(n.to_vec(), text.as_bytes());
        assert_eq!(n.rendered_len(), text.len());
        // A `Value` cannot hold them: it gets serde_json's float.
        assert_eq!(n.to_value(), serde_json::from_str::<Value>(text).unwrap());
    }
    let n = parse(b"[1e400]");
    assert!(n.is_err(), "a number no float holds is still refused");
}

#[test]
fn integers_that_print_unchanged_stay_slices_of_the_input() {
    assert_eq!(parse(b"120").unwrap(), Node::Number(Number::Integer("120")));
    assert!(matches!(parse(b"-0").unwrap(), Node::Number(Number::Parsed(_))));
    assert!(matches!(parse(b"1.0").unwrap(), Node::Number(Number::Parsed(_))));
}

#[test]
fn nesting_limit_is_serde_json_s() {
    for depth in [1, 100, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 1000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        agree(&arrays);
        let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        agree(&objects);
    }
    let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    let e = parse(too_deep.as_bytes()).unwrap_err();
    assert_eq!(e.kind, parse::SyntaxErrorKind::TooDeep);
}

#[test]
fn repeated_keys_keep_the_first_place_and_the_last_value() {
    agree(r#"{"a":1,"b":2,"a":3}"#);
    agree(r#"{"a":1,"b":2,"a":3,"c":4,"b":5,"a":6,"c":{"c":7,"c":8}}"#);
    let many: Vec<String> = (0..40).map(|i| format!(r#""k{}":{i}"#, i % 30)).collect();
    agree(&format!("{{{}}}", many.join(",")));
    // Keys repeated in every order, in an object past the pairwise check.
    let shuffled: Vec<String> = (0..200).map(|i| format!(r#""k{}":{i}"#, (i * 37) % 61)).collect();
    agree(&format!("{{{}}}", shuffled.join(",")));
    let n = parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
    let keys: Vec<&str> = n.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(n.get("a"), Some(&Node::Number(Number::Integer("3"))));
}

#[test]
fn invalid_utf8_and_control_characters_are_refused() {
    for bytes in [
        &b"\"\xff\""[..],
        b"\"\xc3\"",
        b"[\"ok\", \"\xed\xa0\x80\"]",
        b"\"a\x01b\"",
        b"\"a\nb\"",
        b"\xef\xbb\xbf{}",
    ] {
        assert!(agrees_with_serde_json(bytes).is_ok(), "{bytes:?}");
        assert!(parse(bytes).is_err(), "{bytes:?} accepted");
    }
}

#[test]
fn malformed_documents_are_refused_as_serde_json_refuses_them() {
    for text in [
        "",
        " ",
        "{} x",
        "{}{}",
        "[1,]",
        "[1 2]",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{a:1}"#,
        r#"{"a":}"#,
        "[",
        "{",
        r#"{"a":1"#,
        r#""unterminated"#,
        "tru",
        "nul",
        "truex",
        "[true false]",
        "'a'",
    ] {
        agree(text);
        assert!(parse(text.as_bytes()).is_err(), "{text:?} accepted");
    }
}

#[test]
fn escaping_matches_serde_json_for_every_ascii_character_and_beyond() {
    let mut all: String = (0u8..0x80).map(char::from).collect();
    all.push_str("é中\u{1F600}\u{7f}\u{2028}");
    let mut ours = Vec::new();
    write_str(&mut ours, &all);
    assert_eq!(ours, serde_json::to_vec(&all).unwrap());
}

#[test]
fn pointers_resolve_as_value_pointer_does() {
    let text = br#"{"a/b":{"c~d":[10,{"e":1}]},"":{"":2},"arr":[0,1,2]}"#;
    let v: Value = serde_json::from_slice(text).unwrap();
    let n = parse(text).unwrap();
    for p in [
        "",
        "/a~1b",
        "/a~1b/c~0d",
        "/a~1b/c~0d/1/e",
        "/a~1b/c~0d/2",
        "/",
        "//",
        "/arr/01",
        "/arr/+1",
        "/arr/-1",
        "/arr/2",
        "/arr/3",
        "a",
        "/x",
        "/a~1b/c~0d/0/x",
    ] {
        assert_eq!(n.pointer(p).map(Node::to_value), v.pointer(p).cloned(), "pointer {p:?}");
    }
}

#[test]
fn values_convert_both_ways_unchanged() {
    let v: Value = serde_json::from_str(r#"{"b":[1,2.5,"x\"y",null,true],"a":{"c":-3}}"#).unwrap();
    assert_eq!(Node::from_value(&v).to_value(), v);
    assert_eq!(Node::from_owned_value(v.clone()).to_value(), v);
    assert_eq!(Node::from_value(&v).to_vec(), serde_json::to_vec(&v).unwrap());
}

#[test]
fn object_insert_replaces_in_place_as_serde_json_map_does() {
    let mut o = Object::new();
    o.insert("a", Node::Null);
    o.insert("b", Node::Null);
    o.insert("a", Node::Bool(true));
    let keys: Vec<&str> = o.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(o.get("a"), Some(&Node::Bool(true)));
}

/// Any JSON value, strings drawn from characters that need escaping.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-z\"\\\\/\u{0}-\u{1f}é\u{1F600}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-c\"\\\\]{0,3}", inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_value_written_by_serde_json_reads_back_the_same(v in any_json()) {
        let compact = serde_json::to_vec(&v).unwrap();
        prop_assert!(agrees_with_serde_json(&compact).is_ok());
        let pretty = serde_json::to_vec_pretty(&v).unwrap();
        let r = agrees_with_serde_json(&pretty);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn long_strings_are_escaped_and_read_back_as_serde_json_does(
        s in "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é\u{1F600} ]{0,80}"
    ) {
        let mut ours = Vec::new();
        write_str(&mut ours, &s);
        let theirs = serde_json::to_vec(&s).unwrap();
        prop_assert_eq!(&ours, &theirs);
        let r = agrees_with_serde_json(&theirs);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn any_text_is_accepted_or_refused_as_serde_json_does(
        text in "[\\[\\]{}\":,0-9eE+\\-. a-z\\\\u]{0,24}"
    ) {
        let r = agrees_with_serde_json(text.as_bytes());
        prop_assert!(r.is_ok(), "{:?}: {:?}", text, r);
    }

    #[test]
    fn any_bytes_are_accepted_or_refused_as_serde_json_does(
        bytes in prop::collection::vec(any::<u8>(), 0..24)
    ) {
        let r = agrees_with_serde_json(&bytes);
        prop_assert!(r.is_ok(), "{:?}: {:?}", bytes, r);
    }
}

#[test]
fn members_stay_small() {
    // The trees' memory is mostly members; see `Text`.
    assert_eq!(std::mem::size_of::<Text<'_>>(), 24);
    assert_eq!(std::mem::size_of::<Node<'_>>(), 32);
}

#[test]
fn a_copy_of_a_decoded_string_shares_its_bytes() {
    // The converter copies shared parameters, descriptions included, into
    // every operation that uses them: a copy of a string the parser had to
    // decode must not copy its bytes again.
    let tree = parse(br#"{"description":"say \"hi\"","plain":"a\/b"}"#).unwrap();
    for (key, value) in tree.as_object().unwrap() {
        let Node::String(text) = value else { panic!("{key} is not a string") };
        let copy = text.clone();
        assert_eq!(copy, *text);
        assert!(std::ptr::eq(copy.as_str(), text.as_str()), "{key} was copied");
    }
    let owned = Text::from(String::from("made"));
    assert!(std::ptr::eq(owned.clone().as_str(), owned.as_str()));
}

#[test]
fn whitespace_runs_of_any_length_are_skipped_as_serde_json_skips_them() {
    for indent in 0..40 {
        for tail in ["", "\n", "\t", "\r\n", " \t "] {
            let pad = " ".repeat(indent);
            let text = format!(
                "{pad}{{{tail}{pad}\"a\"{pad}:{pad}[{pad}1{tail},{pad}true{pad}]{pad}}}{tail}{pad}"
            );
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parse(text.as_bytes()).unwrap().to_value(), value, "{text:?}");
            // Whitespace where it may not stand is still refused.
            let bad = format!("{pad}{{\"a\":1}}{pad}x");
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}

#[test]
fn a_shared_subtree_renders_compares_and_reads_as_its_copies_would() {
    let param = parse(
        br#"{"name":"pretty","in":"query","description":"say \"yes\"","schema":{"type":"string"}}"#,
    )
    .unwrap();
    let shared = Shared::new(param.clone()).unwrap();
    let copies = Node::Array(vec![param.clone(), param.clone()]);
    let placed = Node::Array(vec![Node::Shared(shared.clone()), Node::Shared(shared.clone())]);
    // Before and after it keeps its bytes: the same document either way.
    for _ in 0..2 {
        assert_eq!(placed.to_vec(), copies.to_vec());
        assert_eq!(placed.rendered_len(), copies.rendered_len());
        assert_eq!(placed.to_value(), copies.to_value());
        assert_eq!(placed, copies);
        assert_eq!(copies, placed);
        assert_eq!(placed.pointer("/1/schema/type").and_then(Node::as_str), Some("string"));
        assert_eq!(placed.pointer("/0").map(Node::is_object), Some(true));
        assert_eq!(
            placed.as_array().and_then(|a| a[0].get("in")).and_then(Node::as_str),
            Some("query")
        );
        shared.keep_rendered(usize::MAX);
    }
    assert!(shared.rendered().is_some());
    let Node::Array(items) = &placed else { panic!("an array") };
    let (Node::Shared(a), Node::Shared(b)) = (&items[0], &items[1]) else { panic!("shared") };
    assert!(a.same(b));
    assert!(!a.same(&Shared::new(param).unwrap()));
}

#[test]
fn a_shared_subtree_knows_whether_it_holds_a_reference() {
    // The walks for references pass by a shared node that holds none.
    for (text, refs) in [
        (&br##"{"schema":{"items":{"$ref":"#/definitions/A"}}}"##[..], true),
        (br##"[{"x-ext":[{"$ref":"other.json"}]}]"##, true),
        (br##"{"$ref":1}"##, true),
        (br##"{"schema":{"items":{"ref":"#/definitions/A"}}}"##, false),
        (br#""$ref""#, false),
    ] {
        let shared = Shared::new(parse(text).unwrap()).unwrap();
        assert_eq!(shared.holds_refs(), refs, "{}", String::from_utf8_lossy(text));
    }
}

#[test]
fn a_subtree_holding_a_shared_node_is_not_shared_again() {
    let inner = Node::Shared(Shared::new(parse(b"{}").unwrap()).unwrap());
    let outer = Node::Array(vec![inner]);
    assert_eq!(Shared::new(outer.clone()).err(), Some(outer));
}

#[test]
fn rendered_length_within_a_limit_stops_at_the_limit() {
    for text in [&br#"{"a":[1,true,null,"x\ny"],"b":{"c":"\u0001"}}"#[..], br#""plain""#, br#"[]"#]
    {
        let node = parse(text).unwrap();
        let len = node.rendered_len();
        assert_eq!(node.rendered_len_within(len), Some(len));
        assert_eq!(node.rendered_len_within(usize::MAX), Some(len));
        assert_eq!(node.rendered_len_within(len - 1), None);
        assert_eq!(node.rendered_len_within(0), None);
    }
}

#[test]
fn a_shared_subtree_keeps_its_bytes_only_within_the_limit_given() {
    let node = parse(br#"{"description":"say \"yes\"","in":"query"}"#).unwrap();
    let len = node.rendered_len();
    let small = Shared::new(node.clone()).unwrap();
    assert_eq!(small.keep_rendered(len - 1), 0);
    assert_eq!(small.rendered(), None);
    // Decided once: a larger limit later keeps nothing either.
    assert_eq!(small.keep_rendered(usize::MAX), 0);
    let placed = Node::Array(vec![Node::Shared(small.clone()), Node::Shared(small)]);
    assert_eq!(placed.to_vec(), Node::Array(vec![node.clone(), node.clone()]).to_vec());
    let kept = Shared::new(node.clone()).unwrap();
    assert_eq!(kept.keep_rendered(len), len);
    assert_eq!(kept.rendered(), Some(&node.to_vec()[..]));
    assert_eq!(kept.keep_rendered(len), 0, "kept once");
}
