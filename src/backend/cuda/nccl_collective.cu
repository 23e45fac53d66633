// NcclCollective: one NCCL communicator per rank, made by ncclCommInitAll over the ranks'
// devices; each op is queued on the rank's backend stream (recordable in its CUDA graphs). NCCL
// is loaded with dlopen and its functions resolved with dlsym: nccl.h supplies only types and
// constants, so the module links no NCCL library.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <glob.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/nccl_collective.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
#else
// The stable NCCL 2 ABI of the few types used here, where the toolkit has no nccl.h.
extern "C" {
typedef struct ncclComm* ncclComm_t;
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
typedef enum { ncclChar = 0, ncclFloat = 7 } ncclDataType_t;
}
#endif

namespace forge {
namespace {

// The NCCL functions Forge calls, resolved from the loaded library.
struct NcclApi {
  std::string path;  // the candidate that loaded
  int version = 0;   // ncclGetVersion's code
  ncclResult_t (*GetVersion)(int*) = nullptr;
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;  // optional (NCCL >= 2.13)
};

// "2.28.9" from a version code (NCCL_VERSION's two encodings).
std::string VersionString(int code) {
  const bool old = code < 10000;
  const int major = old ? code / 1000 : code / 10000;
  const int minor = old ? code % 1000 / 100 : code % 10000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// Resolves every function from an opened library; false, with the missing name, when one lacks.
bool Resolve(void* lib, NcclApi* api, std::string* missing) {
  auto sym = [&](auto** fn, const char* name, bool required) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, name));
    if (*fn == nullptr && required && missing->empty()) *missing = name;
  };
  sym(&api->GetVersion, "ncclGetVersion", true);
  sym(&api->CommInitAll, "ncclCommInitAll", true);
  sym(&api->AllReduce, "ncclAllReduce", true);
  sym(&api->AllGather, "ncclAllGather", true);
  sym(&api->CommDestroy, "ncclCommDestroy", true);
  sym(&api->CommAbort, "ncclCommAbort", true);
  sym(&api->GetErrorString, "ncclGetErrorString", true);
  sym(&api->GroupStart, "ncclGroupStart", true);
  sym(&api->GroupEnd, "ncclGroupEnd", true);
  sym(&api->GetLastError, "ncclGetLastError", false);
  return missing->empty();
}

// Loads NCCL from the first candidate that opens and has every function. The library stays
// loaded for the process (NCCL keeps threads and callbacks that an unload would cut off).
StatusOr<NcclApi> LoadNccl() {
  std::vector<std::string> tried;
  for (const std::string& candidate : cuda::NcclLibraryCandidates()) {
    std::vector<std::string> paths;
    if (candidate.find('*') != std::string::npos) {
      glob_t g{};
      if (glob(candidate.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) paths.push_back(g.gl_pathv[i]);
      }
      globfree(&g);
      if (paths.empty()) tried.push_back(candidate + " (no match)");
    } else {
      paths.push_back(candidate);
    }
    for (const std::string& path : paths) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        const char* why = dlerror();
        tried.push_back(path + " (" + (why ? why : "not loadable") + ")");
        continue;
      }
      NcclApi api;
      std::string missing;
      if (!Resolve(lib, &api, &missing)) {
        tried.push_back(path + " (no " + missing + ")");
        dlclose(lib);
        continue;
      }
      if (api.GetVersion(&api.version) != ncclSuccess) api.version = 0;
      // Graph capture of NCCL ops (2.9) and ncclGetLastError (2.13).
      if (api.version < 21300) {
        tried.push_back(path + " (NCCL " + VersionString(api.version) + ", 2.13 or later needed)");
        continue;  // an initialized library is not unloaded
      }
      api.path = path;
      return api;
    }
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : "; ") + t;
  return UnavailableError(
      "NCCL library not found (tensor parallelism over CUDA devices needs it; set FORGE_NCCL_LIB "
      "to its path or `pip install nvidia-nccl-cu13`); tried: " +
      list);
}

class NcclCollective : public Collective {
 public:
  NcclCollective(NcclApi api, std::vector<int> devices, std::vector<cudaStream_t> streams)
      : api_(std::move(api)),
        devices_(std::move(devices)),
        streams_(std::move(streams)),
        comms_(devices_.size(), nullptr) {
    for (size_t r = 0; r < devices_.size(); ++r) {
      locks_.push_back(std::make_unique<std::timed_mutex>());
    }
  }

