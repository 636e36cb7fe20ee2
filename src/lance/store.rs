//! The handle a process keeps per agent in fleet mode: where the agent lives, its
//! connections, and the reader of its committed generation.
//!
//! Every agent a process opens shares one LanceDB session and one budget,
//! `MEMORIA_FLEET_CACHE_MB` (1024 by default): half for index pages, a quarter for table
//! metadata, a quarter for small generations' vectors held in memory (module `held`); and
//! one registry of object-store clients. A node serving many agents holds one budget
//! rather than LanceDB's default per connection (7 GiB each).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use lance::session::Session;
use lancedb::Connection;

use super::lease::Lease;
use super::reader::LanceReader;
use super::tables::{block, read_committed, Committed};
use super::writer::LanceWriter;
use crate::error::{Error, Result};
use crate::store::{Manifest, Reader, Store, StoreCache, Writer};

/// The variable that sets the process's cache budget, in MB.
const CACHE_MB_ENV: &str = "MEMORIA_FLEET_CACHE_MB";

/// The process's session and its whole budget in bytes: half for LanceDB's index cache,
/// a quarter for its metadata cache, a quarter for the vectors held ([`held_budget`]).
fn session() -> &'static (Arc<Session>, u64) {
    static SESSION: OnceLock<(Arc<Session>, u64)> = OnceLock::new();
    SESSION.get_or_init(|| {
        let megabytes = super::env_number(CACHE_MB_ENV, 1024);
        let bytes = megabytes.saturating_mul(1 << 20);
        let (index, metadata) = (index_share(bytes) as usize, (bytes / 4) as usize);
        let session = Session::new(index, metadata, Default::default());
        (Arc::new(session), bytes)
    })
}

/// What LanceDB's index cache may hold of the process's budget `whole`, all agents
/// together: half.
fn index_share(whole: u64) -> u64 {
    whole / 2
}

/// The variable that turns on (`1`) the loading of a large agent's indexes when it is
/// opened.
const PREWARM_ENV: &str = "MEMORIA_FLEET_PREWARM";

/// Whether a large agent's indexes are loaded whole into the cache, in the background,
/// when it is opened (`MEMORIA_FLEET_PREWARM=1`). Off by default: at 100,000 chunks the
/// searches after a cold open were no faster with it, the cold ones 8 % slower
/// (docs/fleet.md).
fn prewarm() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| match std::env::var(PREWARM_ENV) {
        Err(_) => false,
        Ok(value) => match value.trim() {
            "0" | "false" | "off" => false,
            "1" | "true" | "on" => true,
            _ => {
                tracing::warn!("{PREWARM_ENV}={value:?} is neither 0 nor 1; not prewarming");
                false
            }
        },
    })
}

/// What the process may hold of small generations' vectors (module `held`): a quarter
/// of `MEMORIA_FLEET_CACHE_MB`.
fn held_budget() -> u64 {
    session().1 / 4
}

/// How searches have met an agent's tables in this process.
#[derive(Default)]
struct Opens {
    cold: u64,
    last_cold: Option<bool>,
    last_open_ms: Option<u64>,
    /// The bytes of the indexes of the generation last opened, and whether it was large
    /// (its vectors indexed, not held).
    indexes: Option<(u64, bool)>,
}

/// Where a fleet keeps its agents: a URI (`s3://bucket/prefix`, a local directory) and
/// the object store's options (`aws_endpoint`, `aws_region`, `allow_http`, …; credentials
/// are better left to the environment's `AWS_*` variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    /// The URI under which each agent is `<uri>/<agentId>`.
    pub(crate) uri: String,
    /// LanceDB's storage options.
    pub(crate) options: Vec<(String, String)>,
}

