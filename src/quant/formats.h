// Per-format block kernels behind DequantizeRow and QuantizeRow (internal to src/quant). Each
// takes whole blocks: src/dst point at nblocks stored blocks (any alignment) and nblocks * the
// block's element count floats.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/type_table.h"

namespace forge::quant_internal {

// The block kernels of a type (F32, F16 and BF16 as blocks of one element), null where Forge has
// none: the dispatch DequantizeRow and QuantizeRow share (block_kernels.cc).
struct BlockKernels {
  void (*dequantize)(const uint8_t* src, float* dst, int64_t nblocks) = nullptr;
  void (*quantize)(const float* src, uint8_t* dst, int64_t nblocks) = nullptr;
};
BlockKernels KernelsOf(GgmlType type);

// Block i of a row of stored blocks (any alignment), read or written by value.
template <typename Block>
Block Load(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * sizeof(Block), sizeof(Block));
  return b;
}

template <typename Block>
void Store(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * sizeof(Block), &b, sizeof(Block));
}

// Legacy formats (blocks of 32): legacy_formats.cc. The quantizers are llama.cpp's deterministic
// round-to-nearest reference quantizers, so their bytes equal llama-quantize's.
void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t nblocks);
void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t nblocks);

// k-quants (super-blocks of 256): k_dequantize.cc, k_quantize.cc. The quantizers are plain
// round-to-nearest with min/max scales (not llama.cpp's search), so their bytes differ from it.
void DequantizeQ2_K(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ3_K(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ4_K(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ5_K(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ6_K(const uint8_t* src, float* dst, int64_t nblocks);
void DequantizeQ8_K(const uint8_t* src, float* dst, int64_t nblocks);
void QuantizeQ2_K(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ3_K(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ4_K(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ5_K(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ6_K(const float* src, uint8_t* dst, int64_t nblocks);
void QuantizeQ8_K(const float* src, uint8_t* dst, int64_t nblocks);

// ggml's nearest_int: round half to even (the default FP rounding mode), for |x| < 2^22.
int NearestInt(float x);

}  // namespace forge::quant_internal
