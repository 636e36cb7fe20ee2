//! The engine over every store: the same workspace synced and searched through the local
//! store (an agent directory), the in-memory one and, with the `fleet` feature, LanceDB's
//! on a directory. Each scenario runs against each, so the sync and search pipelines are shown to need nothing but the store traits;
//! where the two stores' keyword scores differ (tantivy quantises document lengths, the map
//! store does not), the scenarios ask for what a user sees: which note comes first, the
//! mode, the fallback, the warning.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::memory::MemoryStore;
use super::Store;
use crate::analyzer::{terms, AnalyzerMode};
use crate::config::{Env, ProviderKind, Ranking, Semantics, Settings};
use crate::embed::{EmbedError, EmbedKind, Embedder, EmbedderChoice, Embedding};
use crate::freshness::Agent;
use crate::index::{AgentDir, LocalStore, VectorParams};
use crate::recall;
use crate::search::{Mode, SearchOptions, SearchResponse};

/// A bag of hashed words: texts sharing words are close. Counts the documents it embeds.
struct Words {
    documents: AtomicUsize,
}

const DIMS: usize = 64;

impl Embedder for Words {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>, EmbedError> {
        if kind == EmbedKind::Document {
            self.documents.fetch_add(texts.len(), Ordering::SeqCst);
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; DIMS];
                for term in terms(text, AnalyzerMode::Query) {
                    let h = term.bytes().fold(1469598103934665603u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(1099511628211)
                    });
                    v[(h % DIMS as u64) as usize] += 1.0;
                }
                Embedding {
                    vector: v,
                    tokens: 1,
                    truncated: false,
                }
            })
            .collect())
    }

    fn dims(&self) -> usize {
        DIMS
    }

    fn fingerprint(&self) -> &str {
        "words-64"
    }

    fn max_tokens(&self) -> usize {
        2048
    }

    fn embeds_passages(&self) -> bool {
        true
    }
}

const NOTES: &[(&str, &str)] = &[
    (
        "MEMORY.md",
        "# Memory\n\n## Pets\n\nThe cat Miso needs her rabies vaccination every March.\n\n\
         ## Work\n\nThe memory gateway runs on the machine called basalt.\n",
    ),
    (
        "memory/2026-03-02.md",
        "# 2026-03-02\n\n- Booked the guesthouse Casa Azul in Lisbon for May.\n\
         - The receipt is in the blue folder.\n",
    ),
    (
        "memory/2026-03-09.md",
        "# 2026-03-09\n\n- Joined the climbing gym Bloc Nord.\n- Lent the book Dune to Ana.\n",
    ),
    (
        "memory/projects/garden.md",
        "# Garden\n\nline one about tomatoes\nline two about basil\nline three about \
         watering\nline four about mulch\nline five about compost\nline six about slugs\n\
         line seven about netting\nline eight about the rain barrel\nline nine about seeds\n",
    ),
];

