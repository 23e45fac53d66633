// Dispatch of QuantizeRow over the type table; the block kernels are in legacy_formats.cc and
// k_quantize.cc.
#include "quant/quantize.h"

#include <cstring>
#include <string>

#include "base/half.h"
#include "quant/formats.h"

namespace forge {

Status QuantizeRow(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
  const TypeTraits& traits = GetTypeTraits(type);
  if (n < 0 || n % traits.block_elems != 0) {
    return InvalidArgumentError("quantize " + std::string(traits.name) + ": " + std::to_string(n) +
                                " elements is not a multiple of the block of " +
                                std::to_string(traits.block_elems));
  }
  const int64_t nb = n / traits.block_elems;
  namespace qi = quant_internal;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return Status::Ok();
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = F32ToF16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return Status::Ok();
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = F32ToBF16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return Status::Ok();
    case GgmlType::kQ4_0:
      qi::QuantizeQ4_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ4_1:
      qi::QuantizeQ4_1(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_0:
      qi::QuantizeQ5_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_1:
      qi::QuantizeQ5_1(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ8_0:
      qi::QuantizeQ8_0(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ2_K:
      qi::QuantizeQ2_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ3_K:
      qi::QuantizeQ3_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ4_K:
      qi::QuantizeQ4_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ5_K:
      qi::QuantizeQ5_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ6_K:
      qi::QuantizeQ6_K(src, dst, nb);
      return Status::Ok();
    case GgmlType::kQ8_K:
      qi::QuantizeQ8_K(src, dst, nb);
      return Status::Ok();
    default:
      return UnimplementedError("quantization to " + std::string(traits.name) +
                                " is not supported");
  }
}

}  // namespace forge
