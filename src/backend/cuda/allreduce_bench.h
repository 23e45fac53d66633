// The tensor-parallel all-reduce's speed (forge bench --allreduce): in-place F32 AllReduceSum of
// one step's activations (T tokens x hidden floats) over N GPUs through the NCCL collective, one
// thread per GPU launching concurrently, timed with CUDA events on rank 0: eagerly, and for the
// decode-sized messages also recorded as one CUDA graph per rank (how a decode step runs it).
// The floor: a ring all-reduce sends (and receives) 2(N-1)/N x the message bytes over each GPU's
// link, so floor = 2(N-1)/N x bytes / peer bandwidth, measured in the same run with peer copies
// between devices 0 and 1 in both directions at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace forge::cuda {

struct AllReduceBenchOptions {
  int n_gpus = 0;  // ranks (devices 0 .. n-1); 0: every device
  std::vector<int64_t> tokens = {1, 8, 32, 128, 512, 2048};
  int64_t hidden = 4096;                    // floats per token
  int iterations = 200;                     // timed all-reduces per size (their mean)
  int warmup = 20;                          // untimed all-reduces first
  int64_t graph_max_tokens = 128;           // sizes up to this are also timed in graphs
  int64_t peer_bytes = int64_t{256} << 20;  // per direction
  int peer_repeats = 5;                     // timed peer copies (median)
};

struct AllReduceBenchRow {
  int64_t tokens = 0;
  int64_t bytes = 0;         // the message: tokens x hidden x 4
  double eager_seconds = 0;  // mean time of one all-reduce, launched op by op
  double graph_seconds = 0;  // the same inside one CUDA graph per rank (0: not timed)
  double floor_seconds = 0;  // 2(N-1)/N x bytes / peer bandwidth
};

struct AllReduceBench {
  int n_gpus = 0;
  std::string collective;            // "nccl 2.28.9"
  std::string device_name;           // device 0's
  double peer_bytes_per_second = 0;  // each way, both directions at once, devices 0 <-> 1
  bool peer_access = false;          // peer access enabled (else copies went through host)
  int64_t hidden = 0;
  int iterations = 0;
  std::vector<AllReduceBenchRow> rows;
};

StatusOr<AllReduceBench> RunAllReduceBench(const AllReduceBenchOptions& o = {});

}  // namespace forge::cuda
