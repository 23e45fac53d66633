// The dense oracles' view of a GGUF's F32 tensors (support/dense_forward.h, dense_encoder.h): a
// tensor as a row-major matrix of doubles and its products with vectors.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace forge::testing {

// A [rows, cols] F32 tensor of the file as doubles (row-major: GGUF's dims reversed; a 3-D tensor
// [cols, rows, n] as n * rows rows).
struct DenseMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  bool empty() const { return v.empty(); }
  // Rows [first, first + n) times x (n < 0: to the last row).
  std::vector<double> MatVec(const std::vector<double>& x, int64_t first = 0,
                             int64_t n = -1) const {
    if (n < 0) n = rows - first;
    std::vector<double> y(n, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      const double* w = v.data() + (first + r) * cols;
      for (int64_t c = 0; c < cols; ++c) y[r] += w[c] * x[c];
    }
    return y;
  }
};

// Tensor `name` of f (F32); empty, and a test failure when required, when the file lacks it.
inline DenseMatrix DenseTensor(const GgufFile& f, const std::string& name, bool required = true) {
  const GgufTensorInfo* t = f.FindTensor(name);
  DenseMatrix m;
  if (t == nullptr) {
    EXPECT_FALSE(required) << name << " is missing";
    return m;
  }
  EXPECT_EQ(t->type, GgmlType::kF32) << name;
  m.cols = t->dims[0];
  m.rows = t->n_elements / m.cols;
  const float* p = reinterpret_cast<const float*>(t->data);
  m.v.assign(p, p + t->n_elements);
  return m;
}

}  // namespace forge::testing
