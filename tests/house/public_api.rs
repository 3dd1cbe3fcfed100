//! The library's public API is the crate root (src/lib.rs), one page of
//! `cargo doc`: these tests read the root's declarations and hold them to the
//! list docs/architecture.md ("The public API") gives. A room made `pub`
//! again, or an item re-exported at the root without the docs saying so,
//! fails here; what the project's own tests need goes through the
//! `#[doc(hidden)]` door `internals`, which is no part of the root's page.

use std::collections::BTreeSet;

const LIB: &str = include_str!("../../src/lib.rs");

/// The root's documented items: what an application names (by the name it
/// is seen under; `Error` and `Result` are one re-export).
const ROOT_API: &[&str] = &[
    "AvDrmFrameDescriptor",
    "CallerStream",
    "Chroma",
    "Context",
    "ContextConfig",
    "CpuFrame",
    "CpuLevel",
    "DeviceChoice",
    "DeviceKind",
    "Error",
    "FeatureCollector",
    "FeatureOptions",
    "FeatureOverload",
    "FrameDescriptor",
    "GpuVendor",
    "HipCallerStream",
    "HostImporter",
    "LoadFlags",
    "LogFormat",
    "LogStream",
    "Model",
    "ModelConfig",
    "OwnedPicture",
    "Picture",
    "PictureSource",
    "PixelFormat",
    "PlaneView",
    "PlotSpec",
    "PoolMethod",
    "REFERENCE_LIBVMAF_VERSION",
    "Refusal",
    "Result",
    "io",
];

/// src/lib.rs without comments, its top-level items one per entry (split
/// at the `;` or the closing `}` of each item at depth 0), each with its
/// attributes, whitespace collapsed.
fn top_level_items() -> Vec<String> {
    let code: String = LIB
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut items = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in code.chars() {
        current.push(c);
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                // A braced item (`mod x { .. }`) ends here; a `use` tree's
                // braces end at its `;`.
                let head = split_attributes(&current).1;
                if depth == 0 && !head.starts_with("use ") && !head.starts_with("pub use ") {
                    items.push(std::mem::take(&mut current));
                }
            }
            ';' if depth == 0 => items.push(std::mem::take(&mut current)),
            _ => {}
        }
    }
    items.into_iter().map(|i| i.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|i| !i.is_empty()).collect()
}

/// An item's attributes (`#[..]`, `#![..]`) and the item itself.
fn split_attributes(item: &str) -> (Vec<&str>, &str) {
    let mut attributes = Vec::new();
    let mut rest = item.trim_start();
    while rest.starts_with('#') {
        let mut depth = 0usize;
        let end = rest
            .char_indices()
            .find_map(|(i, c)| match c {
                '[' => {
                    depth += 1;
                    None
                }
                ']' => {
                    depth -= 1;
                    (depth == 0).then_some(i)
                }
                _ => None,
            })
            .expect("an attribute closes");
        attributes.push(&rest[..=end]);
        rest = rest[end + 1..].trim_start();
    }
    (attributes, rest)
}

/// The names a `pub use` brings in: the last segment of each path of its
/// tree, or its `as` alias.
fn names_of_use(tree: &str) -> Vec<String> {
    let flat = tree.replace(['{', '}'], ",");
    flat.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty() && !p.ends_with("::"))
        .map(|p| match p.split_once(" as ") {
            Some((_, alias)) => alias.trim().to_owned(),
            None => p.rsplit("::").next().unwrap_or(p).to_owned(),
        })
        .collect()
}

/// What the root shows in `cargo doc`: every `pub` item not `#[doc(hidden)]`.
fn documented_root() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in top_level_items() {
        let (attributes, body) = split_attributes(&item);
        let Some(rest) = body.strip_prefix("pub ") else { continue };
        if attributes.contains(&"#[doc(hidden)]") {
            continue;
        }
        if let Some(tree) = rest.strip_prefix("use ") {
            names.extend(names_of_use(tree.trim_end_matches(';')));
        } else {
            // `pub mod io;`, `pub const NAME: ...`, `pub fn name(...)`.
            let mut words = rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
            let _kind = words.next();
            if let Some(name) = words.next() {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

#[test]
fn the_root_lists_exactly_the_documented_api() {
    let have = documented_root();
    let want: BTreeSet<String> = ROOT_API.iter().map(|s| s.to_string()).collect();
    let extra: Vec<_> = have.difference(&want).collect();
    let missing: Vec<_> = want.difference(&have).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "src/lib.rs's root differs from the public API of docs/architecture.md: \
         public there but not listed {extra:?}, listed but not public {missing:?} \
         (internals go through `vmafx::internals`; a new API item goes in the docs and ROOT_API)"
    );
}

/// Every room of src/ is a private module of the root: `pub` only through
/// the root's re-exports and the hidden `internals`. `io` is the one
/// public module (the file readers).
#[test]
fn every_room_is_private_and_internals_is_hidden() {
    let mut public_modules = Vec::new();
    let mut internals_hidden = None;
    let mut private = Vec::new();
    for item in top_level_items() {
        let (attributes, body) = split_attributes(&item);
        if let Some(rest) = body.strip_prefix("mod ") {
            private.push(rest.trim_end_matches(';').to_owned());
        }
        if let Some(rest) = body.strip_prefix("pub mod ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name == "internals" {
                internals_hidden = Some(attributes.contains(&"#[doc(hidden)]"));
            } else {
                public_modules.push(name);
            }
        }
    }
    assert_eq!(public_modules, ["io"], "rooms declared `pub mod` in src/lib.rs: make them `mod` (the tests reach them through `internals`)");
    assert_eq!(internals_hidden, Some(true), "`internals` must exist and be #[doc(hidden)]: it is not API");
    assert!(LIB.contains("#![warn(unreachable_pub)]"), "src/lib.rs must keep warning on `pub` items no outside path reaches");
    // The sanity of the reading itself: it sees the rooms as private modules.
    for room in ["engine", "feature", "picture", "device", "import", "avfilter", "model", "score"] {
        assert!(private.iter().any(|m| m == room), "room {room} is not a private module of src/lib.rs (read: {private:?})");
    }
}
