//! Hybrid search through the library façade with deterministic stand-in embedders: the
//! documented merge, the fallbacks, the embedding cache and identity changes. (The real
//! EmbeddingGemma is exercised in `tests/gemma_real_model.rs` and `tests/gemma_tiny_model.rs`.)

use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use memoria::config::{Env, Fusion, ProviderKind, Settings};
use memoria::embed::Embedder;
use memoria::Mode;
use memoria::{EmbedderChoice, Memory, SearchOptions};

#[path = "support/hash_embedder.rs"]
mod hash_embedder;
use hash_embedder::HashEmbedder;

fn workspace(root: &Path) -> std::path::PathBuf {
    let ws = root.join("ws");
    fs::create_dir_all(ws.join("memory")).unwrap();
    fs::write(
        ws.join("MEMORY.md"),
        "# Long term\nSam likes oat milk flat whites.\n",
    )
    .unwrap();
    fs::write(
        ws.join("memory/2026-11-15.md"),
        "Miso the cat needs a booster vaccine.\nBooked the vet for Thursday.\n",
    )
    .unwrap();
    fs::write(
        ws.join("memory/2026-11-16.md"),
        "Checkout latency incident: missing index on orders.\nFixed in commit a828e60.\n",
    )
    .unwrap();
    fs::write(
        ws.join("memory/2026-11-17.md"),
        "Planned the postgres cutover window and the replica lag checks.\n",
    )
    .unwrap();
    ws
}

fn settings(root: &Path) -> Settings {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("main", &env);
    settings.workspace = workspace(root);
    settings.provider = ProviderKind::Local;
    // The documented merge, as a config naming the weights gets it (no weights named is
    // z-score fusion, tested in `search::hybrid`).
    settings.query.hybrid.fusion = Fusion::Weighted;
    (
        settings.query.hybrid.vector_weight,
        settings.query.hybrid.text_weight,
    ) = (0.7, 0.3);
    settings
}

fn open(settings: Settings, embedder: Arc<HashEmbedder>) -> Memory {
    Memory::open_with(
        settings,
        EmbedderChoice::Given {
            embedder,
            provider: "local".into(),
            model: "test-hash".into(),
        },
    )
    .unwrap()
}

/// Settings for a workspace holding only these `memory/` files.
fn settings_with_memory_files(root: &Path, files: &[(&str, &str)]) -> Settings {
    let mut s = settings(root);
    s.workspace = root.join("only");
    fs::create_dir_all(s.workspace.join("memory")).unwrap();
    for (name, text) in files {
        fs::write(s.workspace.join("memory").join(name), text).unwrap();
    }
    s
}

/// The paths of every hit for `query`, best first (no minScore).
fn paths_found(memory: &Memory, query: &str) -> Vec<String> {
    let options = SearchOptions {
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    memory
        .search(query, &options)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.path)
        .collect()
}

#[test]
fn hybrid_search_reports_its_mode_and_merges_both_sides() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::Hybrid);
    assert_eq!(response.served.fallback, None);
    let top = &response.hits[0];
    assert_eq!(top.path, "memory/2026-11-15.md");
    assert!(top.vector_score.is_some() && top.text_score > 0.0);
    let expected = 0.7 * top.vector_score.unwrap() + 0.3 * top.text_score;
    assert!((top.score - expected).abs() < 1e-9);
    let payload =
        serde_json::to_value(memory.memory_search("vet vaccine", &SearchOptions::default()))
            .unwrap();
    assert_eq!(payload["mode"], "hybrid");
    assert_eq!(payload["provider"], "local");
    assert_eq!(payload["model"], "test-hash");
}

/// `status` says what the process keeps open for its agents and whether a search found
/// this agent's generation open (warm) or opened it (cold).
#[test]
fn status_reports_the_open_generations_budget_and_cold_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    memory.sync(false, &|_| {}).unwrap();
    memory
        .search("vet vaccine", &SearchOptions::default())
        .unwrap();
    let cache = memory.status().unwrap().store_cache.unwrap();
    assert!(cache.limit_bytes > 0 && cache.used_bytes > 0, "{cache:?}");
    assert!(cache.cold_opens >= 1, "{cache:?}");
    let opened = cache.cold_opens;
    memory
        .search("vet vaccine", &SearchOptions::default())
        .unwrap();
    let cache = memory.status().unwrap().store_cache.unwrap();
    assert_eq!(cache.last_search, Some("warm"), "{cache:?}");
    assert_eq!(cache.cold_opens, opened);
    // A sync that commits lets the old generation go: the next search opens the new one.
    fs::write(
        tmp.path().join("ws/memory/2026-11-29.md"),
        "The vet moved to Carrer Major.\n",
    )
    .unwrap();
    memory.sync(false, &|_| {}).unwrap();
    memory
        .search("vet vaccine", &SearchOptions::default())
        .unwrap();
    let cache = memory.status().unwrap().store_cache.unwrap();
    assert_eq!(cache.last_search, Some("cold"), "{cache:?}");
    assert_eq!(cache.cold_opens, opened + 1);
}

/// Indexes, then forces a reindex, which must make no embedding call. Returns the number of
/// chunks the first sync embedded.
fn index_then_force_reindex(memory: &Memory, embedder: &HashEmbedder) -> usize {
    let first = memory.sync(false, &|_| {}).unwrap();
    let embedded = embedder.documents.load(Ordering::SeqCst);
    assert!(embedded >= 4 && first.embedded == embedded);
    let forced = memory.sync(true, &|_| {}).unwrap();
    assert!(forced.rebuilt);
    assert_eq!(
        embedder.documents.load(Ordering::SeqCst),
        embedded,
        "no embedding calls"
    );
    assert_eq!((forced.embedded, forced.cached), (0, embedded));
    embedded
}

