//! Recall: one agent's answer to a query, whichever engine gives it.
//!
//! With `memory.backend = "qmd"` the QMD sidecar answers first (within
//! `memory.qmd.scope`); when it cannot, memoria's own index answers and the payload's
//! `fallback` says why. memoria's own search keeps the index fresh first
//! ([`Agent::freshen`]), heals a damaged keyword index, runs the search pipeline over the
//! current generation, and notes when the results come from an index the last sync could
//! not update.

use crate::config::{ChatType, ProviderKind};
use crate::error::{Error, Result};
use crate::fallback::Fallback;
use crate::freshness::Agent;
use crate::payload::{self, SearchPayload, StoredFile};
use crate::qmd;
use crate::search::pipeline::{configured, Searcher, NO_VECTOR_INDEX};
use crate::search::rank;
use crate::search::{Corpus, Hit, Mode, SearchOptions, SearchResponse, WikiPage};
use crate::wiki;

/// Searches memory: the ranked hits and what served them (SPEC §5).
pub(crate) fn search(
    agent: &Agent,
    query: &str,
    options: &SearchOptions,
) -> Result<SearchResponse> {
    if options.corpus == Corpus::Wiki {
        let mut response = empty(agent, None);
        if !query.trim().is_empty() {
            merge_wiki(agent, query, options, &mut response);
        } else {
            response.warning = Some("the query is empty".into());
        }
        return Ok(response);
    }
    let mut response = search_memory(agent, query, options)?;
    if options.corpus == Corpus::All && !query.trim().is_empty() {
        merge_wiki(agent, query, options, &mut response);
    }
    Ok(response)
}

/// A response with no hits, served as configured, with `warning`.
fn empty(agent: &Agent, warning: Option<&str>) -> SearchResponse {
    let mut served = configured(agent.resolved(), None);
    served.backend = agent.qmd().map(|_| "builtin".to_string());
    SearchResponse::new(Vec::new(), served, warning.map(str::to_string))
}

/// The memory-wiki vault's pages for `query`, merged into `response` as OpenClaw 2026.9
/// merges its corpora (balanced under `corpus: "all"`), `maxResults` (10 by default) in
/// all. With `corpus: "wiki"`, the warning says why nothing was found; under `all`, a
/// missing vault is no news.
fn merge_wiki(agent: &Agent, query: &str, options: &SearchOptions, response: &mut SearchResponse) {
    let only = options.corpus == Corpus::Wiki;
    let say = |response: &mut SearchResponse, why: String| {
        if only {
            response.warning = Some(why);
        }
    };
    let vault = agent.settings().wiki_vault();
    let pages = match wiki::vault_pages(vault.as_deref()) {
        Ok(pages) => pages,
        Err(why) => return say(response, why),
    };
    let count = pages.len();
    let hits: Vec<Hit> = wiki::search(pages, query)
        .into_iter()
        .map(wiki_hit)
        .collect();
    if hits.is_empty() {
        return say(
            response,
            format!(
                "no wiki page matches: none of the {count} pages of the vault holds the \
                 query or every word of it"
            ),
        );
    }
    let memory = std::mem::take(&mut response.hits);
    if memory.is_empty() {
        // Why memory found nothing is no longer why the answer is empty.
        response.warning = None;
    }
    let max = options.max_results.unwrap_or(10);
    response.hits = rank::merge_corpora(memory, hits, max, !only, |h: &Hit| h.score);
}

/// A wiki page found by a query, as a hit.
fn wiki_hit(hit: wiki::WikiHit) -> Hit {
    let page = hit.page;
    Hit {
        id: format!("wiki:{}", page.path),
        path: page.path,
        source: "wiki".into(),
        start_line: hit.line,
        end_line: hit.line,
        text: hit.snippet,
        score: hit.score,
        text_score: 0.0,
        vector_score: None,
        recall: Default::default(),
        wiki: Some(WikiPage {
            title: page.title,
            kind: page.kind,
            id: page.id,
            aliases: page.aliases,
            fields: page.fields,
        }),
        supersedes: None,
    }
}

/// memoria's own index, or QMD (memory files and transcripts).
fn search_memory(agent: &Agent, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
    let query = query.trim();
    let settings = agent.settings();
    let empty = |warning: &str| Ok(empty(agent, Some(warning)));
    if query.is_empty() {
        return empty("the query is empty");
    }
    if options.corpus == Corpus::Sessions && settings.sessions_dir().is_none() {
        return empty(
            "session transcripts are not indexed: set experimental.sessionMemory = true \
             and add \"sessions\" to memorySearch.sources",
        );
    }
    let mut qmd_failure = None;
    if let Some(qmd) = agent.qmd() {
        if let Err(why) = qmd::scope::check(&settings.qmd.scope, &options.chat) {
            return empty(&why);
        }
        // QMD has no corpus filter: a sessions-only search is memoria's own.
        if options.corpus != Corpus::Sessions {
            match qmd.search(query) {
                Ok(hits) => return Ok(qmd::response(hits, &settings.qmd)),
                Err(why) => qmd_failure = Some(why),
            }
        }
    }
    let mut response = search_builtin(agent, query, options)?;
    if agent.qmd().is_some() {
        response.served.backend = Some("builtin".into());
    }
    if let Some(why) = qmd_failure {
        let reason = match response.served.fallback.take() {
            Some(inner) => format!(
                "{why}; memoria's own index answers ({} fell back: {})",
                inner.from, inner.reason
            ),
            None => format!("{why}; memoria's own index answers"),
        };
        response.served.fallback = Some(Fallback {
            from: "qmd".into(),
            reason,
        });
    }
    Ok(response)
}

