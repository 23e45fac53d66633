// libFuzzer target for the GGUF reader: any input must open or fail with a Status, never crash,
// hang or allocate without bound. When a file opens, every metadata value and every byte of
// every tensor is touched, so that ASan sees any pointer or length the reader got wrong.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_inspect.h"

namespace {

// Walks a value (arrays recursively) and folds what it holds into a checksum.
uint64_t Touch(const forge::GgufValue& v) {
  uint64_t h = static_cast<uint64_t>(v.type()) + v.u64();
  h += v.f64() == v.f64() ? static_cast<uint64_t>(v.f64() != 0) : 1;
  for (char c : v.str()) h = h * 31 + static_cast<unsigned char>(c);
  for (const forge::GgufValue& item : v.items()) h = h * 7 + Touch(item);
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = forge::GgufFile::OpenBuffer(data, size);
  if (!file.ok()) {
    // An error must say something.
    if (file.status().message().empty()) __builtin_trap();
    return 0;
  }
  const forge::GgufFile& f = **file;
  volatile uint64_t sink = 0;
  for (const auto& [key, value] : f.metadata()) {
    sink = sink + Touch(value) + key.size();
    if (f.Find(key) != &value) __builtin_trap();
    (void)value.ToString();
  }
  // The typed accessors on the keys a model loader reads.
  (void)f.GetU32("llama.block_count");
  (void)f.GetStringArray("tokenizer.ggml.tokens");
  (void)f.GetF32Array("tokenizer.ggml.scores");
  (void)f.GetI32Array("tokenizer.ggml.token_type");
  (void)f.GetStringOr("general.architecture", "");
  for (const auto& t : f.tensors()) {
    if (t.data < data || t.data + t.n_bytes > data + size) __builtin_trap();
    uint64_t h = 0;
    for (int64_t i = 0; i < t.n_bytes; ++i) h += t.data[i];
    sink = sink + h;
    if (f.FindTensor(t.name) != &t) __builtin_trap();
  }
  (void)forge::DescribeGguf(f);
  if (!f.tensors().empty()) (void)forge::ReadTensorValues(f, f.tensors()[0].name, 64);
  return 0;
}
