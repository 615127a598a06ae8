// Batched top-k cosine similarity: corpus rows (f16 or f32) against a batch
// of f32 queries, the best k per query kept on chip.
//
// topk_partial_*: a block takes QUERIES queries (blockIdx.x) and walks the
// corpus in tiles of THREADS rows (one row per thread, grid-stride over
// blockIdx.y). The query groups are the grid's fastest dimension, so the
// blocks of all groups that read the same tiles run at the same time and
// share them through L2: the corpus comes from HBM about once per batch. Each thread computes its row's canonical dot with the
// block's queries (8 lanes x QUERIES accumulators in registers; the row is
// read once per block, the queries come from L1) and writes the cosines to
// a shared tile. Then warp q folds the tile into query q's sorted top-k
// list in shared memory: a ballot finds the few candidates that beat the
// list's worst, each is placed by the whole warp. At the end each block
// writes its k best per query; topk_merge folds the blocks' lists into the
// final k per query. Only those final lists go back to the host.
//
// Order: higher cosine first, equal cosines by lower row, NaN as -inf: the
// CPU kernels' order, so the answers are the same.

#define QUERIES 8
#define THREADS 256
#define FULL 0xffffffffu
#define NONE 0xffffffffu

extern __shared__ __align__(16) unsigned char shared_bytes[];

// Offers hit (s, idx) to the sorted list (ls, li) of length *len (at most
// k), best first. Called by all 32 lanes of a warp with the same hit.
__device__ void warp_insert(float* ls, u32* li, volatile u32* len, u32 k, float s, u32 idx, int lane) {
    const u32 n = *len;
    if (n == k && !ahead(s, idx, ls[k - 1], li[k - 1])) return;
    u32 pos = 0;
    for (u32 base = 0; base < n; base += 32) {
        const u32 j = base + lane;
        const bool before = j < n && ahead(ls[j], li[j], s, idx);
        pos += __popc(__ballot_sync(FULL, before));
    }
    const int last = (int)(n < k ? n : k - 1);
    for (int hi = last; hi > (int)pos; hi -= 32) {
        const int j = hi - 1 - lane;
        const bool moves = j >= (int)pos;
        float vs = 0.0f;
        u32 vi = 0;
        if (moves) { vs = ls[j]; vi = li[j]; }
        __syncwarp();
        if (moves) { ls[j + 1] = vs; li[j + 1] = vi; }
        __syncwarp();
    }
    if (lane == 0) {
        ls[pos] = s;
        li[pos] = idx;
        *len = n < k ? n + 1 : k;
    }
    __syncwarp();
}

// Offers one candidate per lane (`valid` ones) to the list: those that
// beat its worst are inserted one at a time.
__device__ void warp_offer(float* ls, u32* li, volatile u32* len, u32 k, bool valid, float s, u32 idx, int lane) {
    const u32 n = *len;
    const bool passes = valid && (n < k || ahead(s, idx, ls[k - 1], li[k - 1]));
    u32 mask = __ballot_sync(FULL, passes);
    while (mask) {
        const int src = __ffs(mask) - 1;
        mask &= mask - 1;
        const float cs = __shfl_sync(FULL, s, src);
        const u32 ci = __shfl_sync(FULL, idx, src);
        warp_insert(ls, li, len, k, cs, ci, lane);
    }
}

// The inverse norm of each of `n` rows.
template <typename E>
__device__ void inverse_norms(const E* rows, u32 n, int dim, float* out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const E* r = rows + (size_t)i * dim;
    out[i] = inverse_norm(dot(r, r, dim, dim % 8 == 0));
}

