//! Exact and HNSW searches agree; tombstones, zero vectors, saves and damaged files.

use super::index::*;
use super::*;
use crate::simd::l2_normalize as normalize;
use std::fs;

use super::snapshot::{read_meta, META};

/// Deterministic xorshift with a rough normal sampler.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn normal(&mut self) -> f32 {
        (0..4).map(|_| self.uniform()).sum::<f32>() - 2.0
    }
}

/// `n` vectors around `clusters` random centres.
fn clustered(n: usize, dims: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dims).map(|_| rng.normal()).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centres[(rng.next_u64() % clusters as u64) as usize];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * rng.normal()).collect();
            normalize(&mut v);
            v
        })
        .collect()
}

fn id(i: usize) -> String {
    format!("{i:032x}")
}

fn entries(vectors: &[Vec<f32>]) -> Vec<(String, Vec<f32>)> {
    vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (id(i), v.clone()))
        .collect()
}

fn exact_params() -> VectorParams {
    VectorParams {
        exact_threshold: usize::MAX,
        ..VectorParams::default()
    }
}

fn hnsw_params() -> VectorParams {
    VectorParams {
        exact_threshold: 1,
        ..VectorParams::default()
    }
}

fn ids_of(hits: &[(String, f32)]) -> Vec<String> {
    hits.iter().map(|(id, _)| id.clone()).collect()
}

#[test]
fn index_is_send_and_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<VectorIndex>();
}

#[test]
fn exact_and_hnsw_agree_on_small_data() {
    let data = clustered(3000, 64, 30, 7);
    let exact = VectorIndex::build(64, entries(&data), &exact_params()).unwrap();
    let hnsw = VectorIndex::build(64, entries(&data), &hnsw_params()).unwrap();
    assert!(!exact.is_hnsw() && hnsw.is_hnsw());
    assert_eq!((exact.len(), hnsw.len()), (3000, 3000));
    let queries = clustered(100, 64, 30, 99);
    let recall = |hnsw: &VectorIndex| {
        let mut found = 0;
        for q in &queries {
            let e = exact.search(q, 10);
            let h = hnsw.search(q, 10);
            assert_eq!((e.len(), h.len()), (10, 10));
            assert!(e.windows(2).all(|w| w[0].1 >= w[1].1), "sorted");
            assert!(h.windows(2).all(|w| w[0].1 >= w[1].1), "sorted");
            let e_ids = ids_of(&e);
            found += h.iter().filter(|(id, _)| e_ids.contains(id)).count();
            // Scores are the same cosine on both sides, within f16 rounding.
            for (id, score) in &h {
                if let Some((_, s)) = e.iter().find(|(i, _)| i == id) {
                    assert!((s - score).abs() < 1e-3, "{s} vs {score}");
                }
            }
        }
        found as f64 / 1000.0
    };
    // Dense, equidistant blobs: the hard case for a graph (the 768-d bench gets 1.000).
    let at_default = recall(&hnsw);
    assert!(at_default >= 0.94, "recall {at_default}");
    let mut hnsw = hnsw;
    hnsw.set_ef_search(400);
    let wide = recall(&hnsw);
    assert!(wide >= 0.99 && wide >= at_default, "recall {wide}");
    // A stored vector finds itself first in both.
    for i in [0, 1234, 2999] {
        assert_eq!(exact.search(&data[i], 1)[0].0, id(i));
        let (top, score) = &hnsw.search(&data[i], 1)[0];
        assert_eq!(top, &id(i));
        // (Its f16 point's cosine with the query's f16 form.)
        assert!((score - 1.0).abs() < 1e-3, "{score}");
    }
}

