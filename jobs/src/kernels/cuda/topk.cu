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
// topk_tiles_* and topk_mma_* (below) search aligned rows: in coalesced
// tiles, and for large batches with tensor-core estimates of the dots,
// re-scored canonically wherever they could change the answer.
//
// Order: higher cosine first, equal cosines by lower row, NaN as -inf: the
// CPU kernels' order, so the answers are the same.

#define QUERIES 8
#define FULL 0xffffffffu
#define NONE 0xffffffffu

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

// Writes the block's `nlists` lists, of queries q0 onwards, to the partial
// output: per query (row-major by query, then block) k (score, index)
// slots, unused slots with index NONE.
__device__ void write_lists(const float* list_s, const u32* list_i, const u32* lens, int nlists, u32 q0, u32 nq, u32 k,
                            float* part_score, u32* part_index) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int qi = warp; qi < nlists; qi += THREADS / 32) {
        if (q0 + qi >= nq) continue;
        const size_t out = ((size_t)(q0 + qi) * gridDim.y + blockIdx.y) * k;
        const u32 n = lens[qi];
        for (u32 j = lane; j < k; j += 32) {
            part_score[out + j] = j < n ? list_s[qi * k + j] : 0.0f;
            part_index[out + j] = j < n ? list_i[qi * k + j] : NONE;
        }
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
// query_inv: their inverse norms. Output: see write_lists.
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
                tile[q * THREADS + threadIdx.x] = cosine(hsum8(acc[q]), query_inv[q0 + q], rinv);
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

    write_lists(list_s, list_i, lens, QUERIES, q0, nq, k, part_score, part_index);
}

// topk_tiles_*: the same search for corpora whose rows are 16-byte aligned
// (dim a multiple of 8), with the corpus read the way the memory system
// wants it. topk_partial reads one row per thread, so a warp's load touches
// 32 rows (uncoalesced, stalled on L1TEX), and past 8 queries every group
// of 8 re-reads the corpus. Here a block takes GROUPS x 8 queries (GROUPS
// 1, 2 or 4, chosen by the host from the batch) and walks the corpus in
// tiles of R = THREADS / GROUPS rows; thread t computes row t % R against
// query group t / R, so one read of a tile serves up to 32 queries. The
// tile comes into shared memory CHUNK_BYTES of every row at a time, copied
// by all threads together (consecutive threads take consecutive 16-byte
// pieces of a row) with cp.async, double-buffered: the next chunk is in
// flight while the current one is multiplied. Rows are padded by 16 bytes
// in shared memory, so the 8 threads of a quarter warp reading 8 rows hit
// 8 different bank groups; the queries' chunk is read as a broadcast. The
// canonical dot is unchanged (the same groups, in the same order, into the
// same 8 lanes), so ids and scores are the CPU's bits, as topk_partial's.

#define MAX_GROUPS 4

// Starts copying chunk `c` of tile `tile` (rows of E) and of the block's
// queries into buffer `b`; pieces past the corpus or past the last group
// are zero.
template <typename E>
__device__ __forceinline__ void load_chunk(const E* corpus, u32 rows, int dim, const float* queries, int dim8, u32 q0,
                                           int nqueries, u32 tile, int R, int c, int ngroups, unsigned char* rowbuf,
                                           float* qbuf) {
    constexpr int G_PER_CHUNK = CHUNK_BYTES / (8 * (int)sizeof(E));
    constexpr int QUERY_FLOATS = G_PER_CHUNK * 8;
    constexpr int QUERY_PIECES = QUERY_FLOATS / 4;
    copy_rows_async(corpus, rows, dim, tile * (u32)R, R, c, ngroups, rowbuf);
    for (int i = threadIdx.x; i < nqueries * QUERY_PIECES; i += THREADS) {
        const int q = i / QUERY_PIECES, p = i % QUERY_PIECES;
        const int group = c * G_PER_CHUNK + p / 2;
        float* dst = qbuf + q * QUERY_FLOATS + p * 4;
        if (group < ngroups) {
            copy16_async(dst, queries + (size_t)(q0 + q) * dim8 + c * QUERY_FLOATS + p * 4);
        } else {
            zero16(dst);
        }
    }
}

