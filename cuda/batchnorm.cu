/*
 * batchnorm.cu -- batch normalisation over layout (N, C, S), S = spatial size.
 *
 * Statistics, two launches, both deterministic (fixed reduction order):
 *   bn_stats_partial_*  grid (C, P), SG_REDUCE_THREADS threads: block (c, p)
 *       runs Welford per thread over elements p*T + tid, step P*T, of channel
 *       c, merges the block's states in shared memory (Chan et al.) and writes
 *       (count, mean, M2) to partial[c, p, :].
 *   bn_stats_final_*    grid C: merges the P partials; mean[c], var[c] (the
 *       biased variance, as MXNet uses for both output and moving_var).
 * Welford plus pairwise merging keeps float32 accurate when the mean is large
 * against the spread (no E[x^2] - E[x]^2 cancellation).
 *
 * Backward, three launches:
 *   bn_backward_partial_*  sums of dy and dy * xhat per (channel, part);
 *   bn_backward_final_*    per channel: dbeta = sum dy, dgamma = sum dy*xhat
 *                          (0 under fix_gamma) and both sums to `sums`;
 *   bn_backward_dx_*       dx, for batch statistics or use_global_stats.
 * Accumulation is in float for float32 data and double for float64.
 */

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
    A n = 0, mean = 0, m2 = 0;
    for (long long i = (long long)p * SG_REDUCE_THREADS + tid; i < M;
         i += (long long)P * SG_REDUCE_THREADS) {
        const long long b = i / S;
        const A v = (A)x[(b * C + c) * S + (i - b * S)];
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
__device__ void stats_final(const A *__restrict__ partial, int P, T *__restrict__ mean_out,
                            T *__restrict__ var_out) {
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
        mean_out[c] = (T)smean[0];
        var_out[c] = sn[0] > (A)0 ? (T)(sm2[0] / sn[0]) : (T)0;
    }
}