#[test]
fn tombstones_are_never_returned() {
    let data = clustered(2000, 32, 20, 3);
    for params in [exact_params(), hnsw_params()] {
        let mut index = VectorIndex::build(32, entries(&data), &params).unwrap();
        for i in (0..2000).step_by(3) {
            assert!(index.remove(&id(i)));
        }
        assert!(!index.remove(&id(0)), "already removed");
        assert!(!index.remove("missing"));
        assert_eq!(index.len(), 2000 - 667);
        assert!(!index.contains(&id(3)) && index.contains(&id(4)));
        let mut live: Vec<&str> = index.ids().collect();
        live.sort_unstable();
        let expected: Vec<String> = (0..2000).filter(|i| i % 3 != 0).map(id).collect();
        assert_eq!(live, expected);
        for q in clustered(50, 32, 20, 11).iter().chain(&data[..30]) {
            let hits = index.search(q, 25);
            assert_eq!(hits.len(), 25);
            for (hit, _) in &hits {
                let i = usize::from_str_radix(hit, 16).unwrap();
                assert_ne!(i % 3, 0, "tombstone {hit} returned");
            }
        }
        // A third of the graph is tombstoned: past the 20% default.
        assert_eq!(index.needs_rebuild(), index.is_hnsw());
    }
}

#[test]
fn removing_and_re_adding_an_id_works() {
    let data = clustered(500, 16, 5, 5);
    for params in [exact_params(), hnsw_params()] {
        let mut index = VectorIndex::build(16, entries(&data), &params).unwrap();
        let target = data[42].clone();
        assert_eq!(index.search(&target, 1)[0].0, id(42));
        assert!(index.remove(&id(42)));
        assert!(index.search(&target, 500).iter().all(|(i, _)| i != &id(42)));
        index.insert(id(42), target.clone()).unwrap();
        assert_eq!(index.len(), 500);
        assert_eq!(index.search(&target, 1)[0].0, id(42));
        // Insert of an existing id replaces its vector.
        let other = data[7].clone();
        index.insert(id(42), other.clone()).unwrap();
        assert_eq!(index.len(), 500);
        let hits = index.search(&other, 2);
        assert_eq!(
            hits.iter().filter(|(i, _)| i == &id(42)).count(),
            1,
            "{hits:?}"
        );
        assert!(index.search(&target, 1)[0].0 != id(42) || target == other);
    }
}

#[test]
fn save_load_round_trip_keeps_results_and_tag() {
    let data = clustered(1500, 24, 15, 9);
    let queries = clustered(20, 24, 15, 10);
    for params in [exact_params(), hnsw_params()] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("vectors");
        assert!(VectorIndex::load(&dir).unwrap().is_none(), "absent");
        let mut index = VectorIndex::build(24, entries(&data), &params).unwrap();
        index.remove(&id(3));
        index.insert(id(5000), vec![0.0; 24]).unwrap();
        index.save(&dir, 41).unwrap();
        index.insert(id(6000), data[0].clone()).unwrap();
        index.save(&dir, 42).unwrap();
        // Only the newest snapshot survives.
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n == META || n.starts_with("s000042-")));
        assert_eq!(
            names.len(),
            if index.is_hnsw() { 5 } else { 4 },
            "{names:?}"
        );

        let (loaded, tag) = VectorIndex::load(&dir).unwrap().unwrap();
        assert_eq!(tag, 42);
        assert_eq!(loaded.len(), index.len());
        assert_eq!(loaded.dims(), 24);
        assert_eq!(loaded.is_hnsw(), index.is_hnsw());
        assert_eq!(loaded.params(), index.params());
        assert_eq!(loaded.needs_rebuild(), index.needs_rebuild());
        for q in &queries {
            let (a, b) = (index.search(q, 10), loaded.search(q, 10));
            assert_eq!(ids_of(&a), ids_of(&b));
        }
        assert!(loaded
            .search(&data[3], 1500)
            .iter()
            .all(|(i, _)| i != &id(3)));
        assert_eq!(loaded.search(&data[0], 2).len(), 2);
    }
}

