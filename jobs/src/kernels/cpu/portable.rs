//! The portable tiles: the canonical dot product of [`super::dot`] written
//! as plain arrays of 8 lanes and `mul_add`, for CPUs without AVX2 + FMA.
//!
//! They compute the same bits as [`super::avx2`]: each lane is an
//! independent fused multiply-add chain, so LLVM may vectorise the lanes
//! (it does on aarch64) without changing any rounding. On an x86 CPU
//! without FMA, `mul_add` is a library call: exact, but slow.

use half::f16;

/// The element types a corpus row can hold.
pub(super) trait Element: Copy {
    /// `n` (1..=8) values from `src` widened to f32, zero-padded to 8 lanes.
    fn widen(src: &[Self]) -> [f32; 8];
}

impl Element for f32 {
    #[inline]
    fn widen(src: &[f32]) -> [f32; 8] {
        let mut out = [0.0; 8];
        out[..src.len()].copy_from_slice(src);
        out
    }
}

impl Element for f16 {
    #[inline]
    fn widen(src: &[f16]) -> [f32; 8] {
        let mut out = [0.0; 8];
        for (o, s) in out.iter_mut().zip(src) {
            *o = s.to_f32();
        }
        out
    }
}

/// Dots of `R` rows of `dim` values with `Q` queries of `stride` values
/// each (`stride >= dim` rounded up to 8, zero past `dim`), laid out one
/// after the other in `queries`.
pub(super) fn tile<E: Element, const R: usize, const Q: usize>(
    rows: [&[E]; R],
    dim: usize,
    queries: &[f32],
    stride: usize,
) -> [[f32; Q]; R] {
    let mut acc = [[[0.0f32; 8]; Q]; R];
    let mut c = [[0.0f32; 8]; R];
    for offset in (0..dim).step_by(8) {
        let end = dim.min(offset + 8);
        for r in 0..R {
            c[r] = E::widen(&rows[r][offset..end]);
        }
        for q in 0..Q {
            let v = &queries[q * stride + offset..q * stride + offset + 8];
            for r in 0..R {
                for lane in 0..8 {
                    acc[r][q][lane] = c[r][lane].mul_add(v[lane], acc[r][q][lane]);
                }
            }
        }
    }
    let mut out = [[0.0; Q]; R];
    for r in 0..R {
        for q in 0..Q {
            out[r][q] = hsum(&acc[r][q]);
        }
    }
    out
}

/// Each row's dot product with itself.
pub(super) fn self_dots<E: Element, const R: usize>(rows: [&[E]; R], dim: usize) -> [f32; R] {
    let mut acc = [[0.0f32; 8]; R];
    for offset in (0..dim).step_by(8) {
        let end = dim.min(offset + 8);
        for r in 0..R {
            let c = E::widen(&rows[r][offset..end]);
            for lane in 0..8 {
                acc[r][lane] = c[lane].mul_add(c[lane], acc[r][lane]);
            }
        }
    }
    let mut out = [0.0; R];
    for r in 0..R {
        out[r] = hsum(&acc[r]);
    }
    out
}

/// The canonical reduction: `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`.
#[inline]
pub(super) fn hsum(l: &[f32; 8]) -> f32 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}
