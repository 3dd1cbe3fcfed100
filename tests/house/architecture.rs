//! docs/architecture.md's room table is a map of src/: every folder and
//! top-level file of src/ has a row, and every src/ path a row names
//! exists. A room added, moved or renamed without its row fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// The `src/...` paths named (in backticks) in the first column of the
/// table under "## Rooms".
fn room_paths(doc: &str) -> Vec<String> {
    let section = doc.split("\n## Rooms\n").nth(1).expect("docs/architecture.md has a \"## Rooms\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut paths = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("|---")) {
        let first_cell = row.split('|').nth(1).unwrap_or("");
        for (i, piece) in first_cell.split('`').enumerate() {
            // Odd pieces sit between backticks.
            if i % 2 == 1 && piece.starts_with("src/") {
                paths.push(piece.to_string());
            }
        }
    }
    paths
}

/// src/'s folders (as `src/name/`) and top-level files (as `src/name.rs`).
fn src_entries(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root.join("src"))
        .expect("src/ is readable")
        .map(|e| e.expect("a src/ entry"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().expect("a file type").is_dir() {
                format!("src/{name}/")
            } else {
                format!("src/{name}")
            }
        })
        .collect()
}

/// A folder is named by its own row or by a row for a file inside it; a
/// file by its own row.
fn named(entry: &str, paths: &[String]) -> bool {
    paths.iter().any(|p| p == entry || (entry.ends_with('/') && p.starts_with(entry)))
}

#[test]
fn every_room_of_src_has_a_row_and_every_row_names_a_real_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let paths = room_paths(&doc);
    assert!(paths.len() >= 10, "the room table names only {} src/ paths: {paths:?}", paths.len());

    let missing: Vec<_> = src_entries(root).into_iter().filter(|e| !named(e, &paths)).collect();
    assert!(missing.is_empty(), "src/ entries without a row in docs/architecture.md's room table: {missing:?}");

    let stale: Vec<_> = paths.iter().filter(|p| !root.join(p.trim_end_matches('/')).exists()).collect();
    assert!(stale.is_empty(), "rows of docs/architecture.md's room table name paths src/ lacks: {stale:?}");
}

#[test]
fn the_reader_of_the_table_sees_rows_and_nested_paths() {
    let doc = "# x\n## Rooms\n| room | holds |\n|---|---|\n| `src/a/` | a |\n| `src/b.rs`, `src/c/d.rs` | b `src/not_first_column.rs` |\n## Next\n| `src/after.rs` | x |\n";
    let paths = room_paths(doc);
    assert_eq!(paths, ["src/a/", "src/b.rs", "src/c/d.rs"]);
    assert!(named("src/c/", &paths));
    assert!(!named("src/e/", &paths));
    assert!(!named("src/b/", &paths), "a file's row does not name a folder of a similar name");
}
