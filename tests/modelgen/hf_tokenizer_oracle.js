// The Hugging Face side of hf_tokenizer_test.cc: @lenml/tokenizers (transformers.js's tokenizers)
// encodes texts with a tokenizer.json + tokenizer_config.json and renders a chat.
//   NODE_PATH=<build>/node/node_modules node hf_tokenizer_oracle.js JOB.json
// JOB: {"tokenizer_json", "tokenizer_config": paths, "texts": [...], "messages": [{role, content}]}
// Prints {"ids": [[...] per text], "chat": the messages rendered with a generation prompt, or null}.
'use strict';
const fs = require('fs');
const { TokenizerLoader } = require('@lenml/tokenizers');

const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(job.tokenizer_json, 'utf8')),
  tokenizerConfig: JSON.parse(fs.readFileSync(job.tokenizer_config, 'utf8')),
});
const ids = job.texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: false })));
// Its Jinja interpreter is smaller than HF's (it fails on Qwen3's template): null then.
let chat = null;
if (job.messages) {
  try {
    chat = tokenizer.apply_chat_template(job.messages, { tokenize: false, add_generation_prompt: true });
  } catch (e) {
    chat = null;
  }
}
process.stdout.write(JSON.stringify({ ids, chat }));
