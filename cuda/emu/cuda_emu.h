/*
 * cuda_emu.h -- run symgraph's CUDA kernels on the CPU, for tests only.
 *
 * Compile a kernel source as C++ with this header force-included:
 *
 *     g++ -x c++ -include cuda/emu/cuda_emu.h -shared -fPIC -O1 kernels.cu ...
 *
 * and launch a kernel with
 *
 *     int rc = sg_emu::launch(grid, block, [&]() { my_kernel(a, b, n); });
 *
 * Model: blocks run one after another; the threads of a block are cooperative
 * user-level contexts (ucontext), each with its own stack, that switch only at
 * __syncthreads().  So one block's threads really interleave at barriers, and
 * a kernel that forgets a barrier or diverges around one is caught (launch
 * returns SG_EMU_DIVERGENT) instead of silently passing.
 *
 * __shared__ expands to `static`: since only one block runs at a time, one
 * static copy per kernel is exactly "per block, shared by its threads".  The
 * emulator does NOT re-zero it between blocks (neither does the GPU).
 *
 * The order in which blocks run, and in which a block's threads run between
 * two barriers, is forward by default; set_schedule() can reverse or shuffle
 * both.  A kernel whose result depends on that order has a race (a missing
 * barrier, or blocks that depend on each other), which a GPU would show only
 * sometimes: running the tests under every schedule is the CPU counterpart of
 * compute-sanitizer's racecheck.
 *
 * Not emulated: warps and warp intrinsics (__shfl_*, __ballot_sync...),
 * dynamic `extern __shared__` arrays, streams, real concurrency (atomics are
 * trivially atomic because contexts never switch inside them).  Kernels of
 * symgraph avoid all of these.
 */
#ifndef SYMGRAPH_CUDA_EMU_H
#define SYMGRAPH_CUDA_EMU_H

#define SYMGRAPH_CUDA_EMU 1

#include <ucontext.h>
#include <cmath>
#include <math.h>  /* float overloads of sqrt etc. in the global namespace */
#include <cstdint>
#include <cstdlib>
#include <cstring>

/* ---- qualifiers --------------------------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static
#define __align__(n) __attribute__((aligned(n)))
/* __restrict__ is a GNU C++ keyword already. */

/* ---- built-in variables ------------------------------------------------- */
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
        : x(x_), y(y_), z(z_) {}
};

/* Deliberately non-static: the compiler must then assume that the opaque
 * swapcontext() call inside __syncthreads() may change them, and re-read
 * threadIdx after every barrier.  Each emulated library is one translation
 * unit, and is built with -fvisibility=hidden, so there is no clash. */
dim3 threadIdx, blockIdx, blockDim, gridDim;
const int warpSize = 32;

/* ---- the scheduler ------------------------------------------------------ */
enum { SG_EMU_OK = 0, SG_EMU_BAD_CONFIG = 1, SG_EMU_DIVERGENT = 2, SG_EMU_NO_MEMORY = 3 };