  ~NcclCollective() override {
    int caller = -1;
    if (cudaGetDevice(&caller) != cudaSuccess) caller = -1;
    {
      std::lock_guard<std::mutex> lock(abort_mu_);
      if (!aborted_.load()) {
        // NCCL frees the process's communicators together at the last destroy (after every graph
        // that recorded one of their ops is gone).
        for (size_t r = 0; r < comms_.size(); ++r) {
          if (comms_[r] == nullptr) continue;
          cudaSetDevice(devices_[r]);
          api_.CommDestroy(comms_[r]);
        }
      }
    }
    if (abort_thread_.joinable()) abort_thread_.join();
    if (caller >= 0) cudaSetDevice(caller);
    cudaGetLastError();
  }

  Status Init() {
    int caller = -1;
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller));
    const ncclResult_t r =
        api_.CommInitAll(comms_.data(), static_cast<int>(devices_.size()), devices_.data());
    cudaSetDevice(caller);
    if (r != ncclSuccess) {
      std::fill(comms_.begin(), comms_.end(), nullptr);
      return NcclError(r, "ncclCommInitAll", -1);
    }
    return Status::Ok();
  }

  // One small all-reduce and all-gather over every rank, launched as a group from this thread:
  // NCCL connects the ranks on first use, so this makes that happen now (not while a rank's
  // first op is being recorded into a graph) and shows that the devices can reach each other.
  Status WarmUp(std::span<Backend* const> backends) {
    constexpr int64_t kFloats = 1024;
    const size_t n = devices_.size();
    std::vector<std::unique_ptr<BackendBuffer>> bufs;
    for (size_t r = 0; r < n; ++r) {
      ASSIGN_OR_RETURN(auto b, backends[r]->Alloc((1 + n) * kFloats * sizeof(float)));
      bufs.push_back(std::move(b));
    }
    int caller = -1;
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller));
    ncclResult_t res = api_.GroupStart();
    for (size_t r = 0; r < n && res == ncclSuccess; ++r) {
      float* p = bufs[r]->f32();
      res = api_.AllReduce(p, p, kFloats, ncclFloat, ncclSum, comms_[r], streams_[r]);
      if (res == ncclSuccess) {
        res = api_.AllGather(p, p + kFloats, kFloats * sizeof(float), ncclChar, comms_[r],
                             streams_[r]);
      }
    }
    const ncclResult_t end = api_.GroupEnd();
    cudaSetDevice(caller);
    Status st = NcclError(res != ncclSuccess ? res : end, "warm-up all-reduce and all-gather", -1);
    for (size_t r = 0; r < n && st.ok(); ++r) {
      const Status sync = backends[r]->Synchronize();
      st = sync;
    }
    // On failure a rank's half may still wait on its device: the abort releases it before the
    // buffers are freed (which waits for the device).
    if (!st.ok()) Abort();
    return st;
  }

  int size() const override { return static_cast<int>(devices_.size()); }
  std::string name() const override { return "nccl " + VersionString(api_.version); }

  Status AllReduceSum(int rank, float* data, int64_t n) override {
    std::unique_lock<std::timed_mutex> lock(*locks_[CheckedRank(rank)], std::defer_lock);
    RETURN_IF_ERROR(Enter(rank, &lock));
    if (n < 0) return InvalidArgumentError("nccl all-reduce: " + std::to_string(n) + " floats");
    if (n == 0) return Status::Ok();
    const ncclResult_t r = api_.AllReduce(data, data, static_cast<size_t>(n), ncclFloat, ncclSum,
                                          comms_[rank], streams_[rank]);
    return NcclError(r, "ncclAllReduce", rank);
  }

  Status AllGather(int rank, const void* send, void* recv, int64_t bytes) override {
    std::unique_lock<std::timed_mutex> lock(*locks_[CheckedRank(rank)], std::defer_lock);
    RETURN_IF_ERROR(Enter(rank, &lock));
    if (bytes < 0) {
      return InvalidArgumentError("nccl all-gather: " + std::to_string(bytes) + " bytes");
    }
    if (bytes == 0) return Status::Ok();
    const ncclResult_t r = api_.AllGather(send, recv, static_cast<size_t>(bytes), ncclChar,
                                          comms_[rank], streams_[rank]);
    return NcclError(r, "ncclAllGather", rank);
  }

  // The communicators are aborted on a thread of their own: ncclCommAbort first tells the
  // kernels still waiting on the devices to quit (that releases the ranks), then frees the
  // communicators once every graph that recorded their ops is destroyed, which may be later
  // than this call's return. The destructor waits for it.
  void Abort() override {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (aborted_.exchange(true)) return;
    abort_thread_ = std::thread([this] {
      // A rank inside an op finishes queuing it first (not waited for past a few seconds: an op
      // stuck on a peer that never comes needs the abort to return).
      std::vector<std::unique_lock<std::timed_mutex>> held;
      for (auto& m : locks_) {
        std::unique_lock<std::timed_mutex> l(*m, std::defer_lock);
        if (l.try_lock_for(std::chrono::seconds(5))) held.push_back(std::move(l));
      }
      for (size_t r = 0; r < comms_.size(); ++r) {
        if (comms_[r] == nullptr) continue;
        cudaSetDevice(devices_[r]);
        api_.CommAbort(comms_[r]);
      }
      cudaGetLastError();
    });
  }

 private:
  size_t CheckedRank(int rank) const {
    return rank >= 0 && rank < size() ? static_cast<size_t>(rank) : 0;
  }

  // Checks the rank, takes its lock (which only an abort contends for) and makes its device
  // current; an error once the collective is aborted.
  Status Enter(int rank, std::unique_lock<std::timed_mutex>* lock) {
    if (rank < 0 || rank >= size()) {
      return InvalidArgumentError("nccl collective: rank " + std::to_string(rank) + " of " +
                                  std::to_string(size()));
    }
    for (;;) {
      if (aborted_.load()) return Aborted();
      if (lock->try_lock()) break;
      std::this_thread::yield();
    }
    if (aborted_.load()) return Aborted();
    CUDA_RETURN_IF_ERROR(cuda::UseDevice(devices_[rank]));
    return Status::Ok();
  }

  static Status Aborted() { return UnavailableError("collective aborted: another rank failed"); }

  Status NcclError(ncclResult_t r, const char* what, int rank) const {
    if (r == ncclSuccess) return Status::Ok();
    std::string msg = std::string(what);
    if (rank >= 0) {
      msg += " (rank " + std::to_string(rank) + ", cuda:" + std::to_string(devices_[rank]) + ")";
    }
    msg += ": " + std::string(api_.GetErrorString(r));
    if (api_.GetLastError != nullptr) {
      const char* last = api_.GetLastError(rank >= 0 ? comms_[rank] : nullptr);
      if (last != nullptr && last[0] != '\0') msg += std::string(" (") + last + ")";
    }
    return InternalError(msg);
  }

  NcclApi api_;
  std::vector<int> devices_;
  std::vector<cudaStream_t> streams_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<std::timed_mutex>> locks_;  // per rank: an op vs. the abort
  std::mutex abort_mu_;
  std::atomic<bool> aborted_{false};
  std::thread abort_thread_;
};

}  // namespace

