/* A [b, h, s, d] row-major view of a float buffer as the kernels' memref
 * descriptor: shared by the C programs that call --emit=obj/shared
 * kernels (use_kernels.c, overrun_kernel.c). */
#ifndef KERNEL_VIEWS_H
#define KERNEL_VIEWS_H

static attn_rt_memref_f32_4 view(float *p, int64_t b, int64_t h, int64_t s,
                                 int64_t d) {
  attn_rt_memref_f32_4 m = {p, p, 0, {b, h, s, d}, {h * s * d, s * d, d, 1}};
  return m;
}

#endif
