//! Mirrors of `tensor.cuh`, the tensor-core tile product, for the hosts of
//! the kernels that use it, and the pieces of the bounds on its estimates'
//! error (derived in [`super::topk::mma_epsilon`]).

/// Threads per block (`THREADS` in tensor.cuh).
pub(super) const THREADS: usize = 256;
/// Bytes of each row a chunk copies (`CHUNK_BYTES` in tensor.cuh).
pub(super) const CHUNK_BYTES: usize = 64;
/// Rows per tile (`MMA_ROWS` in tensor.cuh).
pub(super) const MMA_ROWS: usize = 128;
/// Columns per block (`MMA_COLS` in tensor.cuh).
pub(super) const MMA_COLS: usize = 64;
/// Dynamic shared memory of `tile_products` (`TILE_SHARED` in tensor.cuh).
pub(super) const TILE_SHARED: usize = 2 * (MMA_ROWS + MMA_COLS) * (CHUNK_BYTES + 16);

/// f32's unit roundoff, 2^-24.
pub(super) const U: f64 = 1.0 / 16_777_216.0;
/// The unit roundoff of f16 and tf32 rounded to nearest, 2^-11.
pub(super) const H: f64 = 1.0 / 2048.0;

/// γ_j = ju / (1 − ju), the relative error of j roundings in a row.
pub(super) fn gamma(j: f64) -> f64 {
    j * U / (1.0 - j * U)
}

/// α = β / (1 − β), β = 3n·2^-22: the allowance for the tensor cores' sum
/// of the products of `dim` elements (n: `dim` rounded up to 32, the last
/// chunk's zeros included), relative to S, the sum of the products'
/// magnitudes. Each step may err by c = (j + 2)·2^-22 ≤ 3j·2^-22 times the
/// magnitudes of its j products and of the accumulator it adds them to,
/// and the accumulator is at most S plus the error E so far; so
/// E ≤ Σ c·(S + E) ≤ β·(S + E), and E ≤ βS / (1 − β).
pub(super) fn accumulation(dim: usize) -> f64 {
    let beta = 3.0 * (dim.div_ceil(32) * 32) as f64 / 4_194_304.0;
    beta / (1.0 - beta)
}

/// A bound computed in f64, rounded up to f32.
pub(super) fn round_up(bound: f64) -> f32 {
    let rounded = bound as f32;
    if f64::from(rounded) < bound { rounded.next_up() } else { rounded }
}
