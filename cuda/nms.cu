/*
 * nms.cu -- greedy non-maximum suppression with the bitmask method.
 *
 * Input: n boxes (x1, y1, x2, y2), already sorted by decreasing score, and
 * optionally one class id per box (NULL: every box competes with every box).
 *
 * nms_mask_*  grid (B, B), B = ceil(n / 64), SG_NMS_THREADS (= 64) threads.
 *     Block (col block, row block) with row block <= col block (the upper
 *     triangle; other blocks return at once): thread t takes box
 *     i = 64 * row + t, compares it with the 64 boxes of the column block
 *     (staged in shared memory) and sets bit j of word mask[i, col] when box
 *     64 * col + j comes after i (j > i inside the diagonal block), has the
 *     same class, and IoU(i, j) > thresh.
 * nms_sweep   one block: walks the boxes in score order, 64 at a time; a box
 *     is kept unless an earlier kept box suppressed it, and the kept boxes OR
 *     their mask rows into the `removed` words of later blocks.  The sweep
 *     never leaves the device.
 *
 * IoU follows MXNet's box_nms: no +1 on widths, a box with x2 < x1 or
 * y2 < y1 has area 0, and an empty union gives IoU 0.
 */

#if SG_NMS_THREADS != 64
#error "nms.cu packs one box per bit of a 64-bit word: SG_NMS_THREADS must be 64"
#endif

/* Products rounded on their own (never contracted into an FMA with the sum or difference
 * that follows), so the IoU is the host's to the last bit: NumPy computes the areas and
 * the intersection as separate float products, and a fused a*b + c can land an IoU that
 * equals the threshold one ulp above it (a tie the host keeps, suppressed here). */
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
__device__ __forceinline__ T box_area(T x1, T y1, T x2, T y2) {
    return (x2 < x1 || y2 < y1) ? (T)0 : mul_rn(x2 - x1, y2 - y1);
}

template <typename T>
__device__ __forceinline__ T box_iou(const T *a, const T *b) {
    const T iw = min(a[2], b[2]) - max(a[0], b[0]);
    const T ih = min(a[3], b[3]) - max(a[1], b[1]);
    const T inter = (iw > (T)0 && ih > (T)0) ? mul_rn(iw, ih) : (T)0;
    const T uni = box_area(a[0], a[1], a[2], a[3]) + box_area(b[0], b[1], b[2], b[3]) - inter;
    return uni > (T)0 ? inter / uni : (T)0;
}

template <typename T>
__device__ void nms_mask_impl(const T *__restrict__ boxes, const T *__restrict__ ids, int n,
                              T thresh, unsigned long long *__restrict__ mask) {
    const int row = blockIdx.y, col = blockIdx.x, tid = threadIdx.x;
    if (row > col) return;  /* the whole block leaves: no barrier is skipped */
    const int blocks = (n + SG_NMS_THREADS - 1) / SG_NMS_THREADS;
    const int row_size = min(n - row * SG_NMS_THREADS, SG_NMS_THREADS);
    const int col_size = min(n - col * SG_NMS_THREADS, SG_NMS_THREADS);
    __shared__ T s_box[SG_NMS_THREADS * 4];
    __shared__ T s_id[SG_NMS_THREADS];
    if (tid < col_size) {
        const long long j = (long long)col * SG_NMS_THREADS + tid;
        for (int k = 0; k < 4; ++k) s_box[tid * 4 + k] = boxes[j * 4 + k];
        s_id[tid] = ids ? ids[j] : (T)0;
    }
    __syncthreads();
    if (tid < row_size) {
        const long long i = (long long)row * SG_NMS_THREADS + tid;
        T box[4];
        for (int k = 0; k < 4; ++k) box[k] = boxes[i * 4 + k];
        const T id = ids ? ids[i] : (T)0;
        unsigned long long bits = 0ULL;
        for (int j = (row == col) ? tid + 1 : 0; j < col_size; ++j) {
            if (s_id[j] == id && box_iou(box, s_box + j * 4) > thresh) bits |= 1ULL << j;
        }
        mask[i * blocks + col] = bits;
    }
}

extern "C" __global__ void nms_mask_f32(const float *__restrict__ boxes,
                                        const float *__restrict__ ids, int n, float thresh,
                                        unsigned long long *__restrict__ mask) {
    nms_mask_impl<float>(boxes, ids, n, thresh, mask);
}

extern "C" __global__ void nms_mask_f64(const double *__restrict__ boxes,
                                        const double *__restrict__ ids, int n, double thresh,
                                        unsigned long long *__restrict__ mask) {
    nms_mask_impl<double>(boxes, ids, n, thresh, mask);
}

/* removed: scratch of ceil(n / 64) words (the kernel clears it);
 * keep[i] = 1 if box i survives, else 0.
 *
 * One block walks the 64-box column blocks in order.  For block b, one thread
 * resolves the 64 boxes sequentially from removed[b] and the diagonal words
 * mask[64 b + j, b] (only bits after j are set there), giving the kept bits;
 * then the threads share out the later words w > b, each OR-ing in the rows
 * of the kept boxes.  Two barriers per 64 boxes rather than one per box. */
extern "C" __global__ void nms_sweep(const unsigned long long *__restrict__ mask, int n,
                                     unsigned long long *removed, unsigned char *keep) {
    __shared__ unsigned long long s_diag[SG_NMS_THREADS];
    __shared__ unsigned long long s_kept;
    const int blocks = (n + SG_NMS_THREADS - 1) / SG_NMS_THREADS;
    const int tid = threadIdx.x;
    for (int w = tid; w < blocks; w += blockDim.x) removed[w] = 0ULL;
    for (int b = 0; b < blocks; ++b) {
        const long long base = (long long)b * SG_NMS_THREADS;
        const int size = min(n - b * SG_NMS_THREADS, SG_NMS_THREADS);
        for (int j = tid; j < size; j += blockDim.x)
            s_diag[j] = mask[(base + j) * blocks + b];
        __syncthreads();   /* also orders the previous block's removed[] updates */
        if (tid == 0) {
            unsigned long long cur = removed[b], kept = 0ULL;
            for (int j = 0; j < size; ++j) {
                if (!((cur >> j) & 1ULL)) {
                    kept |= 1ULL << j;
                    cur |= s_diag[j];
                }
            }
            s_kept = kept;
        }
        __syncthreads();
        const unsigned long long kept = s_kept;
        for (int j = tid; j < size; j += blockDim.x)
            keep[base + j] = (unsigned char)((kept >> j) & 1ULL);
        for (int w = b + 1 + tid; w < blocks; w += blockDim.x) {
            unsigned long long acc = removed[w];
            for (unsigned long long k = kept; k; k &= k - 1ULL) {
                const int j = __ffsll((long long)k) - 1;
                acc |= mask[(base + j) * blocks + w];
            }
            removed[w] = acc;
        }
    }
}