#[test]
fn forced_reindex_with_an_unchanged_model_embeds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = HashEmbedder::new(64);
    index_then_force_reindex(&open(settings(tmp.path()), embedder.clone()), &embedder);
    // A changed chunking makes new chunks; only texts never seen are embedded.
    let mut changed = settings(tmp.path());
    changed.chunking.tokens = 8;
    changed.chunking.overlap = 0;
    let before = embedder.documents.load(Ordering::SeqCst);
    open(changed, embedder.clone())
        .sync(false, &|_| {})
        .unwrap();
    assert!(embedder.documents.load(Ordering::SeqCst) > before);
}

#[test]
fn a_rebuild_reuses_the_replaced_generations_vectors_beyond_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.cache.max_entries = 1; // the cache keeps one vector: the rest must come from the index
    let embedder = HashEmbedder::new(64);
    let memory = open(s.clone(), embedder.clone());
    let embedded = index_then_force_reindex(&memory, &embedder);
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::Hybrid);
    assert!(response.hits[0].vector_score.is_some());
    // Another embedder's vectors are never reused.
    let other = HashEmbedder::new(32);
    let report = open(s, other.clone()).sync(false, &|_| {}).unwrap();
    assert!(report.rebuilt);
    assert_eq!(report.embedded, embedded);
    assert_eq!(other.documents.load(Ordering::SeqCst), embedded);
}

#[test]
fn embedding_failure_keeps_keyword_search_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let failing = Arc::new(HashEmbedder {
        fail: true,
        ..Arc::try_unwrap(HashEmbedder::new(64)).ok().unwrap()
    });
    let memory = open(settings(tmp.path()), failing);
    let report = memory.sync(false, &|_| {}).unwrap();
    assert!(report.embed_error.as_deref().unwrap().contains("down"));
    let response = memory.search("a828e60", &SearchOptions::default()).unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    let fallback = response.served.fallback.unwrap();
    assert_eq!(fallback.from, "local");
    assert!(fallback.reason.contains("down"), "{}", fallback.reason);
    assert_eq!(response.hits[0].path, "memory/2026-11-16.md");
    let status = memory.status().unwrap();
    assert_eq!(status.mode, "fts-only");
}

#[test]
fn unusable_keyword_index_falls_back_to_vectors_until_the_next_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    {
        let memory = open(s.clone(), HashEmbedder::new(64));
        memory.sync(false, &|_| {}).unwrap();
    }
    // Break the keyword index of the current generation.
    let memory = open(s.clone(), HashEmbedder::new(64));
    let text_dir = memory.agent_root().join("gen-000001").join("text");
    fs::remove_file(text_dir.join("meta.json")).unwrap();
    let mut quiet = s.clone();
    quiet.sync.on_search = false; // search as it is, without healing first
    let memory = open(quiet, HashEmbedder::new(64));
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::VectorOnly);
    let fallback = response.served.fallback.unwrap();
    assert_eq!(fallback.from, "fts");
    assert!(
        fallback.reason.contains("keyword index unavailable"),
        "{}",
        fallback.reason
    );
    // Chunks come from the catalog: real paths and lines.
    assert_eq!(response.hits[0].path, "memory/2026-11-15.md");
    assert_eq!(response.hits[0].start_line, 1);
    // A sync rebuilds the keyword index and hybrid search returns.
    memory.sync(false, &|_| {}).unwrap();
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::Hybrid);
    assert_eq!(response.served.fallback, None);
}

#[test]
fn an_index_of_an_older_format_is_rebuilt_by_the_next_search_without_re_embedding() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = HashEmbedder::new(64);
    let memory = open(settings(tmp.path()), embedder.clone());
    memory.sync(false, &|_| {}).unwrap();
    let embedded = embedder.documents.load(Ordering::SeqCst);
    // What an older memoria left: format 2, whose text index has another schema.
    let root = memory.agent_root().to_path_buf();
    let manifest = fs::read_to_string(root.join("manifest.json")).unwrap();
    let older = manifest.replacen(
        &format!("\"format\": {}", memoria::internals::FORMAT_VERSION),
        "\"format\": 2",
        1,
    );
    assert_ne!(older, manifest, "{manifest}");
    fs::write(root.join("manifest.json"), older).unwrap();
    let text_dir = memory.agent_root().join("gen-000001").join("text");
    fs::remove_dir_all(&text_dir).unwrap();
    let mut schema = tantivy::schema::Schema::builder();
    schema.add_text_field("id", tantivy::schema::STRING | tantivy::schema::STORED);
    fs::create_dir_all(&text_dir).unwrap();
    tantivy::Index::create_in_dir(&text_dir, schema.build()).unwrap();

    let memory = open(settings(tmp.path()), embedder.clone());
    assert!(memory.status().unwrap().dirty);
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::Hybrid);
    assert_eq!(response.served.fallback, None);
    assert_eq!(response.hits[0].path, "memory/2026-11-15.md");
    assert_eq!(memory.status().unwrap().generation, Some(2));
    assert_eq!(
        embedder.documents.load(Ordering::SeqCst),
        embedded,
        "vectors come from the embedding cache"
    );
}

#[test]
fn mmr_reads_candidate_texts_and_demotes_a_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = "Planned the postgres cutover window for Saturday night.\n";
    let mut s = settings_with_memory_files(
        tmp.path(),
        &[
            ("2026-11-20.md", plan),
            ("2026-11-21.md", plan),
            (
                "2026-11-22.md",
                "Postgres replica lag alarms fired overnight.\n",
            ),
        ],
    );
    let paths = |memory: &Memory| paths_found(memory, "postgres cutover window");
    let plain = open(s.clone(), HashEmbedder::new(64));
    assert_eq!(
        paths(&plain),
        [
            "memory/2026-11-20.md",
            "memory/2026-11-21.md",
            "memory/2026-11-22.md"
        ]
    );
    s.query.hybrid.mmr.enabled = true;
    s.query.hybrid.mmr.lambda = 0.5;
    let diverse = open(s, HashEmbedder::new(64));
    assert_eq!(
        paths(&diverse),
        [
            "memory/2026-11-20.md",
            "memory/2026-11-22.md",
            "memory/2026-11-21.md"
        ]
    );
}

