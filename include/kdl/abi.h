/* The C ABI of every kernel kdlc emits, for dlopen users (PyTorch loaders, test harnesses, other
 * languages). Plain C; needs only <stddef.h>/<stdint.h>.
 *
 * For a kernel NAME the emitted library exports:
 *   const kdl_kernel_info* kdl_NAME_info(void);
 *   const char* kdl_NAME_can_implement(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs);
 *        NULL when the kernel can run these arguments on the current device, else a message saying
 *        exactly what is wrong (alignment, sizes, null pointers, the device's arch). The string is
 *        static or thread-local; copy it before the next call.
 *   size_t kdl_NAME_workspace_size(const kdl_gemm_shape* shape);
 *   int kdl_NAME_run(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs,
 *                    void* workspace, size_t workspace_bytes, void* stream);   -- a cudaStream_t
 *        returns 0 on success, KDL_ERR_INVALID when can_implement rejects the arguments, or
 *        KDL_ERR_CUDA + the cudaError_t of a failed launch.
 *
 * A kernel whose spec sets `fallback = sm80` (an sm90a kernel with an sm80-path kernel to fall back to,
 * kdl/gemm_fallback.h) also exports
 *   const char* kdl_NAME_path(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs);
 *        which kernel kdl_NAME_run launches for these arguments on the current device: "sm90a" (the
 *        kernel itself), "sm80" (the fallback: a GPU other than compute capability 9.0, or A / B that
 *        TMA cannot describe), or NULL when kdl_NAME_can_implement refuses them. Static strings.
 *        Kernels without a fallback do not export it: they run their own code or refuse.
 *   An sm90a conv fprop kernel whose plan carries the patch mainloop (`kdlc list --plan`: "mainloop patch")
 *   exports it too, taking its kdl_conv2d_shape: "patch" or "im2col", the mainloop kdl_NAME_run takes
 *   (NULL when can_implement refuses the arguments).
 *
 * Arguments (`args`, `nargs` of them) come in the order of kdl_kernel_info::arg_names, which is the
 * order kdlc documents and manifest.json lists: the op's operands in declaration order (gemm: A, B,
 * [C], D; with fp8 block scales A, scale_A, B, scale_B, [C], D, each scale_X a KDL_ARG_TENSOR of f32),
 * then the epilogue's params, inputs and extra outputs in the order the spec declares them.
 *
 * A convolution kernel (kdl_kernel_info::op "conv2d_fprop", "conv2d_dgrad" or "conv2d_wgrad") takes a
 * kdl_conv2d_shape where a GEMM takes a kdl_gemm_shape; its entry points are otherwise the same:
 *   const char* kdl_NAME_can_implement(const kdl_conv2d_shape* shape, const kdl_arg* args, int32_t nargs);
 *   size_t kdl_NAME_workspace_size(const kdl_conv2d_shape* shape);
 *   int kdl_NAME_run(const kdl_conv2d_shape* shape, const kdl_arg* args, int32_t nargs,
 *                    void* workspace, size_t workspace_bytes, void* stream);
 * Its arguments: the op's two inputs (fprop X, W; dgrad Y, W; wgrad Y, X), [residual], the output
 * (fprop Y, dgrad X, wgrad W), then the epilogue's as for a GEMM. A tensor's kdl_arg gives, in
 * elements, `ld` = its pixel stride (a filter's: its tap stride) and `batch_stride` = its image stride
 * (a filter's: its filter stride); 0 = packed (ld = its channels, batch_stride = its pixels (taps) * ld).
 * A [channel] vector (KDL_ARG_VECTOR, broadcast "channel") holds one value per output channel;
 * its batch_stride is between images (0: shared). kdl/conv_problem.h defines the layouts.
 */
#ifndef KDL_ABI_H
#define KDL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDL_ABI_VERSION 1
#define KDL_OK 0
#define KDL_ERR_INVALID 1
#define KDL_ERR_CUDA 1000

typedef enum kdl_arg_kind {
  KDL_ARG_TENSOR = 0,      /* full-size matrix: data, ld (elements), batch_stride (elements) */
  KDL_ARG_VECTOR = 1,      /* broadcast vector ([row]/[col]/[channel]): data, batch_stride */
  KDL_ARG_DEVICE_SCALAR = 2, /* one device scalar ([] input, or an amax output): data */
  KDL_ARG_PARAM = 3        /* a runtime scalar: value */
} kdl_arg_kind;

typedef struct kdl_arg {
  void* data;
  int64_t ld;
  int64_t batch_stride;
  double value;
} kdl_arg;

typedef struct kdl_gemm_shape {
  int64_t m, n, k;
  int64_t batch;    /* >= 1 */
  int32_t split_k;  /* serial split-K slices for kernels with split_k = serial(N): 1..N, 0: chosen per problem and device; else 1 (or 0) */
} kdl_gemm_shape;

/* A 2-D convolution (groups = 1): X n x h x w x c (NHWC), W k x r x s x c (KRSC), Y n x p x q x k. */
typedef struct kdl_conv2d_shape {
  int64_t n, h, w, c, k, r, s;
  int64_t p, q;                 /* 0: derived */
  int32_t pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;   /* stride/dilation 0 read as 1 */
  int32_t split_k;              /* 1 (or 0) unless the kernel has split_k = serial(N): then 1..N, 0 chosen */
} kdl_conv2d_shape;

typedef struct kdl_kernel_info {
  int32_t abi_version;
  const char* name;
  const char* op;       /* "gemm", "conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad": which shape struct */
  const char* arch;     /* "sm80", "sm90a", ... */
  int32_t nargs;
  const char* const* arg_names;        /* "A", "B", "C", "D", "alpha", "bias", ... */
  const int32_t* arg_kinds;            /* kdl_arg_kind */
  const char* const* arg_dtypes;       /* "bf16", "f32", ...; params: "f32" */
  const char* const* arg_broadcasts;   /* vectors: "row", "col", "channel"; others: "" */
  const double* param_defaults;        /* per argument; 0 for non-params */
} kdl_kernel_info;

#ifdef __cplusplus
}
#endif
#endif /* KDL_ABI_H */
