//! `cache.redb`: the embedding cache of an agent directory (SPEC §4).
//!
//! Keyed by [`cache_key`](crate::store::cache_key): sha256 of (provider, model, provider
//! key, prompt, chunk hash), so a vector is
//! reused by any generation whose embedder would compute the same one — a forced reindex or
//! a chunking change re-embeds only chunks whose text changed. It lives beside the
//! generations, not inside one, for that reason. Entries carry a use stamp; past
//! `cache.maxEntries` the least recently used are pruned first.
//!
//! Only the holder of the writer lock opens it.

use std::path::{Path, PathBuf};

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

use crate::codec;
use crate::error::{Error, Result};

/// key → (stamp u64 LE, vector in either of `codec`'s forms).
const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
/// stamp → key, ordered by age for pruning.
const BY_STAMP: TableDefinition<u64, &str> = TableDefinition::new("by_stamp");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// An open embedding cache.
pub struct EmbeddingCache {
    db: Database,
    path: PathBuf,
}

impl EmbeddingCache {
    pub fn open(path: &Path) -> Result<EmbeddingCache> {
        let db = super::catalog::redb_builder()
            .create(path)
            .map_err(|e| Error::catalog(path, e))?;
        let cache = EmbeddingCache {
            db,
            path: path.to_path_buf(),
        };
        let txn = cache.db.begin_write().map_err(|e| cache.err(e))?;
        {
            txn.open_table(ENTRIES).map_err(|e| cache.err(e))?;
            txn.open_table(BY_STAMP).map_err(|e| cache.err(e))?;
            txn.open_table(META).map_err(|e| cache.err(e))?;
        }
        txn.commit().map_err(|e| cache.err(e))?;
        Ok(cache)
    }

    fn err(&self, e: impl Into<redb::Error>) -> Error {
        Error::catalog(&self.path, e)
    }

    /// Looks `keys` up, marking the hits as just used. Returns one entry per key.
    pub fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>> {
        let txn = self.db.begin_write().map_err(|e| self.err(e))?;
        let out = Tables::open(&txn)
            .and_then(|mut tables| {
                let mut out = Vec::with_capacity(keys.len());
                for key in keys {
                    let found = tables.entry(key)?;
                    let vector = found.as_ref().and_then(|(_, bytes)| codec::decode(bytes));
                    if let Some((old, bytes)) = found {
                        tables.store(key, &bytes, Some(old))?;
                    }
                    out.push(vector);
                }
                tables.finish()?;
                Ok(out)
            })
            .map_err(|e| self.err(e))?;
        txn.commit().map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// Stores vectors already encoded (`codec`), then prunes the least recently used
    /// entries beyond `max_entries`.
    pub fn put_many(&self, items: &[(String, Vec<u8>)], max_entries: usize) -> Result<()> {
        let txn = self.db.begin_write().map_err(|e| self.err(e))?;
        Tables::open(&txn)
            .and_then(|mut tables| {
                for (key, bytes) in items {
                    let old = tables.entry(key)?.map(|(stamp, _)| stamp);
                    tables.store(key, bytes, old)?;
                }
                tables.prune(max_entries)?;
                tables.finish()
            })
            .map_err(|e| self.err(e))?;
        txn.commit().map_err(|e| self.err(e))?;
        Ok(())
    }
}

/// The cache's tables inside one write transaction, with the next use stamp.
struct Tables<'t> {
    entries: redb::Table<'t, &'static str, &'static [u8]>,
    by_stamp: redb::Table<'t, u64, &'static str>,
    meta: redb::Table<'t, &'static str, u64>,
    stamp: u64,
}

impl<'t> Tables<'t> {
    fn open(txn: &'t redb::WriteTransaction) -> std::result::Result<Tables<'t>, redb::Error> {
        let meta = txn.open_table(META)?;
        let stamp = meta.get("stamp")?.map_or(0, |v| v.value());
        Ok(Tables {
            entries: txn.open_table(ENTRIES)?,
            by_stamp: txn.open_table(BY_STAMP)?,
            meta,
            stamp,
        })
    }

    /// The entry of `key` as (use stamp, vector bytes); a malformed entry counts as absent.
    fn entry(&self, key: &str) -> std::result::Result<Option<(u64, Vec<u8>)>, redb::Error> {
        Ok(self.entries.get(key)?.and_then(|v| {
            let value = v.value();
            let stamp = u64::from_le_bytes(value.get(..8)?.try_into().ok()?);
            Some((stamp, value[8..].to_vec()))
        }))
    }

    /// Writes `key` with the next use stamp, dropping its `old` stamp from the age index.
    fn store(
        &mut self,
        key: &str,
        vector_bytes: &[u8],
        old: Option<u64>,
    ) -> std::result::Result<(), redb::Error> {
        if let Some(old) = old {
            self.by_stamp.remove(old)?;
        }
        self.stamp += 1;
        let mut value = self.stamp.to_le_bytes().to_vec();
        value.extend_from_slice(vector_bytes);
        self.entries.insert(key, value.as_slice())?;
        self.by_stamp.insert(self.stamp, key)?;
        Ok(())
    }

    /// Removes the least recently used entries until at most `max_entries` remain.
    fn prune(&mut self, max_entries: usize) -> std::result::Result<(), redb::Error> {
        let mut len = self.entries.len()?;
        while len > max_entries as u64 {
            let Some(key) = self
                .by_stamp
                .pop_first()?
                .map(|(_, k)| k.value().to_string())
            else {
                break;
            };
            self.entries.remove(key.as_str())?;
            len -= 1;
        }
        Ok(())
    }

    fn finish(mut self) -> std::result::Result<(), redb::Error> {
        self.meta.insert("stamp", self.stamp)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cache_key;

    #[test]
    fn least_recently_used_entries_are_pruned_first() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::open(&tmp.path().join("cache.redb")).unwrap();
        let item = |k: &str, v: f32| (k.to_string(), codec::encode_f32(&[v]));
        let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        cache
            .put_many(&[item("a", 1.0), item("b", 2.0)], 2)
            .unwrap();
        // Using "a" makes "b" the oldest, so adding "c" past the limit evicts "b".
        assert_eq!(
            cache.get_many(&keys(&["a"])).unwrap(),
            vec![Some(vec![1.0])]
        );
        cache.put_many(&[item("c", 3.0)], 2).unwrap();
        let got = cache.get_many(&keys(&["a", "b", "c"])).unwrap();
        assert_eq!(got, vec![Some(vec![1.0]), None, Some(vec![3.0])]);
        // Re-putting a key replaces it without growing the cache.
        cache.put_many(&[item("c", 4.0)], 2).unwrap();
        assert_eq!(
            cache.get_many(&keys(&["a", "c"])).unwrap(),
            vec![Some(vec![1.0]), Some(vec![4.0])]
        );
        // A passage's int8 form reads back as its unit vector.
        let passage = ("p".to_string(), codec::encode_int8(&[3.0, 4.0]));
        cache.put_many(&[passage], 3).unwrap();
        let back = cache.get_many(&keys(&["p"])).unwrap().remove(0).unwrap();
        assert!(
            (back[0] - 0.6).abs() < 0.01 && (back[1] - 0.8).abs() < 0.01,
            "{back:?}"
        );
    }

    #[test]
    fn keys_name_the_embedder() {
        assert_ne!(cache_key("model-a", "h"), cache_key("model-b", "h"));
    }
}