/// memoria's own search.
fn search_builtin(agent: &Agent, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
    agent.freshen()?;
    let reader = agent.heal_keyword_index(agent.reader()?)?;
    let searcher = Searcher {
        settings: agent.settings(),
        embedder: agent.resolved(),
        reader: reader.as_ref(),
    };
    let mut response = searcher.search(query, options)?;
    if let Some(fallback) = response.served.fallback.as_mut() {
        // The index searched has no vectors, and a sync (a first index with the embedder,
        // or a rebuild after a keyword-only one) is building them now: not "run `memoria
        // index`", which is what runs.
        if fallback.reason == NO_VECTOR_INDEX && crate::status::sync_running(agent) {
            fallback.reason = "a sync is building the vectors: keyword search until it \
                               commits the first ones"
                .into();
        }
    }
    if let Some(note) = crate::status::vectors_note(agent, &reader.manifest().stats) {
        response.warning = Some(match response.warning.take() {
            Some(warning) => format!("{warning}; {note}"),
            None => note,
        });
    }
    if let Some(error) = agent.sync_error() {
        let stale = format!(
            "the index could not be synced ({error}); these results come from the last \
             committed index"
        );
        match &mut response.served.fallback {
            Some(fallback) => fallback.reason = format!("{}; {stale}", fallback.reason),
            None => {
                response.served.fallback = Some(Fallback {
                    from: "sync".into(),
                    reason: stale,
                })
            }
        }
    }
    Ok(response)
}

/// The `memory_search` tool: never fails, errors become the SPEC §6 error payload.
pub(crate) fn memory_search(agent: &Agent, query: &str, options: &SearchOptions) -> SearchPayload {
    match search(agent, query, options) {
        Ok(response) => {
            if let Some(reason) = fails_closed(agent, &response, options) {
                let mut payload = SearchPayload::unavailable(reason);
                payload.warning = Some(
                    "memory search is unavailable: the embedding provider the config names \
                     explicitly cannot serve, and OpenClaw 2026.9 does not fall back to \
                     keywords then (set provider to auto, local or none to allow it)"
                        .into(),
                );
                return payload;
            }
            let group = options.chat.chat_type != ChatType::Direct;
            payload::search_payload(&response, agent.settings().citations, group)
        }
        Err(err) => SearchPayload::unavailable(err.to_string()),
    }
}

/// Under OpenClaw 2026.9's semantics an explicitly named remote provider fails closed: when
/// it (and the configured `fallback`) cannot serve, the search is unavailable, with the
/// reason, rather than keyword-only. `none`, `auto` and `local` still fall back to
/// keywords, as there.
fn fails_closed(
    agent: &Agent,
    response: &SearchResponse,
    options: &SearchOptions,
) -> Option<String> {
    let settings = agent.settings();
    let explicit_remote = !matches!(
        settings.provider,
        ProviderKind::None | ProviderKind::Auto | ProviderKind::Local
    );
    let served = &response.served;
    let keyword_only = served.mode == Mode::FtsOnly && agent.resolved().embedder.is_none();
    if !settings.semantics.is_openclaw()
        || !explicit_remote
        || !keyword_only
        || options.lexical_only
    {
        return None;
    }
    let reason = served.fallback.as_ref().map_or_else(
        || "it could not be set up".to_string(),
        |f| f.reason.clone(),
    );
    Some(format!(
        "the {} embedding provider cannot serve: {reason}",
        settings.provider.as_str()
    ))
}

/// The index's copy of the file indexed as `path` (its chunks in the current generation),
/// for `memory_get` where the file's workspace is not on this machine; `None` when the
/// index holds no such file (or there is no index yet).
pub(crate) fn stored_file(
    agent: &Agent,
    path: &str,
) -> std::result::Result<Option<StoredFile>, String> {
    let read = || -> Result<Option<StoredFile>> {
        let reader = agent.reader()?;
        let Some((_, record)) = reader.files()?.into_iter().find(|(p, _)| p == path) else {
            return Ok(None);
        };
        let chunks = reader.chunks(&record.chunk_ids)?;
        Ok(Some(StoredFile {
            generation: reader.manifest().generation,
            chunks: chunks.into_iter().map(|(_, chunk)| chunk).collect(),
        }))
    };
    match read() {
        Err(Error::NoIndex { .. }) => Ok(None),
        read => read.map_err(|err| err.to_string()),
    }
}
