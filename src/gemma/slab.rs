//! Slabs: a run of plain values that either lives in memory or lies in place in a
//! memory-mapped file.
//!
//! The kernels' weight panels (`matmul.rs`, `q8.rs`) and the tokenizer's tables
//! (`tokenizer.rs`) are built in memory on a first load and written to the packed model
//! (`pack.rs`); every later load maps that file and reads them where they lie. A [`Slab`]
//! is the one type both cases share, so the code that uses the values never asks where
//! they are: it derefs to a slice either way.
//!
//! Only [`Plain`] types may lie in a map: types for which every bit pattern is a valid
//! value, so bytes read from a file can be used without checking them one by one (the
//! pack's checksum covers damage). A mapped slab is made only at an offset aligned for its
//! type and within the map's bounds ([`Slab::mapped`]).

use std::ops::Deref;
use std::sync::Arc;

use half::f16;
use memmap2::Mmap;

/// Element types a [`Slab`] may hold: every bit pattern is a valid value.
pub trait Plain: Copy + 'static {}
impl Plain for u64 {}
impl Plain for f16 {}
impl Plain for u8 {}
impl Plain for u16 {}

/// Values owned in memory, or lying in a memory-mapped pack.
pub enum Slab<T: Plain> {
    /// Values built in this process.
    Owned(Vec<T>),
    /// `len` values at byte `offset` of a mapped file.
    Mapped {
        /// The mapped file, kept alive as long as the slab.
        map: Arc<Mmap>,
        /// Where the values start, in bytes from the start of the map.
        offset: usize,
        /// How many values.
        len: usize,
    },
}

impl<T: Plain> Slab<T> {
    /// `len` values at `offset` of `map`; `None` when misaligned or out of bounds.
    pub fn mapped(map: &Arc<Mmap>, offset: usize, len: usize) -> Option<Self> {
        let end = len
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|b| b.checked_add(offset))?;
        let aligned = (map.as_ptr() as usize + offset).is_multiple_of(std::mem::align_of::<T>());
        (aligned && end <= map.len()).then(|| Slab::Mapped {
            map: map.clone(),
            offset,
            len,
        })
    }
}

impl<T: Plain> Deref for Slab<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Slab::Owned(v) => v,
            // SAFETY: `mapped` checked alignment and bounds; `Plain` types accept any bits;
            // the map is read-only and lives as long as this slab.
            Slab::Mapped { map, offset, len } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().add(*offset) as *const T, *len)
            },
        }
    }
}

/// Plain values viewed as their bytes (to write them to a pack).
pub fn as_bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: plain values without padding, viewed as their bytes.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
    }
}
