/* A fake conv kernel library for the CPU smoke test of the Python conv drivers (tests/gpu/conv/cpu_smoke.py):
 * the C ABI of include/kdl/abi.h for conv kernels (kdl_conv2d_shape, kdl_NAME_{info,can_implement,
 * workspace_size,run}), computing on HOST memory with plain loops. It stands in for a `kdlc build` library so
 * that test_conv_cudnn.py and conv_bench.py run end to end without a GPU (PyTorch on the CPU). Its kernels
 * match the spec cpu_smoke.py writes (FAKE_SPEC there). FAKE_CONV_BUG=1 leaves the last output channel
 * unwritten, =2 offsets the filter tap by one: the drivers must then fail. Not a reference: the drivers'
 * references are PyTorch's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdl/abi.h"

enum { FPROP, DGRAD, WGRAD };
enum { F16, BF16, F32 };
enum { EPI_ALPHA, EPI_BIAS_RELU, EPI_ALPHA_BIAS_AMAX };

typedef struct {
  const char* name;
  int op, in_dt, out_dt;
  int fr, fs, fsh, fsw; /* fixed filter / stride, 0: run time */
  int slices;           /* serial split-K */
  int epi;
} Fake;

static const Fake kFakes[] = {
    {"fk_fprop_bias_relu", FPROP, BF16, BF16, 0, 0, 0, 0, 1, EPI_BIAS_RELU},
    {"fk_fprop_3x3_s2", FPROP, F16, F16, 3, 3, 2, 2, 1, EPI_ALPHA},
    {"fk_dgrad", DGRAD, F16, F16, 0, 0, 0, 0, 1, EPI_ALPHA},
    {"fk_wgrad_splitk", WGRAD, BF16, F32, 0, 0, 0, 0, 4, EPI_ALPHA_BIAS_AMAX},
    {"fkb_fprop3x3", FPROP, BF16, BF16, 3, 3, 1, 1, 1, EPI_ALPHA},
    {"fkb_fprop1x1", FPROP, BF16, BF16, 1, 1, 1, 1, 1, EPI_ALPHA},
    {"fkb_dgrad3x3", DGRAD, BF16, BF16, 3, 3, 1, 1, 1, EPI_ALPHA},
    {"fkb_wgrad3x3_sk4", WGRAD, BF16, BF16, 3, 3, 1, 1, 4, EPI_ALPHA},
};

static const char* kDtName[] = {"f16", "bf16", "f32"};
static const char* kOpName[] = {"conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad"};
static const char* kOperands[3][3] = {{"X", "W", "Y"}, {"Y", "W", "X"}, {"Y", "X", "W"}};

typedef struct {
  kdl_kernel_info info;
  const char* names[6];
  int32_t kinds[6];
  const char* dtypes[6];
  const char* broadcasts[6];
  double defaults[6];
} FakeInfo;
static FakeInfo g_info[sizeof(kFakes) / sizeof(kFakes[0])];

static int nargs_of(const Fake* f) { return f->epi == EPI_ALPHA_BIAS_AMAX ? 6 : 4; }

static const kdl_kernel_info* info_of(int i) {
  const Fake* f = &kFakes[i];
  FakeInfo* fi = &g_info[i];
  int n = 0;
  for (int j = 0; j < 3; ++j) {
    fi->names[n] = kOperands[f->op][j];
    fi->kinds[n] = KDL_ARG_TENSOR;
    fi->dtypes[n] = kDtName[j == 2 ? f->out_dt : f->in_dt];
    fi->broadcasts[n] = "";
    fi->defaults[n++] = 0;
  }
  if (f->epi != EPI_BIAS_RELU) {
    fi->names[n] = "alpha", fi->kinds[n] = KDL_ARG_PARAM, fi->dtypes[n] = "f32", fi->broadcasts[n] = "";
    fi->defaults[n++] = 1.0;
  }
  if (f->epi != EPI_ALPHA) {
    fi->names[n] = "bias", fi->kinds[n] = KDL_ARG_VECTOR, fi->dtypes[n] = "f32", fi->broadcasts[n] = "channel";
    fi->defaults[n++] = 0;
  }
  if (f->epi == EPI_ALPHA_BIAS_AMAX) {
    fi->names[n] = "amax", fi->kinds[n] = KDL_ARG_DEVICE_SCALAR, fi->dtypes[n] = "f32", fi->broadcasts[n] = "";
    fi->defaults[n++] = 0;
  }
  kdl_kernel_info* k = &fi->info;
  k->abi_version = KDL_ABI_VERSION;
  k->name = f->name;
  k->op = kOpName[f->op];
  k->arch = "sm80";
  k->nargs = n;
  k->arg_names = fi->names;
  k->arg_kinds = fi->kinds;
  k->arg_dtypes = fi->dtypes;
  k->arg_broadcasts = fi->broadcasts;
  k->param_defaults = fi->defaults;
  return k;
}

