// Depthwise 2-D convolution (one filter per channel, NCHW, float32, CPU) as a paddle custom op with its gradient.
// Same math as paddle's depthwise_conv2d (zero padding, dilation 1); only the float32 summation order differs.
// Each output row is a sum of kernel-tap row slices (axpy over contiguous memory for stride 1), so the inner loops
// vectorize; the gradient walks the same rows once for both dX (scatter axpy) and dW (dot products).
// Built at run time by paddle_recipes/depthwise_kernel.py (paddle.utils.cpp_extension.load).
#include "paddle/extension.h"

#include <cstring>
#include <vector>

namespace {

int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; }

// Outputs ow whose input column ow*s - p + j lies inside [0, W): the half-open range [*lo, *hi).
void ValidCols(int64_t W, int64_t Wo, int64_t s, int64_t p, int64_t j, int64_t* lo, int64_t* hi) {
  const int64_t first = p - j;  // smallest ow*s
  *lo = first <= 0 ? 0 : (first + s - 1) / s;
  const int64_t last = W - 1 + p - j;  // largest ow*s
  *hi = last < 0 ? 0 : last / s + 1;
  if (*hi > Wo) *hi = Wo;
  if (*lo > *hi) *lo = *hi;
}

struct Geometry {
  int64_t N, C, H, W, KH, KW, SH, SW, PH, PW, Ho, Wo;
};

Geometry Shape(const paddle::Tensor& x, const paddle::Tensor& w, const std::vector<int>& stride,
               const std::vector<int>& padding) {
  PD_CHECK(x.shape().size() == 4 && w.shape().size() == 4, "depthwise_conv2d: x and weight must be 4-D");
  PD_CHECK(x.dtype() == paddle::DataType::FLOAT32 && w.dtype() == paddle::DataType::FLOAT32,
           "depthwise_conv2d: float32 only");
  PD_CHECK(x.is_cpu() && w.is_cpu(), "depthwise_conv2d: CPU tensors only");
  PD_CHECK(stride.size() == 2 && padding.size() == 2, "depthwise_conv2d: stride and padding are [h, w]");
  Geometry g{};
  g.N = x.shape()[0]; g.C = x.shape()[1]; g.H = x.shape()[2]; g.W = x.shape()[3];
  g.KH = w.shape()[2]; g.KW = w.shape()[3];
  PD_CHECK(w.shape()[0] == g.C && w.shape()[1] == 1, "depthwise_conv2d: weight must be [C, 1, kh, kw]");
  g.SH = stride[0]; g.SW = stride[1]; g.PH = padding[0]; g.PW = padding[1];
  PD_CHECK(g.SH > 0 && g.SW > 0 && g.PH >= 0 && g.PW >= 0, "depthwise_conv2d: bad stride or padding");
  g.Ho = OutSize(g.H, g.KH, g.SH, g.PH); g.Wo = OutSize(g.W, g.KW, g.SW, g.PW);
  PD_CHECK(g.Ho > 0 && g.Wo > 0, "depthwise_conv2d: the output would be empty");
  return g;
}

}  // namespace

std::vector<paddle::Tensor> DepthwiseForward(const paddle::Tensor& x, const paddle::Tensor& w,
                                             const std::vector<int>& stride, const std::vector<int>& padding) {
  const Geometry g = Shape(x, w, stride, padding);
  auto out = paddle::empty({g.N, g.C, g.Ho, g.Wo}, x.dtype(), x.place());
  const float* X = x.data<float>();
  const float* Wt = w.data<float>();
  float* O = out.data<float>();
  for (int64_t plane = 0; plane < g.N * g.C; ++plane) {
    const int64_t c = plane % g.C;
    const float* xp = X + plane * g.H * g.W;
    const float* wp = Wt + c * g.KH * g.KW;
    float* op = O + plane * g.Ho * g.Wo;
    std::memset(op, 0, sizeof(float) * g.Ho * g.Wo);
    for (int64_t i = 0; i < g.KH; ++i) {
      for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const int64_t ih = oh * g.SH - g.PH + i;
        if (ih < 0 || ih >= g.H) continue;
        const float* xrow = xp + ih * g.W;
        float* __restrict orow = op + oh * g.Wo;
        for (int64_t j = 0; j < g.KW; ++j) {
          int64_t lo, hi;
          ValidCols(g.W, g.Wo, g.SW, g.PW, j, &lo, &hi);
          const float wv = wp[i * g.KW + j];
          const float* __restrict xs = xrow - g.PW + j;
          if (g.SW == 1) {
#pragma omp simd
            for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * xs[ow];
          } else {
            const int64_t s = g.SW;
            for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * xs[ow * s];
          }
        }
      }
    }
  }
  return {out};
}

