/*
 * batchnorm.cu -- batch normalisation over layout (N, C, S), S = spatial size.
 *
 * Statistics, two launches, both deterministic (fixed reduction order):
 *   bn_stats_partial_*  grid (C, P), SG_REDUCE_THREADS threads: block (c, p)
 *       runs Welford per thread over elements p*T + tid, step P*T, of channel
 *       c, merges the block's states in shared memory (Chan et al.) and writes
 *       (count, mean, M2) to partial[c, p, :].
 *   bn_stats_final_*    grid C: merges the P partials; mean[c], var[c] (the
 *       biased variance, as MXNet uses for both output and moving_var) and
 *       inv_std[c] = 1 / sqrt(var[c] + eps), which forward and backward take.
 * Welford plus pairwise merging keeps float32 accurate when the mean is large
 * against the spread (no E[x^2] - E[x]^2 cancellation).
 *
 * Backward, three launches:
 *   bn_backward_partial_*  sums of dy and dy * xhat per (channel, part);
 *   bn_backward_final_*    per channel: dbeta = sum dy, dgamma = sum dy*xhat
 *                          (0 under fix_gamma) and both sums to `sums`;
 *   bn_backward_dx_*       dx, for batch statistics or use_global_stats.
 * Accumulation is in float for float32 data and double for float64.
 *
 * Channel and position of a flat index advance by additions (one division per
 * thread up front): 64-bit division per element would cost more than the
 * memory traffic these kernels are bound by.
 */

/* (b, s) of flat index i = b * S + s, advanced by a fixed step without division. */
struct RowWalk {
    long long b, s, db, ds, S;
    __device__ RowWalk(long long start, long long step, long long S_) : S(S_) {
        if (S <= 0) { b = s = db = ds = 0; return; }  /* N * S = 0: no element to walk */
        b = start / S; s = start - b * S;
        db = step / S; ds = step - db * S;
    }
    __device__ __forceinline__ void next() {
        s += ds; b += db;
        if (s >= S) { s -= S; ++b; }
    }
};

/* Channel c and position s of flat index i of an (N, C, S) array, advanced by a step. */
struct ChannelWalk {
    long long s, ds, S;
    int c, dc, C;
    __device__ ChannelWalk(long long start, long long step, int C_, long long S_)
        : S(S_), C(C_) {
        if (S <= 0 || C <= 0) { s = ds = 0; c = dc = 0; return; }  /* no element */
        const long long q = start / S;
        s = start - q * S;
        c = (int)(q % C);
        const long long dq = step / S;
        ds = step - dq * S;
        dc = (int)(dq % C);
    }
    __device__ __forceinline__ void next() {
        s += ds; c += dc;
        if (s >= S) { s -= S; ++c; }
        if (c >= C) c -= C;
    }
};

template <typename A>
__device__ __forceinline__ void welford_merge(A &n, A &mean, A &m2, A nb, A meanb, A m2b) {
    const A n_ab = n + nb;
    if (nb == (A)0) return;
    const A delta = meanb - mean;
    const A wb = nb / n_ab;
    mean += delta * wb;
    m2 += m2b + delta * delta * n * wb;
    n = n_ab;
}

/* Tree-merge the block's Welford states; thread 0 ends with the result. */
template <typename A>
__device__ void block_welford(A *sn, A *smean, A *sm2) {
    const int tid = threadIdx.x;
    for (int stride = SG_REDUCE_THREADS / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (tid < stride)
            welford_merge(sn[tid], smean[tid], sm2[tid], sn[tid + stride], smean[tid + stride],
                          sm2[tid + stride]);
    }
    __syncthreads();
}

/* Tree-sum two arrays over the block; thread 0 ends with the sums. */
template <typename A>
__device__ void block_sum2(A *a, A *b) {
    const int tid = threadIdx.x;
    for (int stride = SG_REDUCE_THREADS / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (tid < stride) {
            a[tid] += a[tid + stride];
            b[tid] += b[tid + stride];
        }
    }
    __syncthreads();
}