#[test]
fn temporal_decay_ranks_a_newer_daily_log_first() {
    let tmp = tempfile::tempdir().unwrap();
    let note = "Renewed the domain and the TLS certificate.\n";
    let mut s = settings_with_memory_files(
        tmp.path(),
        &[("2020-01-01.md", note), ("2026-11-20.md", note)],
    );
    let paths = |memory: &Memory| paths_found(memory, "renewed the TLS certificate");
    // Equal scores: the documented tie-break (path) puts the older file first.
    let plain = open(s.clone(), HashEmbedder::new(64));
    assert_eq!(
        paths(&plain),
        ["memory/2020-01-01.md", "memory/2026-11-20.md"]
    );
    s.query.hybrid.temporal_decay.enabled = true;
    s.query.hybrid.temporal_decay.half_life_days = 30.0;
    let decayed = open(s, HashEmbedder::new(64));
    assert_eq!(
        paths(&decayed),
        ["memory/2026-11-20.md", "memory/2020-01-01.md"]
    );
}

#[test]
fn hybrid_disabled_serves_vector_results_filtered_by_min_score() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.query.hybrid.enabled = false;
    let memory = open(s, HashEmbedder::new(64));
    let response = memory
        .search("postgres cutover replica", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::VectorOnly);
    assert!(!response.hits.is_empty());
    for hit in &response.hits {
        assert_eq!(hit.text_score, 0.0);
        assert_eq!(Some(hit.score), hit.vector_score);
        assert!(hit.score >= 0.35);
    }
    assert_eq!(response.hits[0].path, "memory/2026-11-17.md");
}

#[test]
fn lexical_only_scores_by_keywords_without_embedding_the_query() {
    // OpenClaw's `lexicalOnly` (its fast recall paths): the embedder is loaded, the index
    // has vectors, and still only BM25 ranks, as a keyword-only configuration would.
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    let lexical = SearchOptions {
        lexical_only: true,
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    let response = memory.search("vet vaccine for the cat", &lexical).unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    assert_eq!(response.served.fallback, None, "asked for, not a fallback");
    assert!(!response.hits.is_empty());
    assert!(response.hits.iter().all(|h| h.vector_score.is_none()));
    let mut s = settings(tmp.path());
    s.provider = ProviderKind::None;
    let keyword_only = Memory::open(s).unwrap();
    let want = keyword_only
        .search("vet vaccine for the cat", &lexical)
        .unwrap();
    let ranked = |r: &memoria::SearchResponse| -> Vec<(String, usize, f64)> {
        r.hits
            .iter()
            .map(|h| (h.path.clone(), h.start_line, h.score))
            .collect()
    };
    assert_eq!(ranked(&response), ranked(&want));
    // Without it, the same memory answers hybrid.
    let hybrid = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(hybrid.served.mode, Mode::Hybrid);
}

#[test]
fn no_provider_is_keyword_only_without_fallback() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.provider = ProviderKind::None;
    let memory = Memory::open(s).unwrap();
    let response = memory.search("a828e60", &SearchOptions::default()).unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    assert_eq!(response.served.fallback, None);
    assert_eq!(response.served.provider, "none");
}

#[test]
fn a_missing_local_model_falls_back_to_keywords_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.local.model_path = Some(tmp.path().join("no-model").display().to_string());
    let memory = Memory::open(s).unwrap();
    let response = memory.search("a828e60", &SearchOptions::default()).unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    let fallback = response.served.fallback.unwrap();
    assert_eq!(fallback.from, "local");
    assert!(fallback.reason.contains("no-model"), "{}", fallback.reason);
    assert!(!response.hits.is_empty());
}

#[test]
fn changing_the_embedder_rebuilds_into_a_new_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    memory.sync(false, &|_| {}).unwrap();
    assert_eq!(memory.status().unwrap().generation, Some(1));
    let other = open(settings(tmp.path()), HashEmbedder::new(32));
    assert!(other.status().unwrap().dirty);
    let response = other
        .search("vet vaccine", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::Hybrid);
    let status = other.status().unwrap();
    assert_eq!(
        (status.generation, status.identity.dims),
        (Some(2), Some(32))
    );
}

#[test]
fn first_results_do_not_change_when_more_are_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    // Pools of 1, 2, 4, … per side over this small workspace, so that asking for more
    // really widens the candidate pools.
    let mut s = settings(tmp.path());
    s.query.max_results = 1;
    s.query.hybrid.candidate_multiplier = 1;
    let memory = open(s, HashEmbedder::new(64));
    let ids = |n: usize| -> Vec<String> {
        let options = SearchOptions {
            max_results: Some(n),
            min_score: Some(0.0),
            ..SearchOptions::default()
        };
        memory
            .search("the cat and the postgres index", &options)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    let all = ids(10);
    for k in 1..all.len() {
        assert_eq!(ids(k), all[..k].to_vec(), "k = {k}");
    }
}

#[test]
fn embedding_does_not_make_the_text_index_look_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    memory.sync(false, &|_| {}).unwrap();
    let text_dir = memory.agent_root().join("gen-000001").join("text");
    let modified = |dir: &Path| {
        fs::metadata(dir.join("meta.json"))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = modified(&text_dir);
    // A second open and sync with nothing changed must not rebuild the text index.
    let again = open(settings(tmp.path()), HashEmbedder::new(64));
    let report = again.sync(false, &|_| {}).unwrap();
    assert_eq!((report.indexed, report.embedded), (0, 0));
    assert_eq!(modified(&text_dir), before);
}

