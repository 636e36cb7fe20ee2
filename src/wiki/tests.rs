use super::*;

const ALICE: &str = "---\n\
title: Alice Example\n\
id: entity.alice\n\
sourceIds: [src.chat-1, \"src.mail-2\"]\n\
aliases:\n  - Ali\n  - 'A. Example'\n\
entityType: person\n\
claims:\n  - text: Alice prefers tea\n\
---\n\
# Alice\n\
\n\
Alice runs the Zephyr deploy.\n\
<!-- openclaw:wiki:generated:start -->\n\
She prefers tea over coffee; tea, always tea.\n\
<!-- openclaw:wiki:related:start -->\n\
- [[entities/bob]] zephyr\n\
<!-- openclaw:wiki:related:end -->\n";

fn alice() -> Page {
    page("entities/alice.md", ALICE).unwrap()
}

#[test]
fn pages_read_their_front_matter() {
    let p = alice();
    assert_eq!(p.kind, "entity");
    assert_eq!(p.title, "Alice Example");
    assert_eq!(p.id.as_deref(), Some("entity.alice"));
    assert_eq!(p.source_ids, ["src.chat-1", "src.mail-2"]);
    assert_eq!(p.aliases, ["Ali", "A. Example"]);
    assert_eq!(p.fields, [("entityType", "person".to_string())]);
    assert!(p.body.starts_with("# Alice\n"));
    // No front matter: the first heading, else the stem, names the page.
    let bare = page("concepts/deploys/zephyr.md", "intro\n# Zephyr deploys\n").unwrap();
    assert_eq!(
        (bare.kind, bare.title.as_str()),
        ("concept", "Zephyr deploys")
    );
    assert_eq!(page("reports/x.md", "no heading").unwrap().title, "x");
    // An unclosed front matter is body.
    assert_eq!(page("sources/s.md", "---\ntitle: T\n").unwrap().title, "s");
    // Outside the page folders: not a page.
    assert!(page("inbox.md", "x").is_none());
    assert!(page("entitiesx/a.md", "x").is_none());
}

#[test]
fn scores_follow_memory_wiki_auto_mode() {
    let p = alice();
    // (query, score): 1 + metadata bonuses + body occurrences (≤ 10) + per-word bonuses.
    let cases = [
        // Title equal (+50), each word in title (+8), meta (+4); "alice" in path/id (+6) and
        // body (+1); "example" not in body; the query is not in the body.
        ("Alice Example", 1 + 50 + (8 + 6 + 4 + 1) + (8 + 4)),
        // In the title (+20), path (+10), id (+20); two body hits ("# Alice", "Alice runs").
        ("alice", 1 + 20 + 10 + 20 + 2 + (8 + 6 + 4 + 1)),
        // Body only: three occurrences of "tea" in the body ("tea over", "tea, always tea").
        ("tea", 1 + 3 + 4 + 1),
        // A source id (+12), and as words: "src.chat-1" in meta.
        ("src.chat-1", 1 + 12 + 4),
        // Words split on other characters; all must appear somewhere.
        ("zephyr / tea", 1 + 1 + (4 + 1)),
        // The related block is not body text, but it is no longer in meta either.
        ("bob", 0),
        ("durian", 0),
        // No words (CJK, one letter): only the whole query can match.
        ("紅茶", 0),
    ];
    for (query, want) in cases {
        assert_eq!(score(&p, query), want as f64, "{query}");
    }
}

#[test]
fn snippets_are_the_matching_body_line() {
    let p = alice();
    let cases = [
        ("tea", (5, "She prefers tea over coffee; tea, always tea.")),
        ("zephyr deploy", (3, "Alice runs the Zephyr deploy.")),
        // No line holds every word: the one with most of them.
        ("coffee zephyr deploy", (3, "Alice runs the Zephyr deploy.")),
        // Matched on metadata only: the first line.
        ("person", (1, "# Alice")),
    ];
    for (query, (line, text)) in cases {
        assert_eq!(snippet(&p, query), (line, text.to_string()), "{query}");
    }
}

#[test]
fn search_orders_by_score_then_path_and_lookup_resolves_names() {
    let pages = vec![
        page("entities/b.md", "tea\n").unwrap(),
        page("entities/a.md", "tea\n").unwrap(),
        alice(),
        page("syntheses/no.md", "coffee\n").unwrap(),
    ];
    let hits = search(pages.clone(), "tea");
    let order: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.page.path.as_str(), h.score))
        .collect();
    assert_eq!(
        order,
        [
            ("entities/alice.md", 9.0),
            ("entities/a.md", 3.0),
            ("entities/b.md", 3.0)
        ]
    );
    let cases = [
        ("entities/alice.md", Some(2)),
        ("entities/alice", Some(2)),
        (" entities\\alice.md ", Some(2)),
        ("alice", Some(2)),
        ("entity.alice", Some(2)),
        ("entities/", None),
        ("nobody", None),
    ];
    for (key, want) in cases {
        assert_eq!(lookup(&pages, key), want, "{key}");
    }
}

#[test]
fn a_vault_on_disk_lists_its_pages_only() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(pages(&tmp.path().join("none")).unwrap(), None);
    for (path, text) in [
        ("entities/alice.md", ALICE),
        ("entities/index.md", "listing"),
        ("concepts/deep/nested/idea.md", "an idea"),
        ("inbox.md", "not a page"),
        ("reports/data.json", "{}"),
    ] {
        let file = tmp.path().join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }
    let found: Vec<String> = pages(tmp.path())
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(found, ["concepts/deep/nested/idea.md", "entities/alice.md"]);
}