std::vector<paddle::Tensor> DepthwiseBackward(const paddle::Tensor& x, const paddle::Tensor& w,
                                              const paddle::Tensor& dout, const std::vector<int>& stride,
                                              const std::vector<int>& padding) {
  const Geometry g = Shape(x, w, stride, padding);
  auto dx = paddle::empty(x.shape(), x.dtype(), x.place());
  auto dw = paddle::empty(w.shape(), w.dtype(), w.place());
  const float* X = x.data<float>();
  const float* Wt = w.data<float>();
  const float* D = dout.data<float>();
  float* DX = dx.data<float>();
  float* DW = dw.data<float>();
  std::memset(DX, 0, sizeof(float) * g.N * g.C * g.H * g.W);
  for (int64_t c = 0; c < g.C; ++c) {
    const float* wp = Wt + c * g.KH * g.KW;
    std::vector<double> dwacc(g.KH * g.KW, 0.0);  // per-tap sums over the batch: double, as the batch grows
    for (int64_t n = 0; n < g.N; ++n) {
      const int64_t plane = n * g.C + c;
      const float* xp = X + plane * g.H * g.W;
      float* dxp = DX + plane * g.H * g.W;
      const float* dp = D + plane * g.Ho * g.Wo;
      for (int64_t i = 0; i < g.KH; ++i) {
        for (int64_t oh = 0; oh < g.Ho; ++oh) {
          const int64_t ih = oh * g.SH - g.PH + i;
          if (ih < 0 || ih >= g.H) continue;
          const float* __restrict drow = dp + oh * g.Wo;
          for (int64_t j = 0; j < g.KW; ++j) {
            int64_t lo, hi;
            ValidCols(g.W, g.Wo, g.SW, g.PW, j, &lo, &hi);
            const float wv = wp[i * g.KW + j];
            const float* __restrict xs = xp + ih * g.W - g.PW + j;
            float* __restrict dxs = dxp + ih * g.W - g.PW + j;
            float acc = 0.f;
            if (g.SW == 1) {
#pragma omp simd reduction(+ : acc)
              for (int64_t ow = lo; ow < hi; ++ow) {
                dxs[ow] += wv * drow[ow];
                acc += drow[ow] * xs[ow];
              }
            } else {
              const int64_t s = g.SW;
              for (int64_t ow = lo; ow < hi; ++ow) {
                dxs[ow * s] += wv * drow[ow];
                acc += drow[ow] * xs[ow * s];
              }
            }
            dwacc[i * g.KW + j] += acc;
          }
        }
      }
    }
    for (int64_t t = 0; t < g.KH * g.KW; ++t) DW[c * g.KH * g.KW + t] = static_cast<float>(dwacc[t]);
  }
  return {dx, dw};
}

std::vector<std::vector<int64_t>> DepthwiseInferShape(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                      const std::vector<int>& stride,
                                                      const std::vector<int>& padding) {
  const int64_t ho = x[2] < 0 ? -1 : OutSize(x[2], w[2], stride[0], padding[0]);
  const int64_t wo = x[3] < 0 ? -1 : OutSize(x[3], w[3], stride[1], padding[1]);
  return {{x[0], x[1], ho, wo}};
}

std::vector<paddle::DataType> DepthwiseInferDtype(const paddle::DataType& x, const paddle::DataType& w) {
  return {x};
}

PD_BUILD_OP(pr_depthwise_conv2d)
    .Inputs({"X", "W"})
    .Outputs({"Out"})
    .Attrs({"stride: std::vector<int>", "padding: std::vector<int>"})
    .SetKernelFn(PD_KERNEL(DepthwiseForward))
    .SetInferShapeFn(PD_INFER_SHAPE(DepthwiseInferShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(DepthwiseInferDtype));

PD_BUILD_GRAD_OP(pr_depthwise_conv2d)
    .Inputs({"X", "W", paddle::Grad("Out")})
    .Outputs({paddle::Grad("X"), paddle::Grad("W")})
    .Attrs({"stride: std::vector<int>", "padding: std::vector<int>"})
    .SetKernelFn(PD_KERNEL(DepthwiseBackward));
