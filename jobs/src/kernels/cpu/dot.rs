//! The one dot product every CPU kernel uses, and the tiling that feeds it.
//!
//! # The canonical dot product
//!
//! An exact reference needs one definition of `dot(a, b)` in f32, or the
//! answer would depend on the thread count, the batch a query came in or
//! the CPU. Ours: lane `l` (0..8) is a chain of fused multiply-adds over
//! the elements `l, l + 8, l + 16, ...` in order, starting from +0; the
//! last partial group of 8 is padded with zeros (adding `fma(0, 0, x)`);
//! then the lanes are summed as `((l0 + l1) + (l2 + l3)) + ((l4 + l5) +
//! (l6 + l7))`, the order in which horizontal adds reduce four pairs at
//! once. f16 values are widened to f32 first, which is exact.
//!
//! Eight lanes is one AVX2 register. A single accumulator per pair keeps
//! the definition the same whatever the tile shape; the independent chains
//! the FMA units need come from computing several pairs at once instead
//! (a tile of `R` rows by `Q` queries), so the definition costs nothing.
//!
//! # Tiles and blocking
//!
//! [`scan`] computes every (query, row) dot of a row range. Rows are taken
//! in blocks of about [`BLOCK_BYTES`]; each block is read from memory once
//! and then reused from cache by every query, rather than streamed from
//! memory once per query. Within a block, tiles of 2 rows by 6 queries keep
//! 12 accumulators, 2 row registers and a query register busy (15 of the 16
//! AVX2 registers) and need 2 loads from L2 per 12 FMAs; this measured
//! faster than 3 by 4 or 4 by 3. Fewer queries use taller tiles, down to
//! 8 rows by one query: enough independent chains that a single query is
//! limited by memory bandwidth alone.

use std::ops::Range;

use half::f16;

use super::portable;
use crate::kernels::Matrix;

/// Bytes of corpus rows processed by all queries before moving on: well
/// inside a core's L2 so the queries re-read the block from cache.
const BLOCK_BYTES: usize = 96 * 1024;

/// The instruction set the tiles run on, detected once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c") {
            return Isa::Avx2;
        }
        Isa::Portable
    }
}

/// Query vectors widened to f32, each padded with zeros to a multiple of 8.
#[derive(Debug, Clone)]
pub(crate) struct Pack {
    data: Vec<f32>,
    dim: usize,
    stride: usize,
}

impl Pack {
    pub(crate) fn new(dim: usize) -> Pack {
        Pack { data: Vec::new(), dim, stride: (dim.div_ceil(8) * 8).max(8) }
    }

    /// Replaces the contents with `rows` of `matrix`, reusing the buffer.
    pub(crate) fn fill(&mut self, matrix: Matrix<'_>, rows: Range<usize>) {
        debug_assert_eq!(matrix.dim(), self.dim);
        let (dim, stride) = (self.dim, self.stride);
        self.data.clear();
        self.data.resize(rows.len() * stride, 0.0);
        for (dst, row) in self.data.chunks_exact_mut(stride).zip(rows) {
            let dst = &mut dst[..dim];
            match matrix {
                Matrix::F32 { data, .. } => dst.copy_from_slice(&data[row * dim..(row + 1) * dim]),
                Matrix::F16 { data, .. } => {
                    half::slice::HalfFloatSliceExt::convert_to_f32_slice(&data[row * dim..(row + 1) * dim], dst);
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.data.len() / self.stride
    }

    /// Query `i` without its padding.
    pub(crate) fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.stride..i * self.stride + self.dim]
    }

    fn as_matrix(&self) -> Matrix<'_> {
        Matrix::F32 { data: &self.data, dim: self.stride }
    }
}