template <typename T, typename A>
__device__ void forward(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ mean,
                        const T *__restrict__ var, const T *__restrict__ gamma,
                        const T *__restrict__ beta, A eps, int fix_gamma, int N, int C,
                        long long S) {
    const long long total = (long long)N * C * S;
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += step) {
        const int c = (int)((i / S) % C);
        const A g = fix_gamma ? (A)1 : (A)gamma[c];
        const A inv_std = (A)1 / sqrt((A)var[c] + eps);
        y[i] = (T)(((A)x[i] - (A)mean[c]) * inv_std * g + (A)beta[c]);
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
                                 const T *__restrict__ mean, const T *__restrict__ var, A eps,
                                 A *__restrict__ partial, int N, int C, long long S) {
    __shared__ A s_dy[SG_REDUCE_THREADS];
    __shared__ A s_dyx[SG_REDUCE_THREADS];
    const int c = blockIdx.x, p = blockIdx.y, P = gridDim.y, tid = threadIdx.x;
    const long long M = (long long)N * S;
    const A mu = (A)mean[c];
    const A inv_std = (A)1 / sqrt((A)var[c] + eps);
    A sum_dy = 0, sum_dyx = 0;
    for (long long i = (long long)p * SG_REDUCE_THREADS + tid; i < M;
         i += (long long)P * SG_REDUCE_THREADS) {
        const long long b = i / S;
        const long long at = (b * C + c) * S + (i - b * S);
        const A g = (A)dy[at];
        sum_dy += g;
        sum_dyx += g * ((A)x[at] - mu) * inv_std;
    }
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
                            const T *__restrict__ mean, const T *__restrict__ var,
                            const T *__restrict__ gamma, const A *__restrict__ sums, A eps,
                            int fix_gamma, int use_global_stats, T *__restrict__ dx, int N,
                            int C, long long S) {
    const long long total = (long long)N * C * S;
    const long long step = (long long)blockDim.x * gridDim.x;
    const A inv_m = (A)1 / (A)((long long)N * S);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += step) {
        const int c = (int)((i / S) % C);
        const A g = fix_gamma ? (A)1 : (A)gamma[c];
        const A inv_std = (A)1 / sqrt((A)var[c] + eps);
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

extern "C" __global__ void bn_stats_partial_f32(const float *x, float *partial, int N, int C,
                                                long long S) {
    stats_partial<float, float>(x, partial, N, C, S);
}
extern "C" __global__ void bn_stats_partial_f64(const double *x, double *partial, int N, int C,
                                                long long S) {
    stats_partial<double, double>(x, partial, N, C, S);
}
extern "C" __global__ void bn_stats_final_f32(const float *partial, int P, float *mean,
                                              float *var) {
    stats_final<float, float>(partial, P, mean, var);
}
extern "C" __global__ void bn_stats_final_f64(const double *partial, int P, double *mean,
                                              double *var) {
    stats_final<double, double>(partial, P, mean, var);
}
extern "C" __global__ void bn_forward_f32(const float *x, float *y, const float *mean,
                                          const float *var, const float *gamma,
                                          const float *beta, float eps, int fix_gamma, int N,
                                          int C, long long S) {
    forward<float, float>(x, y, mean, var, gamma, beta, eps, fix_gamma, N, C, S);
}
extern "C" __global__ void bn_forward_f64(const double *x, double *y, const double *mean,
                                          const double *var, const double *gamma,
                                          const double *beta, double eps, int fix_gamma, int N,
                                          int C, long long S) {
    forward<double, double>(x, y, mean, var, gamma, beta, eps, fix_gamma, N, C, S);
}
extern "C" __global__ void bn_update_moving_f32(float *moving_mean, float *moving_var,
                                                const float *mean, const float *var,
                                                float momentum, int C) {
    update_moving<float, float>(moving_mean, moving_var, mean, var, momentum, C);
}
extern "C" __global__ void bn_update_moving_f64(double *moving_mean, double *moving_var,
                                                const double *mean, const double *var,
                                                double momentum, int C) {
    update_moving<double, double>(moving_mean, moving_var, mean, var, momentum, C);
}
extern "C" __global__ void bn_backward_partial_f32(const float *dy, const float *x,
                                                   const float *mean, const float *var,
                                                   float eps, float *partial, int N, int C,
                                                   long long S) {
    backward_partial<float, float>(dy, x, mean, var, eps, partial, N, C, S);
}
extern "C" __global__ void bn_backward_partial_f64(const double *dy, const double *x,
                                                   const double *mean, const double *var,
                                                   double eps, double *partial, int N, int C,
                                                   long long S) {
    backward_partial<double, double>(dy, x, mean, var, eps, partial, N, C, S);
}
extern "C" __global__ void bn_backward_final_f32(const float *partial, int P, int fix_gamma,
                                                 float *sums, float *dgamma, float *dbeta) {
    backward_final<float, float>(partial, P, fix_gamma, sums, dgamma, dbeta);
}
extern "C" __global__ void bn_backward_final_f64(const double *partial, int P, int fix_gamma,
                                                 double *sums, double *dgamma, double *dbeta) {
    backward_final<double, double>(partial, P, fix_gamma, sums, dgamma, dbeta);
}
extern "C" __global__ void bn_backward_dx_f32(const float *dy, const float *x, const float *mean,
                                              const float *var, const float *gamma,
                                              const float *sums, float eps, int fix_gamma,
                                              int use_global_stats, float *dx, int N, int C,
                                              long long S) {
    backward_dx<float, float>(dy, x, mean, var, gamma, sums, eps, fix_gamma, use_global_stats,
                              dx, N, C, S);
}
extern "C" __global__ void bn_backward_dx_f64(const double *dy, const double *x,
                                              const double *mean, const double *var,
                                              const double *gamma, const double *sums,
                                              double eps, int fix_gamma, int use_global_stats,
                                              double *dx, int N, int C, long long S) {
    backward_dx<double, double>(dy, x, mean, var, gamma, sums, eps, fix_gamma,
                                use_global_stats, dx, N, C, S);
}
