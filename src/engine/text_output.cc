// TextOutput::Push: the same text rules as Generator::Generate.
#include "engine/text_output.h"

namespace forge {
namespace {

DecodeOptions Continuation() {
  DecodeOptions d;
  d.strip_leading_space = false;  // generated text continues the prompt's
  return d;
}

}  // namespace

TextOutput::TextOutput(const Tokenizer& tokenizer, std::vector<std::string> stops)
    : detok_(tokenizer, Continuation()), stops_(std::move(stops)) {}

std::string TextOutput::Push(int32_t token, FinishReason* finish) {
  if (*finish != FinishReason::kStop) text_ += detok_.Push(token);
  if (*finish != FinishReason::kNone) text_ += detok_.Finish();
  const StopScan scan = stops_.Scan(text_, scanned_);
  scanned_ = text_.size();
  size_t final_end = scan.emit_end;
  if (scan.stopped) {
    text_.resize(scan.emit_end);
    *finish = FinishReason::kStop;
  } else if (*finish != FinishReason::kNone) {
    final_end = text_.size();  // nothing more can complete a stop string
  }
  std::string out;
  if (final_end > emitted_) {
    out = text_.substr(emitted_, final_end - emitted_);
    emitted_ = final_end;
  }
  return out;
}

}  // namespace forge