/// Dots of the rows `ids` of `rows` with the queries `first..first + Q`
/// of `pack`, as `out[r][q]`.
#[inline]
pub(crate) fn tile<const R: usize, const Q: usize>(
    isa: Isa,
    rows: Matrix<'_>,
    ids: [usize; R],
    pack: &Pack,
    first: usize,
) -> [[f32; Q]; R] {
    let dim = pack.dim;
    debug_assert_eq!(rows.dim(), dim);
    let queries = &pack.data[first * pack.stride..(first + Q) * pack.stride];
    match rows {
        Matrix::F32 { data, .. } => {
            let rows: [&[f32]; R] = std::array::from_fn(|r| &data[ids[r] * dim..(ids[r] + 1) * dim]);
            match isa {
                Isa::Portable => portable::tile(rows, dim, queries, pack.stride),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Isa::Avx2` is only detected on CPUs with avx2, fma and f16c; each row slice
                // holds `dim` values and `queries` holds Q padded queries of `pack.stride`.
                Isa::Avx2 => unsafe {
                    super::avx2::tile::<false, R, Q>(rows.map(|r| r.as_ptr().cast()), dim, queries.as_ptr(), pack.stride)
                },
            }
        }
        Matrix::F16 { data, .. } => {
            let rows: [&[f16]; R] = std::array::from_fn(|r| &data[ids[r] * dim..(ids[r] + 1) * dim]);
            match isa {
                Isa::Portable => portable::tile(rows, dim, queries, pack.stride),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above; `f16` is `repr(transparent)` over its `u16` bits.
                Isa::Avx2 => unsafe {
                    super::avx2::tile::<true, R, Q>(rows.map(|r| r.as_ptr().cast()), dim, queries.as_ptr(), pack.stride)
                },
            }
        }
    }
}

/// Receives the dots of [`scan`] one tile at a time, so that per-query
/// values are looked up once a tile rather than once a dot.
pub(crate) trait Sink {
    /// `dots[r][q]` is the dot of row `first_row + r` with query `first_query + q`.
    fn take<const R: usize, const Q: usize>(&mut self, first_row: usize, first_query: usize, dots: &[[f32; Q]; R]);
}

/// Hands `sink` the dot of every query of `pack` with every row in
/// `range`; each query sees its rows in increasing order.
pub(crate) fn scan(isa: Isa, rows: Matrix<'_>, range: Range<usize>, pack: &Pack, sink: &mut impl Sink) {
    let element = match rows {
        Matrix::F32 { .. } => 4,
        Matrix::F16 { .. } => 2,
    };
    let block = (BLOCK_BYTES / (rows.dim() * element).max(1)).max(24) / 24 * 24;
    let mut start = range.start;
    while start < range.end {
        let end = range.end.min(start + block);
        let mut first = 0;
        while first < pack.len() {
            first += match pack.len() - first {
                1 => pass::<8, 1>(isa, rows, start..end, pack, first, sink),
                2 => pass::<6, 2>(isa, rows, start..end, pack, first, sink),
                3 => pass::<4, 3>(isa, rows, start..end, pack, first, sink),
                4 | 5 => pass::<3, 4>(isa, rows, start..end, pack, first, sink),
                _ => pass::<2, 6>(isa, rows, start..end, pack, first, sink),
            };
        }
        start = end;
    }
}

/// One query tile over a block of rows; returns the number of queries done.
#[inline]
fn pass<const R: usize, const Q: usize>(
    isa: Isa,
    rows: Matrix<'_>,
    range: Range<usize>,
    pack: &Pack,
    first: usize,
    sink: &mut impl Sink,
) -> usize {
    let mut row = range.start;
    while row + R <= range.end {
        sink.take(row, first, &tile::<R, Q>(isa, rows, std::array::from_fn(|r| row + r), pack, first));
        row += R;
    }
    for row in row..range.end {
        sink.take(row, first, &tile::<1, Q>(isa, rows, [row], pack, first));
    }
    Q
}

/// Writes each row's canonical `dot(row, row)` for the rows starting at
/// `first` into `out`.
pub(crate) fn self_dots(isa: Isa, rows: Matrix<'_>, first: usize, out: &mut [f32]) {
    const R: usize = 8;
    let mut done = 0;
    while done + R <= out.len() {
        let sums = self_dots_tile::<R>(isa, rows, std::array::from_fn(|r| first + done + r));
        out[done..done + R].copy_from_slice(&sums);
        done += R;
    }
    for (i, out) in out.iter_mut().enumerate().skip(done) {
        *out = self_dots_tile::<1>(isa, rows, [first + i])[0];
    }
}

fn self_dots_tile<const R: usize>(isa: Isa, rows: Matrix<'_>, ids: [usize; R]) -> [f32; R] {
    let dim = rows.dim();
    match rows {
        Matrix::F32 { data, .. } => {
            let rows: [&[f32]; R] = std::array::from_fn(|r| &data[ids[r] * dim..(ids[r] + 1) * dim]);
            match isa {
                Isa::Portable => portable::self_dots(rows, dim),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx2, fma and f16c are present; each slice holds `dim` values.
                Isa::Avx2 => unsafe { super::avx2::self_dots::<false, R>(rows.map(|r| r.as_ptr().cast()), dim) },
            }
        }
        Matrix::F16 { data, .. } => {
            let rows: [&[f16]; R] = std::array::from_fn(|r| &data[ids[r] * dim..(ids[r] + 1) * dim]);
            match isa {
                Isa::Portable => portable::self_dots(rows, dim),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above; `f16` is `repr(transparent)` over its `u16` bits.
                Isa::Avx2 => unsafe { super::avx2::self_dots::<true, R>(rows.map(|r| r.as_ptr().cast()), dim) },
            }
        }
    }
}

/// The inverse norm of a row from its `dot(row, row)`: 0 for a zero row.
#[inline]
pub(crate) fn inverse_norm(self_dot: f32) -> f32 {
    if self_dot > 0.0 { 1.0 / self_dot.sqrt() } else { 0.0 }
}

/// The inverse norms of every query of `pack`.
pub(crate) fn pack_inverse_norms(isa: Isa, pack: &Pack) -> Vec<f32> {
    let mut out = vec![0.0; pack.len()];
    self_dots(isa, pack.as_matrix(), 0, &mut out);
    out.iter_mut().for_each(|x| *x = inverse_norm(*x));
    out
}