// GROUPS: query groups of 8 per block (1, 2 or 4). Shared memory, in order:
// two row buffers of R rows of CHUNK_BYTES + 16, two query buffers of
// 8 x groups queries of one chunk, the scores of a tile (8 x groups x R),
// then the 8 x groups lists of k. Arguments and output as topk_partial.
template <typename E, int GROUPS>
__device__ void topk_tiles(const E* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
                           const float* query_inv, u32 nq, u32 k, float* part_score, u32* part_index) {
    constexpr int G_PER_CHUNK = CHUNK_BYTES / (8 * (int)sizeof(E));
    constexpr int ROW_BYTES = CHUNK_BYTES + 16;
    constexpr int QUERY_FLOATS = G_PER_CHUNK * 8;
    constexpr int R = THREADS / GROUPS;
    constexpr int nqueries = QUERIES * GROUPS;
    unsigned char* rowbufs = shared_bytes;
    float* qbufs = reinterpret_cast<float*>(rowbufs + 2 * R * ROW_BYTES);
    float* tile_scores = qbufs + 2 * nqueries * QUERY_FLOATS;
    float* list_s = tile_scores + nqueries * R;
    u32* list_i = reinterpret_cast<u32*>(list_s + nqueries * k);
    __shared__ u32 lens[QUERIES * MAX_GROUPS];

    const int dim8 = dim;  // dim is a multiple of 8 here
    const int ngroups = dim / 8;
    const int nchunks = (ngroups + G_PER_CHUNK - 1) / G_PER_CHUNK;
    const u32 q0 = blockIdx.x * (u32)nqueries;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = threadIdx.x % R, qg = threadIdx.x / R;
    if (threadIdx.x < nqueries) lens[threadIdx.x] = 0;

    const TileWalk walk((rows + (u32)R - 1) / (u32)R, nchunks);
    if (walk.steps > 0) load_chunk(corpus, rows, dim, queries, dim8, q0, nqueries, blockIdx.y, R, 0, ngroups, rowbufs, qbufs);
    commit_copies();

    float acc[QUERIES][8];
    for (u32 s = 0; s < walk.steps; s++) {
        const u32 tile = walk.tile(s);
        const int c = walk.chunk(s);
        if (s + 1 < walk.steps) {
            const int b = (int)((s + 1) & 1u);
            load_chunk(corpus, rows, dim, queries, dim8, q0, nqueries, walk.tile(s + 1), R, walk.chunk(s + 1), ngroups,
                       rowbufs + b * R * ROW_BYTES, qbufs + b * nqueries * QUERY_FLOATS);
        }
        commit_copies();
        wait_all_but_latest();
        __syncthreads();

        if (c == 0) {
#pragma unroll
            for (int q = 0; q < QUERIES; q++)
#pragma unroll
                for (int l = 0; l < 8; l++) acc[q][l] = 0.0f;
        }
        const int b = (int)(s & 1u);
        const E* row_chunk = reinterpret_cast<const E*>(rowbufs + b * R * ROW_BYTES + r * ROW_BYTES);
        const float* query_chunk = qbufs + b * nqueries * QUERY_FLOATS + qg * QUERIES * QUERY_FLOATS;
        const int here = min(G_PER_CHUNK, ngroups - c * G_PER_CHUNK);
        float x[8], y[8];
        for (int g = 0; g < here; g++) {
            load8(row_chunk, g, QUERY_FLOATS, true, x);
#pragma unroll
            for (int q = 0; q < QUERIES; q++) {
                load8(query_chunk + q * QUERY_FLOATS, g, QUERY_FLOATS, true, y);
                fma8(x, y, acc[q]);
            }
        }

        if (c == nchunks - 1) {
            const u32 row = tile * (u32)R + (u32)r;
            const float rinv = row < rows ? row_inv[row] : 0.0f;
#pragma unroll
            for (int q = 0; q < QUERIES; q++) {
                const int qi = qg * QUERIES + q;
                tile_scores[qi * R + r] = cosine(hsum8(acc[q]), query_inv[q0 + qi], rinv);
            }
            __syncthreads();
            for (int qi = warp; qi < nqueries; qi += THREADS / 32) {
                if (q0 + qi >= nq) continue;
                float* ls = list_s + qi * k;
                u32* li = list_i + qi * k;
                for (int base = 0; base < R; base += 32) {
                    const u32 idx = tile * (u32)R + base + lane;
                    const bool valid = idx < rows;
                    const float sc = valid ? tile_scores[qi * R + base + lane] : 0.0f;
                    warp_offer(ls, li, &lens[qi], k, valid, sc, idx, lane);
                }
            }
        }
        __syncthreads();
    }
    __syncthreads();  // a block with no tile still reads the lengths below

    write_lists(list_s, list_i, lens, nqueries, q0, nq, k, part_score, part_index);
}

