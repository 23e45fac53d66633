// SampleRows: one step's sampling as a backend's Sample op takes it (backend/cpu/sample/sample.h):
// each request's SamplingParams and context become a SampleRow and its LogitEdits on the host, and
// the op's few bytes per row come back as the Sampler's SampleResult. The choice is the Sampler's
// (sampling/sampler.h), made where the logits are.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/sample/sample.h"
#include "base/status.h"
#include "sampling/sampler.h"

namespace forge {

struct SampleRows {
  std::vector<SampleRow> rows;
  std::vector<LogitEdit> edits;
  // The allowed sets of the rows that have one (SampleRow::allowed_row), allowed_words each.
  std::vector<uint32_t> allowed;
  int64_t allowed_words = 0;

  void clear() {
    rows.clear();
    edits.clear();
    allowed.clear();
  }
  int64_t allowed_rows() const {
    return allowed_words > 0 ? static_cast<int64_t>(allowed.size()) / allowed_words : 0;
  }

  // Appends the row for (params, context), validated as Sampler::Sample validates them (params
  // for the vocabulary, eos ids, the penalty window's ids); on error appends nothing.
  // logit_bias, the penalties and the masks become one edit per distinct token; the draw's u is
  // SamplingUniform(seed, request, position); context.allowed (a grammar's set) is copied into
  // `allowed` as the row's bitmask.
  Status Append(const SamplingParams& params, const SampleContext& context, int32_t n_vocab);
  // A row whose result is not used (greedy, no edits): keeps rows aligned with logits rows.
  void AppendIdle();
};

// The op's output for a row appended with `params`, as Sampler::Sample reports it.
StatusOr<SampleResult> ToSampleResult(const SampleOut& out, const SamplingParams& params);

}  // namespace forge
