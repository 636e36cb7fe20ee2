use super::*;
use crate::simd::l2_normalize;

fn unit(seed: u64, dims: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v: Vec<f32> = (0..dims)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    l2_normalize(&mut v);
    v
}

#[test]
fn quantised_cosines_stay_within_rounding_of_f32() {
    // (dims, seeds): odd sizes exercise the dot's tail.
    for (dims, seeds) in [(768usize, 0..40u64), (13, 40..60), (1, 60..62), (8, 62..70)] {
        for seed in seeds {
            let (v, q) = (unit(seed, dims), unit(seed + 1000, dims));
            let exact: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
            let (inv_norm, codes) = quantize(&v);
            let got = dot_i8_f32(&codes, &q) * inv_norm;
            // Rounding error shrinks with the dimensions (it averages out).
            let bound = if dims >= 768 { 0.004 } else { 0.02 };
            assert!((got - exact).abs() < bound, "dims {dims}: {got} vs {exact}");
            let own = dot_i8_f32(&codes, &v) * inv_norm;
            assert!(own > 1.0 - bound / 4.0, "dims {dims}: {own} against itself");
        }
    }
    let (inv_norm, codes) = quantize(&[0.0; 5]);
    assert_eq!((inv_norm, dot_i8_f32(&codes, &[1.0; 5])), (0.0, 0.0));
}

#[test]
fn stores_scores_and_round_trips_by_chunk() {
    let dims = 16;
    let mut p = Passages::new(dims);
    p.insert("a#1".into(), &unit(1, dims));
    p.insert("a#2".into(), &unit(2, dims));
    p.insert("b#1".into(), &unit(3, dims));
    p.insert("a#2".into(), &unit(4, dims)); // replaced, not added
    assert_eq!(p.len(), 3);
    assert!(p.contains("a#2") && !p.contains("a#3") && !p.contains("c#1"));
    // The best of a's passages is the one nearest the query.
    let best = p.best("a", &unit(4, dims)).unwrap();
    assert!(best > 0.99, "{best}");
    assert_eq!(p.best("c", &unit(4, dims)), None);

    let back = Passages::decode(&p.encode(), dims).unwrap();
    assert_eq!(back.len(), 3);
    let mut ids: Vec<&str> = back.ids().collect();
    ids.sort();
    assert_eq!(ids, ["a#1", "a#2", "b#1"]);
    assert_eq!(back.best("a", &unit(4, dims)), Some(best));

    assert!(p.remove("a#1") && !p.remove("a#1"));
    assert!(p.remove("a#2") && p.best("a", &unit(4, dims)).is_none());
    assert_eq!(p.len(), 1);
}

/// `passages` written to a file and mapped back.
fn mapped(passages: &Passages) -> (tempfile::TempDir, Passages) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.passages");
    std::fs::write(&path, passages.encode()).unwrap();
    let map = unsafe { Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap();
    (dir, Passages::mapped(map, passages.dims()).unwrap())
}

fn sorted_ids(p: &Passages) -> Vec<String> {
    let mut ids: Vec<String> = p.ids().map(String::from).collect();
    ids.sort();
    ids
}

#[test]
fn a_mapped_file_answers_as_memory_does_and_changes_beside_it() {
    let dims = 16;
    let mut memory = Passages::new(dims);
    for (n, id) in ["a#1", "a#2", "b#1", "b#2", "b#3", "c#1"]
        .iter()
        .enumerate()
    {
        memory.insert(id.to_string(), &unit(n as u64, dims));
    }
    let (_dir, mut file) = mapped(&memory);
    assert_eq!(
        (file.len(), file.held.len()),
        (6, 0),
        "nothing read into memory"
    );
    let q = unit(3, dims);
    for chunk in ["a", "b", "c", "d"] {
        assert_eq!(file.best(chunk, &q), memory.best(chunk, &q), "{chunk}");
    }
    assert_eq!(file.get("b#2"), memory.get("b#2"));
    assert!(file.contains("c#1") && !file.contains("c#2"));
    assert_eq!(sorted_ids(&file), sorted_ids(&memory));

    // Changes to both, the same: the file's chunks they touch move into memory.
    for p in [&mut memory, &mut file] {
        p.insert("b#2".into(), &unit(40, dims)); // replaced
        p.insert("d#1".into(), &unit(41, dims)); // new chunk
        assert!(p.remove("a#1") && !p.remove("a#9"));
        p.remove_chunk("c");
        let mut more = Passages::new(dims);
        more.insert("a#3".into(), &unit(42, dims));
        p.absorb(more);
    }
    assert_eq!(file.len(), memory.len());
    assert_eq!(sorted_ids(&file), sorted_ids(&memory));
    for chunk in ["a", "b", "c", "d"] {
        assert_eq!(file.best(chunk, &q), memory.best(chunk, &q), "{chunk}");
    }
    assert!(!file.contains("c#1") && file.best("c", &q).is_none());
    assert!(file.held.contains_key("b") && !file.held.contains_key("c"));

    // Written again (the file's unchanged chunks copied as they lie) and read back.
    let again = Passages::decode(&file.encode(), dims).unwrap();
    assert_eq!(sorted_ids(&again), sorted_ids(&memory));
    assert_eq!(again.best("b", &q), memory.best("b", &q));
    // A mapped index moved into another, as a fold does.
    let mut into = Passages::new(dims);
    let (_dir2, file2) = mapped(&memory);
    into.absorb(file2);
    assert_eq!(sorted_ids(&into), sorted_ids(&memory));
    assert!(
        into.files.len() == 1 && into.held.is_empty(),
        "moved as it lies"
    );
}