/// Damage is healed, not repeated: a generation whose catalog is unreadable, or that is
/// missing altogether, makes the next plain sync rebuild into a new generation.
#[test]
fn a_damaged_or_missing_generation_is_rebuilt_by_the_next_sync() {
    for damage in ["garbage catalog", "missing catalog", "missing generation"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = settings(tmp.path());
        s.provider = ProviderKind::None;
        let memory = Memory::open(s.clone()).unwrap();
        memory.sync(false, &|_| {}).unwrap();
        let generation = memory.agent_root().join("gen-000001");
        match damage {
            "garbage catalog" => fs::write(generation.join("catalog.redb"), b"not redb").unwrap(),
            "missing catalog" => fs::remove_file(generation.join("catalog.redb")).unwrap(),
            _ => fs::remove_dir_all(&generation).unwrap(),
        }
        let report = memory.sync(false, &|_| {}).unwrap();
        assert!(report.rebuilt, "{damage}");
        assert_eq!(report.generation, 2, "{damage}");
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("generation 1 is damaged")),
            "{damage}: {:?}",
            report.warnings
        );
        let response = memory
            .search("vet vaccine for the cat", &SearchOptions::default())
            .unwrap();
        assert_eq!(response.hits[0].path, "memory/2026-11-15.md", "{damage}");
        assert_eq!(response.served.fallback, None, "{damage}");
        // Healed: the next sync is a plain incremental one.
        assert!(!memory.sync(false, &|_| {}).unwrap().rebuilt, "{damage}");
    }
}

/// A search whose sync fails answers from the last committed index and says so.
#[test]
fn a_search_that_cannot_sync_says_its_results_are_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.provider = ProviderKind::None;
    let memory = Memory::open(s.clone()).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    // The workspace changes, and the manifest cannot be replaced (a directory stands where
    // its temporary file goes): every sync fails at its last step.
    fs::write(
        s.workspace.join("memory/2026-11-18.md"),
        "Vet called back.\n",
    )
    .unwrap();
    let root = memory.agent_root().to_path_buf();
    fs::create_dir_all(root.join("manifest.json.tmp/blocker")).unwrap();
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.hits[0].path, "memory/2026-11-15.md");
    let fallback = response.served.fallback.expect("a stale search says so");
    assert_eq!(fallback.from, "sync");
    assert!(
        fallback.reason.contains("could not be synced"),
        "{}",
        fallback.reason
    );
    let status = memory.status().unwrap();
    assert!(
        status
            .warnings
            .iter()
            .any(|w| w.starts_with("the last sync failed")),
        "{:?}",
        status.warnings
    );
}

/// Keyword search finds a word whichever way its accents were typed.
#[test]
fn decomposed_accents_match_precomposed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings_with_memory_files(
        tmp.path(),
        &[
            ("a.md", "Lunch at the cafe\u{301} on Rue Cler.\n"),
            ("b.md", "Dinner with Frau Müller on Friday.\n"),
        ],
    );
    s.provider = ProviderKind::None;
    let memory = Memory::open(s).unwrap();
    let options = SearchOptions {
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    for (query, path) in [
        ("café", "memory/a.md"),
        ("cafe\u{301}", "memory/a.md"),
        ("Mu\u{308}ller", "memory/b.md"),
        ("Müller", "memory/b.md"),
    ] {
        let hits = memory.search(query, &options).unwrap().hits;
        assert_eq!(
            hits.first().map(|h| h.path.as_str()),
            Some(path),
            "{query:?}"
        );
    }
}

