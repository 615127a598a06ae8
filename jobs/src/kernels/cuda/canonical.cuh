// The canonical dot product of jobs/src/kernels/cpu/dot.rs, on the device.
//
// Every kernel module starts with this file. The CPU kernels define
// dot(a, b) as 8 lanes, lane l a chain of fused multiply-adds over the
// elements l, l + 8, l + 16, ... in order from +0 (the last group of 8
// padded with zeros), the lanes then summed as
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). The device follows
// the same steps with explicitly rounded intrinsics (__fmaf_rn, __fadd_rn,
// __fmul_rn, __fdiv_rn, __fsqrt_rn), which the compiler may not fuse or
// reorder, so every dot, norm and cosine has the CPU's exact bits.
//
// Loads are plain (not __ldg): the clustering reads means that the same
// kernel wrote.
//
// Vectors are f16 (stored as their 16-bit patterns) or f32; f16 is widened
// to f32, which is exact. `dim8` is `dim` rounded up to 8.

typedef unsigned short half_bits;
typedef unsigned int u32;

__device__ __forceinline__ float widen(half_bits h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float widen(float f) { return f; }

// The 8 elements of group `g` of a row of `dim` values, zero past `dim`.
// `aligned`: dim is a multiple of 8 and the row starts 16-byte aligned, so
// the group is one vector load.
__device__ __forceinline__ void load8(const half_bits* row, int g, int dim, bool aligned, float out[8]) {
    if (aligned) {
        uint4 v = reinterpret_cast<const uint4*>(row)[g];
        const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            out[2 * i] = widen((half_bits)(w[i] & 0xffffu));
            out[2 * i + 1] = widen((half_bits)(w[i] >> 16));
        }
    } else {
#pragma unroll
        for (int l = 0; l < 8; l++) {
            int e = 8 * g + l;
            out[l] = e < dim ? widen(row[e]) : 0.0f;
        }
    }
}

__device__ __forceinline__ void load8(const float* row, int g, int dim, bool aligned, float out[8]) {
    if (aligned) {
        float4 a = reinterpret_cast<const float4*>(row)[2 * g];
        float4 b = reinterpret_cast<const float4*>(row)[2 * g + 1];
        out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
        out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
    } else {
#pragma unroll
        for (int l = 0; l < 8; l++) {
            int e = 8 * g + l;
            out[l] = e < dim ? row[e] : 0.0f;
        }
    }
}

// Adds the group `x` times the group `y` to the 8 lane accumulators.
__device__ __forceinline__ void fma8(const float x[8], const float y[8], float acc[8]) {
#pragma unroll
    for (int l = 0; l < 8; l++) acc[l] = __fmaf_rn(x[l], y[l], acc[l]);
}

// The canonical reduction of the 8 lanes.
__device__ __forceinline__ float hsum8(const float l[8]) {
    return __fadd_rn(__fadd_rn(__fadd_rn(l[0], l[1]), __fadd_rn(l[2], l[3])),
                     __fadd_rn(__fadd_rn(l[4], l[5]), __fadd_rn(l[6], l[7])));
}

// The canonical dot of two rows of `dim` values.
template <typename A, typename B>
__device__ float dot(const A* a, const B* b, int dim, bool aligned) {
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float x[8], y[8];
    const int groups = (dim + 7) / 8;
    for (int g = 0; g < groups; g++) {
        load8(a, g, dim, aligned, x);
        load8(b, g, dim, aligned, y);
        fma8(x, y, acc);
    }
    return hsum8(acc);
}

// The same canonical dot computed by the 8 threads of an aligned group of
// 8 lanes, for re-scoring a few pairs at once without the registers of a
// whole dot per thread: thread l (lane % 8) runs lane l's chain, and the
// shuffles sum the lanes in the canonical tree (addition commutes, so each
// butterfly step gives both partners the same bits: every thread of the
// group returns the canonical dot).
template <typename A, typename B>
__device__ float group_dot(const A* a, const B* b, int dim) {
    const int lane = threadIdx.x % 32, l = lane % 8;
    const unsigned group = 0xffu << (lane - l);
    const int dim8 = (dim + 7) & ~7;
    float acc = 0.0f;
    for (int e = l; e < dim8; e += 8) acc = __fmaf_rn(e < dim ? widen(a[e]) : 0.0f, e < dim ? widen(b[e]) : 0.0f, acc);
    acc = __fadd_rn(acc, __shfl_xor_sync(group, acc, 1));
    acc = __fadd_rn(acc, __shfl_xor_sync(group, acc, 2));
    return __fadd_rn(acc, __shfl_xor_sync(group, acc, 4));
}

// 1 / sqrt(self_dot), 0 for a zero row: the CPU's `inverse_norm`.
__device__ __forceinline__ float inverse_norm(float self_dot) {
    return self_dot > 0.0f ? __fdiv_rn(1.0f, __fsqrt_rn(self_dot)) : 0.0f;
}

// The cosine of a query and a row from their canonical dot and inverse
// norms: (dot * query_inv) * row_inv, the CPU's order of rounding.
__device__ __forceinline__ float cosine(float dot, float query_inv, float row_inv) {
    return __fmul_rn(__fmul_rn(dot, query_inv), row_inv);
}

// The rank a score is ordered by: NaN ranks as negative infinity.
__device__ __forceinline__ float rank_of(float score) {
    return score != score ? __int_as_float(0xff800000) : score;
}

// Whether hit (sa, ia) ranks before hit (sb, ib): higher score first,
// equal scores by lower index.
__device__ __forceinline__ bool ahead(float sa, u32 ia, float sb, u32 ib) {
    float x = rank_of(sa), y = rank_of(sb);
    return x > y || (x == y && ia < ib);
}