fn write_workspace(dir: &Path) {
    for (path, text) in NOTES {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// One agent over `store`, with the bag-of-words embedder or keyword-only.
fn agent(
    workspace: &Path,
    state: &Path,
    semantics: Semantics,
    embedder: Option<Arc<Words>>,
    store: impl Fn(&Settings) -> Box<dyn Store>,
) -> Agent {
    let env = Env {
        home: Some(state.to_path_buf()),
        state_dir: Some(state.to_path_buf()),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("main", &env);
    settings.workspace = workspace.to_path_buf();
    settings.semantics = semantics;
    if semantics == Semantics::OpenClaw {
        settings.ranking = Ranking::OpenClaw;
    }
    let choice = match embedder {
        Some(words) => EmbedderChoice::Given {
            embedder: words,
            provider: "test".into(),
            model: "words".into(),
        },
        None => {
            settings.provider = ProviderKind::None;
            EmbedderChoice::FromSettings {
                model_dir: None,
                precision: None,
            }
        }
    };
    Agent::open_on(settings, choice, |_, settings| Ok(store(settings))).unwrap()
}

/// Makes a store for an agent's settings.
type OpenStore = dyn Fn(&Settings) -> Box<dyn Store>;

/// The scenario `check` for each store: `(store's name, agent, the embedder's counter)`.
fn on_both_stores(semantics: Semantics, hybrid: bool, check: impl Fn(&str, &Agent, &Words)) {
    #[allow(unused_mut)]
    let mut stores: Vec<(&str, Box<OpenStore>)> = vec![
        (
            "local",
            Box::new(|settings: &Settings| {
                let dir = AgentDir::open(&settings.store_dir()).unwrap();
                Box::new(LocalStore::new(dir, VectorParams::default())) as Box<dyn Store>
            }),
        ),
        (
            "memory",
            Box::new(|_: &Settings| Box::new(MemoryStore::default()) as Box<dyn Store>),
        ),
    ];
    // Fleet mode's LanceDB store, on a directory (tests/fleet.rs runs it on S3).
    #[cfg(feature = "fleet")]
    stores.push((
        "lancedb",
        Box::new(|settings: &Settings| {
            let location = crate::lance::Location {
                uri: settings.state_dir.join("lancedb").display().to_string(),
                options: Vec::new(),
            };
            Box::new(crate::lance::LanceStore::new(&location, &settings.agent_id)) as Box<dyn Store>
        }),
    ));
    for (name, store) in stores {
        let workspace = tempfile::tempdir().unwrap();
        write_workspace(workspace.path());
        let state = tempfile::tempdir().unwrap();
        let words = Arc::new(Words {
            documents: AtomicUsize::new(0),
        });
        let embedder = hybrid.then(|| words.clone());
        let agent = agent(workspace.path(), state.path(), semantics, embedder, store);
        check(name, &agent, &words);
    }
}

fn search(agent: &Agent, query: &str) -> SearchResponse {
    recall::search(agent, query, &SearchOptions::default()).unwrap()
}

fn first_path(response: &SearchResponse) -> &str {
    response.hits.first().map_or("(none)", |h| h.path.as_str())
}

#[test]
fn both_stores_sync_and_answer_hybrid_searches_alike() {
    for semantics in [Semantics::Documented, Semantics::OpenClaw] {
        on_both_stores(semantics, true, |store, agent, words| {
            let report = agent.sync(false, &|_| {}).unwrap();
            // OpenClaw's semantics chunk MEMORY.md per entry.
            let chunks = match semantics {
                Semantics::Documented => 4,
                Semantics::OpenClaw => 6,
            };
            assert_eq!(
                (report.files, report.chunks),
                (4, chunks),
                "{store}: {report:?}"
            );
            let embedded = words.documents.load(Ordering::SeqCst);
            // The garden note's passages too, under memoria's semantics.
            match semantics {
                Semantics::Documented => assert!(embedded > chunks as usize, "{store}"),
                Semantics::OpenClaw => assert_eq!(embedded, chunks as usize, "{store}"),
            }
            for (query, want) in [
                ("when does the cat need her rabies vaccination", "MEMORY.md"),
                (
                    "which guesthouse did I book in Lisbon",
                    "memory/2026-03-02.md",
                ),
                ("who borrowed the book Dune", "memory/2026-03-09.md"),
            ] {
                let response = search(agent, query);
                assert_eq!(response.served.mode, Mode::Hybrid, "{store} {query}");
                assert_eq!(first_path(&response), want, "{store} {semantics:?} {query}");
            }
            // An unchanged workspace syncs without embedding anything again.
            agent.sync(false, &|_| {}).unwrap();
            assert_eq!(words.documents.load(Ordering::SeqCst), embedded, "{store}");
        });
    }
}

#[test]
fn both_stores_follow_edits_and_removals() {
    on_both_stores(Semantics::Documented, true, |store, agent, words| {
        agent.sync(false, &|_| {}).unwrap();
        let before = words.documents.load(Ordering::SeqCst);
        let workspace = &agent.settings().workspace;
        std::fs::write(
            workspace.join("memory/2026-03-09.md"),
            "# 2026-03-09\n\n- Cancelled the climbing gym; joined the swimming pool Piscina Sol.\n",
        )
        .unwrap();
        std::fs::remove_file(workspace.join("memory/2026-03-02.md")).unwrap();
        let report = agent.sync(false, &|_| {}).unwrap();
        assert_eq!(
            (report.indexed, report.removed),
            (1, 1),
            "{store}: {report:?}"
        );
        // Only the edited note was embedded again.
        let embedded = words.documents.load(Ordering::SeqCst) - before;
        assert!((1..=3).contains(&embedded), "{store}: {embedded} embedded");
        let response = search(agent, "which swimming pool did I join");
        assert_eq!(first_path(&response), "memory/2026-03-09.md", "{store}");
        let gone = search(agent, "guesthouse Casa Azul");
        assert!(
            gone.hits.iter().all(|h| h.path != "memory/2026-03-02.md"),
            "{store}: a removed note is not found"
        );
    });
}

#[test]
fn both_stores_serve_keyword_only_and_say_so() {
    on_both_stores(Semantics::Documented, false, |store, agent, _| {
        agent.sync(false, &|_| {}).unwrap();
        let response = search(agent, "rabies vaccination");
        assert_eq!(response.served.mode, Mode::FtsOnly, "{store}");
        assert_eq!(first_path(&response), "MEMORY.md", "{store}");
        let none = search(agent, "zeppelin");
        assert!(none.hits.is_empty(), "{store}");
    });
}

#[test]
fn both_stores_put_a_named_file_first_under_openclaws_ranking() {
    on_both_stores(Semantics::OpenClaw, true, |store, agent, _| {
        agent.sync(false, &|_| {}).unwrap();
        let response = search(agent, "garden.md");
        assert_eq!(
            first_path(&response),
            "memory/projects/garden.md",
            "{store}"
        );
        assert!(response.recall_fields, "{store}: OpenClaw's fields");
    });
}

#[test]
fn both_stores_explain_an_answer_emptied_by_min_score() {
    on_both_stores(Semantics::Documented, true, |store, agent, _| {
        agent.sync(false, &|_| {}).unwrap();
        let options = SearchOptions {
            min_score: Some(0.99),
            ..SearchOptions::default()
        };
        let response = recall::search(agent, "zebra quantum harmonica", &options).unwrap();
        assert!(response.hits.is_empty(), "{store}");
        let warning = response.warning.unwrap_or_default();
        assert!(warning.contains("minScore 0.99"), "{store}: {warning}");
    });
}

#[test]
fn a_second_writer_is_refused_by_both_stores() {
    on_both_stores(Semantics::Documented, false, |store, agent, _| {
        let held = agent.store().writer().unwrap();
        let err = agent.sync(false, &|_| {}).unwrap_err();
        assert!(
            matches!(err, crate::Error::IndexBusy { .. }),
            "{store}: {err}"
        );
        drop(held);
        agent.sync(false, &|_| {}).unwrap();
    });
}

/// `memoria store migrate`: each store's committed index, copied into another store, answers
/// as its source did, with nothing re-chunked or re-embedded (passages' vectors included).
#[test]
fn a_copy_into_another_store_answers_alike() {
    let queries = [
        "when does the cat need her rabies vaccination",
        "guesthouse in Lisbon",
        "rain barrel and seeds",
    ];
    on_both_stores(Semantics::Documented, true, |store, agent, _| {
        agent.sync(false, &|_| {}).unwrap();
        let before: Vec<String> = queries
            .iter()
            .map(|q| first_path(&search(agent, q)).to_string())
            .collect();
        let copy: Box<dyn Store> = Box::new(MemoryStore::default());
        let report = crate::migrate::copy(agent.store(), copy.as_ref()).unwrap();
        assert_eq!((report.files, report.chunks), (4, 4), "{store}: {report:?}");
        assert!(
            report.vectors > report.chunks,
            "{store}: passages too: {report:?}"
        );
        let words = Arc::new(Words {
            documents: AtomicUsize::new(0),
        });
        let choice = EmbedderChoice::Given {
            embedder: words.clone(),
            provider: "test".into(),
            model: "words".into(),
        };
        let copied = Agent::open_on(agent.settings().clone(), choice, |_, _| Ok(copy)).unwrap();
        let after: Vec<String> = queries
            .iter()
            .map(|q| first_path(&search(&copied, q)).to_string())
            .collect();
        assert_eq!(before, after, "{store}");
        assert_eq!(
            words.documents.load(Ordering::SeqCst),
            0,
            "{store}: re-embedded"
        );
    });
}

#[test]
fn a_store_says_whether_a_search_opened_it_cold() {
    // (The unit tests' store in maps holds nothing of its own to report.)
    on_both_stores(Semantics::Documented, false, |store, agent, _| {
        agent.sync(false, &|_| {}).unwrap();
        search(agent, "Lisbon guesthouse");
        let Some(first) = agent.store().cache() else {
            assert_eq!(
                store, "memory",
                "the local and LanceDB stores report what they hold"
            );
            return;
        };
        assert_eq!((first.cold_opens, first.last_search), (1, Some("cold")));
        assert!(first.last_open_ms.is_some() && first.limit_bytes == 1024 << 20);
        search(agent, "Dune");
        let second = agent.store().cache().unwrap();
        assert_eq!((second.cold_opens, second.last_search), (1, Some("warm")));
        // LanceDB's caches hold the tables; the local store counts vector files only, and
        // this index is keyword-only.
        assert_eq!(second.used_bytes > 0, store == "lancedb", "{second:?}");
        // Fleet mode says how large the agent's indexes are (the full-text index here).
        assert_eq!(
            second.index_bytes.is_some_and(|b| b > 0),
            store == "lancedb",
            "{second:?}"
        );
        assert_eq!(agent.store().cache_warning(), None);
    });
}

/// A LanceDB generation past the index threshold is indexed (vectors, chunk ids, passages'
/// chunks) and answers as the same workspace unindexed does, after a change too.
#[cfg(feature = "fleet")]
#[test]
fn a_large_lancedb_generation_is_indexed_and_answers_alike() {
    const ANIMALS: [&str; 6] = ["otter", "heron", "badger", "lynx", "marten", "stoat"];
    // A code word of letters only, one per note: 417 → "kwfci".
    let code = |n: usize| -> String {
        let digits = format!("{n:03}");
        let letters: String = digits
            .bytes()
            .map(|d| char::from(b'b' + (d - b'0')))
            .collect();
        format!("kw{letters}")
    };
    let workspace = tempfile::tempdir().unwrap();
    for n in 0..600 {
        let file = workspace.path().join(format!("memory/notes/n{n:03}.md"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let animal = ANIMALS[n % ANIMALS.len()];
        let mut text = format!(
            "# Note {n}\n\nThe code word of note {n} is {}, kept by the {animal}.\n",
            code(n)
        );
        // Every other note is long enough for passages (a row each: past the threshold).
        if n % 2 == 0 {
            for line in 0..12 {
                text.push_str(&format!(
                    "line {line} of the long note {n} about the {animal}\n"
                ));
            }
        }
        std::fs::write(file, text).unwrap();
    }
    let state = tempfile::tempdir().unwrap();
    let open = |index_rows: u64, dir: &str| {
        let words = Arc::new(Words {
            documents: AtomicUsize::new(0),
        });
        let uri = state.path().join(dir).display().to_string();
        agent(
            workspace.path(),
            &state.path().join(format!("{dir}-state")),
            Semantics::Documented,
            Some(words),
            move |settings| {
                let location = crate::lance::Location {
                    uri: uri.clone(),
                    options: Vec::new(),
                };
                let store = crate::lance::LanceStore::new(&location, &settings.agent_id)
                    .with_index_rows(index_rows);
                Box::new(store) as Box<dyn Store>
            },
        )
    };
    let (indexed, plain) = (open(256, "indexed"), open(u64::MAX, "plain"));
    let queries = [
        code(417),
        format!("code word {}", code(3)),
        "the long note 250 about the lynx".into(),
        "stoat".into(),
    ];
    let firsts = |agent: &Agent| -> Vec<String> {
        queries
            .iter()
            .map(|q| first_path(&search(agent, q)).to_string())
            .collect()
    };
    for agent in [&indexed, &plain] {
        agent.sync(false, &|_| {}).unwrap();
    }
    // What another node sees of the stored tables.
    let columns = |dir: &str| {
        let location = crate::lance::Location {
            uri: state.path().join(dir).display().to_string(),
            options: Vec::new(),
        };
        let store = crate::lance::LanceStore::new(&location, "main");
        store.indexed_columns().unwrap()
    };
    assert_eq!(
        columns("indexed"),
        [
            "chunks.id",
            "chunks.terms",
            "passages.chunk",
            "vectors.vector"
        ]
    );
    assert_eq!(columns("plain"), ["chunks.terms"]);
    assert_eq!(firsts(&indexed), firsts(&plain));
    // `status` says how large its indexes are; they fit the default budget (no warning).
    let cache = indexed.store().cache().unwrap();
    assert!(cache.index_bytes.is_some_and(|b| b > 0), "{cache:?}");
    assert_eq!(indexed.store().cache_warning(), None);
    // A long chunk's vector is its passages' centroid, also where the sync wrote its
    // passages in two appends (the tests' writers hold 64 vectors; see `PENDING_ROWS`).
    let location = crate::lance::Location {
        uri: state.path().join("indexed").display().to_string(),
        options: Vec::new(),
    };
    let reader = crate::lance::LanceStore::new(&location, "main")
        .reader()
        .unwrap();
    let mut long = 0;
    for (_, record) in reader.files().unwrap() {
        for chunk in &record.chunk_ids {
            let ids: Vec<String> = (1..=16).map(|n| crate::passage::id(chunk, n)).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let passages: Vec<Vec<f32>> = reader
                .vectors(&ids)
                .unwrap()
                .into_iter()
                .flatten()
                .collect();
            if passages.is_empty() {
                continue;
            }
            long += 1;
            let own = reader.vectors(&[chunk]).unwrap().remove(0).unwrap();
            let centroid = crate::passage::centroid(&passages);
            let cosine: f32 = own.iter().zip(&centroid).map(|(a, b)| a * b).sum();
            assert!(cosine > 0.999, "chunk {chunk}: cosine {cosine}");
        }
    }
    assert!(long >= 300, "{long} long chunks");
    // (A one-word query's single keyword hit weighs little in the z-score fusion, so the
    // code words are looked up by keyword.)
    let keyword = |agent: &Agent, q: &str| {
        let options = SearchOptions {
            lexical_only: true,
            ..SearchOptions::default()
        };
        recall::search(agent, q, &options).unwrap()
    };
    assert_eq!(
        first_path(&keyword(&indexed, &code(417))),
        "memory/notes/n417.md"
    );

    // A change syncs into the indexes: the new text is found, the old is not.
    std::fs::write(
        workspace.path().join("memory/notes/n417.md"),
        "# Note 417\n\nThe code word of note 417 is now quillwort.\n",
    )
    .unwrap();
    for agent in [&indexed, &plain] {
        agent.sync(false, &|_| {}).unwrap();
    }
    let response = keyword(&indexed, "quillwort");
    assert_eq!(first_path(&response), "memory/notes/n417.md");
    assert!(keyword(&indexed, &code(417))
        .hits
        .iter()
        .all(|h| h.path != "memory/notes/n417.md"));
    assert_eq!(firsts(&indexed), firsts(&plain));
}

/// A LanceDB store an earlier memoria wrote, its passages one row each, answers as before;
/// its next sync rewrites them one row per chunk, from the vectors it holds (nothing is
/// embedded again), and says why it rebuilt.
#[cfg(feature = "fleet")]
#[test]
fn lancedb_passages_one_row_each_are_rebuilt_one_row_per_chunk_from_their_vectors() {
    let workspace = tempfile::tempdir().unwrap();
    write_workspace(workspace.path());
    let state = tempfile::tempdir().unwrap();
    let location = crate::lance::Location {
        uri: state.path().join("lancedb").display().to_string(),
        options: Vec::new(),
    };
    let words = Arc::new(Words {
        documents: AtomicUsize::new(0),
    });
    let opened = location.clone();
    let agent = agent(
        workspace.path(),
        state.path(),
        Semantics::Documented,
        Some(words.clone()),
        move |settings| Box::new(crate::lance::LanceStore::new(&opened, &settings.agent_id)),
    );
    let first = agent.sync(false, &|_| {}).unwrap();
    let answers = |agent: &Agent| -> Vec<(String, f64)> {
        let response = search(agent, "which line is about the rain barrel");
        assert_eq!(response.served.mode, Mode::Hybrid);
        response
            .hits
            .iter()
            .map(|h| (h.path.clone(), h.score))
            .collect()
    };
    let fresh = answers(&agent);
    assert_eq!(fresh[0].0, "memory/projects/garden.md", "{fresh:?}");

    crate::lance::LanceStore::new(&location, "main")
        .write_passages_one_row_each()
        .unwrap();
    let before = answers(&agent);
    assert_eq!(before.len(), fresh.len());
    for ((path, score), (want_path, want)) in before.iter().zip(&fresh) {
        // f32 rows hold the int8 form's values: the same scores, within rounding.
        assert_eq!(path, want_path);
        assert!((score - want).abs() < 1e-4, "{before:?} {fresh:?}");
    }

    let embedded = words.documents.load(Ordering::SeqCst);
    let report = agent.sync(false, &|_| {}).unwrap();
    assert!(report.rebuilt, "{report:?}");
    assert_eq!(report.generation, first.generation + 1);
    assert_eq!(report.embedded, 0, "{report:?}");
    assert_eq!(words.documents.load(Ordering::SeqCst), embedded);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("one row per passage")),
        "{:?}",
        report.warnings
    );
    assert_eq!(answers(&agent), before);
    // Rebuilt once: the next sync updates the generation in place.
    assert!(!agent.sync(false, &|_| {}).unwrap().rebuilt);
}

/// A text a sync finds in several notes is embedded once and found in each.
#[test]
fn a_text_repeated_in_one_sync_is_embedded_once() {
    on_both_stores(Semantics::Documented, true, |store, agent, words| {
        agent.sync(false, &|_| {}).unwrap();
        let before = words.documents.load(Ordering::SeqCst);
        let memory = agent.settings().workspace.join("memory");
        for name in ["a", "b", "c"] {
            std::fs::write(
                memory.join(format!("{name}.md")),
                "# Weekly review\n\nThe weekly review checklist: inbox, calendar, goals.\n",
            )
            .unwrap();
        }
        agent.sync(false, &|_| {}).unwrap();
        assert_eq!(
            words.documents.load(Ordering::SeqCst) - before,
            1,
            "{store}: embedded more than once"
        );
        let response = search(agent, "weekly review checklist");
        let mut paths: Vec<&str> = response.hits.iter().map(|h| h.path.as_str()).collect();
        paths.retain(|p| ["memory/a.md", "memory/b.md", "memory/c.md"].contains(p));
        paths.sort_unstable();
        assert_eq!(
            paths,
            ["memory/a.md", "memory/b.md", "memory/c.md"],
            "{store}"
        );
    });
}