static double load(int dt, const void* base, int64_t i) {
  if (dt == F32) return ((const float*)base)[i];
  if (dt == F16) return (double)((const _Float16*)base)[i];
  uint32_t bits = (uint32_t)((const uint16_t*)base)[i] << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static void store(int dt, void* base, int64_t i, double v) {
  if (dt == F32) {
    ((float*)base)[i] = (float)v;
  } else if (dt == F16) {
    ((_Float16*)base)[i] = (_Float16)(float)v;
  } else {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    b += 0x7fff + ((b >> 16) & 1); /* round to nearest even (no NaN inputs here) */
    ((uint16_t*)base)[i] = (uint16_t)(b >> 16);
  }
}

typedef struct {
  int64_t n, h, w, c, k, r, s, p, q;
  int ph, pw, sh, sw, dh, dw, split;
} Dims;

static int64_t out_size(int64_t in, int pad, int dil, int64_t f, int stride) {
  int64_t span = (int64_t)dil * (f - 1) + 1;
  return in + 2 * pad < span ? 0 : (in + 2 * pad - span) / stride + 1;
}

static char g_msg[300];

static const char* check(const Fake* f, const kdl_conv2d_shape* sh, const kdl_arg* args, int32_t nargs, Dims* d) {
  if (nargs != nargs_of(f)) return "fake: wrong nargs";
  d->n = sh->n, d->h = sh->h, d->w = sh->w, d->c = sh->c, d->k = sh->k, d->r = sh->r, d->s = sh->s;
  d->ph = sh->pad_h, d->pw = sh->pad_w, d->sh = sh->stride_h ? sh->stride_h : 1, d->sw = sh->stride_w ? sh->stride_w : 1;
  d->dh = sh->dilation_h ? sh->dilation_h : 1, d->dw = sh->dilation_w ? sh->dilation_w : 1, d->split = sh->split_k;
  if (d->n < 1 || d->h < 1 || d->w < 1 || d->c < 1 || d->k < 1 || d->r < 1 || d->s < 1) return "fake: sizes must be positive";
  if ((f->fr && d->r != f->fr) || (f->fs && d->s != f->fs)) return "fake: the filter is fixed by the spec";
  if ((f->fsh && d->sh != f->fsh) || (f->fsw && d->sw != f->fsw)) return "fake: the stride is fixed by the spec";
  if (d->ph < 0 || d->pw < 0 || d->ph > d->dh * (d->r - 1) || d->pw > d->dw * (d->s - 1)) return "fake: padding out of range";
  d->p = out_size(d->h, d->ph, d->dh, d->r, d->sh), d->q = out_size(d->w, d->pw, d->dw, d->s, d->sw);
  if (d->p < 1 || d->q < 1) return "fake: the filter does not fit";
  if ((sh->p && sh->p != d->p) || (sh->q && sh->q != d->q)) return "fake: p / q given and wrong";
  if (d->split < 0 || d->split > f->slices) return "fake: split_k out of range";
  if (d->split == 0) d->split = f->slices;  /* 0: the kernel chooses (a real one by the wave count) */
  if (d->c % 8 || d->k % 8) return "fake: channels must be multiples of 8";
  for (int i = 0; i < 3; ++i)
    if (!args[i].data) return "fake: a tensor is null";
  for (int i = 0; i < 3; ++i) {
    const char* nm = kOperands[f->op][i];
    int64_t ch = nm[0] == 'Y' ? d->k : d->c;
    if (args[i].ld && args[i].ld < ch) {
      snprintf(g_msg, sizeof g_msg, "fake: %s's ld %lld < its channels %lld", nm, (long long)args[i].ld, (long long)ch);
      return g_msg;
    }
  }
  for (int i = 0; i < 3; ++i) { /* 16-byte pieces: pointers, strides and channels in whole pieces */
    const int align = (i == 2 ? f->out_dt : f->in_dt) == F32 ? 4 : 8;
    if ((uintptr_t)args[i].data % 16 || args[i].ld % align || args[i].batch_stride % align) {
      snprintf(g_msg, sizeof g_msg, "fake: %s is not 16-byte aligned (pointer, ld or batch stride)", kOperands[f->op][i]);
      return g_msg;
    }
  }
  if (f->op == WGRAD && args[2].ld && args[2].ld != d->c) return "fake: dW's taps must be packed";
  if (f->epi == EPI_ALPHA_BIAS_AMAX && !args[5].data) return "fake: amax is null";
  return NULL;
}

/* Element offsets: activations (image, row, col, channel), filters (k, r, s, channel). */
typedef struct {
  void* p;
  int dt;
  int64_t ld, bs, cols;
} T;
static T tensor(const kdl_arg* a, int dt, int64_t rows, int64_t cols, int64_t ch) {
  T t = {a->data, dt, a->ld ? a->ld : ch, 0, cols};
  t.bs = a->batch_stride ? a->batch_stride : rows * cols * t.ld;
  return t;
}
static int64_t at(const T* t, int64_t b, int64_t y, int64_t x, int64_t ch) { return b * t->bs + (y * t->cols + x) * t->ld + ch; }

/* A tensor's (outer, row, col, channel) elements as packed doubles; NULL when out of memory. */
static double* dense(const T* t, const int64_t dims[4]) {
  double* a = malloc((size_t)(dims[0] * dims[1] * dims[2] * dims[3]) * sizeof(double) + 1);
  if (!a) return NULL;
  double* o = a;
  for (int64_t b = 0; b < dims[0]; ++b)
    for (int64_t y = 0; y < dims[1]; ++y)
      for (int64_t x = 0; x < dims[2]; ++x)
        for (int64_t ch = 0; ch < dims[3]; ++ch) *o++ = load(t->dt, t->p, at(t, b, y, x, ch));
  return a;
}

static int run_impl(const Fake* f, const kdl_conv2d_shape* sh, const kdl_arg* args, int32_t nargs) {
  Dims d;
  if (check(f, sh, args, nargs, &d)) return KDL_ERR_INVALID;
  const int bug = getenv("FAKE_CONV_BUG") ? atoi(getenv("FAKE_CONV_BUG")) : 0;
  T X, W, Y;
  const int xi = f->op == FPROP ? 0 : f->op == DGRAD ? 2 : 1, wi = f->op == WGRAD ? 2 : 1, yi = f->op == FPROP ? 2 : 0;
  X = tensor(&args[xi], xi == 2 ? f->out_dt : f->in_dt, d.h, d.w, d.c);
  W = tensor(&args[wi], wi == 2 ? f->out_dt : f->in_dt, d.r, d.s, d.c);
  Y = tensor(&args[yi], yi == 2 ? f->out_dt : f->in_dt, d.p, d.q, d.k);
  const double alpha = f->epi == EPI_BIAS_RELU ? 1.0 : args[3].value;
  const kdl_arg* bias_arg = f->epi == EPI_BIAS_RELU ? &args[3] : f->epi == EPI_ALPHA_BIAS_AMAX ? &args[4] : NULL;
  const float* bias = bias_arg ? bias_arg->data : NULL;
  const int64_t bias_bs = bias_arg ? bias_arg->batch_stride : 0; /* one vector per image, or 0: shared */
  double amax = 0;
  /* out[o] over the output's elements: (outer, row, col, channel) of the op's output tensor. */
  const int64_t outer = f->op == WGRAD ? d.k : d.n, rows = f->op == FPROP ? d.p : f->op == DGRAD ? d.h : d.r,
                cols = f->op == FPROP ? d.q : f->op == DGRAD ? d.w : d.s, chans = f->op == FPROP ? d.k : d.c;
  const int toff = bug == 2 ? 1 : 0;
  /* The two inputs copied once into dense doubles (the loops below ran a dtype switch per product: the CPU
   * smoke test's time), indexed (outer, row, col, channel) like at() on a packed tensor. */
  const T* in0 = f->op == FPROP ? &X : &Y;
  const T* in1 = f->op == WGRAD ? &X : &W;
  const int64_t d0[4] = {d.n, f->op == FPROP ? d.h : d.p, f->op == FPROP ? d.w : d.q, f->op == FPROP ? d.c : d.k};
  const int64_t d1[4] = {f->op == WGRAD ? d.n : d.k, f->op == WGRAD ? d.h : d.r, f->op == WGRAD ? d.w : d.s, d.c};
  double* a0 = dense(in0, d0);
  double* a1 = dense(in1, d1);
  if (!a0 || !a1) {
    free(a0), free(a1);
    return KDL_ERR_INVALID;
  }
#define A0(b, y, x, ch) a0[(((b) * d0[1] + (y)) * d0[2] + (x)) * d0[3] + (ch)]
#define A1(b, y, x, ch) a1[(((b) * d1[1] + (y)) * d1[2] + (x)) * d1[3] + (ch)]
  double* wacc = calloc((size_t)chans + 1, sizeof(double)); /* wgrad: a whole (k, r, s) row of channels at once */
  if (!wacc) {
    free(a0), free(a1);
    return KDL_ERR_INVALID;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < rows; ++y)
      for (int64_t x = 0; x < cols; ++x) {
        if (f->op == WGRAD) { /* o = k, (y, x) = (r, s): every channel c in the innermost loop (contiguous) */
          memset(wacc, 0, (size_t)chans * sizeof(double));
          for (int64_t n = 0; n < d.n; ++n)
            for (int64_t p = 0; p < d.p; ++p)
              for (int64_t q = 0; q < d.q; ++q) {
                int64_t hy = p * d.sh - d.ph + ((y + toff) % d.r) * d.dh, wx = q * d.sw - d.pw + x * d.dw;
                if (hy < 0 || hy >= d.h || wx < 0 || wx >= d.w) continue;
                const double g = A0(n, p, q, o);
                const double* xv = &A1(n, hy, wx, 0);
                for (int64_t c = 0; c < chans; ++c) wacc[c] += g * xv[c];
              }
        }
        for (int64_t ch = 0; ch < chans; ++ch) {
          double acc = 0;
          if (f->op == FPROP) { /* o = n, (y, x) = (p, q), ch = k */
            for (int64_t r = 0; r < d.r; ++r)
              for (int64_t s = 0; s < d.s; ++s) {
                int64_t hy = y * d.sh - d.ph + r * d.dh, wx = x * d.sw - d.pw + s * d.dw;
                if (hy < 0 || hy >= d.h || wx < 0 || wx >= d.w) continue;
                const double* xv = &A0(o, hy, wx, 0);
                const double* wv = &A1(ch, (r + toff) % d.r, s, 0);
                for (int64_t c = 0; c < d.c; ++c) acc += xv[c] * wv[c];
              }
          } else if (f->op == DGRAD) { /* o = n, (y, x) = (h, w), ch = c */
            for (int64_t r = 0; r < d.r; ++r)
              for (int64_t s = 0; s < d.s; ++s) {
                int64_t ny = y + d.ph - r * d.dh, nx = x + d.pw - s * d.dw;
                if (ny < 0 || nx < 0 || ny % d.sh || nx % d.sw || ny / d.sh >= d.p || nx / d.sw >= d.q) continue;
                const double* yv = &A0(o, ny / d.sh, nx / d.sw, 0);
                for (int64_t k = 0; k < d.k; ++k) acc += yv[k] * A1(k, (r + toff) % d.r, s, ch);
              }
          } else { /* wgrad: summed above */
            acc = wacc[ch];
          }
          const int64_t bi = f->op == WGRAD ? o : o * bias_bs + ch;
          double v = f->epi == EPI_BIAS_RELU ? acc + bias[bi] : alpha * acc + (bias ? bias[bi] : 0.0);
          if (f->epi == EPI_BIAS_RELU && v < 0) v = 0;
          if (bug == 1 && ch == chans - 1) continue;
          T* out = f->op == FPROP ? &Y : f->op == DGRAD ? &X : &W;
          store(out->dt, out->p, at(out, o, y, x, ch), v);
          if (fabs(v) > amax) amax = fabs(v);
        }
      }
#undef A0
#undef A1
  free(a0), free(a1), free(wacc);
  if (f->epi == EPI_ALPHA_BIAS_AMAX) *(float*)args[5].data = (float)amax;
  return KDL_OK;
}

#define FAKE(I, NAME)                                                                                            \
  const kdl_kernel_info* kdl_##NAME##_info(void) { return info_of(I); }                                          \
  const char* kdl_##NAME##_can_implement(const kdl_conv2d_shape* s, const kdl_arg* a, int32_t n) {             \
    Dims d;                                                                                                      \
    return check(&kFakes[I], s, a, n, &d);                                                                       \
  }                                                                                                              \
  size_t kdl_##NAME##_workspace_size(const kdl_conv2d_shape* s) { return s->split_k > 1 ? 256 : 0; }            \
  int kdl_##NAME##_run(const kdl_conv2d_shape* s, const kdl_arg* a, int32_t n, void* ws, size_t wsb, void* st) { \
    (void)ws, (void)wsb, (void)st;                                                                               \
    return run_impl(&kFakes[I], s, a, n);                                                                        \
  }

FAKE(0, fk_fprop_bias_relu)
FAKE(1, fk_fprop_3x3_s2)
FAKE(2, fk_dgrad)
FAKE(3, fk_wgrad_splitk)
FAKE(4, fkb_fprop3x3)
FAKE(5, fkb_fprop1x1)
FAKE(6, fkb_dgrad3x3)
FAKE(7, fkb_wgrad3x3_sk4)
