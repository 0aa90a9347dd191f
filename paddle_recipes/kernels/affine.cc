// Two elementwise affine maps of a training step as paddle custom ops with their gradients (float32, CPU):
//   pr_scalar_affine(x, scale[1], bias[1]) = scale * x + bias   (PP-LCNet's LearnableAffineBlock)
//   pr_channel_bias(x [N, C, ...], bias[C]) = x + bias[c]       (a conv's bias)
// The forward is paddle's multiply-then-add bit for bit (built with -ffp-contract=off: no fused multiply-add),
// and so is the input gradient; the parameter gradients (sums over the tensor) are accumulated in double, one
// pass over contiguous memory, where paddle's broadcast reductions are several passes.
// Built at run time by paddle_recipes/affine_kernel.py (kernel_build.load_ops).
#include "paddle/extension.h"

#include <cstring>
#include <vector>

namespace {

void CheckFloatCpu(const paddle::Tensor& t, const char* what) {
  PD_CHECK(t.dtype() == paddle::DataType::FLOAT32, what, ": float32 only");
  PD_CHECK(t.is_cpu(), what, ": CPU tensors only");
}

// Product of the dims after the channel dim (1 for a 2-D tensor).
int64_t Inner(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 2; i < shape.size(); ++i) n *= shape[i];
  return n;
}

}  // namespace

std::vector<paddle::Tensor> ScalarAffineForward(const paddle::Tensor& x, const paddle::Tensor& scale,
                                                const paddle::Tensor& bias) {
  CheckFloatCpu(x, "scalar_affine x");
  CheckFloatCpu(scale, "scalar_affine scale");
  CheckFloatCpu(bias, "scalar_affine bias");
  PD_CHECK(scale.numel() == 1 && bias.numel() == 1, "scalar_affine: scale and bias must hold one value each");
  auto out = paddle::empty(x.shape(), x.dtype(), x.place());
  const float s = scale.data<float>()[0], b = bias.data<float>()[0];
  const float* __restrict X = x.data<float>();
  float* __restrict O = out.data<float>();
  const int64_t n = x.numel();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) O[i] = s * X[i] + b;
  return {out};
}

std::vector<paddle::Tensor> ScalarAffineBackward(const paddle::Tensor& x, const paddle::Tensor& scale,
                                                 const paddle::Tensor& dout) {
  auto dx = paddle::empty(x.shape(), x.dtype(), x.place());
  auto ds = paddle::empty(scale.shape(), scale.dtype(), scale.place());
  auto db = paddle::empty(scale.shape(), scale.dtype(), scale.place());
  const float s = scale.data<float>()[0];
  const float* __restrict X = x.data<float>();
  const float* __restrict D = dout.data<float>();
  float* __restrict DX = dx.data<float>();
  const int64_t n = x.numel();
  double acc_s = 0.0, acc_b = 0.0;
#pragma omp simd reduction(+ : acc_s, acc_b)
  for (int64_t i = 0; i < n; ++i) {
    DX[i] = D[i] * s;
    acc_s += static_cast<double>(X[i]) * static_cast<double>(D[i]);  // a float x float product is exact in double
    acc_b += static_cast<double>(D[i]);
  }
  ds.data<float>()[0] = static_cast<float>(acc_s);
  db.data<float>()[0] = static_cast<float>(acc_b);
  return {dx, ds, db};
}

std::vector<paddle::Tensor> ChannelBiasForward(const paddle::Tensor& x, const paddle::Tensor& bias) {
  CheckFloatCpu(x, "channel_bias x");
  CheckFloatCpu(bias, "channel_bias bias");
  const auto shape = x.shape();
  PD_CHECK(shape.size() >= 2, "channel_bias: x must be [N, C, ...]");
  PD_CHECK(bias.numel() == shape[1], "channel_bias: bias must hold one value per channel (dim 1 of x)");
  auto out = paddle::empty(shape, x.dtype(), x.place());
  const int64_t C = shape[1], inner = Inner(shape), planes = x.numel() / (inner ? inner : 1);
  const float* __restrict B = bias.data<float>();
  const float* __restrict X = x.data<float>();
  float* __restrict O = out.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float b = B[p % C];
    const float* __restrict xp = X + p * inner;
    float* __restrict op = O + p * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) op[i] = xp[i] + b;
  }
  return {out};
}