namespace cuda {

std::vector<std::string> NcclLibraryCandidates() {
  const char* env = std::getenv("FORGE_NCCL_LIB");
  if (env != nullptr && env[0] != '\0') return {env};
  std::vector<std::string> c = {
      "libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
      "/usr/local/cuda-13.0/lib/libnccl.so.2", "/usr/local/cuda-13.0/lib64/libnccl.so.2"};
  std::vector<std::string> roots = {"/usr/local/lib", "/usr/lib"};
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') roots.push_back(std::string(home) + "/.local/lib");
  for (const std::string& root : roots) {
    for (const char* packages : {"dist-packages", "site-packages"}) {
      c.push_back(root + "/python3*/" + packages + "/nvidia/nccl/lib/libnccl.so.2");
    }
  }
  return c;
}

}  // namespace cuda

StatusOr<std::unique_ptr<Collective>> MakeNcclCollective(std::span<Backend* const> backends) {
  // The backends first: a wrong one is reported wherever NCCL is missing.
  if (backends.empty()) return InvalidArgumentError("nccl collective: no backends");
  std::vector<int> devices;
  std::vector<cudaStream_t> streams;
  for (size_t r = 0; r < backends.size(); ++r) {
    const std::string rank = "nccl collective: rank " + std::to_string(r);
    if (backends[r] == nullptr) return InvalidArgumentError(rank + " has no backend");
    const int device = cuda::CudaDeviceOf(*backends[r]);
    if (device < 0) {
      return InvalidArgumentError(rank + "'s backend is \"" + backends[r]->name() +
                                  "\", not a CUDA backend (NCCL runs between CUDA devices)");
    }
    for (size_t q = 0; q < r; ++q) {
      if (devices[q] == device) {
        return InvalidArgumentError(rank + " and rank " + std::to_string(q) +
                                    " are both on cuda:" + std::to_string(device) +
                                    " (each rank needs a device of its own)");
      }
    }
    devices.push_back(device);
    streams.push_back(cuda::CudaStreamOf(*backends[r]));
  }
  // NVLink multicast (NVLS) is never used; set before NCCL reads its environment.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ASSIGN_OR_RETURN(NcclApi api, LoadNccl());
  auto c = std::make_unique<NcclCollective>(std::move(api), std::move(devices), std::move(streams));
  RETURN_IF_ERROR(c->Init());
  RETURN_IF_ERROR(c->WarmUp(backends));
  return std::unique_ptr<Collective>(std::move(c));
}

}  // namespace forge