#[test]
fn a_chunk_with_passages_scores_the_best_of_them() {
    let data = clustered(300, 16, 6, 31);
    let passage = |chunk: usize, n: usize| format!("{}#{n}", id(chunk));
    for params in [exact_params(), hnsw_params()] {
        let mut items = entries(&data);
        // Chunk 7's first passage points away from chunk 100, its second where it does.
        items.push((passage(7, 1), data[100].iter().map(|x| -x).collect()));
        items.push((passage(7, 2), data[100].clone()));
        let mut index = VectorIndex::build(16, items, &params).unwrap();
        assert_eq!((index.len(), index.passage_count()), (300, 2));
        assert!(index.contains(&passage(7, 2)) && !index.contains(&passage(7, 3)));
        let own: f32 = {
            let (mut a, mut b) = (data[7].clone(), data[100].clone());
            normalize(&mut a);
            normalize(&mut b);
            a.iter().zip(&b).map(|(x, y)| x * y).sum()
        };
        let score = |index: &VectorIndex| {
            let hits = index.search(&data[100], 300);
            assert!(hits.iter().all(|(i, _)| !i.contains('#')), "{hits:?}");
            assert_eq!(hits.len(), 300);
            hits.into_iter().find(|(i, _)| i == &id(7)).unwrap().1
        };
        assert!(score(&index) > 0.99, "the passage lifts the chunk");

        let tmp = tempfile::tempdir().unwrap();
        index.save(tmp.path(), 1).unwrap();
        let (mut loaded, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
        assert_eq!(loaded.passage_count(), 2);
        assert_eq!(score(&loaded), score(&index));

        for index in [&mut index, &mut loaded] {
            // Without that passage, the other one scores the chunk (its own vector only
            // places it), and without passages its own cosine does.
            assert!(index.remove(&passage(7, 2)) && !index.remove(&passage(7, 2)));
            assert!(score(index) < -0.99, "{}", score(index));
            assert!(index.remove(&passage(7, 1)));
            // (A graph's f16 point rounds it.)
            let within = if index.is_hnsw() { 1e-3 } else { 1e-4 };
            assert!(
                (score(index) - own).abs() < within,
                "{} vs {own}",
                score(index)
            );
            index.insert(passage(7, 2), data[100].clone()).unwrap();
            assert!(score(index) > 0.99);
        }
    }
}

#[test]
fn insert_and_remove_after_load() {
    let data = clustered(1200, 32, 12, 21);
    let tmp = tempfile::tempdir().unwrap();
    let index = VectorIndex::build(32, entries(&data[..1000]), &hnsw_params()).unwrap();
    index.save(tmp.path(), 1).unwrap();
    drop(index);
    let (mut index, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
    // Half through the parallel batch path (with a repeated id), half one by one.
    let mut batch: Vec<(String, Vec<f32>)> =
        (1000..1100).map(|i| (id(i), data[i].clone())).collect();
    batch.insert(0, (id(1050), data[0].clone()));
    let mut bad = batch.clone();
    bad.push((id(5), vec![1.0; 3]));
    assert!(index.extend(bad).is_err());
    assert_eq!(index.len(), 1000, "a failed extend changes nothing");
    index.extend(batch).unwrap();
    for (i, v) in data.iter().enumerate().skip(1100) {
        index.insert(id(i), v.clone()).unwrap();
    }
    assert!(index.remove(&id(10)));
    assert_eq!(index.len(), 1199);
    let mut top1 = 0;
    for i in (1000..1200).step_by(5) {
        top1 += usize::from(index.search(&data[i], 1)[0].0 == id(i));
    }
    assert!(top1 >= 38, "{top1}/40 new vectors find themselves");
    assert!(index
        .search(&data[10], 1200)
        .iter()
        .all(|(i, _)| i != &id(10)));
    // And the grown index saves and loads again.
    index.save(tmp.path(), 2).unwrap();
    let (again, tag) = VectorIndex::load(tmp.path()).unwrap().unwrap();
    assert_eq!((again.len(), tag), (1199, 2));
    assert_eq!(again.search(&data[1100], 1)[0].0, id(1100));
}

#[test]
fn damaged_files_are_errors_naming_the_file() {
    let data = clustered(800, 16, 8, 4);
    for params in [exact_params(), hnsw_params()] {
        let tmp = tempfile::tempdir().unwrap();
        let mut items = entries(&data);
        items.extend((0..40).map(|i| (format!("{}#1", id(i)), data[i + 400].clone())));
        let index = VectorIndex::build(16, items, &params).unwrap();
        index.save(tmp.path(), 7).unwrap();
        let meta = read_meta(&tmp.path().join(META)).unwrap().unwrap();
        for sum in &meta.files {
            let path = tmp.path().join(&sum.name);
            let original = fs::read(&path).unwrap();
            // A flipped byte, then a truncation.
            let mut flipped = original.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x55;
            fs::write(&path, &flipped).unwrap();
            let err = VectorIndex::load(tmp.path()).unwrap_err();
            assert!(err.to_string().contains(&sum.name), "{err}");
            fs::write(&path, &original[..original.len() - 3]).unwrap();
            let err = VectorIndex::load(tmp.path()).unwrap_err();
            assert!(err.to_string().contains(&sum.name), "{err}");
            fs::write(&path, &original).unwrap();
            assert!(VectorIndex::load(tmp.path()).unwrap().is_some());
        }
        fs::remove_file(tmp.path().join(&meta.files[1].name)).unwrap();
        let err = VectorIndex::load(tmp.path()).unwrap_err();
        assert!(err.to_string().contains(&meta.files[1].name), "{err}");
        fs::write(tmp.path().join(META), "{\"format\": 1, \"tag\"").unwrap();
        let err = VectorIndex::load(tmp.path()).unwrap_err();
        assert!(err.to_string().contains(META), "{err}");
    }
}

#[test]
fn zero_vectors_never_panic() {
    let mut data = clustered(300, 8, 3, 8);
    data[5] = vec![0.0; 8];
    data[6] = vec![0.0; 8];
    let zero = vec![0.0f32; 8];
    for params in [exact_params(), hnsw_params()] {
        let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
        assert!(index.search(&zero, 10).is_empty(), "zero query");
        assert!(index.search(&[f32::NAN; 8], 10).is_empty());
        assert!(index.search(&[1.0; 7], 10).is_empty(), "wrong length");
        let hits = index.search(&data[0], 300);
        assert_eq!(hits.len(), 300);
        for z in [id(5), id(6)] {
            let (_, score) = hits.iter().find(|(i, _)| i == &z).unwrap();
            assert_eq!(*score, 0.0);
        }
        // Zero vectors rank below positive matches and above negative ones.
        let first_zero = hits.iter().position(|(_, s)| *s == 0.0).unwrap();
        assert!(hits[..first_zero].iter().all(|(_, s)| *s > 0.0));
        assert!(hits[first_zero + 2..].iter().all(|(_, s)| *s <= 0.0));
        assert!(index.search(&data[0], 10).iter().all(|(_, s)| *s > 0.0));
        index.insert(id(999), zero.clone()).unwrap();
        assert!(index.remove(&id(5)));
        assert_eq!(index.search(&data[0], 1000).len(), 300);
        let tmp = tempfile::tempdir().unwrap();
        index.save(tmp.path(), 3).unwrap();
        let (loaded, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
        assert_eq!(loaded.search(&data[0], 1000).len(), 300);
    }
    // All-zero input never makes an empty graph.
    let all_zero = vec![(id(1), zero.clone()), (id(2), zero.clone())];
    let index = VectorIndex::build(8, all_zero, &hnsw_params()).unwrap();
    assert!(!index.is_hnsw());
    assert_eq!(index.search(&data[0], 5).len(), 2);
}

#[test]
fn k_larger_than_len_returns_every_live_vector() {
    let data = clustered(120, 16, 4, 12);
    for params in [exact_params(), hnsw_params()] {
        let mut index = VectorIndex::build(16, entries(&data), &params).unwrap();
        assert_eq!(index.search(&data[1], 1000).len(), 120);
        assert_eq!(index.search(&data[1], 0).len(), 0);
        for i in 0..100 {
            index.remove(&id(i));
        }
        let hits = index.search(&data[1], 1000);
        assert_eq!(hits.len(), 20);
        assert!(hits
            .iter()
            .all(|(i, _)| usize::from_str_radix(i, 16).unwrap() >= 100));
    }
    let empty = VectorIndex::build(16, Vec::new(), &VectorParams::default()).unwrap();
    assert!(empty.is_empty() && empty.search(&data[0], 5).is_empty());
}

#[test]
fn bad_vectors_are_rejected_and_leave_the_index_unchanged() {
    let data = clustered(50, 8, 2, 1);
    let mut index = VectorIndex::build(8, entries(&data), &exact_params()).unwrap();
    let err = index.insert(id(3), vec![1.0; 7]).unwrap_err();
    assert!(err.to_string().contains(&id(3)), "{err}");
    assert!(index.insert(id(3), vec![f32::INFINITY; 8]).is_err());
    assert_eq!(index.search(&data[3], 1)[0].0, id(3), "old vector kept");
    let bad = vec![(id(1), vec![0.5; 9])];
    assert!(VectorIndex::build(8, bad, &exact_params()).is_err());
    assert!(VectorIndex::build(0, Vec::new(), &exact_params()).is_err());
}

#[test]
fn representation_follows_size() {
    let data = clustered(400, 8, 4, 2);
    let params = VectorParams {
        exact_threshold: 300,
        ..VectorParams::default()
    };
    let mut index = VectorIndex::build(8, entries(&data[..299]), &params).unwrap();
    assert!(!index.is_hnsw() && !index.needs_rebuild());
    index.insert(id(299), data[299].clone()).unwrap();
    assert!(index.needs_rebuild(), "exact at the threshold");
    let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
    assert!(index.is_hnsw() && !index.needs_rebuild());
    // Replacing 150 vectors tombstones 150 of 550 points (27% > 20%).
    for (i, v) in data.iter().enumerate().take(150) {
        index.insert(id(i), v.clone()).unwrap();
    }
    assert!(index.needs_rebuild(), "tombstones");
    let params = VectorParams {
        max_tombstone_fraction: 0.9,
        ..params
    };
    let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
    index.insert(id(1), vec![0.0; 8]).unwrap();
    assert!(!index.needs_rebuild());
    for i in 0..260 {
        index.remove(&id(i));
    }
    assert!(index.needs_rebuild(), "below half the threshold");
}

/// hnsw_rs stores the distance's type name in every dump and refuses another on load: the
/// name is part of the on-disk format (moving the type made every saved graph rebuild).
#[test]
fn the_distance_type_name_is_stable() {
    assert_eq!(
        std::any::type_name::<UnitCosine>(),
        "memoria::index::vector::UnitCosine"
    );
    assert_eq!(
        std::any::type_name::<HalfCosine>(),
        "memoria::index::vector::HalfCosine"
    );
}

/// One delta: the chunk ids removed, the vectors added.
type Step = (Vec<String>, Vec<(String, Vec<f32>)>);

/// `entries` gathered for a delta.
fn stored(dims: usize, entries: &[(String, Vec<f32>)]) -> Stored {
    let mut stored = Stored::new(dims);
    for (id, vector) in entries {
        stored.insert(id.clone(), vector.clone()).unwrap();
    }
    stored
}

/// The final set of a sequence of deltas, as one index would hold it: `base` minus every
/// removed id, plus the added entries (later ones replacing earlier).
fn apply_by_hand(base: &[(String, Vec<f32>)], steps: &[Step]) -> Vec<(String, Vec<f32>)> {
    let mut all: std::collections::BTreeMap<String, Vec<f32>> = base.iter().cloned().collect();
    for (removed, added) in steps {
        for id in removed {
            let passages = format!("{id}#");
            all.retain(|key, _| key != id && !key.starts_with(&passages));
        }
        for (id, _) in added {
            if !crate::passage::is_passage(id) {
                let passages = format!("{id}#");
                all.retain(|key, _| !key.starts_with(&passages));
            }
        }
        all.extend(added.iter().cloned());
    }
    all.into_iter().collect()
}

#[test]
fn deltas_answer_as_the_index_they_stand_for() {
    for (params, n) in [(exact_params(), 400), (hnsw_params(), 600)] {
        let tmp = tempfile::tempdir().unwrap();
        let dims = 32;
        let vectors = clustered(n + 200, dims, 8, 7);
        let mut base = entries(&vectors[..n]);
        // Chunk 1's passages, stored in the snapshot.
        base.push((format!("{}#1", id(1)), vectors[n + 199].clone()));
        VectorIndex::build(dims, base.clone(), &params)
            .unwrap()
            .save(tmp.path(), 1)
            .unwrap();
        let steps = vec![
            // Removes 0..40 (and chunk 1's passage), adds new chunks, one with a passage.
            (
                (0..40).map(id).collect::<Vec<_>>(),
                (n..n + 100)
                    .map(|i| (id(i), vectors[i].clone()))
                    .chain([(format!("{}#1", id(n)), vectors[n + 150].clone())])
                    .collect::<Vec<_>>(),
            ),
            // Replaces 50..60 with other vectors, removes one of the first delta's chunks.
            (
                vec![id(n + 3)],
                (50..60)
                    .map(|i| (id(i), vectors[i + 100].clone()))
                    .collect(),
            ),
        ];
        for (tag, (removed, added)) in steps.iter().enumerate() {
            let tag = tag as u64;
            VectorIndex::append(
                tmp.path(),
                tag + 1,
                tag + 2,
                removed.clone(),
                stored(dims, added),
            )
            .unwrap();
        }
        let final_set = apply_by_hand(&base, &steps);
        let expected = VectorIndex::build(dims, final_set, &exact_params()).unwrap();
        let (layered, tag) = Layered::load(tmp.path(), None).unwrap().unwrap();
        assert_eq!(tag, 3);
        let (mut agree, mut total) = (0, 0);
        for q in clustered(20, dims, 8, 99) {
            let want = expected.search(&q, 10);
            let got = layered.search(&q, 10);
            assert!(
                got.iter().all(|(id, _)| expected.contains(id)),
                "a removed chunk came back"
            );
            if params.exact_threshold == usize::MAX {
                assert_eq!(ids_of(&got), ids_of(&want));
                for (g, w) in got.iter().zip(&want) {
                    assert!((g.1 - w.1).abs() < 1e-5, "{g:?} {w:?}");
                }
            }
            total += want.len();
            agree += ids_of(&got)
                .iter()
                .filter(|id| ids_of(&want).contains(id))
                .count();
        }
        assert!(
            agree as f64 >= 0.95 * total as f64,
            "recall {agree}/{total}"
        );

        // A reload after another delta keeps the snapshot it already holds.
        VectorIndex::append(tmp.path(), 3, 4, vec![id(100)], stored(dims, &[])).unwrap();
        let (again, _) = Layered::load(tmp.path(), Some(&layered)).unwrap().unwrap();
        assert!(std::sync::Arc::ptr_eq(&again.base, &layered.base));
        let q = &vectors[100];
        assert!(layered
            .search(q, 3)
            .iter()
            .any(|(id, _)| *id == self::id(100)));
        assert!(again
            .search(q, 3)
            .iter()
            .all(|(id, _)| *id != self::id(100)));
        // The snapshot alone, for the writer to fold the deltas into.
        let (snapshot, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
        assert_eq!(snapshot.len(), n);
    }
}

#[test]
fn deltas_are_checked_and_appended_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let vectors = clustered(20, 8, 2, 3);
    VectorIndex::build(8, entries(&vectors), &exact_params())
        .unwrap()
        .save(tmp.path(), 5)
        .unwrap();
    // Only onto the tag it was computed from.
    let err = VectorIndex::append(tmp.path(), 4, 6, vec![id(1)], stored(8, &[])).unwrap_err();
    assert!(err.to_string().contains("not the index of tag 4"), "{err}");
    let err = VectorIndex::append(tmp.path(), 5, 6, Vec::new(), stored(3, &[])).unwrap_err();
    assert!(err.to_string().contains("a delta of 3 dimensions"), "{err}");
    VectorIndex::append(tmp.path(), 5, 6, vec![id(1)], stored(8, &[])).unwrap();
    let saved = VectorIndex::saved(tmp.path()).unwrap().unwrap();
    assert_eq!((saved.tag, saved.slots, saved.delta_removed), (6, 20, 1));
    // A damaged delta is an error naming it.
    let delta = fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "delta"))
        .unwrap();
    let mut bytes = fs::read(&delta).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&delta, bytes).unwrap();
    let err = Layered::load(tmp.path(), None).err().unwrap();
    assert!(
        err.to_string().contains(&delta.display().to_string()),
        "{err}"
    );
    // A new snapshot drops the deltas.
    VectorIndex::build(8, entries(&vectors), &exact_params())
        .unwrap()
        .save(tmp.path(), 7)
        .unwrap();
    assert!(!delta.exists());
    let (layered, _) = Layered::load(tmp.path(), None).unwrap().unwrap();
    assert_eq!(layered.search(&vectors[1], 1)[0].0, id(1));
}

