// QuantizeRow: the row checked against its type, then the type's block kernel (KernelsOf).
#include "quant/quantize.h"

#include <string>

#include "quant/formats.h"

namespace forge {

Status QuantizeRow(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
  const TypeTraits& traits = GetTypeTraits(type);
  if (n < 0 || n % traits.block_elems != 0) {
    return InvalidArgumentError("quantize " + std::string(traits.name) + ": " + std::to_string(n) +
                                " elements is not a multiple of the block of " +
                                std::to_string(traits.block_elems));
  }
  const auto quantize = quant_internal::KernelsOf(type).quantize;
  if (quantize == nullptr) {
    return UnimplementedError("quantization to " + std::string(traits.name) + " is not supported");
  }
  quantize(src, dst, n / traits.block_elems);
  return Status::Ok();
}

}  // namespace forge
