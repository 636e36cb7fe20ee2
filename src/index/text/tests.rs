use super::*;

fn chunk(path: &str, start_line: usize, text: &str) -> ChunkRecord {
    ChunkRecord {
        path: path.into(),
        source: "memory".into(),
        start_line,
        end_line: start_line + 1,
        hash: format!("h{start_line}"),
        text: text.into(),
        title: String::new(),
        annotations: Default::default(),
    }
}

fn id(n: u32) -> String {
    format!("{n:032x}")
}

#[test]
fn id_halves_table() {
    let cases = [
        (
            "0123456789abcdef0123456789abcdef",
            Some((0x0123456789abcdef, 0x0123456789abcdef)),
        ),
        ("ffffffffffffffff0000000000000001", Some((u64::MAX, 1))),
        ("0123456789ABCDEF0123456789abcdef", None), // upper case would not round-trip
        ("0123456789abcdef", None),
        ("0123456789abcdef0123456789abcdeg", None),
        ("", None),
    ];
    for (id, want) in cases {
        assert_eq!(id_halves(id), want, "{id:?}");
    }
}

#[test]
fn ranking_keys_come_from_columns_and_match_the_stored_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let index = TextIndex::create(dir.path()).unwrap();
    let mut writer = index.writer().unwrap();
    let docs = [
        (
            id(1),
            chunk("memory/2026-01-02.md", 1, "postgres cutover plan"),
        ),
        (
            id(2),
            chunk("MEMORY.md", 7, "postgres is the primary store"),
        ),
        (
            id(3),
            chunk("memory/2026-01-03.md", 4, "the cat needs a vaccine"),
        ),
    ];
    for (id, chunk) in &docs[..2] {
        writer.add(id, chunk).unwrap();
    }
    writer.commit(1).unwrap();
    writer.add(&docs[2].0, &docs[2].1).unwrap(); // a second segment
    writer.commit(2).unwrap();
    index.reload().unwrap();

    let hits = index.search("postgres vaccine", 10, None, true).unwrap();
    assert_eq!(hits.len(), 3);
    for hit in &hits {
        let (id, chunk) = docs.iter().find(|(id, _)| *id == hit.key.id).unwrap();
        assert_eq!(hit.key, chunk.key(id.clone()));
    }
    let wanted = [id(3), id(9), id(1)];
    let keys = index.keys_by_ids(&wanted).unwrap();
    assert_eq!(
        keys,
        vec![docs[2].1.key(id(3)), docs[0].1.key(id(1))],
        "in order, unknown ids skipped"
    );
    let chunks = index.chunks_by_ids(&wanted).unwrap();
    assert_eq!(
        chunks,
        vec![(id(3), docs[2].1.clone()), (id(1), docs[0].1.clone())]
    );

    // After a delete and a reload, keys come from the live segments only.
    writer.delete_path("MEMORY.md");
    writer.commit(3).unwrap();
    writer.finish().unwrap();
    index.reload().unwrap();
    let ids: Vec<String> = index
        .search("postgres", 10, None, true)
        .unwrap()
        .into_iter()
        .map(|h| h.key.id)
        .collect();
    assert_eq!(ids, vec![id(1)]);
    assert_eq!(index.keys_by_ids(&[id(2)]).unwrap(), vec![]);
}

/// Chunks that tie at the edge of the pool are the same ones, in the same order, however
/// the index was written: one segment, or two written in the other order.
#[test]
fn ties_at_the_edge_of_the_pool_do_not_depend_on_the_segments() {
    let docs: Vec<(String, ChunkRecord)> = (0..40)
        .map(|n| {
            let path = format!("memory/2026-01-{:02}.md", n % 20 + 1);
            (id(n + 1), chunk(&path, n as usize * 3 + 1, "walnut bread"))
        })
        .collect();
    let pool = |batches: &[&[(String, ChunkRecord)]]| {
        let dir = tempfile::tempdir().unwrap();
        let index = TextIndex::create(dir.path()).unwrap();
        let mut writer = index.writer().unwrap();
        for (seq, batch) in batches.iter().enumerate() {
            for (id, chunk) in batch.iter() {
                writer.add(id, chunk).unwrap();
            }
            writer.commit(seq as u64 + 1).unwrap();
        }
        writer.finish().unwrap();
        index.reload().unwrap();
        let hits = index.search("walnut", 6, None, true).unwrap();
        hits.into_iter()
            .map(|h| (h.key.path, h.key.start_line))
            .collect::<Vec<_>>()
    };
    let reversed: Vec<(String, ChunkRecord)> = docs.iter().rev().cloned().collect();
    let one = pool(&[&docs]);
    let two = pool(&[&reversed[..25], &reversed[25..]]);
    let want: Vec<(String, usize)> = [(1, 1), (1, 61), (2, 4), (2, 64), (3, 7), (3, 67)]
        .into_iter()
        .map(|(day, line)| (format!("memory/2026-01-{day:02}.md"), line))
        .collect();
    assert_eq!(one, want);
    assert_eq!(two, want);
    assert_eq!(
        pool(&[&docs[..6]]).len(),
        6,
        "a pool of exactly the matches"
    );
}