std::vector<paddle::Tensor> ChannelBiasBackward(const paddle::Tensor& bias, const paddle::Tensor& dout) {
  auto dx = paddle::empty(dout.shape(), dout.dtype(), dout.place());
  auto db = paddle::empty(bias.shape(), bias.dtype(), bias.place());
  const auto shape = dout.shape();
  const int64_t C = shape[1], inner = Inner(shape), planes = dout.numel() / (inner ? inner : 1);
  const float* __restrict D = dout.data<float>();
  std::memcpy(dx.data<float>(), D, sizeof(float) * dout.numel());
  std::vector<double> acc(C, 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    const float* __restrict dp = D + p * inner;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(dp[i]);
    acc[p % C] += sum;
  }
  float* DB = db.data<float>();
  for (int64_t c = 0; c < C; ++c) DB[c] = static_cast<float>(acc[c]);
  return {dx, db};
}

std::vector<std::vector<int64_t>> SameShape(const std::vector<int64_t>& x, const std::vector<int64_t>& a) {
  return {x};
}

std::vector<std::vector<int64_t>> SameShape3(const std::vector<int64_t>& x, const std::vector<int64_t>& a,
                                             const std::vector<int64_t>& b) {
  return {x};
}

std::vector<paddle::DataType> SameDtype(const paddle::DataType& x, const paddle::DataType& a) { return {x}; }

// Gradient shapes (a static program, e.g. to_static, needs them before running): dX like X, dScale and dBias
// like Scale ([1]); for the channel bias dX like dOut and dBias like Bias.
std::vector<std::vector<int64_t>> ScalarAffineGradShape(const std::vector<int64_t>& x,
                                                        const std::vector<int64_t>& scale,
                                                        const std::vector<int64_t>& dout) {
  return {x, scale, scale};
}

std::vector<std::vector<int64_t>> ChannelBiasGradShape(const std::vector<int64_t>& bias,
                                                       const std::vector<int64_t>& dout) {
  return {dout, bias};
}

std::vector<paddle::DataType> ScalarAffineGradDtype(const paddle::DataType& x, const paddle::DataType& scale,
                                                    const paddle::DataType& dout) {
  return {x, scale, scale};
}

std::vector<paddle::DataType> ChannelBiasGradDtype(const paddle::DataType& bias, const paddle::DataType& dout) {
  return {dout, bias};
}

std::vector<paddle::DataType> SameDtype3(const paddle::DataType& x, const paddle::DataType& a,
                                         const paddle::DataType& b) {
  return {x};
}

PD_BUILD_OP(pr_scalar_affine)
    .Inputs({"X", "Scale", "Bias"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(ScalarAffineForward))
    .SetInferShapeFn(PD_INFER_SHAPE(SameShape3))
    .SetInferDtypeFn(PD_INFER_DTYPE(SameDtype3));

PD_BUILD_GRAD_OP(pr_scalar_affine)
    .Inputs({"X", "Scale", paddle::Grad("Out")})
    .Outputs({paddle::Grad("X"), paddle::Grad("Scale"), paddle::Grad("Bias")})
    .SetKernelFn(PD_KERNEL(ScalarAffineBackward))
    .SetInferShapeFn(PD_INFER_SHAPE(ScalarAffineGradShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(ScalarAffineGradDtype));

PD_BUILD_OP(pr_channel_bias)
    .Inputs({"X", "Bias"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(ChannelBiasForward))
    .SetInferShapeFn(PD_INFER_SHAPE(SameShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(SameDtype));

PD_BUILD_GRAD_OP(pr_channel_bias)
    .Inputs({"Bias", paddle::Grad("Out")})
    .Outputs({paddle::Grad("X"), paddle::Grad("Bias")})
    .SetKernelFn(PD_KERNEL(ChannelBiasBackward))
    .SetInferShapeFn(PD_INFER_SHAPE(ChannelBiasGradShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(ChannelBiasGradDtype));
