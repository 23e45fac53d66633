// How MakeNcclCollective (cuda_backend.h) finds the NCCL library, which it loads at run time
// (dlopen) so that builds and tests run where NCCL is not installed.
#pragma once

#include <string>
#include <vector>

namespace forge::cuda {

// The places tried, in order: $FORGE_NCCL_LIB alone when it is set (non-empty); else
// "libnccl.so.2" through the loader's search path, the CUDA toolkit's lib folders, then the
// nvidia-nccl-cu13 Python wheel's lib folder (site-packages and dist-packages of every python3*
// under /usr/local/lib, /usr/lib and ~/.local/lib; glob patterns, expanded when loading).
std::vector<std::string> NcclLibraryCandidates();

}  // namespace forge::cuda