// topk_mma_*: the same search for large batches (the host sends batches
// of at least MMA_COLS queries of aligned rows here), the dots
// estimated on the tensor cores and recomputed canonically wherever the
// estimate could change the answer.
//
// Layout: a block takes MMA_COLS queries (blockIdx.x) as the columns of
// tile_products (tensor.cuh), the corpus as its rows.
//
// Exactness. At the end of a tile each thread holds 32 estimated cosines
// (4 rows x 8 queries). Query q's list keeps its best k by canonical
// score, as topk_tiles' lists do; floors[q] is the list's k-th score minus
// eps, rounded down (-inf until the list is full, and for an untrusted
// query). A pair whose estimate is not below its query's floor, and every
// pair of an untrusted row (see `trusted`), is a candidate: it is queued
// in shared memory, each queued pair is re-scored with the canonical dot
// by 8 threads (group_dot), and the warp of each query offers them to its
// list with warp_offer, then raises the floor. The estimate is within eps
// of the canonical score (mma_epsilon in topk.rs derives the bound), so a
// pair left out scores strictly below the list's k-th hit: it could not
// have entered the list then, nor later, as the k-th score only rises.
// The lists therefore end as topk_tiles' would, with canonical scores.
// When more pairs pass than the queue holds, the rest are checked again,
// against the raised floors, in another round.

#define QUEUE THREADS

// Inverse norms in [2^-50, 2^50] (squared norms in [2^-100, 2^100]): the
// range where the estimate's error bound holds. Zero, infinite and NaN
// rows and queries (inverse norm 0) are outside: all their pairs are
// re-scored.
__device__ __forceinline__ bool trusted(float inv) { return inv >= 0x1p-50f && inv <= 0x1p50f; }

// The queries as the tensor cores take them: q * query_inv (a unit
// vector) times the scale, rounded to E's type; zero for an untrusted
// query, whose pairs are all re-scored. `n` rows of `dim` floats.
template <typename E>
__device__ void mma_queries(const float* queries, const float* query_inv, u32 n, int dim, E* out) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n * dim) return;
    const float inv = query_inv[i / dim];
    out[i] = Tensor<E>::operand(trusted(inv) ? __fmul_rn(__fmul_rn(queries[i], inv), Tensor<E>::scale) : 0.0f);
}

// Queues, re-scores and offers every candidate pair of the tile of rows
// from `first` (see Exactness above), in rounds of at most QUEUE pairs.
// Turns the accumulators into the estimated cosines on the way.
template <typename E>
__device__ __forceinline__ void offer_candidates(float acc[2][4][4], const E* corpus, const float* row_inv, u32 rows,
                                                 int dim, const float* queries, const float* query_inv, u32 q0, u32 nq,
                                                 u32 k, float eps, u32 first, u32* queue, float* queue_score,
                                                 float* list_s, u32* list_i, u32* lens, float* floors, u32* queued) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // Estimate: the dot times the row's inverse norm over the query scale;
    // NaN, a candidate whatever the floor, for an untrusted row. `done`:
    // the pairs queued already, or outside the corpus or the batch.
    u32 done = 0;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        const u32 row = first + (u32)pair_row(j, warp, lane);
        const float inv = row < rows ? row_inv[row] : 0.0f;
        float& a = acc[j / 16][j / 4 % 4][j % 4];
        a = trusted(inv) ? __fmul_rn(a, __fmul_rn(inv, 1.0f / Tensor<E>::scale)) : __int_as_float(0x7fffffff);
        if (row >= rows || q0 + pair_col(j, warp, lane) >= nq) done |= 1u << j;
    }
    for (;;) {
        u32 pending = 0;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            if (!(done >> j & 1u) && !(acc[j / 16][j / 4 % 4][j % 4] < floors[pair_col(j, warp, lane)]))
                pending |= 1u << j;
        }
        if (pending) {
            u32 slot = atomicAdd(queued, (u32)__popc(pending));
            for (; pending && slot < QUEUE; pending &= pending - 1, slot++) {
                const int j = __ffs(pending) - 1;
                queue[slot] = ((u32)pair_col(j, warp, lane) << 8) | (u32)pair_row(j, warp, lane);
                done |= 1u << j;
            }
        }
        __syncthreads();
        const u32 total = *queued;
        const u32 here = min(total, (u32)QUEUE);
        for (u32 e = threadIdx.x / 8; e < here; e += THREADS / 8) {
            const u32 row = first + (queue[e] & 0xffu), q = q0 + (queue[e] >> 8);
            const float d = group_dot(corpus + (size_t)row * dim, queries + (size_t)q * dim, dim);
            if (threadIdx.x % 8 == 0) queue_score[e] = cosine(d, query_inv[q], row_inv[row]);
        }
        __syncthreads();
        if (threadIdx.x == 0) *queued = 0;
        for (int qi = warp; qi < MMA_COLS && here > 0; qi += THREADS / 32) {
            float* ls = list_s + qi * k;
            u32* li = list_i + qi * k;
            for (u32 base = 0; base < here; base += 32) {
                const u32 j = base + lane;
                const bool mine = j < here && queue[j] >> 8 == (u32)qi;
                const float s = mine ? queue_score[j] : 0.0f;
                const u32 idx = mine ? first + (queue[j] & 0xffu) : 0u;
                warp_offer(ls, li, &lens[qi], k, mine, s, idx, lane);
            }
            if (lane == 0) {
                const bool full = lens[qi] == k && trusted(query_inv[q0 + qi]);
                floors[qi] = full ? __fsub_rd(rank_of(ls[k - 1]), eps) : __int_as_float(0xff800000);
            }
        }
        __syncthreads();
        if (total <= QUEUE) return;
    }
}