/// Keyword-only search at the default settings is never empty when a query word is in
/// memory, even when every hit scores under minScore (a word present in most notes).
#[test]
fn weak_keyword_hits_survive_the_default_min_score() {
    let tmp = tempfile::tempdir().unwrap();
    let long_note = "We talked about the garden, the roses and the tomatoes, the new fence, \
                     the neighbours' dog, the weather for the weekend and the trip to the coast.\n"
        .repeat(4);
    let files: Vec<(String, String)> = (0..8)
        .map(|i| {
            (
                format!("2026-11-0{}.md", i + 1),
                format!("{long_note}Note {i}: penicillin stays on the allergy list.\n"),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let mut s = settings_with_memory_files(tmp.path(), &files);
    s.provider = ProviderKind::None;
    let memory = Memory::open(s).unwrap();
    let response = memory
        .search("penicillin", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    let best = response.hits.first().expect("keyword hits are returned");
    assert!(
        best.score < 0.35,
        "not the relaxed path: scored {}",
        best.score
    );
    assert!(best.text.contains("penicillin"));
}

/// Deleted chunks stay in tantivy's BM25 statistics until their segment is merged; a sync
/// merges them away past 5% of the index, so many incremental syncs stay within a small
/// measured bound of a fresh build. Measured: here 0 (without the merge, 9.6e-3); with
/// 100 files, where up to 5% deleted chunks remain between merges, 3.4e-4.
#[test]
fn bm25_scores_do_not_drift_after_many_incremental_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let words = [
        "postgres", "cutover", "replica", "vaccine", "garden", "invoice", "deploy", "latency",
        "rollback", "budget", "travel", "dentist", "kernel", "review", "launch", "backup",
    ];
    let note = |file: usize, version: usize| -> String {
        (0..12)
            .map(|line| {
                let w = |k: usize| words[(file * 7 + version * 3 + line * 5 + k) % words.len()];
                format!(
                    "Line {line}: {} {} and {} for the {} plan.\n",
                    w(0),
                    w(1),
                    w(2),
                    w(3)
                )
            })
            .collect()
    };
    let files: Vec<(String, String)> = (0..20)
        .map(|f| (format!("2026-10-{:02}.md", f + 1), note(f, 0)))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let mut s = settings_with_memory_files(tmp.path(), &files);
    s.provider = ProviderKind::None;
    let memory = Memory::open(s.clone()).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    for round in 1..=200 {
        let file = round % 20;
        let path = s
            .workspace
            .join(format!("memory/2026-10-{:02}.md", file + 1));
        fs::write(&path, note(file, round)).unwrap();
        // A distinct mtime for every write, so the sync sees each change.
        let mtime =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(round as u64);
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        memory.sync(false, &|_| {}).unwrap();
    }
    let mut fresh_settings = s.clone();
    fresh_settings.store.dir = Some(tmp.path().join("fresh-store"));
    let fresh = Memory::open(fresh_settings).unwrap();
    fresh.sync(false, &|_| {}).unwrap();
    let options = SearchOptions {
        max_results: Some(20),
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    let mut worst = 0f64;
    for query in words.iter().map(|w| format!("{w} plan")) {
        let scores = |m: &Memory| -> Vec<(String, usize, f64)> {
            let mut hits: Vec<_> = m
                .search(&query, &options)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.path, h.start_line, h.score))
                .collect();
            hits.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            hits
        };
        let (a, b) = (scores(&memory), scores(&fresh));
        assert_eq!(a.len(), b.len(), "{query}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((&x.0, x.1), (&y.0, y.1), "{query}");
            worst = worst.max((x.2 - y.2).abs());
        }
    }
    println!("largest score difference from a fresh build after 200 syncs: {worst:.2e}");
    assert!(worst <= 1e-3, "BM25 drifted by {worst:.2e}");
}

/// A keyword index that was deleted or damaged under an unchanged workspace is rebuilt
/// from the catalog by the next search (which then serves from it), not left broken.
#[test]
fn a_search_heals_a_missing_keyword_index() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.provider = ProviderKind::None;
    let memory = Memory::open(s.clone()).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let text_dir = memory.agent_root().join("gen-000001").join("text");
    for entry in fs::read_dir(&text_dir).unwrap() {
        fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let memory = Memory::open(s).unwrap();
    let response = memory
        .search("vet vaccine for the cat", &SearchOptions::default())
        .unwrap();
    assert_eq!(response.served.mode, Mode::FtsOnly);
    assert_eq!(response.hits[0].path, "memory/2026-11-15.md");
    assert!(text_dir.join("meta.json").exists());
}

#[test]
fn an_answer_filtered_to_nothing_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    memory.sync(false, &|_| {}).unwrap();
    let options = SearchOptions {
        min_score: Some(0.99),
        ..SearchOptions::default()
    };
    // No keyword matches these words; the vector side finds weak candidates only.
    let payload = memory.memory_search("quantum entanglement", &options);
    assert!(payload.results.is_empty(), "{payload:?}");
    let warning = payload.warning.unwrap();
    assert!(
        warning.starts_with("no result reached minScore 0.99: ")
            && warning.contains("candidate(s) scored lower, the best 0."),
        "{warning}"
    );
    // The payload is the tool's (MCP's too): it names the tool's argument, not a flag.
    assert!(
        warning.ends_with("; a lower minScore shows them") && !warning.contains("--min-score"),
        "{warning}"
    );
    // With results, no warning.
    let payload = memory.memory_search("postgres cutover window", &SearchOptions::default());
    assert!(!payload.results.is_empty());
    assert_eq!(payload.warning, None);
}

#[test]
fn keyword_only_over_an_index_built_with_a_model_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = HashEmbedder::new(64);
    let memory = open(settings(tmp.path()), embedder.clone());
    memory.sync(false, &|_| {}).unwrap();
    let built = memory.status().unwrap();
    drop(memory);

    // `--provider none` for once: the text side serves, the index is not rebuilt, and a
    // new note is indexed into it.
    let mut keyword_only = settings(tmp.path());
    keyword_only.provider = ProviderKind::None;
    let memory = Memory::open(keyword_only).unwrap();
    let payload = memory.memory_search("postgres cutover", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("fts-only"));
    assert_eq!(payload.results[0].path, "memory/2026-11-17.md");
    let ws = memory.settings().workspace.clone();
    fs::write(
        ws.join("memory/2026-11-18.md"),
        "Renewed the TLS certificates.\n",
    )
    .unwrap();
    let payload = memory.memory_search("TLS certificates", &SearchOptions::default());
    assert_eq!(payload.results[0].path, "memory/2026-11-18.md");
    let status = memory.status().unwrap();
    assert_eq!(status.generation, built.generation, "not rebuilt");
    drop(memory);

    // The model back: only the new chunk is embedded, in the same generation.
    let memory = open(settings(tmp.path()), embedder.clone());
    let before = embedder.documents.load(Ordering::SeqCst);
    let report = memory.sync(false, &|_| {}).unwrap();
    assert!(!report.rebuilt);
    assert_eq!(report.embedded, 1);
    assert_eq!(embedder.documents.load(Ordering::SeqCst), before + 1);
    let payload = memory.memory_search("TLS certificates", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    assert_eq!(memory.status().unwrap().generation, built.generation);
}

#[test]
fn a_pasted_document_as_query_is_embedded_in_part_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = open(settings(tmp.path()), HashEmbedder::new(64));
    memory.sync(false, &|_| {}).unwrap();
    let long = "postgres cutover window ".repeat(200); // 4,799 characters once trimmed
    let payload = memory.memory_search(&long, &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    assert!(!payload.results.is_empty());
    let warning = payload.warning.unwrap_or_default();
    assert!(
        warning.contains("the query is 4799 characters: the vector side embedded its first 2048"),
        "{warning}"
    );
    // An ordinary query: no note.
    let payload = memory.memory_search("postgres cutover window", &SearchOptions::default());
    assert_eq!(payload.warning, None);
}

#[test]
fn the_builder_opens_a_workspace_a_state_dir_and_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let state = tmp.path().join("state");
    // Keyword-only: a workspace and a state dir are all it takes.
    let memory = Memory::builder()
        .workspace(&ws)
        .state_dir(&state)
        .provider(ProviderKind::None)
        .open()
        .unwrap();
    assert_eq!(memory.agent_root(), state.join("memory/main"));
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("postgres cutover", &SearchOptions::default());
    assert_eq!(payload.results[0].path, "memory/2026-11-17.md");
    // An embedder of one's own: hybrid.
    let memory = Memory::builder()
        .workspace(&ws)
        .state_dir(tmp.path().join("state2"))
        .agent("work")
        .embedder(HashEmbedder::new(64), "local", "test-hash")
        .open()
        .unwrap();
    assert_eq!(memory.agent_root(), tmp.path().join("state2/memory/work"));
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("postgres cutover", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    // A model named but not there: an error that says so, not keyword search.
    let err = Memory::builder()
        .workspace(&ws)
        .state_dir(&state)
        .model(tmp.path().join("no-such-model"))
        .open()
        .err()
        .unwrap();
    assert!(
        matches!(err, memoria::Error::ModelUnavailable { .. })
            && err.to_string().contains("which does not exist"),
        "{err}"
    );
    // A bad agent id is refused before anything is created.
    assert!(Memory::builder()
        .state_dir(&state)
        .agent("../x")
        .open()
        .is_err());
}

/// Twelve lines on twelve things: one chunk whose own vector dilutes each of them.
const TWELVE_TOPICS: [&str; 12] = [
    "bought new running shoes",
    "the quokka sanctuary opens at nine",
    "call the bank about the mortgage",
    "repaint the hallway in sage green",
    "dentist moved to tuesday",
    "tomatoes ripening on the balcony",
    "review the terraform plan",
    "grandma turns ninety in may",
    "the printer needs cyan toner",
    "renew the passport before june",
    "try the ramen place downtown",
    "backup drive is almost full",
];

/// Vector-only settings for a workspace whose daily log `memory/2026-11-18.md` holds the
/// [`TWELVE_TOPICS`], and the log's path.
fn twelve_topics(root: &Path) -> (Settings, std::path::PathBuf) {
    let mut s = settings(root);
    s.query.hybrid.enabled = false;
    s.query.min_score = 0.0;
    let log = root.join("ws/memory/2026-11-18.md");
    fs::write(&log, TWELVE_TOPICS.join("\n")).unwrap();
    (s, log)
}

/// The stand-in embedder, embedding passages as the local model does when `passages`,
/// down when `fail`.
fn passage_embedder(passages: bool, fail: bool) -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder {
        passages,
        fail,
        ..Arc::try_unwrap(HashEmbedder::new(256)).ok().unwrap()
    })
}

