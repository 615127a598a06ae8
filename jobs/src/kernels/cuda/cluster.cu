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

// Keeps the better of two (dot, cluster) candidates: the larger dot, NaN
// never, the lower cluster of equal dots.
__device__ __forceinline__ void better(float& d, u32& c, float od, u32 oc) {
    if (oc != NONE && (c == NONE || od > d || (od == d && oc < c))) {
        d = od;
        c = oc;
    }
}

// One block of DECIDE_THREADS threads. `count` holds the number of
// clusters (read at the start, written at the end: the clusters that
// cluster_dots, just before, computed `dots` for); `flags` one zeroed
// word per cluster slot (left zeroed); `dirty` room for `len` clusters;
// `ids` receives the 1-based cluster id of each vector.
template <typename E>
__device__ void cluster_decide(const E* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                               u32* counts, u32* count, const float* dots, u32* flags, u32* dirty, u32* ids) {
    __shared__ u32 clusters, ndirty, chosen, created;
    const u32 known = *count;
    __shared__ float warp_d[DECIDE_THREADS / 32];
    __shared__ u32 warp_c[DECIDE_THREADS / 32];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
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
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            const float od = __shfl_down_sync(FULL, best, off);
            const u32 oc = __shfl_down_sync(FULL, at, off);
            better(best, at, od, oc);
        }
        if (lane == 0) {
            warp_d[warp] = best;
            warp_c[warp] = at;
        }
        __syncthreads();
        if (tid == 0) {
            for (int w = 1; w < DECIDE_THREADS / 32; w++) better(best, at, warp_d[w], warp_c[w]);
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

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_decide_f16(const half_bits* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                   u32* counts, u32* count, const float* dots, u32* flags, u32* dirty, u32* ids) {
    cluster_decide(vectors, start, len, dim, theta, sums, means, counts, count, dots, flags, dirty, ids);
}

extern "C" __global__ void __launch_bounds__(DECIDE_THREADS)
cluster_decide_f32(const float* vectors, u32 start, u32 len, int dim, float theta, float* sums, float* means,
                   u32* counts, u32* count, const float* dots, u32* flags, u32* dirty, u32* ids) {
    cluster_decide(vectors, start, len, dim, theta, sums, means, counts, count, dots, flags, dirty, ids);
}

extern "C" __global__ void threshold_parent_f16(const half_bits* vectors, u32 n, int dim, float theta, u32* parent) {
    threshold_parent(vectors, n, dim, theta, parent);
}

extern "C" __global__ void threshold_parent_f32(const float* vectors, u32 n, int dim, float theta, u32* parent) {
    threshold_parent(vectors, n, dim, theta, parent);
}