/// An index saved before format 4 (a graph of f32 points, written here as that version's
/// `save` wrote it: hnsw_rs's dump with `UnitCosine`) still answers, as an exact scan of its
/// vectors; the writer sees it must rebuild it, and the rebuild is a graph of f16 points.
#[test]
fn a_graph_of_f32_points_reads_as_a_matrix_until_rebuilt() {
    use hnsw_rs::api::AnnT;
    use hnsw_rs::hnsw::Hnsw;

    let data = clustered(300, 16, 6, 5);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let graph: Hnsw<f32, UnitCosine> = Hnsw::new(16, 300, 16, 64, UnitCosine);
    for (slot, v) in data.iter().enumerate() {
        graph.insert((v, slot));
    }
    let snapshot = "s000001-1";
    assert_eq!(graph.file_dump(dir, snapshot).unwrap(), snapshot);
    let ids: Vec<String> = (0..300).map(id).collect();
    let ids_json = serde_json::json!({"ids": ids, "dead": [], "zero": []}).to_string();
    fs::write(dir.join(format!("{snapshot}.ids.json")), ids_json).unwrap();
    fs::write(
        dir.join(format!("{snapshot}.passages")),
        super::passages::Passages::new(16).encode(),
    )
    .unwrap();
    let files: Vec<serde_json::Value> = ["ids.json", "hnsw.graph", "hnsw.data", "passages"]
        .iter()
        .map(|suffix| {
            let name = format!("{snapshot}.{suffix}");
            let bytes = fs::read(dir.join(&name)).unwrap();
            serde_json::json!({"name": name, "len": bytes.len(), "crc32": crc32fast::hash(&bytes)})
        })
        .collect();
    let meta = serde_json::json!({
        "format": 3, "tag": 1, "kind": "hnsw", "dims": 16, "params": hnsw_params(),
        "snapshot": snapshot, "slots": 300, "graph_points": 300, "files": files,
    });
    fs::write(dir.join(META), meta.to_string()).unwrap();

    let saved = VectorIndex::saved(dir).unwrap().unwrap();
    assert!(saved.graph && saved.f32_graph);
    let (index, tag) = VectorIndex::load(dir).unwrap().unwrap();
    assert_eq!((tag, index.len(), index.is_hnsw()), (1, 300, false));
    assert!(index.needs_rebuild(), "a matrix of a graph's size");
    let exact = VectorIndex::build(16, entries(&data), &exact_params()).unwrap();
    for q in clustered(20, 16, 6, 77) {
        let (got, want) = (index.search(&q, 10), exact.search(&q, 10));
        assert_eq!(ids_of(&got), ids_of(&want));
        for ((_, a), (_, b)) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
    let (layered, _) = Layered::load(dir, None).unwrap().unwrap();
    let rebuilt = layered.fold(&hnsw_params()).unwrap();
    assert!(rebuilt.is_hnsw());
    rebuilt.save(dir, 2).unwrap();
    assert!(!VectorIndex::saved(dir).unwrap().unwrap().f32_graph);
    let (index, _) = VectorIndex::load(dir).unwrap().unwrap();
    assert_eq!((index.len(), index.is_hnsw()), (300, true));
    assert_eq!(index.search(&data[42], 1)[0].0, id(42));
}