/// The vector score of the twelve-topics log for a question about one of its lines (0
/// when it is not returned).
fn quokka_cosine(memory: &Memory) -> f64 {
    let response = memory
        .search("quokka sanctuary opens", &SearchOptions::default())
        .unwrap();
    let hit = response
        .hits
        .iter()
        .find(|h| h.path == "memory/2026-11-18.md");
    hit.and_then(|h| h.vector_score).unwrap_or(0.0)
}

#[test]
fn a_long_chunk_is_found_by_its_best_passage() {
    // Twelve lines on twelve things: the chunk's one vector dilutes the line asked about,
    // its passage holding that line does not; an edit takes the old passages away.
    let tmp = tempfile::tempdir().unwrap();
    let (s, log) = twelve_topics(tmp.path());
    let with_semantics = |passages: bool, semantics: memoria::config::Semantics| {
        let mut s = s.clone();
        s.semantics = semantics;
        if semantics == memoria::config::Semantics::OpenClaw {
            s.ranking = memoria::config::Ranking::OpenClaw;
        }
        s.store.dir = Some(tmp.path().join(format!("store-{passages}-{semantics:?}")));
        open(s, passage_embedder(passages, false))
    };
    let with = |passages: bool| with_semantics(passages, s.semantics);
    let cosine = quokka_cosine;
    let (plain, passages) = (with(false), with(true));
    let diluted = cosine(&plain);
    let best = cosine(&passages);
    assert!(
        best > diluted + 0.1,
        "passage {best} against chunk {diluted}"
    );
    // Status counts chunks with a vector, not passages.
    let count = |m: &Memory| m.status().unwrap().vectors;
    assert_eq!(count(&passages), count(&plain));
    // Turned off in the config (`plugins.entries.memoria.config.passages`), the chunk
    // scores its own vector alone, `status` says so, and turning them on again rebuilds
    // the same store with them.
    let switched = |on: bool| {
        let mut s = s.clone();
        s.local.passages = on;
        s.store.dir = Some(tmp.path().join("store-switched"));
        open(s, passage_embedder(true, false))
    };
    let off = switched(false);
    assert_eq!(cosine(&off), diluted);
    let ranking = off.status().unwrap().ranking;
    assert!(ranking.contains("passages off"), "{ranking}");
    drop(off);
    assert_eq!(cosine(&switched(true)), best);
    // OpenClaw's ranking scores chunks alone, as OpenClaw 2026.9 does.
    let openclaw = memoria::config::Semantics::OpenClaw;
    let (plain_2026_9, passages_2026_9) = (
        with_semantics(false, openclaw),
        with_semantics(true, openclaw),
    );
    let chunk_alone = cosine(&plain_2026_9);
    assert!(chunk_alone > 0.0, "the 2026.9 search found the log");
    assert_eq!(cosine(&passages_2026_9), chunk_alone);
    // The line gone, its passages go too: the chunk scores what it now holds.
    let kept: Vec<&str> = TWELVE_TOPICS
        .iter()
        .copied()
        .filter(|t| !t.contains("quokka"))
        .collect();
    fs::write(&log, kept.join("\n")).unwrap();
    passages.sync(false, &|_| {}).unwrap();
    assert!(cosine(&passages) < diluted, "stale passages were searched");
}