/// An agent's index in LanceDB (see the module docs).
pub(crate) struct LanceStore {
    /// `<uri>/<agentId>`.
    location: String,
    /// `<uri>/.shared`.
    shared: String,
    options: Vec<(String, String)>,
    db: Mutex<Option<Connection>>,
    shared_db: Mutex<Option<Connection>>,
    /// The reader of the committed generation, while the manifest names it.
    reader: Mutex<Option<(Committed, Arc<LanceReader>)>>,
    opens: Mutex<Opens>,
    /// Rows from which a generation's tables are indexed (module `indexes`).
    index_rows: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LanceStore {
    /// The store of agent `agent` under `location` (nothing is opened before the first
    /// use).
    pub(crate) fn new(location: &Location, agent: &str) -> LanceStore {
        let uri = location.uri.trim_end_matches('/');
        LanceStore {
            location: format!("{uri}/{agent}"),
            shared: format!("{uri}/.shared"),
            options: location.options.clone(),
            db: Mutex::new(None),
            shared_db: Mutex::new(None),
            reader: Mutex::new(None),
            opens: Mutex::default(),
            index_rows: super::indexes::index_rows(),
        }
    }

    /// The same store indexing its tables from `rows` rows (tests: an index on a small
    /// workspace).
    #[cfg(test)]
    pub(crate) fn with_index_rows(mut self, rows: u64) -> LanceStore {
        self.index_rows = rows;
        self
    }

    /// The indexed columns of the committed generation's tables, as `table.column`.
    #[cfg(test)]
    pub(crate) fn indexed_columns(&self) -> Result<Vec<String>> {
        let Some(committed) = self.committed()? else {
            return Ok(Vec::new());
        };
        let db = self.db()?;
        block(&self.location, async move {
            let generation = committed.manifest.generation;
            let mut out = Vec::new();
            for (kind, version) in super::tables::TABLES.iter().zip(committed.versions) {
                let name = super::tables::table_name(kind, generation);
                let Some(table) = super::tables::open_at(&db, &name, version).await? else {
                    continue;
                };
                for index in table.list_indices().await? {
                    out.extend(index.columns.iter().map(|c| format!("{kind}.{c}")));
                }
            }
            out.sort();
            Ok(out)
        })
    }

    /// Rewrites the committed generation's passages in the layout before one row per chunk
    /// (one row per passage, f32 vectors), as an earlier memoria left them (tests: the
    /// upgrade).
    #[cfg(test)]
    pub(crate) fn write_passages_one_row_each(&self) -> Result<()> {
        use super::tables::{collect, open_at, runtime_error, table_name};
        let Some(committed) = self.committed()? else {
            return Ok(());
        };
        let db = self.db()?;
        block(&self.location, async move {
            let name = table_name("passages", committed.manifest.generation);
            let Some(table) = open_at(&db, &name, committed.versions[3]).await? else {
                return Ok(());
            };
            let mut passages = Vec::new();
            for batch in collect(table.query()).await? {
                passages.extend(super::rows::passages(&batch).map_err(runtime_error)?);
            }
            db.drop_table(&name, &[]).await?;
            let old = super::rows::passages_batch_one_row_each(&passages);
            let table = db.create_table(&name, old).execute().await?;
            let mut versions = committed.versions;
            versions[3] = table.version().await?;
            let json = serde_json::to_string(&committed.manifest)
                .map_err(|err| runtime_error(err.to_string()))?;
            let manifest = db.open_table("manifest").execute().await?;
            manifest
                .add(super::rows::manifest_batch(&json, versions))
                .mode(lancedb::table::AddDataMode::Overwrite)
                .execute()
                .await?;
            Ok(())
        })
    }

    fn connect(&self, slot: &Mutex<Option<Connection>>, uri: &str) -> Result<Connection> {
        let mut slot = lock(slot);
        if let Some(db) = slot.as_ref() {
            return Ok(db.clone());
        }
        let (uri, options) = (uri.to_string(), self.options.clone());
        let db = block(&self.location, async move {
            let mut builder = lancedb::connect(&uri).session(session().0.clone());
            for (key, value) in options {
                builder = builder.storage_option(key, value);
            }
            builder.execute().await
        })?;
        *slot = Some(db.clone());
        Ok(db)
    }

    /// The agent's database.
    fn db(&self) -> Result<Connection> {
        self.connect(&self.db, &self.location.clone())
    }

    /// The database agents share (the embedding cache).
    fn shared_db(&self) -> Result<Connection> {
        self.connect(&self.shared_db, &self.shared.clone())
    }

    fn committed(&self) -> Result<Option<Committed>> {
        let db = self.db()?;
        block(&self.location, async move { read_committed(&db).await })
    }
}

impl Store for LanceStore {
    fn manifest(&self) -> Result<Option<Manifest>> {
        Ok(self.committed()?.map(|c| c.manifest))
    }

