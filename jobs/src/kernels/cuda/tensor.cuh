// The tensor-core tile product, shared by the top-k and clustering
// estimates: the dots of a grid-stride share of a matrix's rows with a
// block's MMA_COLS columns, on the tensor cores. The dots are estimates
// (inputs rounded to f16 or tf32, accumulation order and rounding the
// hardware's); every kernel that uses them re-scores with the canonical
// dot whatever the estimate cannot rule out.
//
// Layout. A block walks its grid-stride share (blockIdx.y) of the tiles
// of MMA_ROWS rows. Rows and columns come into shared memory CHUNK_BYTES
// of each at a time (cp.async, double-buffered, rows padded by 16 bytes
// so that the fragment loads below hit 32 different banks): rows in their
// own type, columns already in the tensor cores' type. Warp w computes
// rows 32 (w % 4) .. + 32 against columns 32 (w / 4) .. + 32: 2 x 4 tiles
// of 16 rows x 8 columns (mma m16n8k16 f16, or m16n8k8 tf32), accumulated
// in f32 registers over the whole dimension. Rows are mma's A (row-major)
// and columns its B (column-major), so both are read as stored; in 32-bit
// words both instructions take, per step of 8 words, word t and t + 4 of
// rows g and g + 8 (A) and of column g (B), where g = lane / 4 and
// t = lane % 4; a chunk is two steps. Accumulator c of a tile is row
// g + 8 (c / 2) and column 2t + c % 2.

#define THREADS 256
#define CHUNK_BYTES 64
#define MMA_ROWS 128
#define MMA_COLS 64
// Shared memory of tile_products: two buffers of MMA_ROWS rows and
// MMA_COLS columns of CHUNK_BYTES + 16.
#define TILE_SHARED (2 * (MMA_ROWS + MMA_COLS) * (CHUNK_BYTES + 16))

extern __shared__ __align__(16) unsigned char shared_bytes[];

__device__ __forceinline__ void copy16_async(void* dst, const void* src) {
    const u32 to = (u32)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(src));
}

__device__ __forceinline__ void zero16(void* dst) { *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u); }

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until every committed group of copies but the latest has landed.
__device__ __forceinline__ void wait_all_but_latest() { asm volatile("cp.async.wait_group 1;\n" ::); }

// A block's walk over its grid-stride share of `tiles` tiles of the
// corpus, `nchunks` chunks each: step s is chunk s % nchunks of the
// block's tile number s / nchunks.
struct TileWalk {
    u32 nchunks, steps;
    __device__ TileWalk(u32 tiles, int chunks) : nchunks((u32)chunks) {
        const u32 mine = blockIdx.y < tiles ? (tiles - 1 - blockIdx.y) / gridDim.y + 1 : 0;
        steps = mine * nchunks;
    }
    __device__ u32 tile(u32 s) const { return blockIdx.y + (s / nchunks) * gridDim.y; }
    __device__ int chunk(u32 s) const { return (int)(s % nchunks); }
};

// Starts copying chunk `c` of rows first .. first + count of `src` (`total`
// rows of `dim` E) into `buf`, rows CHUNK_BYTES + 16 apart; pieces past the
// last row or past the last group are zero.
template <typename E>
__device__ __forceinline__ void copy_rows_async(const E* src, u32 total, int dim, u32 first, int count, int c, int ngroups,
                                                unsigned char* buf) {
    constexpr int G_PER_CHUNK = CHUNK_BYTES / (8 * (int)sizeof(E));
    constexpr int ROW_PIECES = CHUNK_BYTES / 16;
    constexpr int ROW_BYTES = CHUNK_BYTES + 16;
    for (int i = threadIdx.x; i < count * ROW_PIECES; i += THREADS) {
        const int r = i / ROW_PIECES, p = i % ROW_PIECES;
        const u32 row = first + (u32)r;
        const int group = c * G_PER_CHUNK + (p * 16) / (8 * (int)sizeof(E));
        unsigned char* dst = buf + r * ROW_BYTES + p * 16;
        if (row < total && group < ngroups) {
            copy16_async(dst, reinterpret_cast<const unsigned char*>(src + (size_t)row * dim) + c * CHUNK_BYTES + p * 16);
        } else {
            zero16(dst);
        }
    }
}

// What the tensor cores take for rows of E: `row_word` turns a 32-bit
// word of rows as stored into mma's A operand, `operand` rounds a value
// (times `scale`) to the type of its B operand, `mma` is the instruction.
template <typename E>
struct Tensor;

