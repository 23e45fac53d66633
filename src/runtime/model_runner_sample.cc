// ModelRunner::Sample and DownloadLogitsRow: the last Forward's logits rows on rank 0.
#include <algorithm>
#include <cstring>

#include "runtime/model_runner.h"

namespace forge {

Status ModelRunner::Sample(std::span<const SampleRow> rows, std::span<const LogitEdit> edits,
                           std::vector<SampleOut>* out, std::span<const uint32_t> allowed,
                           int64_t allowed_words) {
  RETURN_IF_ERROR(CheckHasLogits());
  const int64_t n_vocab = model_.config.n_vocab;
  const int64_t n = static_cast<int64_t>(rows.size());
  out->assign(n, SampleOut{});
  Backend& be = backend();
  if (n == 0) return SynchronizeRanks();  // the step ends here: its errors are its own
  if (n > last_n_out_) {
    return FailedPreconditionError("sample: " + std::to_string(n) +
                                   " rows, the last forward left " + std::to_string(last_n_out_) +
                                   " logits rows");
  }
  if (!allowed.empty() && (allowed_words * 32 < n_vocab || allowed.size() % allowed_words != 0)) {
    return InvalidArgumentError("sample: allowed sets of " + std::to_string(allowed.size()) +
                                " words in rows of " + std::to_string(allowed_words) + " for " +
                                std::to_string(n_vocab) + " tokens");
  }
  // One buffer: rows, then edits, then allowed sets, then outputs, each 256-byte aligned.
  auto align = [](size_t b) { return (b + 255) & ~size_t{255}; };
  const size_t rows_bytes = align(n * sizeof(SampleRow));
  const size_t edits_bytes = align(edits.size() * sizeof(LogitEdit));
  const size_t allowed_bytes = align(allowed.size() * sizeof(uint32_t));
  const size_t out_bytes = n * sizeof(SampleOut);
  const size_t in_bytes = rows_bytes + edits_bytes + allowed_bytes;
  const size_t total = in_bytes + out_bytes;
  if (!sample_ws_ || sample_ws_->size() < total) {
    const size_t grown = std::max(total, sample_ws_ ? 2 * sample_ws_->size() : total);
    sample_ws_.reset();
    ASSIGN_OR_RETURN(sample_ws_, be.Alloc(grown));
  }
  sample_host_.resize(in_bytes);
  std::memcpy(sample_host_.data(), rows.data(), n * sizeof(SampleRow));
  if (!edits.empty()) {
    std::memcpy(sample_host_.data() + rows_bytes, edits.data(), edits.size() * sizeof(LogitEdit));
  }
  if (!allowed.empty()) {
    std::memcpy(sample_host_.data() + rows_bytes + edits_bytes, allowed.data(),
                allowed.size() * sizeof(uint32_t));
  }
  char* base = static_cast<char*>(sample_ws_->data());
  RETURN_IF_ERROR(be.Upload(base, sample_host_.data(), sample_host_.size()));
  SampleParams p{.logits = ranks_[0]->logits->f32(),
                 .n_rows = n,
                 .n_vocab = n_vocab,
                 .rows = reinterpret_cast<const SampleRow*>(base),
                 .edits = reinterpret_cast<const LogitEdit*>(base + rows_bytes),
                 .out = reinterpret_cast<SampleOut*>(base + in_bytes)};
  if (!allowed.empty()) {
    p.allowed = reinterpret_cast<const uint32_t*>(base + rows_bytes + edits_bytes);
    p.allowed_words = allowed_words;
    p.allowed_rows = static_cast<int64_t>(allowed.size()) / allowed_words;
  }
  RETURN_IF_ERROR(be.Sample(p));
  RETURN_IF_ERROR(be.Download(out->data(), p.out, out_bytes));
  return SynchronizeRanks();
}

Status ModelRunner::CheckHasLogits() const {
  if (model_.config.pooling == PoolingType::kNone) return Status::Ok();
  return FailedPreconditionError(
      "the model embeds (its GGUF names pooling_type " +
      std::string(PoolingName(model_.config.pooling)) +
      "): its steps give pooled vectors, not logits to sample; use forge embed or "
      "POST /v1/embeddings");
}

Status ModelRunner::DownloadLogitsRow(int64_t row, float* out) {
  RETURN_IF_ERROR(CheckHasLogits());
  if (row < 0 || row >= last_n_out_) {
    return OutOfRangeError("logits row " + std::to_string(row) + " of " +
                           std::to_string(last_n_out_));
  }
  const int64_t n_vocab = model_.config.n_vocab;
  Backend& be = backend();
  RETURN_IF_ERROR(
      be.Download(out, ranks_[0]->logits->f32() + row * n_vocab, n_vocab * sizeof(float)));
  return be.Synchronize();
}

}  // namespace forge