    fn reader(&self) -> Result<Arc<dyn Reader>> {
        let Some(committed) = self.committed()? else {
            return Err(Error::NoIndex {
                dir: self.location.clone().into(),
            });
        };
        let mut kept = lock(&self.reader);
        if let Some((c, reader)) = kept.as_ref() {
            if *c == committed {
                lock(&self.opens).last_cold = Some(false);
                return Ok(reader.clone());
            }
        }
        let started = Instant::now();
        let reader = Arc::new(LanceReader::open(
            &self.location,
            self.db()?,
            committed.clone(),
            self.index_rows,
            held_budget(),
        )?);
        // A large agent's searches read its indexes piece by piece from the store until
        // the cache holds them: load them whole, in the background, when asked and they
        // fit.
        let (index_bytes, large) = (reader.index_bytes(), reader.large());
        if large && index_bytes <= index_share(session().1) && prewarm() {
            reader.prewarm();
        }
        let mut opens = lock(&self.opens);
        opens.cold += 1;
        opens.last_cold = Some(true);
        opens.last_open_ms = Some(started.elapsed().as_millis() as u64);
        opens.indexes = Some((index_bytes, large));
        *kept = Some((committed, reader.clone()));
        Ok(reader)
    }

    /// Forgets the kept reader (`reader` also reopens one whenever the manifest row it
    /// reads names another generation or versions).
    fn invalidate(&self) {
        *lock(&self.reader) = None;
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        let db = self.db()?;
        let lease = Lease::take(&self.location, &db)?;
        let shared = self.shared_db()?;
        Ok(Box::new(LanceWriter::new(
            &self.location,
            db,
            shared,
            lease,
            self.index_rows,
        )))
    }

    fn cache(&self) -> Option<StoreCache> {
        let (session, limit) = session();
        let opens = lock(&self.opens);
        Some(StoreCache {
            limit_bytes: *limit,
            used_bytes: session.size_bytes() + super::held::bytes(),
            cold_opens: opens.cold,
            last_search: opens
                .last_cold
                .map(|cold| if cold { "cold" } else { "warm" }),
            last_open_ms: opens.last_open_ms,
            index_bytes: opens.indexes.map(|(bytes, _)| bytes),
        })
    }

    fn cache_warning(&self) -> Option<String> {
        let (bytes, large) = lock(&self.opens).indexes?;
        index_cache_warning(bytes, large, session().1)
    }
}

/// What `status` says when a large agent's indexes (`bytes`) are larger than the index
/// cache (half of the process's budget, `whole`): the budget that would hold them. A small
/// agent's vectors are held, not indexed, and its indexes read little.
fn index_cache_warning(bytes: u64, large: bool, whole: u64) -> Option<String> {
    let mib = |bytes: u64| bytes.div_ceil(1 << 20);
    let budget = index_share(whole);
    (large && bytes > budget).then(|| {
        format!(
            "this agent's indexes take {} MiB, more than LanceDB's index cache holds ({} MiB, \
             half of {CACHE_MB_ENV}={}): its searches read them from the object store again \
             and again (seconds each at a million chunks); set {CACHE_MB_ENV} to {} or more \
             (docs/fleet.md)",
            mib(bytes),
            mib(budget),
            mib(whole),
            (mib(bytes) * 2).next_multiple_of(512),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_warns_when_a_large_agents_indexes_outgrow_the_index_cache() {
        const MIB: u64 = 1 << 20;
        // (index bytes, large, the whole budget) → the budget suggested, if any.
        let cases = [
            (300 * MIB, true, 1024 * MIB, None),
            (512 * MIB, true, 1024 * MIB, None),
            (513 * MIB, true, 1024 * MIB, Some(1536)),
            (1200 * MIB, true, 1024 * MIB, Some(2560)),
            (1200 * MIB, false, 1024 * MIB, None),
            (1200 * MIB, true, 4096 * MIB, None),
        ];
        for (bytes, large, whole, suggested) in cases {
            let warning = index_cache_warning(bytes, large, whole);
            match suggested {
                None => assert_eq!(warning, None, "{bytes} {large} {whole}"),
                Some(mb) => {
                    let warning = warning.unwrap();
                    assert!(
                        warning.contains(&format!("{CACHE_MB_ENV} to {mb} or more")),
                        "{warning}"
                    );
                    assert!(warning.contains(&format!("take {} MiB", bytes / MIB)));
                }
            }
        }
    }
}