// f16 rows, two to a word as stored; B as f16 scaled by 2^14, so that
// unit vectors (elements at most about 1) use f16's range: only elements
// below 2^-28 fall among its subnormals.
template <>
struct Tensor<half_bits> {
    static constexpr float scale = 16384.0f;
    static __device__ __forceinline__ u32 row_word(u32 w) { return w; }
    static __device__ __forceinline__ half_bits operand(float x) {
        half_bits h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        return h;
    }
    static __device__ __forceinline__ void mma(float d[4], const u32 a[4], const u32 b[2]) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

// f32 rows, rounded to tf32 (to nearest) as they are loaded; B as tf32.
template <>
struct Tensor<float> {
    static constexpr float scale = 1.0f;
    static __device__ __forceinline__ u32 row_word(u32 w) {
        u32 r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(w)));
        return r;
    }
    static __device__ __forceinline__ float operand(float x) { return __uint_as_float(row_word(__float_as_uint(x))); }
    static __device__ __forceinline__ void mma(float d[4], const u32 a[4], const u32 b[2]) {
        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

// Accumulator j (0..31) of a thread: mma tile row mt = j / 16, tile
// column nt = j / 4 % 4, entry c = j % 4. Its row in the block's tile, and
// its column.
__device__ __forceinline__ int pair_row(int j, int warp, int lane) {
    return (warp % 4) * 32 + (j / 16) * 16 + lane / 4 + 8 * (j % 4 / 2);
}

__device__ __forceinline__ int pair_col(int j, int warp, int lane) {
    return (warp / 4) * 32 + (j / 4 % 4) * 8 + 2 * (lane % 4) + j % 2;
}

// The tile products of `rows` (nrows of `dim` E, dim a multiple of 8)
// with the MMA_COLS columns from col0 of `cols` (ncols of `dim`, in the
// tensor cores' type; columns past ncols are zero). At the end of each
// tile, every thread calls on_tile(acc, first) with its 32 dots (see
// pair_row and pair_col) and the tile's first row; on_tile may
// synchronise the block. Uses the first TILE_SHARED bytes of shared_bytes.
template <typename E, typename OnTile>
__device__ __forceinline__ void tile_products(const E* rows, u32 nrows, int dim, const E* cols, u32 ncols, u32 col0,
                                              OnTile on_tile) {
    constexpr int G_PER_CHUNK = CHUNK_BYTES / (8 * (int)sizeof(E));
    constexpr int ROW_BYTES = CHUNK_BYTES + 16;
    constexpr int ROW_WORDS = ROW_BYTES / 4;
    constexpr int STEP_WORDS = 8;
    unsigned char* rowbufs = shared_bytes;
    unsigned char* colbufs = rowbufs + 2 * MMA_ROWS * ROW_BYTES;
    const int ngroups = dim / 8;
    const int nchunks = (ngroups + G_PER_CHUNK - 1) / G_PER_CHUNK;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int wrow = (warp % 4) * 32, wcol = (warp / 4) * 32;

    const TileWalk walk((nrows + MMA_ROWS - 1) / MMA_ROWS, nchunks);
    if (walk.steps > 0) {
        copy_rows_async(rows, nrows, dim, blockIdx.y * MMA_ROWS, MMA_ROWS, 0, ngroups, rowbufs);
        copy_rows_async(cols, ncols, dim, col0, MMA_COLS, 0, ngroups, colbufs);
    }
    commit_copies();

    float acc[2][4][4];
    for (u32 s = 0; s < walk.steps; s++) {
        const int c = walk.chunk(s);
        if (s + 1 < walk.steps) {
            const int nc = walk.chunk(s + 1), b = (int)((s + 1) & 1u);
            copy_rows_async(rows, nrows, dim, walk.tile(s + 1) * MMA_ROWS, MMA_ROWS, nc, ngroups,
                            rowbufs + b * MMA_ROWS * ROW_BYTES);
            copy_rows_async(cols, ncols, dim, col0, MMA_COLS, nc, ngroups, colbufs + b * MMA_COLS * ROW_BYTES);
        }
        commit_copies();
        wait_all_but_latest();
        __syncthreads();

        if (c == 0) {
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.0f;
        }
        const int b = (int)(s & 1u);
        const u32* row_words = reinterpret_cast<const u32*>(rowbufs + b * MMA_ROWS * ROW_BYTES);
        const u32* col_words = reinterpret_cast<const u32*>(colbufs + b * MMA_COLS * ROW_BYTES);
#pragma unroll
        for (int step = 0; step < CHUNK_BYTES / 4 / STEP_WORDS; step++) {
            const int w = step * STEP_WORDS + t;
            u32 a[2][4], bc[4][2];
#pragma unroll
            for (int mt = 0; mt < 2; mt++) {
                const u32* top = row_words + (wrow + mt * 16 + g) * ROW_WORDS;
                const u32* bottom = top + 8 * ROW_WORDS;
                a[mt][0] = Tensor<E>::row_word(top[w]);
                a[mt][1] = Tensor<E>::row_word(bottom[w]);
                a[mt][2] = Tensor<E>::row_word(top[w + 4]);
                a[mt][3] = Tensor<E>::row_word(bottom[w + 4]);
            }
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const u32* col = col_words + (wcol + nt * 8 + g) * ROW_WORDS;
                bc[nt][0] = col[w];
                bc[nt][1] = col[w + 4];
            }
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) Tensor<E>::mma(acc[mt][nt], a[mt], bc[nt]);
        }

        if (c == nchunks - 1) on_tile(acc, walk.tile(s) * MMA_ROWS);
        __syncthreads();
    }
}
