// One-configuration driver for Nsight Compute on the sm90a conv fprop (kdl/conv_sm90.cuh), bf16 NHWC, the first
// shape of the conv benchmark (N32 C256 56x56 K256, 3x3, pad 1) or the third (N32 C512 28x28 K512): bench()'s 3
// warm-up launches and 70 timed ones of one configuration per process (ncu_sm90.sh profiles the fourth launch).
// cuDNN's kernel of the same problem: cudnn_fprop.py. The configurations of docs/perf-notes.md v22:
//   c  cooperative 128x256 s4             p  pingpong 128x128 s6
//   n  pingpong 128x128 s6, cluster (1, 2) (cuDNN's tile, schedule and cluster: X shared by two filter tiles)
//   m  cooperative 256x128 s4, cluster (1, 2)
// and for the 1x1 (shape 3, N64 C128 112x112 K128; v23):
//   w  cooperative 256x128 s4             x  cooperative 256x128 s3, cluster (1, 2) (the second CTA past k)
// Usage: prof_conv_sm90 MODE [shape 0 | 2 | 3]
#define main kdl_bench_conv_main_unused
#include "bench_conv_sm80.cu"
#undef main

int main(int argc, char** argv) {
  if (argc < 2 || strlen(argv[1]) != 1 || !strchr("cpnmwx", argv[1][0])) {
    fprintf(stderr, "usage: prof_conv_sm90 c|p|n|m|w|x [0|2|3]  (the configurations are listed in the source)\n");
    return 2;
  }
  const Shape shapes[] = {{"N32 C256 56x56 K256 3x3", 32, 256, 56, 56, 256, 3, 3, 1},
                          {"N32 C512 28x28 K512 3x3", 32, 512, 28, 28, 512, 3, 3, 1},
                          {"N64 C128 112x112 K128 1x1", 64, 128, 112, 112, 128, 1, 1, 0}};
  const int shape = argc > 2 ? atoi(argv[2]) : 0;
  const Shape& s = shapes[shape == 2 ? 1 : shape == 3 ? 2 : 0];
  if ((strchr("wx", argv[1][0]) != nullptr) != (shape == 3)) {
    fprintf(stderr, "prof_conv_sm90: modes w and x are the 1x1's (shape 3), the others the 3x3 shapes'\n");
    return 2;
  }
  constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
  using E = StoreEpilogue<__nv_bfloat16>;
  switch (argv[1][0]) {
    case 'c': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("coop 128x256 s4", ConvKind::Fprop, s); break;
    case 'p': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E>>("ping 128x128 s6", ConvKind::Fprop, s); break;
    case 'n': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 1, 2>>("ping 128x128 s6 c1x2", ConvKind::Fprop, s); break;
    case 'm': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 3, 3, 1, 1, E, true, 1, 2>>("coop 256x128 s4 c1x2", ConvKind::Fprop, s); break;
    case 'w': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 1, 1, E>>("coop 256x128 s4", ConvKind::Fprop, s); break;
    case 'x': bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Co, 1, 1, 1, 1, E, true, 1, 2>>("coop 256x128 s3 c1x2", ConvKind::Fprop, s); break;
  }
  return 0;
}
