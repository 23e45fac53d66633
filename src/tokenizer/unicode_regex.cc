// UnicodeRegex on PCRE2 (8-bit code units). Match data and the JIT stack are per thread, so a
// compiled pattern can be shared by every thread that encodes.
#include "tokenizer/unicode_regex.h"

#include <pcre2.h>

namespace forge {
namespace {

struct ThreadScratch {
  pcre2_match_data* match_data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadScratch() {
    match_data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~ThreadScratch() {
    pcre2_match_data_free(match_data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

ThreadScratch& Scratch() {
  thread_local ThreadScratch scratch;
  return scratch;
}

pcre2_code* Code(void* p) { return static_cast<pcre2_code*>(p); }

}  // namespace

StatusOr<std::unique_ptr<UnicodeRegex>> UnicodeRegex::Compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidArgumentError("regex '" + std::string(pattern) +
                                "': " + reinterpret_cast<const char*>(message) + " at offset " +
                                std::to_string(offset));
  }
  std::unique_ptr<UnicodeRegex> re(new UnicodeRegex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return re;
}

UnicodeRegex::~UnicodeRegex() { pcre2_code_free(Code(code_)); }

bool UnicodeRegex::FindAll(std::string_view subject,
                           std::vector<std::pair<size_t, size_t>>* matches) const {
  ThreadScratch& s = Scratch();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  while (start < subject.size()) {
    const int rc =
        pcre2_match(Code(code_), data, subject.size(), start, 0, s.match_data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) return true;
    if (rc < 0) return false;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.match_data);
    if (ov[1] > ov[0]) {
      matches->emplace_back(ov[0], ov[1]);
      start = ov[1];
    } else {
      // An empty match: step on to the next character (or invalid byte).
      start = ov[0] + 1;
      while (start < subject.size() && (static_cast<uint8_t>(subject[start]) & 0xC0) == 0x80) {
        ++start;
      }
    }
  }
  return true;
}

bool UnicodeRegex::FullMatch(std::string_view subject) const {
  ThreadScratch& s = Scratch();
  if (subject.data() == nullptr) subject = std::string_view("", 0);
  const int rc =
      pcre2_match(Code(code_), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0,
                  PCRE2_ANCHORED | PCRE2_ENDANCHORED, s.match_data, s.context);
  return rc >= 0;
}

}  // namespace forge
