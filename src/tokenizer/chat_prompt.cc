// EncodeChatPrompt: finds control-token text in message content, marks it for a second rendering,
// maps the marks back onto the first rendering and tokenizes those spans as plain text.
#include "tokenizer/chat_prompt.h"

#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace forge {
namespace {

// The private-use code points tried as markers (a pair absent from the rendering is taken).
constexpr uint32_t kFirstMarker = 0xE000;
constexpr uint32_t kLastMarker = 0xF8FF;

std::string Quote(std::string_view text) {
  std::string q;
  q.reserve(text.size() + 2);
  q += '\'';
  q += text;
  q += '\'';
  return q;
}

// content with open before and close after each of spans (sorted, disjoint).
std::string MarkSpans(const std::string& content, const std::vector<TextSpan>& spans,
                      const std::string& open, const std::string& close) {
  std::string out;
  out.reserve(content.size() + spans.size() * (open.size() + close.size()));
  size_t pos = 0;
  for (const TextSpan& s : spans) {
    out.append(content, pos, s.begin - pos);
    out += open;
    out.append(content, s.begin, s.end - s.begin);
    out += close;
    pos = s.end;
  }
  out.append(content, pos);
  return out;
}

// The spans of `rendered` that the template wrote from marked content. `example` names one of the
// control texts for error messages.
StatusOr<std::vector<TextSpan>> LocateMarkedSpans(const ChatTemplate& tmpl,
                                                  const std::vector<ChatMessage>& messages,
                                                  const std::vector<std::vector<TextSpan>>& found,
                                                  const ChatTemplateOptions& opts,
                                                  const std::string& rendered,
                                                  const std::string& example) {
  // The first two private-use code points the rendering does not hold (one pass over it).
  std::vector<bool> used(kLastMarker - kFirstMarker + 1, false);
  for (size_t pos = 0; pos < rendered.size();) {
    const uint32_t cp = utf8::DecodeAt(rendered, &pos);
    if (cp >= kFirstMarker && cp <= kLastMarker) used[cp - kFirstMarker] = true;
  }
  std::string open, close;
  for (uint32_t cp = kFirstMarker; cp <= kLastMarker && close.empty(); ++cp) {
    if (!used[cp - kFirstMarker]) (open.empty() ? open : close) = utf8::Encode(cp);
  }
  if (close.empty()) {
    return InvalidArgumentError("chat prompt: message content holds control-token text (" +
                                example +
                                ") and the rendered prompt uses every private-use character "
                                "that could mark it");
  }
  std::vector<ChatMessage> marked = messages;
  for (size_t i = 0; i < marked.size(); ++i) {
    if (!found[i].empty())
      marked[i].content = MarkSpans(messages[i].content, found[i], open, close);
  }
  auto second = tmpl.Apply(marked, opts);
  const std::string untracked =
      "chat prompt: message content holds control-token text (" + example +
      "), and the chat template transforms message content in a way that cannot be tracked (";
  if (!second.ok()) {
    return InvalidArgumentError(untracked + "rendering it marked failed: " +
                                second.status().message() + "); the prompt is refused");
  }
  // Strip the markers, checking that they pair up and that what is left is the first rendering;
  // a span's offsets are those of the stripped text.
  std::vector<TextSpan> spans;
  std::string stripped;
  stripped.reserve(rendered.size());
  bool inside = false;
  size_t begin = 0;
  const std::string& r2 = *second;
  for (size_t pos = 0; pos < r2.size();) {
    const bool is_open = r2.compare(pos, open.size(), open) == 0;
    const bool is_close = !is_open && r2.compare(pos, close.size(), close) == 0;
    if (!is_open && !is_close) {
      stripped.push_back(r2[pos++]);
      continue;
    }
    if (is_open == inside) {
      return InvalidArgumentError(untracked +
                                  "its marks came out unpaired); the prompt is refused");
    }
    inside = is_open;
    if (is_open) {
      begin = stripped.size();
    } else if (stripped.size() > begin) {
      spans.push_back({begin, stripped.size()});
    }
    pos += is_open ? open.size() : close.size();
  }
  if (inside || stripped != rendered) {
    return InvalidArgumentError(untracked +
                                "rendering it marked gave other text than the marks "
                                "alone); the prompt is refused");
  }
  return spans;
}

}  // namespace

StatusOr<std::vector<TokenId>> EncodeChatPrompt(const ChatTemplate& tmpl, const Tokenizer& tok,
                                                const std::vector<ChatMessage>& messages,
                                                const ChatTemplateOptions& opts) {
  std::vector<std::vector<TextSpan>> found(messages.size());
  std::string example;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::vector<TextSpan> in_role = tok.FindControlText(messages[i].role);
    if (!in_role.empty()) {
      const TextSpan s = in_role[0];
      return InvalidArgumentError(
          "messages[" + std::to_string(i) + "].role holds the text of a control token (" +
          Quote(std::string_view(messages[i].role).substr(s.begin, s.end - s.begin)) + ")");
    }
    found[i] = tok.FindControlText(messages[i].content);
    if (!found[i].empty() && example.empty()) {
      const TextSpan s = found[i][0];
      example = Quote(std::string_view(messages[i].content).substr(s.begin, s.end - s.begin));
    }
  }
  ASSIGN_OR_RETURN(std::string rendered, tmpl.Apply(messages, opts));
  std::vector<TokenId> ids;
  if (example.empty()) {
    ids = tok.Encode(rendered, /*add_special=*/false, /*parse_special=*/true);
  } else {
    ASSIGN_OR_RETURN(std::vector<TextSpan> plain,
                     LocateMarkedSpans(tmpl, messages, found, opts, rendered, example));
    ids = tok.EncodeWithPlainSpans(rendered, plain);
  }
  const Vocab& vocab = tok.vocab();
  if (vocab.add_bos && vocab.Valid(vocab.bos) && (ids.empty() || ids[0] != vocab.bos)) {
    ids.insert(ids.begin(), vocab.bos);
  }
  return ids;
}

}  // namespace forge
