// The integer row dots of each instruction-set path (int_dot.h defines what they compute); null
// for a type a path has no kernel for. Internal to the CPU matmul.
#pragma once

#include "backend/cpu/matmul/int_dot.h"

namespace forge::int_dot {

IntRowDots ScalarRowDots(GgmlType t);  // int_dot_ref.cc
IntRowDots Avx2RowDots(GgmlType t);    // int_dot_avx2.cc
IntRowDots VnniRowDots(GgmlType t);    // int_dot_vnni.cc

}  // namespace forge::int_dot
