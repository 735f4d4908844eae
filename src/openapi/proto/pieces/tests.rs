use proptest::prelude::Just;

use super::*;
use crate::openapi::proto::openapi_v2;

/// A length-delimited or varint field: its number, wire type and bytes
/// as written (key excluded).
type Field = (u32, u64, Vec<u8>);

fn fields(mut bytes: &[u8]) -> Vec<Field> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = prost::encoding::decode_varint(&mut bytes).unwrap();
        let (number, wire) = (u32::try_from(key >> 3).unwrap(), key & 7);
        let value = match wire {
            0 => {
                let before = bytes;
                prost::encoding::decode_varint(&mut bytes).unwrap();
                before[..before.len() - bytes.len()].to_vec()
            }
            1 => {
                let (v, rest) = bytes.split_at(8);
                bytes = rest;
                v.to_vec()
            }
            2 => {
                let len =
                    usize::try_from(prost::encoding::decode_varint(&mut bytes).unwrap()).unwrap();
                let (v, rest) = bytes.split_at(len);
                bytes = rest;
                v.to_vec()
            }
            other => panic!("wire type {other}"),
        };
        out.push((number, wire, value));
    }
    out
}

fn write(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for (number, wire, value) in fields {
        prost::encoding::encode_varint(u64::from(*number) << 3 | wire, &mut out);
        if *wire == 2 {
            prost::encoding::encode_varint(value.len() as u64, &mut out);
        }
        out.extend_from_slice(value);
    }
    out
}

/// What a protobuf parser makes of a `Document` written in pieces, as
/// gnostic's Go code writes it: fields in number order, the occurrences
/// of its maps merged (`paths` 8, `definitions` 9, `parameters` 10,
/// `responses` 11, `securityDefinitions` 13). Their messages hold only
/// repeated fields, so merging is joining their contents, each field's
/// occurrences kept in order.
/// The field numbers of a `Document`'s maps.
const MAPS: [u32; 5] = [8, 9, 10, 11, 13];

fn merged(pieces: &[u8]) -> Vec<u8> {
    let mut top = fields(pieces);
    top.sort_by_key(|f| f.0);
    let mut out: Vec<Field> = Vec::new();
    for (number, wire, value) in top {
        match out.last_mut() {
            Some(last) if last.0 == number && MAPS.contains(&number) => {
                last.2.extend_from_slice(&value);
            }
            _ => out.push((number, wire, value)),
        }
    }
    for f in out.iter_mut().filter(|f| MAPS.contains(&f.0)) {
        let mut inner = fields(&f.2);
        inner.sort_by_key(|f| f.0);
        f.2 = write(&inner);
    }
    write(&out)
}

