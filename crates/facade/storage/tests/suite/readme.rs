//! The README's library example is `examples/readme.rs` verbatim (the lines
//! between its `README` markers), which CI builds and can run: what the
//! README shows compiles.

use std::path::Path;

/// The text between `begin` and `end` in `text` (each on its own line).
fn between<'a>(text: &'a str, begin: &str, end: &str, what: &str) -> &'a str {
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("{what}: no {begin:?}"))
        + begin.len();
    let length = text[start..]
        .find(end)
        .unwrap_or_else(|| panic!("{what}: no {end:?} after {begin:?}"));
    &text[start..start + length]
}

#[test]
fn the_readme_library_example_is_the_example_that_ci_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme =
        std::fs::read_to_string(strata_test_support::repo_root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/readme.rs")).unwrap();
    let library = between(&readme, "## The library\n", "\n## ", "README.md");
    let shown = between(library, "```rust\n", "```\n", "README.md, The library");
    let built = between(
        &example,
        "// README:begin\n",
        "// README:end\n",
        "examples/readme.rs",
    );
    assert_eq!(
        shown, built,
        "README.md's library example differs from storage/examples/readme.rs; copy the example's lines between its README markers into the README"
    );
}