#[test]
fn a_chunk_with_passages_is_not_embedded_itself() {
    // Its vector is the centroid of its passages': the embedder gets the twelve-topics
    // log's six two-line passages and never the log's own text.
    let tmp = tempfile::tempdir().unwrap();
    let (s, _) = twelve_topics(tmp.path());
    let embedded = |passages: bool| {
        let mut s = s.clone();
        s.store.dir = Some(tmp.path().join(format!("store-{passages}")));
        s.cache.enabled = false;
        let embedder = passage_embedder(passages, false);
        let memory = open(s, embedder.clone());
        memory.sync(false, &|_| {}).unwrap();
        let vectors = memory.status().unwrap().vectors;
        (embedder.documents.load(Ordering::SeqCst), vectors)
    };
    let (plain, chunks) = embedded(false);
    let (with_passages, chunks_with_passages) = embedded(true);
    assert_eq!(with_passages, plain - 1 + TWELVE_TOPICS.len() / 2);
    assert_eq!(chunks_with_passages, chunks, "the log has its vector");
}

#[test]
fn a_chunk_is_stored_as_embedded_only_with_all_its_passages() {
    // A forced rebuild finds the chunk's own vector in the embedding cache (the first index
    // had no passages) but has to embed its passages, and the embedder fails: the chunk
    // must not look embedded, or no later sync would give it its passages.
    let tmp = tempfile::tempdir().unwrap();
    let (s, _) = twelve_topics(tmp.path());
    let with = |passages: bool, fail: bool| open(s.clone(), passage_embedder(passages, fail));
    let vectors = |m: &Memory| m.status().unwrap().vectors.unwrap();
    let cosine = quokka_cosine;
    let plain = with(false, false);
    plain.sync(false, &|_| {}).unwrap();
    let chunks = vectors(&plain);
    let diluted = cosine(&plain);
    drop(plain);

    let failing = with(true, true);
    let report = failing.sync(true, &|_| {}).unwrap();
    assert!(report.embed_error.is_some(), "{report:?}");
    // The short chunks are complete from the cache; the long one waits for its passages.
    assert_eq!(vectors(&failing), chunks - 1);
    drop(failing);

    let working = with(true, false);
    working.sync(false, &|_| {}).unwrap();
    assert_eq!(vectors(&working), chunks);
    let best = cosine(&working);
    assert!(
        best > diluted + 0.1,
        "passage {best} against chunk {diluted}"
    );
}

/// `memoria eval --candidates`: every question's fusion inputs are logged, and
/// `scripts/fusion_replay.py` ranks them back exactly as the search did, in every mode and
/// fusion (so a rule it tries offline is measured against the real pipeline).
#[test]
fn the_candidate_log_replays_every_search_exactly() {
    use memoria::eval::{eval_memory_workspace, CandidateLog, EvalMode};
    let tmp = tempfile::tempdir().unwrap();
    let env = Env {
        home: Some(tmp.path().to_path_buf()),
        state_dir: Some(tmp.path().join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut base = Settings::builtin("main", &env);
    base.provider = ProviderKind::Local;
    let embedder = Arc::new(HashEmbedder {
        passages: true,
        ..Arc::into_inner(HashEmbedder::new(64)).unwrap()
    });
    let open = |settings: Settings| {
        let embedder: Arc<dyn Embedder> = embedder.clone();
        match settings.provider {
            ProviderKind::None => Memory::open(settings),
            _ => Memory::open_with(
                settings,
                EmbedderChoice::Given {
                    embedder,
                    provider: "local".into(),
                    model: "test-hash".into(),
                },
            ),
        }
    };
    let personal = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/personal");
    let file = tmp.path().join("candidates.jsonl");
    let mut log = CandidateLog::create(&file).unwrap();
    let mut runs = vec![
        EvalMode::Bm25.apply(base.clone()),
        EvalMode::Vector.apply(base.clone()),
    ];
    for fusion in [
        Fusion::ZScore,
        Fusion::MinMax,
        Fusion::Weighted,
        Fusion::Rrf,
    ] {
        let mut settings = base.clone();
        settings.query.hybrid.fusion = fusion;
        runs.push(settings);
    }
    for settings in &runs {
        let scratch = tmp.path().join("eval");
        eval_memory_workspace(&personal, settings, &open, &scratch, Some(&mut log)).unwrap();
    }
    log.finish().unwrap();
    let lines: Vec<serde_json::Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6 * 28);
    let modes: Vec<&str> = lines.iter().map(|l| l["mode"].as_str().unwrap()).collect();
    assert_eq!(modes[0], "fts-only");
    assert_eq!(modes[28], "vector-only");
    assert!(modes[56..].iter().all(|m| *m == "hybrid"));
    let hybrid = &lines[56]["candidates"];
    assert_eq!(hybrid["fusion"], "zscore");
    assert!(
        !hybrid["keyword"].as_array().unwrap().is_empty(),
        "{hybrid}"
    );
    assert!(!hybrid["vector"].as_array().unwrap().is_empty(), "{hybrid}");
    assert!(lines[56]["evidence"].is_array());

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fusion_replay.py");
    let out = match std::process::Command::new("python3")
        .arg(&script)
        .arg(&file)
        .output()
    {
        Ok(out) => out,
        Err(err) => {
            eprintln!("note: python3 is not available ({err}); skipping the replay");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("replay matches the search for 168 of 168 questions"),
        "{stdout}"
    );
}

/// The `vectors/` directories under `root`, with the delta files in each.
fn vector_deltas(root: &Path) -> Vec<(std::path::PathBuf, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "vectors") {
                let deltas = fs::read_dir(&path)
                    .unwrap()
                    .flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "delta"))
                    .count();
                out.push((path, deltas));
            } else {
                stack.push(path);
            }
        }
    }
    out
}