fn in_pieces(json: &[u8], piece_bytes: usize) -> (Vec<u8>, usize) {
    let mut all = Vec::new();
    let mut count = 0;
    openapi_v2_pieces(json, piece_bytes, |piece| {
        all.extend_from_slice(piece);
        count += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    (all, count)
}

fn assert_same_document(json: &[u8]) {
    let whole = openapi_v2(json).unwrap();
    for piece_bytes in [1, 300, 64 * 1024, usize::MAX] {
        let (pieces, _) = in_pieces(json, piece_bytes);
        assert_eq!(merged(&pieces), whole, "pieces of {piece_bytes} bytes");
    }
}

/// Strings holding what ends values elsewhere (brackets, commas, quotes,
/// backslashes), spaces between every token, numbers and literals last
/// in their objects, empty maps, `x-` members beside paths.
const AWKWARD: &str = r##" {
  "swagger" : "2.0" ,
  "info" : { "title" : "t } ] , \" \\" , "version" : "v\\" } ,
  "paths" : {
    "x-top" : [ 1 , { "a" : "}" } , null , true ] ,
    "/a/{b}" : { "get" : { "responses" : { "200" : { "description" : "ok, \"fine\" ]" } } ,
       "parameters" : [ { "name" : "b" , "in" : "path" , "required" : true , "type" : "string" } ] } } ,
    "/c" : { "x-n" : 1.5e3 } ,
    "/d\u00e9" : { }
  } ,
  "definitions" : {
    "A" : { "type" : "object" , "properties" : { "n" : { "type" : "integer" , "default" : 3 } } } ,
    "B\"q" : { "$ref" : "#/definitions/A" , "description" : "left out" } ,
    "C" : { "enum" : [ "x" , 1 , false ] }
  } ,
  "parameters" : { } ,
  "responses" : { "NotFound" : { "description" : "} gone" } , "Ok" : { "description" : "ok" } } ,
  "securityDefinitions" : { "k" : { "type" : "apiKey" , "name" : "authorization" , "in" : "header" } ,
    "b" : { "type" : "basic" } } ,
  "x-last" : false
} "##;

#[test]
fn pieces_decode_as_the_whole_document() {
    assert_same_document(AWKWARD.as_bytes());
    assert_same_document(br#"{"swagger":"2.0","paths":{},"definitions":{}}"#);
    assert_same_document(br#"{}"#);
    assert_same_document(crate::demo::GADGETS_V2);
}

#[test]
fn kubernetes_swagger_in_pieces_decodes_as_the_whole() {
    let json =
        std::fs::read(crate::testkit::testdata::path("kubernetes-1.35/swagger.json")).unwrap();
    let whole = openapi_v2(&json).unwrap();
    let (pieces, count) = in_pieces(&json, 64 * 1024);
    assert!(count > 20, "{count} pieces");
    assert_eq!(merged(&pieces), whole);
}

/// Each piece holds about the bytes asked of it: one member past them at
/// most.
#[test]
fn a_piece_holds_about_the_bytes_asked() {
    let json =
        std::fs::read(crate::testkit::testdata::path("kubernetes-1.35/swagger.json")).unwrap();
    let mut largest = 0;
    openapi_v2_pieces(&json[..], 16 * 1024, |piece| {
        largest = largest.max(piece.len());
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(largest < 200 * 1024, "largest piece {largest} bytes");
}

#[test]
fn what_is_not_one_json_object_is_refused() {
    for bad in [
        &br#"{"swagger":"2.0""#[..],
        br#"{"swagger":"2.0"} x"#,
        br#"["swagger"]"#,
        br#"{"paths":{"/a":{}"#,
        br#"{"paths":{"/a" {}}}"#,
        br#"{"paths":{"/a":{} "/b":{}}}"#,
        br#"{"info":{"title":"t}"#,
        b"",
    ] {
        let made = openapi_v2_pieces(bad, 1, |_| ControlFlow::Continue(()));
        assert!(made.is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
    // Said where the whole document's encoding says it.
    let json = br#"{"swagger":"2.0","paths":{"/a":{},"/b":{"bogus":1}}}"#;
    let unencodable = openapi_v2_pieces(&json[..], 1, |_| ControlFlow::Continue(()));
    let Err(PiecesError::Proto(ProtoError::Unencodable { at, .. })) = unencodable else {
        panic!("{unencodable:?}");
    };
    let Err(ProtoError::Unencodable { at: whole, .. }) = openapi_v2(json) else {
        panic!("unencodable whole");
    };
    assert_eq!((at.as_str(), whole.as_str()), ("/paths/~1b", "/paths/~1b"));
}

#[test]
fn the_receiver_can_stop_it() {
    let mut seen = 0;
    let made = openapi_v2_pieces(AWKWARD.as_bytes(), 1, |_| {
        seen += 1;
        if seen == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    });
    assert!(matches!(made, Err(PiecesError::Stopped)), "{made:?}");
    assert_eq!(seen, 2);
}

/// Reads that end anywhere (one byte at a time) find the same values.
#[test]
fn values_are_found_whatever_the_reads() {
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut all = Vec::new();
    openapi_v2_pieces(Trickle(AWKWARD.as_bytes()), 1, |p| {
        all.extend_from_slice(p);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(merged(&all), openapi_v2(AWKWARD.as_bytes()).unwrap());
}

proptest::proptest! {
    /// Whatever a byte of the text becomes, the pieces never panic, and
    /// when they and the whole encoding both succeed they say the same
    /// (a member may then be any JSON value the whole encoding takes).
    #[test]
    fn a_changed_byte_is_refused_or_encoded_as_the_whole(
        at in 0usize..AWKWARD.len(),
        byte in proptest::prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
            Just(b','), Just(b':'), Just(b' '), Just(b'x'), Just(b'1'),
        ],
        piece_bytes in 1usize..400,
    ) {
        let mut json = AWKWARD.as_bytes().to_vec();
        json[at] = byte;
        let mut all = Vec::new();
        let pieces = openapi_v2_pieces(&json[..], piece_bytes, |p| {
            all.extend_from_slice(p);
            ControlFlow::Continue(())
        });
        if let (Ok(()), Ok(whole)) = (pieces, openapi_v2(&json)) {
            proptest::prop_assert_eq!(merged(&all), whole);
        }
    }
}

/// Every map is split, not only `paths` and `definitions`: a downstream's
/// large `parameters` is not one piece.
#[test]
fn every_map_is_split_into_pieces() {
    let parameters: Vec<String> = (0..2_000)
        .map(|i| format!(r#""p{i}":{{"name":"p{i}","in":"query","type":"string"}}"#))
        .collect();
    let json = format!(r#"{{"swagger":"2.0","parameters":{{{}}}}}"#, parameters.join(","));
    let mut largest = 0;
    let (pieces, count) = in_pieces(json.as_bytes(), 1024);
    openapi_v2_pieces(json.as_bytes(), 1024, |piece| {
        largest = largest.max(piece.len());
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(count > 50, "{count} pieces");
    assert!(largest < 2048, "largest piece {largest} bytes");
    assert_eq!(merged(&pieces), openapi_v2(json.as_bytes()).unwrap());
}
