// PreTokenizer: the sequence of regex splits.
#include "tokenizer/pre_tokenizer.h"

#include <atomic>

#include "base/logging.h"

namespace forge {
namespace {

// Splits one piece by re into matches and the gaps between them.
void SplitPiece(const UnicodeRegex& re, std::string_view piece,
                std::vector<std::pair<size_t, size_t>>* matches,
                std::vector<std::string_view>* out) {
  matches->clear();
  if (!re.FindAll(piece, matches)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      LOG(WARNING) << "pre-tokenizer regex stopped early (PCRE2 limit) on a piece of "
                   << piece.size() << " bytes; the rest stays one piece";
    }
  }
  size_t pos = 0;
  for (const auto& [begin, end] : *matches) {
    if (begin > pos) out->push_back(piece.substr(pos, begin - pos));
    out->push_back(piece.substr(begin, end - begin));
    pos = end;
  }
  if (pos < piece.size()) out->push_back(piece.substr(pos));
}

}  // namespace

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(
    const std::vector<std::string_view>& patterns) {
  auto pre = std::make_unique<PreTokenizer>();
  for (std::string_view p : patterns) {
    ASSIGN_OR_RETURN(std::unique_ptr<UnicodeRegex> re, UnicodeRegex::Compile(p));
    pre->regexes_.push_back(std::move(re));
  }
  return pre;
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  std::vector<std::pair<size_t, size_t>> matches;
  if (regexes_.empty()) {
    pieces->push_back(text);
    return;
  }
  std::vector<std::string_view> current{text}, next;
  for (size_t r = 0; r < regexes_.size(); ++r) {
    std::vector<std::string_view>* out = (r + 1 == regexes_.size()) ? pieces : &next;
    next.clear();
    for (std::string_view piece : current) SplitPiece(*regexes_[r], piece, &matches, out);
    if (out == &next) current.swap(next);
  }
}

}  // namespace forge
