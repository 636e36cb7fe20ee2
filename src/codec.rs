//! How a vector is stored as bytes, in the catalog and in the embedding cache (pure).
//!
//! Two forms, told apart by their length alone, so a reader needs no other record of which
//! one it holds:
//!
//! - **f32**: little-endian floats; the length is a multiple of 4. A chunk's own vector.
//! - **int8**: `1/‖q‖` (f32 LE), the codes `q = round(127 · v / max|v|)` (one signed byte
//!   per dimension), zero to three zero bytes, and one last byte counting them, so the
//!   length is 1 more than a multiple of 4. A passage's vector (`crate::passage`): a quarter
//!   of the f32 form, and read back as the unit vector `q / ‖q‖`, whose cosine with any
//!   query is within ~0.001 of the original's at 768 dimensions (the vector index keeps
//!   passages in this form anyway, `index::vector`).

/// Vector `id`'s bytes in the form it is stored in: int8 for a passage's
/// (`crate::passage`), f32 for a chunk's own.
pub(crate) fn encode_for(id: &str, v: &[f32]) -> Vec<u8> {
    match crate::passage::is_passage(id) {
        true => encode_int8(v),
        false => encode_f32(v),
    }
}

/// `v` as little-endian f32 bytes.
pub(crate) fn encode_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `v` in the int8 form (module docs).
pub(crate) fn encode_int8(v: &[f32]) -> Vec<u8> {
    let (inv_norm, codes) = quantize(v);
    let pad = (4 - codes.len() % 4) % 4;
    let mut out = Vec::with_capacity(4 + codes.len() + pad + 1);
    out.extend_from_slice(&inv_norm.to_le_bytes());
    out.extend(codes.iter().map(|&c| c as u8));
    out.extend(std::iter::repeat_n(0, pad));
    out.push(pad as u8);
    out
}

/// A vector stored in either form; `None` when the bytes are neither.
pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<f32>> {
    match bytes.len() % 4 {
        0 => Some(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ),
        1 => {
            let (inv_norm, codes) = int8_parts(bytes)?;
            Some(
                codes
                    .iter()
                    .map(|&c| f32::from(c as i8) * inv_norm)
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The int8 form's `1/‖q‖` and codes (as bytes); `None` when `bytes` is not that form.
pub(crate) fn int8_parts(bytes: &[u8]) -> Option<(f32, &[u8])> {
    if bytes.len() % 4 != 1 {
        return None;
    }
    let (&pad, rest) = bytes.split_last()?;
    let dims = rest.len().checked_sub(4 + usize::from(pad))?;
    if pad > 3 || rest[4 + dims..].iter().any(|&b| b != 0) {
        return None;
    }
    let inv_norm = f32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    inv_norm
        .is_finite()
        .then_some((inv_norm, &rest[4..4 + dims]))
}

/// `v` as int8 codes scaled to ±127 and the inverse of the codes' norm (0 for a zero or
/// non-finite vector, whose codes are zeros).
pub(crate) fn quantize(v: &[f32]) -> (f32, Box<[i8]>) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (0.0, vec![0; v.len()].into());
    }
    let codes: Box<[i8]> = v
        .iter()
        .map(|x| (x * 127.0 / max).round().clamp(-127.0, 127.0) as i8)
        .collect();
    let norm = codes
        .iter()
        .map(|&c| f32::from(c) * f32::from(c))
        .sum::<f32>()
        .sqrt();
    (if norm > 0.0 { 1.0 / norm } else { 0.0 }, codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_round_trip_and_are_told_apart_by_length() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(decode(&encode_f32(&v)), Some(v));
        // Every dimension count gives an int8 length of 1 mod 4, read back as a unit vector
        // pointing where the original did.
        for dims in [1usize, 2, 3, 4, 5, 767, 768, 769] {
            let v: Vec<f32> = (0..dims).map(|i| (i as f32 * 0.37).sin() + 0.1).collect();
            let bytes = encode_int8(&v);
            assert_eq!(bytes.len() % 4, 1, "dims {dims}");
            let back = decode(&bytes).unwrap();
            assert_eq!(back.len(), dims);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let cosine: f32 = v.iter().zip(&back).map(|(a, b)| a * b).sum::<f32>() / norm;
            assert!(cosine > 0.995, "dims {dims}: {cosine}");
            let unit: f32 = back.iter().map(|x| x * x).sum();
            assert!((unit - 1.0).abs() < 1e-4, "dims {dims}: |v|² {unit}");
        }
        assert_eq!(encode_int8(&[0.0; 768]).len(), 773);
        assert_eq!(decode(&encode_int8(&[0.0; 3])), Some(vec![0.0; 3]));
        // Neither form.
        let padded_with_junk = [0, 0, 128, 63, 5, 9, 9, 9, 3];
        for bad in [
            &[0u8, 1, 2][..],
            &[0, 1],
            &[0, 0, 0, 0, 9],
            &padded_with_junk,
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}