// queries: QUERIES * gridDim.x rows of dim8 floats (zero-padded);
// query_inv: their inverse norms. Output: per query (row-major by query,
// then block), k (score, index) slots, unused slots with index NONE.
template <typename E>
__device__ void topk_partial(const E* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
                             const float* query_inv, u32 nq, u32 k, float* part_score, u32* part_index) {
    float* list_s = reinterpret_cast<float*>(shared_bytes);
    u32* list_i = reinterpret_cast<u32*>(list_s + QUERIES * k);
    float* tile = reinterpret_cast<float*>(list_i + QUERIES * k);
    __shared__ u32 lens[QUERIES];

    const int dim8 = (dim + 7) & ~7;
    const bool aligned = dim % 8 == 0;
    const u32 q0 = blockIdx.x * QUERIES;
    const float* qs = queries + (size_t)q0 * dim8;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x < QUERIES) lens[threadIdx.x] = 0;
    __syncthreads();

    const u32 tiles = (rows + THREADS - 1) / THREADS;
    for (u32 t = blockIdx.y; t < tiles; t += gridDim.y) {
        const u32 row = t * THREADS + threadIdx.x;
        if (row < rows) {
            float acc[QUERIES][8];
#pragma unroll
            for (int q = 0; q < QUERIES; q++)
#pragma unroll
                for (int l = 0; l < 8; l++) acc[q][l] = 0.0f;
            const E* r = corpus + (size_t)row * dim;
            float x[8], y[8];
            for (int g = 0; g < dim8 / 8; g++) {
                load8(r, g, dim, aligned, x);
#pragma unroll
                for (int q = 0; q < QUERIES; q++) {
                    load8(qs + (size_t)q * dim8, g, dim8, true, y);
                    fma8(x, y, acc[q]);
                }
            }
            const float rinv = row_inv[row];
#pragma unroll
            for (int q = 0; q < QUERIES; q++)
                tile[q * THREADS + threadIdx.x] = __fmul_rn(__fmul_rn(hsum8(acc[q]), query_inv[q0 + q]), rinv);
        }
        __syncthreads();
        if (warp < QUERIES && q0 + warp < nq) {
            float* ls = list_s + warp * k;
            u32* li = list_i + warp * k;
            for (int base = 0; base < THREADS; base += 32) {
                const u32 idx = t * THREADS + base + lane;
                const bool valid = idx < rows;
                const float s = valid ? tile[warp * THREADS + base + lane] : 0.0f;
                warp_offer(ls, li, &lens[warp], k, valid, s, idx, lane);
            }
        }
        __syncthreads();
    }

    if (warp < QUERIES && q0 + warp < nq) {
        const size_t out = ((size_t)(q0 + warp) * gridDim.y + blockIdx.y) * k;
        const u32 n = lens[warp];
        for (u32 j = lane; j < k; j += 32) {
            part_score[out + j] = j < n ? list_s[warp * k + j] : 0.0f;
            part_index[out + j] = j < n ? list_i[warp * k + j] : NONE;
        }
    }
}

extern "C" __global__ void inverse_norms_f16(const half_bits* rows, u32 n, int dim, float* out) {
    inverse_norms(rows, n, dim, out);
}

extern "C" __global__ void inverse_norms_f32(const float* rows, u32 n, int dim, float* out) {
    inverse_norms(rows, n, dim, out);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_partial_f16(const half_bits* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
                 const float* query_inv, u32 nq, u32 k, float* part_score, u32* part_index) {
    topk_partial(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_partial_f32(const float* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
                 const float* query_inv, u32 nq, u32 k, float* part_score, u32* part_index) {
    topk_partial(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index);
}

// One warp per query (blockIdx.x): folds the `parts` lists of k slots of
// topk_partial into the query's best k, written to out_* (k slots per
// query, unused slots with index NONE).
extern "C" __global__ void __launch_bounds__(32)
topk_merge(const float* part_score, const u32* part_index, u32 parts, u32 k, float* out_score, u32* out_index) {
    float* ls = reinterpret_cast<float*>(shared_bytes);
    u32* li = reinterpret_cast<u32*>(ls + k);
    __shared__ u32 len;
    const int lane = threadIdx.x;
    if (lane == 0) len = 0;
    __syncwarp();
    const size_t first = (size_t)blockIdx.x * parts * k;
    const size_t total = (size_t)parts * k;
    for (size_t base = 0; base < total; base += 32) {
        const size_t j = base + lane;
        const u32 idx = j < total ? part_index[first + j] : NONE;
        const float s = j < total ? part_score[first + j] : 0.0f;
        warp_offer(ls, li, &len, k, idx != NONE, s, idx, lane);
    }
    const size_t out = (size_t)blockIdx.x * k;
    for (u32 j = lane; j < k; j += 32) {
        out_score[out + j] = j < len ? ls[j] : 0.0f;
        out_index[out + j] = j < len ? li[j] : NONE;
    }
}