// Shared memory, in order: tile_products' buffers, the queue (QUEUE
// pairs, then their scores), then the MMA_COLS lists of k. queries: the
// packed f32 queries (dim floats apart) and query_inv their inverse norms,
// for the canonical scores; mma_q: the same queries from mma_queries_*.
// eps: the bound on the estimate's error for this `dim`. Output as
// topk_partial.
template <typename E>
__device__ void topk_mma(const E* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
                         const float* query_inv, u32 nq, u32 k, const E* mma_q, float eps, float* part_score,
                         u32* part_index) {
    u32* queue = reinterpret_cast<u32*>(shared_bytes + TILE_SHARED);
    float* queue_score = reinterpret_cast<float*>(queue + QUEUE);
    float* list_s = queue_score + QUEUE;
    u32* list_i = reinterpret_cast<u32*>(list_s + MMA_COLS * k);
    __shared__ u32 lens[MMA_COLS];
    __shared__ float floors[MMA_COLS];
    __shared__ u32 queued;

    const u32 q0 = blockIdx.x * (u32)MMA_COLS;
    if (threadIdx.x < MMA_COLS) {
        lens[threadIdx.x] = 0;
        floors[threadIdx.x] = __int_as_float(0xff800000);
    }
    if (threadIdx.x == 0) queued = 0;

    tile_products(corpus, rows, dim, mma_q, nq, q0, [&](float acc[2][4][4], u32 first) {
        offer_candidates(acc, corpus, row_inv, rows, dim, queries, query_inv, q0, nq, k, eps, first, queue, queue_score,
                         list_s, list_i, lens, floors, &queued);
    });
    __syncthreads();  // a block with no tile still reads the lengths below

    write_lists(list_s, list_i, lens, MMA_COLS, q0, nq, k, part_score, part_index);
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

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_tiles_f16(const half_bits* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
               const float* query_inv, u32 nq, u32 k, int groups, float* part_score, u32* part_index) {
    switch (groups) {
    case 1: topk_tiles<half_bits, 1>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    case 2: topk_tiles<half_bits, 2>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    default: topk_tiles<half_bits, 4>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_tiles_f32(const float* corpus, const float* row_inv, u32 rows, int dim, const float* queries,
               const float* query_inv, u32 nq, u32 k, int groups, float* part_score, u32* part_index) {
    switch (groups) {
    case 1: topk_tiles<float, 1>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    case 2: topk_tiles<float, 2>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    default: topk_tiles<float, 4>(corpus, row_inv, rows, dim, queries, query_inv, nq, k, part_score, part_index); break;
    }
}

extern "C" __global__ void mma_queries_f16(const float* queries, const float* query_inv, u32 n, int dim, half_bits* out) {
    mma_queries(queries, query_inv, n, dim, out);
}

extern "C" __global__ void mma_queries_f32(const float* queries, const float* query_inv, u32 n, int dim, float* out) {
    mma_queries(queries, query_inv, n, dim, out);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_mma_f16(const half_bits* corpus, const float* row_inv, u32 rows, int dim, const float* queries, const float* query_inv,
             u32 nq, u32 k, const half_bits* mma_q, float eps, float* part_score, u32* part_index) {
    topk_mma(corpus, row_inv, rows, dim, queries, query_inv, nq, k, mma_q, eps, part_score, part_index);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
topk_mma_f32(const float* corpus, const float* row_inv, u32 rows, int dim, const float* queries, const float* query_inv,
             u32 nq, u32 k, const float* mma_q, float eps, float* part_score, u32* part_index) {
    topk_mma(corpus, row_inv, rows, dim, queries, query_inv, nq, k, mma_q, eps, part_score, part_index);
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