template <typename T, typename A>
__device__ void stats_partial(const T *__restrict__ x, A *__restrict__ partial,
                              int N, int C, long long S) {
    __shared__ A sn[SG_REDUCE_THREADS];
    __shared__ A smean[SG_REDUCE_THREADS];
    __shared__ A sm2[SG_REDUCE_THREADS];
    const int c = blockIdx.x, p = blockIdx.y, P = gridDim.y, tid = threadIdx.x;
    const long long M = (long long)N * S;
    const long long start = (long long)p * SG_REDUCE_THREADS + tid;
    const long long step = (long long)P * SG_REDUCE_THREADS;
    A n = 0, mean = 0, m2 = 0;
    RowWalk at(start, step, S);
    for (long long i = start; i < M; i += step, at.next()) {
        const A v = (A)x[(at.b * C + c) * S + at.s];
        n += (A)1;
        const A d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    sn[tid] = n;
    smean[tid] = mean;
    sm2[tid] = m2;
    block_welford(sn, smean, sm2);
    if (tid == 0) {
        A *out = partial + ((long long)c * P + p) * 3;
        out[0] = sn[0];
        out[1] = smean[0];
        out[2] = sm2[0];
    }
}

template <typename T, typename A>
__device__ void stats_final(const A *__restrict__ partial, int P, A eps, T *__restrict__ mean_out,
                            T *__restrict__ var_out, T *__restrict__ inv_std_out) {
    __shared__ A sn[SG_REDUCE_THREADS];
    __shared__ A smean[SG_REDUCE_THREADS];
    __shared__ A sm2[SG_REDUCE_THREADS];
    const int c = blockIdx.x, tid = threadIdx.x;
    A n = 0, mean = 0, m2 = 0;
    for (int p = tid; p < P; p += SG_REDUCE_THREADS) {
        const A *in = partial + ((long long)c * P + p) * 3;
        welford_merge(n, mean, m2, in[0], in[1], in[2]);
    }
    sn[tid] = n;
    smean[tid] = mean;
    sm2[tid] = m2;
    block_welford(sn, smean, sm2);
    if (tid == 0) {
        /* an empty batch gives 0 and 0 rather than NaN */
        const A var = sn[0] > (A)0 ? sm2[0] / sn[0] : (A)0;
        mean_out[c] = (T)smean[0];
        var_out[c] = (T)var;
        inv_std_out[c] = (T)((A)1 / sqrt(var + eps));
    }
}

template <typename T, typename A>
__device__ void forward(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ mean,
                        const T *__restrict__ inv_std, const T *__restrict__ gamma,
                        const T *__restrict__ beta, int fix_gamma, int N, int C, long long S) {
    const long long total = (long long)N * C * S;
    const long long step = (long long)blockDim.x * gridDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    ChannelWalk at(start, step, C, S);
    for (long long i = start; i < total; i += step, at.next()) {
        const int c = at.c;
        const A g = fix_gamma ? (A)1 : (A)gamma[c];
        y[i] = (T)(((A)x[i] - (A)mean[c]) * ((A)inv_std[c] * g) + (A)beta[c]);
    }
}

template <typename T, typename A>
__device__ void update_moving(T *__restrict__ moving_mean, T *__restrict__ moving_var,
                              const T *__restrict__ mean, const T *__restrict__ var,
                              A momentum, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += blockDim.x * gridDim.x) {
        moving_mean[c] = (T)((A)moving_mean[c] * momentum + (A)mean[c] * ((A)1 - momentum));
        moving_var[c] = (T)((A)moving_var[c] * momentum + (A)var[c] * ((A)1 - momentum));
    }
}

template <typename T, typename A>
__device__ void backward_partial(const T *__restrict__ dy, const T *__restrict__ x,
                                 const T *__restrict__ mean, const T *__restrict__ inv_std,
                                 A *__restrict__ partial, int N, int C, long long S) {
    __shared__ A s_dy[SG_REDUCE_THREADS];
    __shared__ A s_dyx[SG_REDUCE_THREADS];
    const int c = blockIdx.x, p = blockIdx.y, P = gridDim.y, tid = threadIdx.x;
    const long long M = (long long)N * S;
    const long long start = (long long)p * SG_REDUCE_THREADS + tid;
    const long long step = (long long)P * SG_REDUCE_THREADS;
    const A mu = (A)mean[c];
    A sum_dy = 0, sum_dyx = 0;
    RowWalk walk(start, step, S);
    for (long long i = start; i < M; i += step, walk.next()) {
        const long long at = (walk.b * C + c) * S + walk.s;
        const A g = (A)dy[at];
        sum_dy += g;
        sum_dyx += g * ((A)x[at] - mu);
    }
    sum_dyx *= (A)inv_std[c];
    s_dy[tid] = sum_dy;
    s_dyx[tid] = sum_dyx;
    block_sum2(s_dy, s_dyx);
    if (tid == 0) {
        A *out = partial + ((long long)c * P + p) * 2;
        out[0] = s_dy[0];
        out[1] = s_dyx[0];
    }
}

