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
 * nms_sweep   one block: walks the boxes in score order; a box is kept unless
 *     an earlier kept box suppressed it, and a kept box ORs its mask row into
 *     the `removed` words.  The threads share out the words of each row, so
 *     the sweep never leaves the device.
 *
 * IoU follows MXNet's box_nms: no +1 on widths, a box with x2 < x1 or
 * y2 < y1 has area 0, and an empty union gives IoU 0.
 */

#if SG_NMS_THREADS != 64
#error "nms.cu packs one box per bit of a 64-bit word: SG_NMS_THREADS must be 64"
#endif

template <typename T>
__device__ __forceinline__ T box_area(T x1, T y1, T x2, T y2) {
    return (x2 < x1 || y2 < y1) ? (T)0 : (x2 - x1) * (y2 - y1);
}

template <typename T>
__device__ __forceinline__ T box_iou(const T *a, const T *b) {
    const T iw = min(a[2], b[2]) - max(a[0], b[0]);
    const T ih = min(a[3], b[3]) - max(a[1], b[1]);
    const T inter = (iw > (T)0 && ih > (T)0) ? iw * ih : (T)0;
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
 * keep[i] = 1 if box i survives, else 0. */
extern "C" __global__ void nms_sweep(const unsigned long long *__restrict__ mask, int n,
                                     unsigned long long *removed, unsigned char *keep) {
    const int blocks = (n + SG_NMS_THREADS - 1) / SG_NMS_THREADS;
    const int tid = threadIdx.x;
    for (int w = tid; w < blocks; w += blockDim.x) removed[w] = 0ULL;
    __syncthreads();
    for (int i = 0; i < n; ++i) {
        const int word = i / SG_NMS_THREADS;
        /* Box i's own row never sets bit i, so a thread writing removed[word]
         * below cannot change what the others read here. */
        const bool kept = !((removed[word] >> (i % SG_NMS_THREADS)) & 1ULL);
        if (kept) {
            const unsigned long long *row = mask + (long long)i * blocks;
            for (int w = word + tid; w < blocks; w += blockDim.x) removed[w] |= row[w];
        }
        if (tid == 0) keep[i] = kept ? 1 : 0;
        __syncthreads();
    }
}