namespace sg_emu {

enum ThreadState { READY, AT_BARRIER, DONE };

const size_t kStackBytes = 64 * 1024;
const unsigned kMaxThreads = 1024;

struct Thread {
    ucontext_t ctx;
    ThreadState state;
};

enum Schedule { FORWARD = 0, REVERSE = 1, SHUFFLE = 2 };

struct Scheduler {
    ucontext_t main_ctx;
    Thread *threads = nullptr;
    char *stacks = nullptr;
    unsigned *order = nullptr;
    unsigned capacity = 0;
    unsigned current = 0;
    void (*body)(void *) = nullptr;
    void *body_arg = nullptr;
    int schedule = FORWARD;
    unsigned long long rng = 0x9E3779B97F4A7C15ULL;
};

inline Scheduler &sched() {
    static Scheduler s;
    return s;
}

inline void thread_entry() {
    Scheduler &s = sched();
    s.body(s.body_arg);
    s.threads[s.current].state = DONE;
    /* returning resumes uc_link, the scheduler */
}

inline void syncthreads() {
    Scheduler &s = sched();
    Thread &t = s.threads[s.current];
    t.state = AT_BARRIER;
    swapcontext(&t.ctx, &s.main_ctx);
    /* another thread ran meanwhile: forget anything cached from memory */
    __asm__ __volatile__("" ::: "memory");
}

inline bool reserve(unsigned n) {
    Scheduler &s = sched();
    if (n <= s.capacity) return true;
    std::free(s.threads);
    std::free(s.stacks);
    std::free(s.order);
    s.threads = static_cast<Thread *>(std::calloc(n, sizeof(Thread)));
    s.stacks = static_cast<char *>(std::malloc(n * kStackBytes));
    s.order = static_cast<unsigned *>(std::malloc(n * sizeof(unsigned)));
    s.capacity = (s.threads && s.stacks && s.order) ? n : 0;
    return s.capacity != 0;
}

inline void set_schedule(int schedule, unsigned long long seed) {
    sched().schedule = schedule;
    sched().rng = seed * 0x9E3779B97F4A7C15ULL + 1;
}

inline unsigned long long gcd(unsigned long long a, unsigned long long b) {
    while (b) { const unsigned long long t = a % b; a = b; b = t; }
    return a;
}

/* order[0..n) := 0..n-1 forward, reversed, or shuffled (xorshift, Fisher-Yates). */
inline void fill_order(unsigned *order, unsigned n) {
    Scheduler &s = sched();
    for (unsigned i = 0; i < n; ++i)
        order[i] = s.schedule == REVERSE ? n - 1 - i : i;
    if (s.schedule != SHUFFLE) return;
    for (unsigned i = n; i > 1; --i) {
        s.rng ^= s.rng << 13; s.rng ^= s.rng >> 7; s.rng ^= s.rng << 17;
        const unsigned j = (unsigned)(s.rng % i);
        const unsigned tmp = order[i - 1]; order[i - 1] = order[j]; order[j] = tmp;
    }
}

/* Run one block to completion; returns SG_EMU_OK or SG_EMU_DIVERGENT. */
inline int run_block(unsigned nthreads) {
    Scheduler &s = sched();
    for (unsigned t = 0; t < nthreads; ++t) {
        Thread &th = s.threads[t];
        getcontext(&th.ctx);
        th.ctx.uc_stack.ss_sp = s.stacks + t * kStackBytes;
        th.ctx.uc_stack.ss_size = kStackBytes;
        th.ctx.uc_link = &s.main_ctx;
        makecontext(&th.ctx, thread_entry, 0);
        th.state = READY;
    }
    for (;;) {
        unsigned done = 0, waiting = 0;
        fill_order(s.order, nthreads);
        for (unsigned k = 0; k < nthreads; ++k) {
            const unsigned t = s.order[k];
            Thread &th = s.threads[t];
            if (th.state == DONE) { ++done; continue; }
            threadIdx.x = t % blockDim.x;
            threadIdx.y = (t / blockDim.x) % blockDim.y;
            threadIdx.z = t / (blockDim.x * blockDim.y);
            s.current = t;
            swapcontext(&s.main_ctx, &th.ctx);
            if (th.state == DONE) ++done; else ++waiting;
        }
        if (waiting == 0) return SG_EMU_OK;
        /* Some threads wait at a barrier that others have left the kernel
         * without reaching: undefined behaviour on a GPU, an error here. */
        if (done != 0) return SG_EMU_DIVERGENT;
        for (unsigned t = 0; t < nthreads; ++t) s.threads[t].state = READY;
    }
}

template <class F>
void call_body(void *f) { (*static_cast<F *>(f))(); }

/* Launch `kernel_call` (a callable running the kernel for one thread) on a
 * grid; blocks run sequentially in x, then y, then z order. */
template <class F>
int launch(dim3 grid, dim3 block, F kernel_call) {
    unsigned long long nthreads =
        (unsigned long long)block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > kMaxThreads || block.z > 64) return SG_EMU_BAD_CONFIG;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
        return SG_EMU_BAD_CONFIG;
    if (!reserve((unsigned)nthreads)) return SG_EMU_NO_MEMORY;
    Scheduler &s = sched();
    s.body = call_body<F>;
    s.body_arg = &kernel_call;
    gridDim = grid;
    blockDim = block;
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    /* blocks in order, reversed, or strided from a random start (a permutation) */
    unsigned long long stride = 1, offset = 0;
    if (s.schedule == SHUFFLE && nblocks > 1) {
        stride = (nblocks / 2) | 1;
        while (gcd(stride, nblocks) != 1) stride += 2;
        offset = s.rng % nblocks;
    }
    for (unsigned long long k = 0; k < nblocks; ++k) {
        unsigned long long b = (k * stride + offset) % nblocks;
        if (s.schedule == REVERSE) b = nblocks - 1 - k;
        blockIdx = dim3((unsigned)(b % grid.x), (unsigned)((b / grid.x) % grid.y),
                        (unsigned)(b / ((unsigned long long)grid.x * grid.y)));
        int rc = run_block((unsigned)nthreads);
        if (rc != SG_EMU_OK) return rc;
    }
    return SG_EMU_OK;
}

}  // namespace sg_emu