/// A small change is written as a delta after the vector snapshot, which a search in the
/// same process and one in a fresh process read as the index they stand for; a large one
/// folds the deltas into a new snapshot.
#[test]
fn a_small_change_appends_a_vector_delta_that_searches_read() {
    let tmp = tempfile::tempdir().unwrap();
    let topics = [
        "postgres", "vaccine", "garden", "invoice", "deploy", "latency", "dentist", "kernel",
    ];
    let files: Vec<(String, String)> = (0..40)
        .map(|i| {
            let text = format!(
                "Note {i} about the {} and the {}.\n",
                topics[i % 8],
                topics[(i / 8) % 8]
            );
            (format!("note-{i:02}.md"), text)
        })
        .collect();
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let mut s = settings_with_memory_files(tmp.path(), &named);
    s.query.hybrid.enabled = false;
    let embedder = HashEmbedder::new(64);
    let memory = open(s.clone(), embedder.clone());
    memory.sync(false, &|_| {}).unwrap();
    let state = tmp.path().join("state");
    assert!(vector_deltas(&state).iter().all(|(_, n)| *n == 0));
    let options = SearchOptions {
        max_results: Some(10),
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    memory.search("garden kernel", &options).unwrap();

    let note = s.workspace.join("memory/note-03.md");
    fs::write(&note, "Note 3 is now about zanzibar spice markets.\n").unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let deltas = vector_deltas(&state);
    assert_eq!(
        deltas.iter().map(|(_, n)| n).sum::<usize>(),
        1,
        "{deltas:?}"
    );

    let fresh_state = tmp.path().join("fresh-store");
    let mut fresh_settings = s.clone();
    fresh_settings.store.dir = Some(fresh_state.clone());
    let fresh = open(fresh_settings, embedder.clone());
    fresh.sync(false, &|_| {}).unwrap();
    let hits = |m: &Memory, q: &str| -> Vec<(String, usize, String)> {
        let results = m.search(q, &options).unwrap();
        assert_eq!(results.served.mode, Mode::VectorOnly, "{q}");
        results
            .hits
            .into_iter()
            .map(|h| (h.path, h.start_line, format!("{:.5}", h.score)))
            .collect()
    };
    let reopened = open(s.clone(), embedder.clone());
    for q in [
        "zanzibar spice",
        "garden kernel",
        "postgres vaccine",
        "about the invoice",
    ] {
        let want = hits(&fresh, q);
        assert_eq!(hits(&memory, q), want, "{q}: the same process");
        assert_eq!(hits(&reopened, q), want, "{q}: another process");
    }
    assert_eq!(hits(&memory, "zanzibar spice")[0].0, "memory/note-03.md");

    // A change to a third of the notes is more than the snapshot should hide: folded in.
    for i in 0..14 {
        let note = s.workspace.join(format!("memory/note-{i:02}.md"));
        fs::write(
            &note,
            format!("Note {i} rewritten about harbour {i} ferries.\n"),
        )
        .unwrap();
    }
    memory.sync(false, &|_| {}).unwrap();
    assert!(vector_deltas(&state).iter().all(|(_, n)| *n == 0));
    assert_eq!(hits(&memory, "harbour ferries").len(), 10);
}

/// The vector index is the one copy of a vector once it holds it: damaged vector files
/// mark what they held unembedded, and the next sync embeds it again through the
/// embedding cache, without calling the embedder.
#[test]
fn lost_vector_files_are_embedded_again_through_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    s.query.hybrid.enabled = false;
    let embedder = HashEmbedder::new(64);
    let memory = open(s.clone(), embedder.clone());
    memory.sync(false, &|_| {}).unwrap();
    let before = paths_found(&memory, "postgres cutover replica");
    let vectors = memory.status().unwrap().vectors;
    assert_eq!(vectors, Some(4));
    let embedded = embedder.documents.load(Ordering::SeqCst);
    for (dir, _) in vector_deltas(&tmp.path().join("state")) {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_name() != "meta.json" {
                fs::write(entry.path(), b"damaged").unwrap();
            }
        }
    }
    // The first sync finds the loss, the next embeds again.
    let reopened = open(s.clone(), embedder.clone());
    reopened.sync(false, &|_| {}).unwrap();
    reopened.sync(false, &|_| {}).unwrap();
    assert_eq!(reopened.status().unwrap().vectors, vectors);
    assert_eq!(paths_found(&reopened, "postgres cutover replica"), before);
    assert_eq!(embedder.documents.load(Ordering::SeqCst), embedded);

    // A flipped byte keeps the length, which a sync checks: the search that finds the bad
    // checksum reports it, and the syncs after it heal as above.
    for (dir, _) in vector_deltas(&tmp.path().join("state")) {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_name() != "meta.json" {
                let mut bytes = fs::read(entry.path()).unwrap();
                let last = bytes.len() - 1;
                bytes[last] ^= 0x5a;
                fs::write(entry.path(), bytes).unwrap();
            }
        }
    }
    let searcher = open(s.clone(), embedder.clone());
    let _ = searcher.search("postgres", &SearchOptions::default());
    // `status` says what the search found until a sync repairs it.
    let damaged = |memory: &Memory| {
        let warnings = memory.status().unwrap().warnings;
        warnings.iter().any(|w| w.contains("vector index damaged"))
    };
    assert!(
        damaged(&searcher),
        "{:?}",
        searcher.status().unwrap().warnings
    );
    searcher.sync(false, &|_| {}).unwrap();
    assert!(!damaged(&searcher));
    searcher.sync(false, &|_| {}).unwrap();
    assert_eq!(searcher.status().unwrap().vectors, vectors);
    assert_eq!(paths_found(&searcher, "postgres cutover replica"), before);
    assert_eq!(embedder.documents.load(Ordering::SeqCst), embedded);
}
