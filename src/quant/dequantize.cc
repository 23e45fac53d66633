// DequantizeRow: the row checked against its type, then the type's block kernel (KernelsOf).
#include "quant/dequantize.h"

#include <string>

#include "quant/formats.h"

namespace forge {

Status DequantizeRow(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  const TypeTraits& traits = GetTypeTraits(type);
  if (n < 0 || n % traits.block_elems != 0) {
    return InvalidArgumentError("dequantize " + std::string(traits.name) + ": " +
                                std::to_string(n) + " elements is not a multiple of the block of " +
                                std::to_string(traits.block_elems));
  }
  const auto dequantize = quant_internal::KernelsOf(type).dequantize;
  if (dequantize == nullptr) {
    return UnimplementedError("dequantization of " + std::string(traits.name) +
                              " is not supported");
  }
  dequantize(src, dst, n / traits.block_elems);
  return Status::Ok();
}

}  // namespace forge