#[test]
fn a_mapped_file_absorbed_into_another_stays_mapped() {
    let dims = 16;
    let set = |ids: &[(&str, u64)]| {
        let mut p = Passages::new(dims);
        for (id, seed) in ids {
            p.insert(id.to_string(), &unit(*seed, dims));
        }
        p
    };
    let base = [("a#1", 1), ("a#2", 2), ("b#1", 3), ("c#1", 4)];
    let added = [("b#1", 5), ("b#2", 6), ("d#1", 7), ("d#2", 8), ("e#1", 9)];
    let mut memory = set(&base);
    memory.remove_chunk("c");
    memory.absorb(set(&added));
    memory.insert("e#2".into(), &unit(10, dims));

    let (_d1, mut file) = mapped(&set(&base));
    file.remove_chunk("c");
    let (_d2, more) = mapped(&set(&added));
    file.absorb(more);
    // Only "b", which both hold, was read into memory; "d" and "e" are the new file's.
    assert_eq!(file.files.len(), 2);
    assert_eq!(file.held.keys().collect::<Vec<_>>(), ["b"]);
    file.insert("e#2".into(), &unit(10, dims));
    assert_eq!(file.len(), memory.len());
    assert_eq!(sorted_ids(&file), sorted_ids(&memory));
    let q = unit(11, dims);
    for chunk in ["a", "b", "c", "d", "e"] {
        assert_eq!(file.best(chunk, &q), memory.best(chunk, &q), "{chunk}");
    }
    let again = Passages::decode(&file.encode(), dims).unwrap();
    assert_eq!(sorted_ids(&again), sorted_ids(&memory));
    // A chunk of the second file removed, and one of the first.
    for p in [&mut file, &mut memory] {
        p.remove_chunk("d");
        p.remove_chunk("a");
    }
    assert_eq!(
        (file.len(), sorted_ids(&file)),
        (memory.len(), sorted_ids(&memory))
    );
}

#[test]
fn a_spill_gathers_passages_into_a_mapped_file() {
    let dims = 16;
    let dir = tempfile::tempdir().unwrap();
    let mut memory = Passages::new(dims);
    let mut spill = Spill::create(dir.path(), dims).unwrap();
    for (n, id) in ["a#1", "a#2", "b#1", "c#1", "c#2"].iter().enumerate() {
        let vector = unit(n as u64, dims);
        memory.insert(id.to_string(), &vector);
        let (inv_norm, codes) = quantize(&vector);
        spill.push(id, inv_norm, &codes).unwrap();
    }
    let wrong = spill.push("d#1", 1.0, &[0; 8]).unwrap_err();
    assert!(
        wrong.to_string().contains("d#1 has 8 dimensions"),
        "{wrong}"
    );
    let file = spill.finish().unwrap();
    assert!(
        file.files.len() == 1 && file.held.is_empty(),
        "nothing held"
    );
    assert_eq!(sorted_ids(&file), sorted_ids(&memory));
    let q = unit(7, dims);
    for chunk in ["a", "b", "c", "d"] {
        assert_eq!(file.best(chunk, &q), memory.best(chunk, &q), "{chunk}");
    }
    let again = Passages::decode(&file.encode(), dims).unwrap();
    assert_eq!(sorted_ids(&again), sorted_ids(&memory));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "unnamed");

    // A chunk's passages apart are refused when the spill is read.
    let mut spill = Spill::create(dir.path(), dims).unwrap();
    let (inv_norm, codes) = quantize(&unit(1, dims));
    for id in ["a#1", "b#1", "a#2"] {
        spill.push(id, inv_norm, &codes).unwrap();
    }
    let apart = spill.finish().err().unwrap();
    assert!(apart.to_string().contains("not together"), "{apart}");
}

#[test]
fn a_mapped_file_keeps_each_chunks_passages_together() {
    let dims = 4;
    let record = |id: &str| {
        let mut p = Passages::new(dims);
        p.insert(id.into(), &[0.5, -0.5, 0.5, -0.5]);
        p.encode()[HEADER..].to_vec()
    };
    let file = |ids: &[&str]| {
        let mut bytes = MAGIC.to_vec();
        bytes.extend((dims as u32).to_le_bytes());
        bytes.extend((ids.len() as u32).to_le_bytes());
        for id in ids {
            bytes.extend(record(id));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        std::fs::write(&path, bytes).unwrap();
        let map = unsafe { Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap();
        Passages::mapped(map, dims).err()
    };
    assert_eq!(file(&["a#1", "a#2", "b#1"]), None);
    let apart = file(&["a#1", "b#1", "a#2"]).unwrap();
    assert!(apart.contains("chunk a are not together"), "{apart}");
    let twice = file(&["a#1", "a#1"]).unwrap();
    assert!(twice.contains("a#1 is stored twice"), "{twice}");
}

#[test]
fn damaged_files_are_errors() {
    let dims = 4;
    let mut p = Passages::new(dims);
    p.insert("a#1".into(), &[0.5, -0.5, 0.5, -0.5]);
    let good = p.encode();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..good.len() - 1].to_vec(), "truncated"),
        ([good.clone(), vec![0]].concat(), "after the last"),
        ([b"XXXX".as_slice(), &good[4..]].concat(), "not a passage"),
        (Passages::new(8).encode(), "8 dimensions"),
        (
            {
                let mut b = good.clone();
                b[8] = 2; // two passages announced, one written
                b
            },
            "truncated",
        ),
        (
            {
                let mut b = good.clone();
                b[15] = b'x'; // "a#1" → "ax1": not a passage id
                b
            },
            "not a passage id",
        ),
    ];
    for (bytes, want) in cases {
        let err = Passages::decode(&bytes, dims).err().unwrap();
        assert!(err.contains(want), "{err:?} should say {want:?}");
    }
}
