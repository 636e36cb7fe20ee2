//! Reading tensors from model files, with errors that name file and tensor: the
//! [`TensorSource`] the encoder loads from, its safetensors implementation ([`SafeFile`]),
//! and the memory-mapped [`EmbeddingTable`]. GGUF files implement the trait in `gguf.rs`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use crate::gemma::error::{GemmaError, Result};
use crate::gemma::model_files::io_error;

/// Element type of a stored tensor that we can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredDtype {
    F32,
    BF16,
    F16,
}

impl StoredDtype {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "F32" => Some(StoredDtype::F32),
            "BF16" => Some(StoredDtype::BF16),
            "F16" => Some(StoredDtype::F16),
            _ => None,
        }
    }

    /// Bytes per value.
    pub fn size(self) -> usize {
        match self {
            StoredDtype::F32 => 4,
            StoredDtype::BF16 | StoredDtype::F16 => 2,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct RawInfo {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (usize, usize),
}

/// Where one tensor lies in its file.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub dtype: Option<StoredDtype>,
    pub dtype_name: String,
    pub shape: Vec<usize>,
    /// Byte range in the file.
    pub start: usize,
    pub end: usize,
}

/// Where the encoder's tensors come from, by their sentence-transformers names
/// (`layers.0.self_attn.q_proj.weight`, `norm.weight`, …).
pub trait TensorSource {
    /// The file, for errors.
    fn path(&self) -> &Path;
    /// A tensor as f32 values (converted or dequantised), checking its shape.
    fn read_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>>;
    /// A Gemma RMSNorm weight as the norm multiplies by it: `1 + w`. (Safetensors store
    /// `w`; llama.cpp's converter stores `1 + w`.)
    fn norm_weight(&self, name: &str, n: usize) -> Result<Vec<f32>>;
    /// Loads a tensor onto `device` as `dtype`, checking its shape.
    fn tensor(&self, name: &str, shape: &[usize], device: &Device, dtype: DType) -> Result<Tensor> {
        let data = self.read_f32(name, shape)?;
        let t = Tensor::from_vec(data, shape, &Device::Cpu)?;
        let t = if dtype == DType::F32 {
            t
        } else {
            t.to_dtype(dtype)?
        };
        Ok(t.to_device(device)?)
    }
}

/// An open safetensors file. Tensors are read with positioned reads (not a memory map), so
/// once copied into tensors their bytes do not stay counted in the process's RSS.
pub struct SafeFile {
    path: PathBuf,
    file: File,
    tensors: HashMap<String, TensorInfo>,
    header: Vec<u8>,
}

impl std::fmt::Debug for SafeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafeFile")
            .field("path", &self.path)
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl SafeFile {
    /// Opens a safetensors file and parses its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        let len = file.metadata().map_err(|e| io_error(path, e))?.len();
        let bad = |message: String| GemmaError::Safetensors {
            path: path.to_path_buf(),
            message,
        };
        if len < 8 {
            return Err(bad("file shorter than its 8-byte header length".into()));
        }
        let mut len_bytes = [0u8; 8];
        read_exact_at(&file, &mut len_bytes, 0).map_err(|e| io_error(path, e))?;
        let header_len = u64::from_le_bytes(len_bytes);
        let header_end = 8u64
            .checked_add(header_len)
            .filter(|&e| e <= len && header_len <= 100 << 20)
            .ok_or_else(|| bad(format!("header length {header_len} exceeds the file")))?
            as usize;
        let mut header = vec![0u8; header_end - 8];
        read_exact_at(&file, &mut header, 8).map_err(|e| io_error(path, e))?;
        let raw: HashMap<String, serde_json::Value> = serde_json::from_slice(&header)
            .map_err(|e| bad(format!("header is not valid JSON: {e}")))?;
        let data_len = (len as usize).saturating_sub(header_end);
        let mut tensors = HashMap::new();
        for (name, value) in raw {
            if name == "__metadata__" {
                continue;
            }
            let info: RawInfo = serde_json::from_value(value)
                .map_err(|e| bad(format!("tensor `{name}`: bad header entry: {e}")))?;
            let (s, e) = info.data_offsets;
            if s > e || e > data_len {
                return Err(bad(format!("tensor `{name}`: data offsets out of range")));
            }
            let dtype = StoredDtype::parse(&info.dtype);
            if let Some(dt) = dtype {
                let elems = info
                    .shape
                    .iter()
                    .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                    .ok_or_else(|| bad(format!("tensor `{name}`: shape overflows")))?;
                if elems.checked_mul(dt.size()) != Some(e - s) {
                    return Err(bad(format!(
                        "tensor `{name}`: {} bytes for shape {:?}",
                        e - s,
                        info.shape
                    )));
                }
            }
            tensors.insert(
                name,
                TensorInfo {
                    dtype,
                    dtype_name: info.dtype,
                    shape: info.shape,
                    start: header_end + s,
                    end: header_end + e,
                },
            );
        }
        Ok(SafeFile {
            path: path.to_path_buf(),
            file,
            tensors,
            header,
        })
    }

    /// The JSON header bytes (names, dtypes, shapes, offsets).
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// The names of the file's tensors (in no particular order).
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.tensors.keys()
    }

    /// Looks up a tensor, checking its shape and dtype.
    pub fn info(&self, name: &str, shape: &[usize]) -> Result<(&TensorInfo, StoredDtype)> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| GemmaError::MissingTensor {
                path: self.path.clone(),
                name: name.to_string(),
            })?;
        if info.shape != shape {
            return Err(GemmaError::TensorShape {
                path: self.path.clone(),
                name: name.to_string(),
                expected: shape.to_vec(),
                actual: info.shape.clone(),
            });
        }
        let dtype = info.dtype.ok_or_else(|| GemmaError::TensorDtype {
            path: self.path.clone(),
            name: name.to_string(),
            dtype: info.dtype_name.clone(),
        })?;
        Ok((info, dtype))
    }

    /// Where a tensor lies, without checks.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.get(name)
    }

    /// Raw bytes of a tensor.
    pub fn bytes(&self, info: &TensorInfo) -> Result<Vec<u8>> {
        read_at(&self.file, &self.path, info.start, info.end - info.start)
    }

    /// A few KiB sampled from a tensor's data (start, middle, end) for fingerprinting.
    pub fn sample(&self, info: &TensorInfo) -> Result<Vec<u8>> {
        sample_at(&self.file, &self.path, info.start, info.end)
    }
}

