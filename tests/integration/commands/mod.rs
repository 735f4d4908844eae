//! The commands besides `serve`, as a user runs them.

/// `openapi-proxy check`: passes on conformant servers, each rule fails on a server breaking it.
mod check;
/// The `convert` command as a user runs it.
mod convert;
/// `openapi-proxy export`: each layout from each kind of source, judged by an independent JSON Schema validator.
mod export;

/// Every file below `dir` with its bytes, named by its path below `dir`,
/// in path order.
fn files_below(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p.strip_prefix(dir).expect("under dir").to_string_lossy().into_owned();
                out.push((name, std::fs::read(&p).expect("read file")));
            }
        }
    }
    out.sort();
    out
}
