//! The AVX2 + FMA + F16C tiles, chosen at run time by [`super::dot::Isa`].
//!
//! Each function computes exactly the canonical dot product described in
//! [`super::dot`]: one 8-lane FMA accumulator per (row, query) pair, the
//! tail zero-padded, then the fixed reduction of [`reduce4`], which sums
//! four accumulators at once with horizontal adds. The portable
//! tiles in [`super::portable`] do the same operations in the same order,
//! so both give the same bits.
//!
//! Rows arrive as byte pointers with a const flag saying whether they hold
//! f32 or f16 (as raw `u16` bits): the flag is resolved at compile time and
//! keeps one body for both element types without a trait whose methods
//! would need `#[target_feature]`.

use std::arch::x86_64::*;

/// Dots of `R` rows with `Q` queries.
///
/// # Safety
/// The CPU supports avx2, fma and f16c. Each `rows[r]` points at `dim`
/// readable elements (f32, or f16 bits when `F16`). `queries` points at
/// `Q * stride` readable f32, with `stride >= dim` rounded up to 8 and the
/// values past `dim` in each query zero.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn tile<const F16: bool, const R: usize, const Q: usize>(
    rows: [*const u8; R],
    dim: usize,
    queries: *const f32,
    stride: usize,
) -> [[f32; Q]; R] {
    let mut acc = [[_mm256_setzero_ps(); Q]; R];
    let mut c = [_mm256_setzero_ps(); R];
    let full = dim / 8;
    for chunk in 0..full {
        let offset = chunk * 8;
        for r in 0..R {
            // SAFETY: `offset + 8 <= dim` elements of row r are readable.
            c[r] = unsafe { load::<F16>(rows[r], offset) };
        }
        // SAFETY: `offset + 8 <= stride` values of each query are readable.
        unsafe { step(&mut acc, &c, queries, stride, offset) };
    }
    let rem = dim % 8;
    if rem != 0 {
        let offset = full * 8;
        for r in 0..R {
            // SAFETY: `offset + rem == dim` elements of row r are readable.
            c[r] = unsafe { load_partial::<F16>(rows[r], offset, rem) };
        }
        // SAFETY: the padded query holds `offset + 8 <= stride` values.
        unsafe { step(&mut acc, &c, queries, stride, offset) };
    }
    let mut out = [[0.0; Q]; R];
    let mut i = 0;
    while i < R * Q {
        let group: [__m256; 4] = [0, 1, 2, 3].map(|j| if i + j < R * Q { acc[(i + j) / Q][(i + j) % Q] } else { _mm256_setzero_ps() });
        let sums = reduce4(group);
        for (j, sum) in sums.into_iter().enumerate().take(R * Q - i) {
            out[(i + j) / Q][(i + j) % Q] = sum;
        }
        i += 4;
    }
    out
}

/// Each row's dot product with itself.
///
/// # Safety
/// The CPU supports avx2, fma and f16c; each `rows[r]` points at `dim`
/// readable elements (f32, or f16 bits when `F16`).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn self_dots<const F16: bool, const R: usize>(rows: [*const u8; R], dim: usize) -> [f32; R] {
    let mut acc = [_mm256_setzero_ps(); R];
    let full = dim / 8;
    for chunk in 0..full {
        for r in 0..R {
            // SAFETY: `chunk * 8 + 8 <= dim` elements of row r are readable.
            let c = unsafe { load::<F16>(rows[r], chunk * 8) };
            acc[r] = _mm256_fmadd_ps(c, c, acc[r]);
        }
    }
    let rem = dim % 8;
    if rem != 0 {
        for r in 0..R {
            // SAFETY: `full * 8 + rem == dim` elements of row r are readable.
            let c = unsafe { load_partial::<F16>(rows[r], full * 8, rem) };
            acc[r] = _mm256_fmadd_ps(c, c, acc[r]);
        }
    }
    let mut out = [0.0; R];
    let mut i = 0;
    while i < R {
        let group: [__m256; 4] = [0, 1, 2, 3].map(|j| if i + j < R { acc[i + j] } else { _mm256_setzero_ps() });
        let sums = reduce4(group);
        for (j, sum) in sums.into_iter().enumerate().take(R - i) {
            out[i + j] = sum;
        }
        i += 4;
    }
    out
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn step<const R: usize, const Q: usize>(
    acc: &mut [[__m256; Q]; R],
    c: &[__m256; R],
    queries: *const f32,
    stride: usize,
    offset: usize,
) {
    for q in 0..Q {
        // SAFETY: the caller guarantees `Q * stride` readable values and `offset + 8 <= stride`.
        let v = unsafe { _mm256_loadu_ps(queries.add(q * stride + offset)) };
        for (acc, c) in acc.iter_mut().zip(c) {
            acc[q] = _mm256_fmadd_ps(*c, v, acc[q]);
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn load<const F16: bool>(row: *const u8, offset: usize) -> __m256 {
    // SAFETY: the caller guarantees 8 readable elements at `offset`; both loads are unaligned.
    unsafe {
        if F16 {
            _mm256_cvtph_ps(_mm_loadu_si128(row.cast::<u16>().add(offset).cast()))
        } else {
            _mm256_loadu_ps(row.cast::<f32>().add(offset))
        }
    }
}

/// The first `rem` (1..8) elements at `offset`, the other lanes zero.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn load_partial<const F16: bool>(row: *const u8, offset: usize, rem: usize) -> __m256 {
    if F16 {
        let mut bits = [0u16; 8];
        // SAFETY: the caller guarantees `rem` readable halves at `offset`; `bits` holds 8.
        unsafe { std::ptr::copy_nonoverlapping(row.cast::<u16>().add(offset), bits.as_mut_ptr(), rem) };
        // SAFETY: `bits` is 16 readable bytes.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(bits.as_ptr().cast()) })
    } else {
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem as i32), lanes);
        // SAFETY: masked-off lanes are neither read nor faulted on; the first `rem` are readable.
        unsafe { _mm256_maskload_ps(row.cast::<f32>().add(offset), mask) }
    }
}

/// The canonical reduction of four accumulators, each summed as
/// `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`: three horizontal
/// adds leave the two halves of all four sums in the two 128-bit lanes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn reduce4(v: [__m256; 4]) -> [f32; 4] {
    let pairs = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    let sums = _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps::<1>(pairs));
    let mut out = [0.0; 4];
    // SAFETY: `out` holds four f32.
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), sums) };
    out
}
