// The reference single-pass clustering, exact, with the running means on
// the device; and the threshold-graph clustering, its parallel variant.
//
// Exact: vectors are taken in blocks of at most BLOCK, as the CPU kernels
// do. cluster_dots_* computes, on the whole device, the dots of the
// block's vectors with every cluster mean as it stands. cluster_decide_*
// (one thread block) then assigns the vectors in order: a vector's dot with
// a cluster that an earlier vector of the block changed or created
// ("dirty") is recomputed from the current mean; the first cluster with
// the largest dot wins if that dot is above 0 and above theta, otherwise
// the vector starts a new cluster; the chosen cluster's sum and mean are
// updated in place. Every dot is the canonical one of the vector and the
// mean the reference would see, so the ids are the CPU's exactly.
//
// Aligned dimensions (a multiple of 8) estimate the block's dots with the
// means on the tensor cores instead (cluster_estimates, tf32) and compute
// canonically only the dots the estimates cannot rule out
// (cluster_candidates): with |estimate - dot| <= bound, a clean cluster
// whose upper bound is below the largest lower bound of the vector's
// clusters, or not above 0 and theta, cannot win. Its dot is left NaN,
// which cluster_decide skips. The largest lower bound may come from a
// cluster that an earlier vector of the block then changes, so
// cluster_candidates also records the largest upper bound of the clusters
// it left out that could pass the thresholds; when the decided best does
// not beat it, cluster_decide computes the left-out dots and decides
// again.
//
// Threshold graph: each vector links to the earliest earlier vector whose
// dot with it exceeds theta (itself if none); the clusters are the trees
// of these links. Every vector is independent, so it runs fully parallel;
// it approximates the single-pass clustering (a "leader" clustering whose
// leaders keep their own vector rather than a running mean).

#define DECIDE_THREADS 256
#define NONE 0xffffffffu
#define FULL 0xffffffffu

// dots[b * known + c] = dot(vector start + b, mean c), for b < len
// (blockIdx.y) and the `known` = *count clusters there are (grid-stride
// over them): the count is read on the device, so the host enqueues block
// after block without waiting for one to learn it.
template <typename E>
__device__ void cluster_dots(const E* vectors, u32 start, int dim, const float* means, const u32* count, float* dots) {
    const u32 known = *count;
    const u32 b = blockIdx.y;
    const E* v = vectors + (size_t)(start + b) * dim;
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < known; c += gridDim.x * blockDim.x) {
        dots[(size_t)b * known + c] = dot(v, means + (size_t)c * dim, dim, dim % 8 == 0);
    }
}

// The block's vectors from `start` as the tensor cores' columns: widened
// (f16, exact in tf32) or rounded to tf32. `len` vectors of `dim`.
template <typename E>
__device__ void tf32_vectors(const E* vectors, u32 start, u32 len, int dim, float* out) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)len * dim) out[i] = Tensor<float>::operand(widen(vectors[(size_t)start * dim + i]));
}

// dots[b * known + c] ~ dot(vector b, mean c) for the `known` = *count
// means (the rows of tile_products, grid-stride over blockIdx.y) and the
// `len` vectors of tf32_vectors (its columns): the estimates
// cluster_candidates bounds.
__device__ void cluster_estimates(const float* means, const u32* count, int dim, const float* vectors, u32 len,
                                  float* dots) {
    const u32 known = *count;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    tile_products(means, known, dim, vectors, len, 0, [&](float acc[2][4][4], u32 first) {
#pragma unroll
        for (int j = 0; j < 32; j++) {
            const u32 c = first + (u32)pair_row(j, warp, lane), b = (u32)pair_col(j, warp, lane);
            if (c < known && b < len) dots[(size_t)b * known + c] = acc[j / 16][j / 4 % 4][j % 4];
        }
    });
}

// The bound on |estimate - canonical dot| of a vector and a mean with
// canonical self-dots sv and sm: eps_rel sqrt(sv) sqrt(sm), rounded up
// (eps_rel from cluster_epsilon in cluster.rs); -1 where it does not
// hold: self-dots outside [2^-60, 2^60] (zero, infinite and NaN ones
// included) or an estimate that is not finite.
__device__ __forceinline__ float estimate_bound(float estimate, float sv, float sm, float eps_rel) {
    const bool held = sv >= 0x1p-60f && sv <= 0x1p60f && sm >= 0x1p-60f && sm <= 0x1p60f && fabsf(estimate) < __int_as_float(0x7f800000);
    return held ? __fmul_ru(eps_rel, __fmul_ru(__fsqrt_ru(sv), __fsqrt_ru(sm))) : -1.0f;
}

// The largest of every thread's `x` (no NaN), to all threads of the block.
__device__ __forceinline__ float block_max(float x, float* warp_x) {
    for (int off = 16; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(FULL, x, off));
    if (threadIdx.x % 32 == 0) warp_x[threadIdx.x / 32] = x;
    __syncthreads();
    x = warp_x[0];
    for (int w = 1; w < DECIDE_THREADS / 32; w++) x = fmaxf(x, warp_x[w]);
    __syncthreads();
    return x;
}

