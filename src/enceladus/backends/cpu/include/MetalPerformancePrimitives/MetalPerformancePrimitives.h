// Enceladus Metal compatibility headers for the cpu backend (not Apple's): the MetalPerformancePrimitives
// subset a GEMM needs (mpp::tensor_ops::matmul2d). See docs/cpu_backend.md.
#include <metal_tensor>
#include "../enceladus/matmul2d.h"
