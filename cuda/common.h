/*
 * common.h -- preamble that loader.py prepends to every kernel source.
 *
 * The kernels include no header at all: NVRTC, as CuPy runs it, has no CUDA
 * include directory on machines with only the pip wheels.  So the little of
 * cuda_fp16.h that the kernels need is defined here with inline PTX.  Under
 * the CPU emulator (cuda/emu/cuda_emu.h, which defines SYMGRAPH_CUDA_EMU)
 * the emulator provides the same names.
 */
#ifndef SYMGRAPH_COMMON_H
#define SYMGRAPH_COMMON_H

#if !defined(SYMGRAPH_CUDA_EMU) && !defined(__CUDA_FP16_H__)
struct __align__(2) __half {
    unsigned short x;
};

__device__ __forceinline__ float __half2float(__half h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
    return f;
}

__device__ __forceinline__ __half __float2half(float f) {
    __half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
#endif

/* Launch geometry that shared arrays are sized by comes from the loader as
 * -D options (loader.compile_options), so it is written down only once. */
#if !defined(SG_REDUCE_THREADS) || !defined(SG_NMS_THREADS)
#error "compile with loader.compile_options(): SG_REDUCE_THREADS, SG_NMS_THREADS"
#endif

#endif  /* SYMGRAPH_COMMON_H */
