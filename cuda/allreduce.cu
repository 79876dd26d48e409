/*
 * allreduce.cu -- dst += src, elementwise, for the ring all-reduce
 * (symgraph/parallel.py).  One launch per ring step and chunk; the pointers
 * are already offset to the chunk.  float16 adds in float and rounds once,
 * as a half-precision add on the device would.
 */

extern "C" __global__ void ring_add_f16(__half *__restrict__ dst, const __half *__restrict__ src,
                                        long long n) {
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = __float2half(__half2float(dst[i]) + __half2float(src[i]));
}

extern "C" __global__ void ring_add_f32(float *__restrict__ dst, const float *__restrict__ src,
                                        long long n) {
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] += src[i];
}

extern "C" __global__ void ring_add_f64(double *__restrict__ dst, const double *__restrict__ src,
                                        long long n) {
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] += src[i];
}