template <typename T, typename A>
__device__ void backward_final(const A *__restrict__ partial, int P, int fix_gamma,
                               A *__restrict__ sums, T *__restrict__ dgamma,
                               T *__restrict__ dbeta) {
    __shared__ A s_dy[SG_REDUCE_THREADS];
    __shared__ A s_dyx[SG_REDUCE_THREADS];
    const int c = blockIdx.x, tid = threadIdx.x;
    A sum_dy = 0, sum_dyx = 0;
    for (int p = tid; p < P; p += SG_REDUCE_THREADS) {
        sum_dy += partial[((long long)c * P + p) * 2];
        sum_dyx += partial[((long long)c * P + p) * 2 + 1];
    }
    s_dy[tid] = sum_dy;
    s_dyx[tid] = sum_dyx;
    block_sum2(s_dy, s_dyx);
    if (tid == 0) {
        sums[2 * c] = s_dy[0];
        sums[2 * c + 1] = s_dyx[0];
        dbeta[c] = (T)s_dy[0];
        dgamma[c] = fix_gamma ? (T)0 : (T)s_dyx[0];
    }
}

template <typename T, typename A>
__device__ void backward_dx(const T *__restrict__ dy, const T *__restrict__ x,
                            const T *__restrict__ mean, const T *__restrict__ inv_std_in,
                            const T *__restrict__ gamma, const A *__restrict__ sums,
                            int fix_gamma, int use_global_stats, T *__restrict__ dx, int N,
                            int C, long long S) {
    const long long total = (long long)N * C * S;
    const long long step = (long long)blockDim.x * gridDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const A inv_m = (A)1 / (A)((long long)N * S);
    ChannelWalk walk(start, step, C, S);
    for (long long i = start; i < total; i += step, walk.next()) {
        const int c = walk.c;
        const A g = fix_gamma ? (A)1 : (A)gamma[c];
        const A inv_std = (A)inv_std_in[c];
        A d = (A)dy[i];
        if (!use_global_stats) {
            /* the batch statistics depend on x: subtract their share */
            const A xhat = ((A)x[i] - (A)mean[c]) * inv_std;
            d -= (sums[2 * c] + xhat * sums[2 * c + 1]) * inv_m;
        }
        dx[i] = (T)(d * g * inv_std);
    }
}

/* ---- extern "C" entry points, one per dtype ------------------------------ */

#define SG_BN_ENTRIES(T, SUF)                                                              \
    extern "C" __global__ void bn_stats_partial_##SUF(const T *x, T *partial, int N, int C,  \
                                                       long long S) {                       \
        stats_partial<T, T>(x, partial, N, C, S);                                           \
    }                                                                                       \
    extern "C" __global__ void bn_stats_final_##SUF(const T *partial, int P, T eps, T *mean, \
                                                     T *var, T *inv_std) {                  \
        stats_final<T, T>(partial, P, eps, mean, var, inv_std);                             \
    }                                                                                       \
    extern "C" __global__ void bn_forward_##SUF(const T *x, T *y, const T *mean,             \
                                                 const T *inv_std, const T *gamma,           \
                                                 const T *beta, int fix_gamma, int N, int C, \
                                                 long long S) {                              \
        forward<T, T>(x, y, mean, inv_std, gamma, beta, fix_gamma, N, C, S);                \
    }                                                                                       \
    extern "C" __global__ void bn_update_moving_##SUF(T *moving_mean, T *moving_var,         \
                                                       const T *mean, const T *var,          \
                                                       T momentum, int C) {                  \
        update_moving<T, T>(moving_mean, moving_var, mean, var, momentum, C);               \
    }                                                                                       \
    extern "C" __global__ void bn_backward_partial_##SUF(const T *dy, const T *x,            \
                                                          const T *mean, const T *inv_std,   \
                                                          T *partial, int N, int C,          \
                                                          long long S) {                     \
        backward_partial<T, T>(dy, x, mean, inv_std, partial, N, C, S);                     \
    }                                                                                       \
    extern "C" __global__ void bn_backward_final_##SUF(const T *partial, int P,              \
                                                        int fix_gamma, T *sums, T *dgamma,   \
                                                        T *dbeta) {                          \
        backward_final<T, T>(partial, P, fix_gamma, sums, dgamma, dbeta);                   \
    }                                                                                       \
    extern "C" __global__ void bn_backward_dx_##SUF(const T *dy, const T *x, const T *mean,  \
                                                     const T *inv_std, const T *gamma,       \
                                                     const T *sums, int fix_gamma,           \
                                                     int use_global_stats, T *dx, int N,     \
                                                     int C, long long S) {                   \
        backward_dx<T, T>(dy, x, mean, inv_std, gamma, sums, fix_gamma, use_global_stats,   \
                          dx, N, C, S);                                                      \
    }

SG_BN_ENTRIES(float, f32)
SG_BN_ENTRIES(double, f64)
