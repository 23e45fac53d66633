// Dispatch of DequantizeRow over the type table; the block kernels are in legacy_formats.cc and
// k_dequantize.cc.
#include "quant/dequantize.h"

#include <cstring>
#include <string>

#include "base/half.h"
#include "quant/formats.h"

namespace forge {

Status DequantizeRow(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  const TypeTraits& traits = GetTypeTraits(type);
  if (n < 0 || n % traits.block_elems != 0) {
    return InvalidArgumentError("dequantize " + std::string(traits.name) + ": " +
                                std::to_string(n) + " elements is not a multiple of the block of " +
                                std::to_string(traits.block_elems));
  }
  const int64_t nb = n / traits.block_elems;
  namespace qi = quant_internal;
  switch (type) {
    case GgmlType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * 4);
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
    case GgmlType::kQ4_0:
      qi::DequantizeQ4_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ4_1:
      qi::DequantizeQ4_1(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_0:
      qi::DequantizeQ5_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_1:
      qi::DequantizeQ5_1(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ8_0:
      qi::DequantizeQ8_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ2_K:
      qi::DequantizeQ2_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ3_K:
      qi::DequantizeQ3_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ4_K:
      qi::DequantizeQ4_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_K:
      qi::DequantizeQ5_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ6_K:
      qi::DequantizeQ6_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ8_K:
      qi::DequantizeQ8_K(src, dst, nb);
      return Status::Ok();
    default:
      return UnimplementedError("dequantization of " + std::string(traits.name) +
                                " is not supported");
  }
}

}  // namespace forge