#[test]
fn a_chunk_id_that_is_not_32_hex_digits_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let index = TextIndex::create(dir.path()).unwrap();
    let writer = index.writer().unwrap();
    let err = writer
        .add("not-an-id", &chunk("memory/x.md", 1, "text"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not-an-id") && err.contains("memory/x.md"),
        "{err}"
    );
}

#[test]
fn an_index_with_another_schema_does_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = Schema::builder();
    builder.add_text_field("id", STRING | STORED);
    Index::create_in_dir(dir.path(), builder.build()).unwrap();
    let err = TextIndex::open(dir.path()).err().unwrap().to_string();
    assert!(err.contains("another memoria version"), "{err}");
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
}

/// Carrying the pruning threshold from segment to segment finds what tantivy's `TopDocs`
/// finds: the same scores, and the same chunks wherever scores do not tie, over segments of
/// different sizes with deleted chunks among them.
#[test]
fn the_carried_threshold_finds_what_top_docs_finds() {
    use tantivy::collector::TopDocs;

    let words = [
        "kettle", "harbour", "lantern", "quince", "walnut", "copper", "meadow", "ferry",
    ];
    let dir = tempfile::tempdir().unwrap();
    let index = TextIndex::create(dir.path()).unwrap();
    let mut writer = index.writer().unwrap();
    // Segments as written: a merge would leave one.
    writer
        .writer
        .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut n = 0;
    for (seq, size) in [700, 40, 300, 5].into_iter().enumerate() {
        for _ in 0..size {
            n += 1;
            let len = 3 + next() % 40;
            let text: Vec<&str> = (0..len)
                .map(|_| words[(next() % 64).trailing_zeros().min(7) as usize])
                .collect();
            let path = format!("memory/2026-02-{:02}.md", n % 28 + 1);
            writer
                .add(&id(n), &chunk(&path, n as usize, &text.join(" ")))
                .unwrap();
        }
        if seq == 2 {
            writer.delete_path("memory/2026-02-03.md");
        }
        writer.commit(seq as u64 + 1).unwrap();
    }
    writer.finish().unwrap();
    index.reload().unwrap();
    let searcher = index.reader.searcher();
    let sizes: Vec<u32> = searcher
        .segment_readers()
        .iter()
        .map(|r| r.max_doc())
        .collect();
    assert!(sizes.len() > 1, "several segments: {sizes:?}");
    for query in [
        "kettle",
        "quince ferry",
        "meadow copper walnut",
        "harbour lantern",
    ] {
        let words: Vec<String> = query.split(' ').map(String::from).collect();
        let query = index.any_term(&words);
        for k in [1, 10, 25, 2_000] {
            let ours = top_scored(&searcher, &query, k).unwrap();
            let theirs = searcher
                .search(&query, &TopDocs::with_limit(k).order_by_score())
                .unwrap();
            let scores = |hits: &[(Score, DocAddress)]| -> Vec<u32> {
                hits.iter().map(|(s, _)| s.to_bits()).collect()
            };
            assert_eq!(scores(&ours), scores(&theirs), "{query:?}, k {k}");
            for (i, (score, address)) in ours.iter().enumerate() {
                let tied = |j: usize| ours.get(j).is_some_and(|(s, _)| s == score);
                if !tied(i.wrapping_sub(1)) && !tied(i + 1) {
                    assert_eq!(*address, theirs[i].1, "{query:?}, k {k}, rank {i}");
                }
            }
            assert!(ours.len() <= k && (ours.len() == k || k == 2_000));
        }
    }
}
