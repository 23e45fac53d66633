// add_cuda: out = a + b on the device (F32), the CUDA twin of add_ref.
#pragma once

#include "backend/cpu/add/add.h"

namespace forge::cuda {

// Pointers in AddParams are device pointers. Runs on the default stream.
Status add_cuda(const AddParams& p);

}  // namespace forge::cuda