/// `len` bytes of `file` (at `path`, for errors) from `offset`.
pub(crate) fn read_at(file: &File, path: &Path, offset: usize, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    read_exact_at(file, &mut buf, offset as u64).map_err(|e| io_error(path, e))?;
    Ok(buf)
}

/// A few KiB of the bytes `start..end` of `file` (their start, middle and end; all of them
/// when short): a tensor's sample in the fingerprint, which catches any re-export or
/// fine-tune without reading the whole model.
pub(crate) fn sample_at(file: &File, path: &Path, start: usize, end: usize) -> Result<Vec<u8>> {
    const CHUNK: usize = 4096;
    let len = end - start;
    if len <= 3 * CHUNK {
        return read_at(file, path, start, len);
    }
    let mut out = read_at(file, path, start, CHUNK)?;
    out.extend(read_at(file, path, start + len / 2, CHUNK)?);
    out.extend(read_at(file, path, end - CHUNK, CHUNK)?);
    Ok(out)
}

impl TensorSource for SafeFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn read_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let (info, dtype) = self.info(name, shape)?;
        let bytes = self.bytes(info)?;
        let mut out = Vec::with_capacity(bytes.len() / dtype.size());
        decode_into(&bytes, dtype, &mut out);
        Ok(out)
    }

    fn norm_weight(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        let mut w = self.read_f32(name, &[n])?;
        for v in &mut w {
            *v += 1.0;
        }
        Ok(w)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// Appends little-endian stored values to `out` as f32.
pub fn decode_into(bytes: &[u8], dtype: StoredDtype, out: &mut Vec<f32>) {
    match dtype {
        StoredDtype::F32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        ),
        StoredDtype::BF16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16)),
        ),
        StoredDtype::F16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32()),
        ),
    }
}

/// How an [`EmbeddingTable`]'s rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    /// Plain values (safetensors, or a GGUF's F32/F16/BF16 tensor).
    Plain(StoredDtype),
    /// llama.cpp's Q8_0: per block of 32 values an f16 scale and 32 int8s (34 bytes).
    Q8_0,
}