// One block of DECIDE_THREADS per vector b (blockIdx.x): turns the row of
// estimates into the canonical dots of the clusters that could win, NaN
// for the others (see the top), and writes to reach[b] the largest upper
// bound of those left out that are above 0 and theta (-inf if none).
// mean_sq: each cluster's canonical self-dot, kept by cluster_decide.
template <typename E>
__device__ void cluster_candidates(const E* vectors, u32 start, int dim, const float* means, const float* mean_sq,
                                   const u32* count, float theta, float eps_rel, float* dots, float* reach) {
    __shared__ float vector_sq, warp_x[DECIDE_THREADS / 32];
    const u32 known = *count, b = blockIdx.x;
    const E* v = vectors + (size_t)(start + b) * dim;
    float* row = dots + (size_t)b * known;
    const float minus_inf = __int_as_float(0xff800000);
    if (threadIdx.x == 0) vector_sq = dot(v, v, dim, true);
    __syncthreads();
    const float sv = vector_sq;
    float lower = minus_inf;
    for (u32 c = threadIdx.x; c < known; c += DECIDE_THREADS) {
        const float bound = estimate_bound(row[c], sv, mean_sq[c], eps_rel);
        if (bound >= 0.0f) lower = fmaxf(lower, __fsub_rd(row[c], bound));
    }
    lower = block_max(lower, warp_x);
    float left_out = minus_inf;
    for (u32 c = threadIdx.x; c < known; c += DECIDE_THREADS) {
        const float bound = estimate_bound(row[c], sv, mean_sq[c], eps_rel);
        const float upper = bound >= 0.0f ? __fadd_ru(row[c], bound) : __int_as_float(0x7f800000);
        const bool passes = upper > 0.0f && upper > theta;
        if (passes && upper >= lower) {
            row[c] = dot(v, means + (size_t)c * dim, dim, true);
        } else {
            row[c] = __int_as_float(0x7fffffff);
            if (passes) left_out = fmaxf(left_out, upper);
        }
    }
    left_out = block_max(left_out, warp_x);
    if (threadIdx.x == 0) reach[b] = left_out;
}

// Keeps the better of two (dot, cluster) candidates: the larger dot, NaN
// never, the lower cluster of equal dots.
__device__ __forceinline__ void better(float& d, u32& c, float od, u32 oc) {
    if (oc != NONE && (c == NONE || od > d || (od == d && oc < c))) {
        d = od;
        c = oc;
    }
}

// Folds every thread's (best, at) of the block into thread 0's.
__device__ void block_best(float& best, u32& at, float* warp_d, u32* warp_c) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const float od = __shfl_down_sync(FULL, best, off);
        const u32 oc = __shfl_down_sync(FULL, at, off);
        better(best, at, od, oc);
    }
    if (threadIdx.x % 32 == 0) {
        warp_d[threadIdx.x / 32] = best;
        warp_c[threadIdx.x / 32] = at;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < DECIDE_THREADS / 32; w++) better(best, at, warp_d[w], warp_c[w]);
    }
}

// One block of DECIDE_THREADS threads. `count` holds the number of
// clusters (read at the start, written at the end: the clusters that
// cluster_dots or cluster_candidates, just before, computed `dots` for);
// `reach` the largest upper bound left out per vector (-inf if none);
// `mean_sq` receives the canonical self-dot of every cluster the block
// changes or creates; `flags` one zeroed word per cluster slot (left
// zeroed); `dirty` room for `len` clusters; `ids` receives the 1-based
// cluster id of each vector.
template <typename E>
__device__ void cluster_decide(const E* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                               u32* counts, u32* count, const float* dots, const float* reach, float* mean_sq,
                               u32* flags, u32* dirty, u32* ids) {
    __shared__ u32 clusters, ndirty, chosen, created, recheck;
    __shared__ float best_d;
    __shared__ u32 best_c;
    const u32 known = *count;
    __shared__ float warp_d[DECIDE_THREADS / 32];
    __shared__ u32 warp_c[DECIDE_THREADS / 32];
    const int tid = threadIdx.x;
    const bool aligned = dim % 8 == 0;
    if (tid == 0) {
        clusters = *count;
        ndirty = 0;
    }
    __syncthreads();
    for (u32 b = 0; b < len; b++) {
        const E* v = vectors + (size_t)(start + b) * dim;
        const u32 n = clusters;
        float best = 0.0f;
        u32 at = NONE;
        for (u32 c = tid; c < n; c += DECIDE_THREADS) {
            const float d = (c >= known || flags[c]) ? dot(v, means + (size_t)c * dim, dim, aligned)
                                                     : dots[(size_t)b * known + c];
            if (d == d) better(best, at, d, c);
        }
        block_best(best, at, warp_d, warp_c);
        if (tid == 0) {
            // A left-out cluster could still beat or tie the best, or pass where the best does not.
            const bool passes = at != NONE && best > 0.0f && best > theta;
            recheck = reach[b] != __int_as_float(0xff800000) && !(passes && best > reach[b]);
            best_d = best;
            best_c = at;
        }
        __syncthreads();
        if (recheck) {
            best = best_d;
            at = best_c;
            for (u32 c = tid; c < known; c += DECIDE_THREADS) {
                const float left_out = dots[(size_t)b * known + c];
                if (flags[c] || left_out == left_out) continue;
                const float d = dot(v, means + (size_t)c * dim, dim, aligned);
                if (d == d) better(best, at, d, c);
            }
            block_best(best, at, warp_d, warp_c);
        }
        if (tid == 0) {
            u32 c;
            if (at != NONE && best > 0.0f && best > theta) {
                c = at;
                counts[c] += 1;
                created = 0;
            } else {
                c = clusters;
                clusters = c + 1;
                counts[c] = 1;
                created = 1;
            }
            if (!flags[c]) {
                flags[c] = 1;
                dirty[ndirty] = c;
                ndirty += 1;
            }
            chosen = c;
            ids[start + b] = c + 1;
        }
        __syncthreads();
        const u32 c = chosen;
        float* sum = sums + (size_t)c * dim;
        float* mean = means + (size_t)c * dim;
        if (created) {
            for (int j = tid; j < dim; j += DECIDE_THREADS) {
                const float x = widen(v[j]);
                sum[j] = x;
                mean[j] = x;
            }
        } else {
            const float total = (float)counts[c];
            for (int j = tid; j < dim; j += DECIDE_THREADS) {
                const float s = __fadd_rn(sum[j], widen(v[j]));
                sum[j] = s;
                mean[j] = __fdiv_rn(s, total);
            }
        }
        __syncthreads();
    }
    for (u32 j = tid / 8; j < ndirty; j += DECIDE_THREADS / 8) {
        const float* mean = means + (size_t)dirty[j] * dim;
        const float sq = group_dot(mean, mean, dim);
        if (tid % 8 == 0) mean_sq[dirty[j]] = sq;
    }
    for (u32 j = tid; j < ndirty; j += DECIDE_THREADS) flags[dirty[j]] = 0;
    if (tid == 0) *count = clusters;
}

