//! The repository's shape, checked: the source is rooms by layer whose
//! imports point one way and are exactly those the rooms table of
//! `ARCHITECTURE.md` ("Layout by layer") gives, few files stand directly in
//! `src/`, and every Markdown file the documentation and the code name is
//! in the repository, so a clone stands on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends in `suffix`, recursively.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(suffix) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The room of a source file: its first folder under `src/`, or the file's
/// own name for the few that stand directly in `src/`.
fn room(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src/");
    let first = rel.components().next().expect("a path").as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The rooms each room's code imports (`crate::<room>` outside comments
/// and outside unit tests, which may reach anywhere).
fn room_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files(&src, ".rs") {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let from = room(&src, &file);
        let text = std::fs::read_to_string(&file).expect("read source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or_default();
            for (i, _) in line.match_indices("crate::") {
                let to: String = line[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `crate::error_chain` and the like are items of lib.rs.
                let is_room = src.join(&to).is_dir() || src.join(format!("{to}.rs")).is_file();
                if is_room && to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// The rooms: every folder under `src/`, and every file directly in it
/// but the crate's root and the binary.
fn rooms() -> BTreeSet<String> {
    let src = root().join("src");
    std::fs::read_dir(&src)
        .expect("read src/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .map(|p| room(&src, &p))
        .filter(|r| r != "lib" && r != "main")
        .collect()
}

/// The rooms table of `text` (the one whose header has "room" and "may
/// import"): each row's room (`cli/`, `wiring.rs` → `cli`, `wiring`) and
/// the rooms its last column names in backquotes (`—` names none).
fn rooms_table(text: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|c| c.trim().to_owned()).collect()
    };
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|name| name.trim_end_matches('/').trim_end_matches(".rs").to_owned())
            .collect()
    };
    let mut lines = text.lines().skip_while(|l| {
        let header = cells(l);
        !(l.trim_start().starts_with('|')
            && header.first().is_some_and(|c| c == "room")
            && header.last().is_some_and(|c| c.starts_with("may import")))
    });
    lines.next().ok_or("no table whose header is `| room | … | may import |`")?;
    let mut table = BTreeMap::new();
    for line in lines.skip(1).take_while(|l| l.trim_start().starts_with('|')) {
        let row = cells(line);
        let (Some(first), Some(last)) = (row.first(), row.last()) else { continue };
        let Ok([room]) = <[String; 1]>::try_from(ticked(first)) else {
            return Err(format!("a row whose first cell is not one `room`: {line}"));
        };
        let may: BTreeSet<String> = ticked(last).into_iter().collect();
        if may.is_empty() && last != "—" {
            return Err(format!("{room}: \"may import\" is neither `room`s nor — : {last}"));
        }
        if table.insert(room.clone(), may).is_some() {
            return Err(format!("{room}: two rows"));
        }
    }
    Ok(table)
}

/// Where the code (`rooms`, `imports`) and the table disagree, one line
/// each; empty when they agree.
fn disagreements(
    rooms: &BTreeSet<String>,
    imports: &BTreeMap<String, BTreeSet<String>>,
    table: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let none = BTreeSet::new();
    let mut out = Vec::new();
    for room in rooms {
        let Some(may) = table.get(room) else {
            out.push(format!("src/{room} has no row (add one, with what it imports)"));
            continue;
        };
        let does = imports.get(room).unwrap_or(&none);
        for to in does.difference(may) {
            out.push(format!(
                "{room} imports {to}, which its row does not name: add it to \"may import\" \
                 (if the arrow points down) or remove the import"
            ));
        }
        for to in may.difference(does) {
            out.push(format!("{room}'s row names {to}, which {room} no longer imports"));
        }
    }
    for room in table.keys().filter(|r| !rooms.contains(*r)) {
        out.push(format!("the row of {room} names no room in src/"));
    }
    out
}

#[test]
fn rooms_import_exactly_what_the_architecture_table_says() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let table = rooms_table(&doc).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let rooms = rooms();
    assert!(rooms.len() > 8, "only {} rooms in src/: the scan is broken", rooms.len());
    let wrong = disagreements(&rooms, &room_imports(), &table);
    assert!(
        wrong.is_empty(),
        "the rooms table of ARCHITECTURE.md (\"Layout by layer\") and the code disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_check_finds_every_kind_of_drift() {
    let doc = "text\n\n| room | owns | may import |\n|---|---|---|\n\
               | `cli/` | commands | `http`, `wire` |\n\
               | `http/` | routes | `wire` |\n\
               | `wire/` | words | — |\n\
               | `gone/` | nothing | — |\n\nafter\n";
    let table = rooms_table(doc).expect("a table");
    assert_eq!(table.len(), 4);
    assert_eq!(table["cli"], BTreeSet::from(["http".to_owned(), "wire".to_owned()]));
    assert!(table["wire"].is_empty());
    let set = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<BTreeSet<_>>();
    let rooms = set(&["cli", "http", "wire", "new"]);
    let mut imports = BTreeMap::new();
    imports.insert("cli".to_owned(), set(&["http"]));
    imports.insert("http".to_owned(), set(&["wire", "cli"]));
    let wrong = disagreements(&rooms, &imports, &table);
    let has = |what: &str| wrong.iter().any(|w| w.contains(what));
    assert!(has("cli's row names wire, which cli no longer imports"), "{wrong:#?}");
    assert!(has("http imports cli, which its row does not name"), "{wrong:#?}");
    assert!(has("src/new has no row"), "{wrong:#?}");
    assert!(has("the row of gone names no room"), "{wrong:#?}");
    assert_eq!(wrong.len(), 4, "{wrong:#?}");
    imports.insert("cli".to_owned(), set(&["http", "wire"]));
    imports.insert("http".to_owned(), set(&["wire"]));
    let agreeing = disagreements(&set(&["cli", "http", "wire", "gone"]), &imports, &table);
    assert!(agreeing.is_empty(), "{agreeing:#?}");
    assert!(rooms_table("| room | owns |\n|---|---|\n").is_err(), "no \"may import\" column");
}

/// A cycle in `edges`, as the rooms along it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn back_to(
        edges: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        for next in edges.get(at).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if !path.contains(next) {
                path.push(next.clone());
                if let Some(c) = back_to(edges, start, next, path) {
                    return Some(c);
                }
                path.pop();
            }
        }
        None
    }
    edges.keys().find_map(|start| back_to(edges, start, start, &mut vec![start.clone()]))
}