#define __syncthreads() sg_emu::syncthreads()
#define __threadfence() __asm__ __volatile__("" ::: "memory")
#define __threadfence_block() __asm__ __volatile__("" ::: "memory")

/* ---- atomics: contexts never switch inside one, so they are plain RMW ---- */
template <class T>
inline T sg_emu_atomic_add(T *p, T v) { T old = *p; *p = old + v; return old; }
inline float atomicAdd(float *p, float v) { return sg_emu_atomic_add(p, v); }
inline double atomicAdd(double *p, double v) { return sg_emu_atomic_add(p, v); }
inline int atomicAdd(int *p, int v) { return sg_emu_atomic_add(p, v); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return sg_emu_atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    return sg_emu_atomic_add(p, v);
}
inline unsigned long long atomicOr(unsigned long long *p, unsigned long long v) {
    unsigned long long old = *p; *p = old | v; return old;
}

/* ---- loads and math ----------------------------------------------------- */
template <class T>
inline T __ldg(const T *p) { return *p; }

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }

/* ---- __half: storage plus IEEE binary16 <-> float conversion ------------- */
struct __align__(2) __half {
    unsigned short x;
};

inline float __half2float(__half h) {
    unsigned sign = (unsigned)(h.x & 0x8000u) << 16;
    unsigned exp = (h.x >> 10) & 0x1fu;
    unsigned man = h.x & 0x3ffu;
    unsigned bits;
    if (exp == 0x1fu) {                 /* inf / nan */
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {              /* normal */
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {              /* zero */
        bits = sign;
    } else {                            /* subnormal: value = man * 2^-24 */
        float f = (float)man * 5.9604644775390625e-08f;
        std::memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

/* Round to nearest even, as __float2half does on the device. */
inline __half __float2half(float f) {
    unsigned bits;
    std::memcpy(&bits, &f, 4);
    unsigned short sign = (unsigned short)((bits >> 16) & 0x8000u);
    unsigned absb = bits & 0x7fffffffu;
    __half h;
    if (absb > 0x7f800000u) {           /* nan: keep it quiet */
        h.x = sign | 0x7e00u;
        return h;
    }
    if (absb >= 0x477ff000u) {          /* rounds to >= 65520: inf */
        h.x = sign | 0x7c00u;
        return h;
    }
    if (absb < 0x38800000u) {           /* below the smallest normal half */
        /* scale to units of 2^-24 and round to nearest even in float */
        float a;
        std::memcpy(&a, &absb, 4);
        float units = a * 16777216.0f;  /* exact: power of two */
        float r = nearbyintf(units);    /* default rounding mode: ties-to-even */
        h.x = sign | (unsigned short)r;
        return h;
    }
    unsigned exp = ((absb >> 23) - 112u) << 10;
    unsigned man = absb & 0x7fffffu;
    unsigned half = exp | (man >> 13);
    unsigned rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  /* may carry into exp */
    h.x = sign | (unsigned short)half;
    return h;
}
inline __half __float2half_rn(float f) { return __float2half(f); }

#endif  /* SYMGRAPH_CUDA_EMU_H */
