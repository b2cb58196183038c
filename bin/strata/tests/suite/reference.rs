//! The book's CLI reference (`book/src/reference/cli.md`) is the binary's
//! own help, generated: it cannot drift from the commands.
//! `STRATA_WRITE_REFERENCE=1 cargo test -p strata-cli --test suite reference`
//! writes it anew.

#[test]
fn the_books_cli_reference_is_the_binarys_help() {
    let path = strata_test_support::repo_root().join("book/src/reference/cli.md");
    let page = strata_cli::commands::reference::markdown();
    if std::env::var("STRATA_WRITE_REFERENCE").as_deref() == Ok("1") {
        std::fs::write(&path, &page).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == page,
        "{} is not the binary's help: run `STRATA_WRITE_REFERENCE=1 cargo test -p strata-cli --test suite reference`",
        path.display()
    );
    // Every command is in it.
    for command in [
        "import-chain",
        "serve",
        "replay",
        "ef-test",
        "export",
        "man",
    ] {
        assert!(
            page.contains(&format!("## `strata {command}`")),
            "{command}"
        );
    }
}
