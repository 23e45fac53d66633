// Dispatch of DequantizeRow over the type table.
#include "quant/dequantize.h"

#include <cstring>
#include <string>

#include "base/half.h"

namespace forge {

Status DequantizeRow(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  const TypeTraits& traits = GetTypeTraits(type);
  if (n % traits.block_elems != 0) {
    return InvalidArgumentError("dequantize " + std::string(traits.name) + ": " +
                                std::to_string(n) + " elements is not a multiple of the block of " +
                                std::to_string(traits.block_elems));
  }
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return Status::Ok();
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = F16ToF32(h);
      }
      return Status::Ok();
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = BF16ToF32(h);
      }
      return Status::Ok();
    default:
      return UnimplementedError("dequantization of " + std::string(traits.name) +
                                " is not implemented yet");
  }
}

}  // namespace forge