impl RowFormat {
    /// Bytes of one row of `cols` values (`cols` a multiple of 32 for Q8_0).
    pub fn row_bytes(self, cols: usize) -> usize {
        match self {
            RowFormat::Plain(dtype) => cols * dtype.size(),
            RowFormat::Q8_0 => cols / 32 * 34,
        }
    }
}

/// Appends the values of Q8_0 blocks (34 bytes each) to `out`.
pub fn dequantize_q8_0(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(34) {
        let d = half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32();
        out.extend(block[2..].iter().map(|&q| q as i8 as f32 * d));
    }
}

/// An embedding table read row by row straight from a memory map of the file, so the
/// 800 MB table never has to be resident: only the rows of tokens actually seen are paged in.
pub struct EmbeddingTable {
    path: PathBuf,
    mmap: memmap2::Mmap,
    start: usize,
    format: RowFormat,
    rows: usize,
    cols: usize,
}

impl std::fmt::Debug for EmbeddingTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingTable")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish()
    }
}

impl EmbeddingTable {
    /// Checks `name` has shape `[rows, cols]` in `file` and maps the file.
    pub fn new(file: &SafeFile, name: &str, rows: usize, cols: usize) -> Result<Self> {
        let (info, dtype) = file.info(name, &[rows, cols])?;
        let (start, end) = (info.start, info.end);
        Self::map(
            &file.file,
            &file.path,
            start,
            end,
            RowFormat::Plain(dtype),
            rows,
            cols,
        )
    }

    /// Maps `[start, end)` of `file` as a table of `rows × cols` values stored as `format`.
    pub fn map(
        file: &File,
        path: &Path,
        start: usize,
        end: usize,
        format: RowFormat,
        rows: usize,
        cols: usize,
    ) -> Result<Self> {
        let path = path.to_path_buf();
        let changed = |path: PathBuf| GemmaError::Io {
            path,
            source: std::io::Error::other("the file changed while loading"),
        };
        if rows.checked_mul(format.row_bytes(cols)) != Some(end - start) {
            return Err(changed(path));
        }
        // SAFETY: a read-only map of the model file, which is not expected to change while
        // loaded (as with every mmap-based weight loader, truncating it underneath would
        // fault). The length is checked against the header before any row is read.
        let mmap =
            unsafe { memmap2::MmapOptions::new().map(file) }.map_err(|e| io_error(&path, e))?;
        if mmap.len() < end {
            return Err(changed(path));
        }
        Ok(EmbeddingTable {
            path,
            mmap,
            start,
            format,
            rows,
            cols,
        })
    }

    /// Values per row: the model's hidden size.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows: the vocabulary's size.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The whole table, every row times `scale`, as one f32 tensor on `device` (for a GPU,
    /// which then gathers rows itself). Filled and uploaded in slices of 8192 rows, so the
    /// host never holds more than 25 MB of it.
    pub fn to_device(&self, scale: f32, device: &Device) -> Result<Tensor> {
        use rayon::prelude::*;
        const SLICE: usize = 8192;
        let slices = (0..self.rows.div_ceil(SLICE))
            .map(|s| -> Result<Tensor> {
                let rows = (s * SLICE)..((s + 1) * SLICE).min(self.rows);
                let n = rows.len();
                let parts: Vec<Vec<f32>> = rows
                    .into_par_iter()
                    .map(|r| {
                        let mut row = Vec::with_capacity(self.cols);
                        self.push_row(r as u32, scale, &mut row);
                        row
                    })
                    .collect();
                let host = Tensor::from_vec(parts.concat(), (n, self.cols), &Device::Cpu)?;
                Ok(host.to_device(device)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&slices, 0)?)
    }

    /// Appends row `id` multiplied by `scale` to `out`; false when `id` is out of range.
    pub fn push_row(&self, id: u32, scale: f32, out: &mut Vec<f32>) -> bool {
        let id = id as usize;
        if id >= self.rows {
            return false;
        }
        let row_bytes = self.format.row_bytes(self.cols);
        let s = self.start + id * row_bytes;
        let bytes = &self.mmap[s..s + row_bytes];
        let before = out.len();
        match self.format {
            RowFormat::Plain(dtype) => decode_into(bytes, dtype, out),
            RowFormat::Q8_0 => dequantize_q8_0(bytes, out),
        }
        for v in &mut out[before..] {
            *v *= scale;
        }
        true
    }
}
