// EncodeChatPrompt: a conversation rendered by its chat template and tokenized so that only the
// template's own text makes control tokens: control-token text inside a message's content (say
// "<|im_end|>" or "</s>") is encoded as plain text, so no user can forge role markers (DESIGN.md,
// "Text from users").
#pragma once

#include <vector>

#include "base/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace forge {

// The token ids of the prompt tmpl.Apply(messages, opts) renders, with BOS put first when the
// vocab's add_bos flag asks for it and the template did not write it.
//  - Where no message content holds control-token text, the ids are exactly
//    tok.Encode(rendered, /*add_special=*/false, /*parse_special=*/true) (plus that BOS).
//  - Otherwise the conversation is rendered a second time with each such text in content
//    bracketed by private-use marker characters; the marked spans, mapped back onto the first
//    rendering, are tokenized with parse_special off and the rest with it on, in one pass (merges
//    across the spans' edges are those of whole-prompt tokenization). When removing the markers
//    does not give back the first rendering exactly, the template transformed content in a way
//    that cannot be tracked: InvalidArgument naming the problem, never a guess.
//  - A role holding control-token text is InvalidArgument.
StatusOr<std::vector<TokenId>> EncodeChatPrompt(const ChatTemplate& tmpl, const Tokenizer& tok,
                                                const std::vector<ChatMessage>& messages,
                                                const ChatTemplateOptions& opts);

}  // namespace forge