#[test]
fn rooms_import_each_other_one_way_only() {
    let edges = room_imports();
    assert!(edges.len() > 8, "only {} rooms import others: the scan is broken", edges.len());
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle between rooms: {}", cycle.join(" → "));
    }
}

#[test]
fn the_cycle_search_finds_a_cycle() {
    let graph = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            edges.entry((*a).to_owned()).or_default().insert((*b).to_owned());
        }
        edges
    };
    assert_eq!(find_cycle(&graph(&[("cli", "http"), ("http", "wire"), ("cli", "wire")])), None);
    let cycle = find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
    assert_eq!(cycle.map(|c| c.len()), Some(4), "a → b → c → a");
}

#[test]
fn few_files_stand_directly_in_src() {
    let src = root().join("src");
    let loose: Vec<String> = std::fs::read_dir(&src)
        .expect("read src/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert!(
        loose.len() <= 6,
        "files directly in src/ (at most six: the rest go in rooms): {loose:?}"
    );
}

/// Markdown files a text names: a word ending in `.md`, optionally with
/// a folder (`docs/wire.md`) and an anchor (`docs/upstream.md#b-4-10`).
fn named_markdown(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(".md") {
        let after = text[i + 3..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
            .map_or(0, |p| p + 1);
        let name = &text[start..i + 3];
        if name.len() <= 3 || name.starts_with('/') {
            continue;
        }
        let anchor = text[i + 3..].strip_prefix('#').map(|rest| {
            rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect::<String>()
        });
        out.push((name.to_owned(), anchor.filter(|a| !a.is_empty())));
    }
    out
}

#[test]
fn every_markdown_file_the_docs_and_code_name_exists_with_its_anchor() {
    let root = root();
    // Markdown at the root (README, ARCHITECTURE, …) and under docs/.
    let mut texts: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read the root")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .collect();
    texts.sort();
    texts.extend(files(&root.join("docs"), ".md"));
    texts.extend(files(&root.join("src"), ".rs"));
    texts.extend(files(&root.join("tests"), ".rs"));
    let mut checked = 0;
    let mut missing = Vec::new();
    for text_path in &texts {
        let text = std::fs::read_to_string(text_path).expect("read");
        for (name, anchor) in named_markdown(&text) {
            // A name is relative to the repository root, or to the file
            // that names it (docs/ naming its neighbours).
            let beside = text_path.parent().map(|d| d.join(&name));
            let Some(target) = [root.join(&name)].into_iter().chain(beside).find(|p| p.is_file())
            else {
                missing.push(format!("{} names {name}", text_path.display()));
                continue;
            };
            checked += 1;
            if let Some(anchor) = anchor {
                let body = std::fs::read_to_string(&target).expect("read");
                if !body.contains(&format!("id=\"{anchor}\"")) {
                    missing.push(format!("{} names {name}#{anchor}", text_path.display()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "named but not in the repository:\n{}", missing.join("\n"));
    assert!(checked > 10, "only {checked} Markdown names found: the scan is broken");
}

#[test]
fn every_check_rule_cites_an_anchor_of_the_wire_reference() {
    for rule in openapi_proxy::check::rules::RULES {
        let reference = rule.reference();
        let (file, anchor) = reference.split_once('#').expect("an anchor");
        assert!(
            file == "docs/wire.md" || file == "docs/upstream.md",
            "{}: {reference} is not in the wire reference",
            rule.id
        );
        let text = std::fs::read_to_string(root().join(file)).expect(file);
        assert!(
            text.contains(&format!("id=\"{anchor}\"")),
            "{}: {reference} has no anchor",
            rule.id
        );
    }
}

#[test]
fn markdown_names_are_found_in_text() {
    let found =
        named_markdown("see docs/upstream.md#b-4-10, README.md and `ARCHITECTURE.md`. not.mdx");
    assert_eq!(
        found,
        [
            ("docs/upstream.md".to_owned(), Some("b-4-10".to_owned())),
            ("README.md".to_owned(), None),
            ("ARCHITECTURE.md".to_owned(), None),
        ]
    );
}