// parent[i]: the earliest j < i with dot(i, j) > theta, else i.
template <typename E>
__device__ void threshold_parent(const E* vectors, u32 n, int dim, float theta, u32* parent) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const bool aligned = dim % 8 == 0;
    const E* v = vectors + (size_t)i * dim;
    u32 p = i;
    for (u32 j = 0; j < i; j++) {
        if (dot(v, vectors + (size_t)j * dim, dim, aligned) > theta) {
            p = j;
            break;
        }
    }
    parent[i] = p;
}

extern "C" __global__ void cluster_dots_f16(const half_bits* vectors, u32 start, int dim, const float* means,
                                            const u32* count, float* dots) {
    cluster_dots(vectors, start, dim, means, count, dots);
}

extern "C" __global__ void cluster_dots_f32(const float* vectors, u32 start, int dim, const float* means, const u32* count,
                                            float* dots) {
    cluster_dots(vectors, start, dim, means, count, dots);
}

extern "C" __global__ void tf32_vectors_f16(const half_bits* vectors, u32 start, u32 len, int dim, float* out) {
    tf32_vectors(vectors, start, len, dim, out);
}

extern "C" __global__ void tf32_vectors_f32(const float* vectors, u32 start, u32 len, int dim, float* out) {
    tf32_vectors(vectors, start, len, dim, out);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
cluster_estimates_tf32(const float* means, const u32* count, int dim, const float* vectors, u32 len, float* dots) {
    cluster_estimates(means, count, dim, vectors, len, dots);
}

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_candidates_f16(const half_bits* vectors, u32 start, int dim, const float* means, const float* mean_sq,
                       const u32* count, float theta, float eps_rel, float* dots, float* reach) {
    cluster_candidates(vectors, start, dim, means, mean_sq, count, theta, eps_rel, dots, reach);
}

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_candidates_f32(const float* vectors, u32 start, int dim, const float* means, const float* mean_sq,
                       const u32* count, float theta, float eps_rel, float* dots, float* reach) {
    cluster_candidates(vectors, start, dim, means, mean_sq, count, theta, eps_rel, dots, reach);
}

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_decide_f16(const half_bits* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                   u32* counts, u32* count, const float* dots, const float* reach, float* mean_sq, u32* flags,
                   u32* dirty, u32* ids) {
    cluster_decide(vectors, start, len, dim, theta, sums, means, counts, count, dots, reach, mean_sq, flags, dirty, ids);
}

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_decide_f32(const float* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                   u32* counts, u32* count, const float* dots, const float* reach, float* mean_sq, u32* flags,
                   u32* dirty, u32* ids) {
    cluster_decide(vectors, start, len, dim, theta, sums, means, counts, count, dots, reach, mean_sq, flags, dirty, ids);
}

extern "C" __global__ void threshold_parent_f16(const half_bits* vectors, u32 n, int dim, float theta, u32* parent) {
    threshold_parent(vectors, n, dim, theta, parent);
}

extern "C" __global__ void threshold_parent_f32(const float* vectors, u32 n, int dim, float theta, u32* parent) {
    threshold_parent(vectors, n, dim, theta, parent);
}
