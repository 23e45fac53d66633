// forge_make_fuzz_seeds OUT [--testdata DIR]: writes the fuzzers' seed corpora, all made here
// (nothing downloaded), so that a clean checkout can fuzz (scripts/fuzz.sh runs it):
//   OUT/gguf/       small valid GGUF files written by GgufWriter and MakeModel (every value type,
//                   nested arrays, every supported tensor type, v2 and v3, alignments, a whole tiny
//                   model), truncations of them, and byte-patched variants (bad magic, versions,
//                   huge counts and lengths, bad type ids, alignments, dims and offsets).
//   OUT/tokenizer/  forge_fuzz_tokenizer inputs (byte 0 vocab, byte 1 flags, then text): ASCII,
//                   whitespace runs, multibyte UTF-8, invalid bytes, special-token texts, and with
//                   --testdata the texts of DIR/vocab/*.inp when that folder exists.
//   OUT/vocabs/     vocab-only GGUFs (synthetic SPM, Llama 3 and Qwen2 BPE) for
//                   forge_fuzz_tokenizer's FORGE_FUZZ_VOCABS, for when ../shared/testdata is
//                   absent.
//   OUT/http/       forge_fuzz_http inputs (byte 0 the piece size, then the bytes of a connection):
//                   requests to every endpoint, chunked, pipelined, malformed.
// The output depends on nothing but this file (and the .inp texts when given).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"
#include "gguf/gguf_writer.h"
#include "modelgen/model_maker.h"
#include "modelgen/model_spec.h"
#include "modelgen/synthetic_vocab.h"
#include "quant/type_table.h"

namespace fs = std::filesystem;
using forge::GgmlType;
using forge::GgufType;
using forge::GgufValue;
using forge::GgufWriter;
using Buffer = std::vector<uint8_t>;

namespace {

int g_files = 0;

void Die(const std::string& what) {
  std::fprintf(stderr, "forge_make_fuzz_seeds: %s\n", what.c_str());
  std::exit(1);
}

void WriteBytes(const fs::path& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) Die("cannot write " + path.string());
  ++g_files;
}
void Write(const fs::path& path, const Buffer& b) { WriteBytes(path, b.data(), b.size()); }
void Write(const fs::path& path, const std::string& s) { WriteBytes(path, s.data(), s.size()); }
// A file that must open (the base of the truncated and patched variants).
void WriteValid(const fs::path& path, const Buffer& b) {
  auto file = forge::GgufFile::OpenBuffer(b.data(), b.size());
  if (!file.ok()) Die(path.string() + " does not open: " + file.status().ToString());
  Write(path, b);
}

Buffer ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path.string());
  return Buffer(std::istreambuf_iterator<char>(in), {});
}

// Deterministic bytes (xorshift), so the corpus is the same on every machine.
Buffer Noise(size_t n, uint64_t seed) {
  Buffer b(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : b) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<uint8_t>(x >> 24);
  }
  return b;
}

Buffer Serialize(GgufWriter& w) {
  auto buf = w.WriteToBuffer();
  if (!buf.ok()) Die(buf.status().ToString());
  return *std::move(buf);
}

template <typename T>
void Patch(Buffer& b, size_t at, T v) {
  if (at + sizeof(T) > b.size()) Die("patch past the end");
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// Offset of the first occurrence of a length-prefixed string (GGUF's u64 length + bytes).
size_t FindGgufString(const Buffer& b, const std::string& s) {
  Buffer needle(8 + s.size());
  const uint64_t n = s.size();
  std::memcpy(needle.data(), &n, 8);
  std::memcpy(needle.data() + 8, s.data(), s.size());
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  if (it == b.end()) Die("string '" + s + "' not in the buffer");
  return static_cast<size_t>(it - b.begin());
}

// ---- GGUF ----

// Every scalar type, a string, arrays of each, an empty array and nested arrays.
void AddEveryValueType(GgufWriter& w) {
  w.Set("general.architecture", GgufValue::String("llama"));
  w.Set("general.name", GgufValue::String("fuzz seed \xE2\x96\x81 \xF0\x9F\xA6\x99"));
  w.Set("t.u8", GgufValue::U8(200));
  w.Set("t.i8", GgufValue::I8(-100));
  w.Set("t.u16", GgufValue::U16(60000));
  w.Set("t.i16", GgufValue::I16(-30000));
  w.Set("t.u32", GgufValue::U32(4000000000u));
  w.Set("t.i32", GgufValue::I32(-2000000000));
  w.Set("t.u64", GgufValue::U64(~0ull));
  w.Set("t.i64", GgufValue::I64(INT64_MIN));
  w.Set("t.f32", GgufValue::F32(-1.5f));
  w.Set("t.f64", GgufValue::F64(1e300));
  w.Set("t.bool", GgufValue::Bool(true));
  w.Set("t.str", GgufValue::String(""));
  w.Set("t.a.u8", GgufValue::Array(GgufType::kU8, {GgufValue::U8(1), GgufValue::U8(255)}));
  w.Set("t.a.i16", GgufValue::Array(GgufType::kI16, {GgufValue::I16(-1), GgufValue::I16(7)}));
  w.Set("t.a.u64",
        GgufValue::Array(GgufType::kU64, {GgufValue::U64(1), GgufValue::U64(1ull << 63)}));
  w.Set("t.a.f64", GgufValue::Array(GgufType::kF64, {GgufValue::F64(0.5), GgufValue::F64(-0.0)}));
  w.Set("t.a.bool",
        GgufValue::Array(GgufType::kBool, {GgufValue::Bool(false), GgufValue::Bool(true)}));
  w.Set("t.a.empty", GgufValue::Array(GgufType::kU32, {}));
  w.Set("t.a.nested",
        GgufValue::Array(GgufType::kArray,
                         {GgufValue::Array(GgufType::kU32, {GgufValue::U32(1), GgufValue::U32(2)}),
                          GgufValue::Array(GgufType::kString, {GgufValue::String("x")})}));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"<unk>", "<s>", "</s>", "a", "\u2581b"}));
  w.Set("tokenizer.ggml.scores", GgufValue::F32Array({0, 0, 0, -1, -2}));
  w.Set("tokenizer.ggml.token_type", GgufValue::I32Array({2, 3, 3, 1, 1}));
  w.Set("llama.block_count", GgufValue::U32(1));
}

void AddTensor(GgufWriter& w, const std::string& name, GgmlType type,
               const std::vector<int64_t>& dims, uint64_t seed) {
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  auto row = forge::RowBytes(type, dims[0]);
  if (!row.ok()) Die(row.status().ToString());
  forge::Status st = w.AddTensor(name, type, dims, Noise(static_cast<size_t>(*row * rows), seed));
  if (!st.ok()) Die(st.ToString());
}

void WriteTruncations(const fs::path& dir, const std::string& stem, const Buffer& b,
                      const std::vector<size_t>& cuts) {
  std::set<size_t> done;
  for (size_t cut : cuts) {
    if (cut >= b.size() || !done.insert(cut).second) continue;
    Write(dir / (stem + "-cut" + std::to_string(cut)), Buffer(b.begin(), b.begin() + cut));
  }
}

void MakeGgufSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  // Empty files of both versions, and one key alone.
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w(version);
    WriteValid(dir / ("empty-v" + std::to_string(version)), Serialize(w));
    GgufWriter k(version);
    k.Set("general.architecture", GgufValue::String("llama"));
    WriteValid(dir / ("one-key-v" + std::to_string(version)), Serialize(k));
  }
  // Every value type (the base of the patched variants below).
  GgufWriter values;
  AddEveryValueType(values);
  const Buffer value_file = Serialize(values);
  WriteValid(dir / "values", value_file);

  // One tensor of each supported type (one block row, 2 rows), and the shapes a reader meets.
  uint64_t seed = 1;
  for (GgmlType type : forge::SupportedTypes()) {
    const forge::TypeTraits& t = forge::GetTypeTraits(type);
    GgufWriter w;
    w.Set("general.architecture", GgufValue::String("llama"));
    AddTensor(w, "weight", type, {t.block_elems, 2}, seed++);
    std::string name = t.name;
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    WriteValid(dir / ("tensor-" + name), Serialize(w));
  }
  Buffer shapes_file;
  {
    GgufWriter w;
    AddEveryValueType(w);
    AddTensor(w, "a", GgmlType::kF32, {3}, seed++);
    AddTensor(w, "b", GgmlType::kF16, {4, 3}, seed++);
    AddTensor(w, "c", GgmlType::kQ8_0, {32, 1, 2}, seed++);
    AddTensor(w, "d", GgmlType::kF32, {1, 1, 1, 2}, seed++);
    AddTensor(w, "blk.0.attn_q.weight", GgmlType::kQ4_0, {32, 2}, seed++);
    shapes_file = Serialize(w);
    WriteValid(dir / "tensors-shapes", shapes_file);
  }
  for (uint32_t alignment : {1u, 8u, 64u, 256u}) {
    GgufWriter w(3, alignment);
    w.Set("general.architecture", GgufValue::String("llama"));
    AddTensor(w, "x", GgmlType::kF32, {5}, seed++);
    AddTensor(w, "y", GgmlType::kF16, {3}, seed++);
    WriteValid(dir / ("align-" + std::to_string(alignment)), Serialize(w));
  }
  {
    GgufWriter w(2);
    AddEveryValueType(w);
    AddTensor(w, "x", GgmlType::kQ4_K, {256}, seed++);
    WriteValid(dir / "values-tensor-v2", Serialize(w));
  }

  // A whole model from MakeModel: a small one (fits -max_len=4096) and the tiny preset's head.
  const fs::path tmp = dir / "tmp-model.gguf";
  forge::ModelSpec small;
  small.n_vocab = 8, small.n_embd = 8, small.n_layer = 1, small.n_head = 2, small.n_head_kv = 1;
  small.n_ff = 16, small.n_ctx = 64, small.threads = 1, small.weight_type = GgmlType::kF16;
  auto made = forge::MakeModel(small, tmp.string());
  if (!made.ok()) Die(made.status().ToString());
  const Buffer small_model = ReadAll(tmp);
  WriteValid(dir / "model-small", small_model);
  std::vector<size_t> cuts = {3, 4, 8, 16, 23, 24, 31, 40, 64, 100, 200};
  for (int i = 1; i < 16; ++i) cuts.push_back(small_model.size() * i / 16);
  WriteTruncations(dir, "model-small", small_model, cuts);
  WriteTruncations(dir, "values", value_file,
                   {24, 33, value_file.size() / 2, value_file.size() - 1});
  WriteTruncations(dir, "tensors-shapes", shapes_file,
                   {shapes_file.size() / 2, shapes_file.size() - 40, shapes_file.size() - 1});

  forge::ModelSpec tiny = *forge::ModelPreset("tiny-qwen2");
  tiny.n_layer = 1, tiny.threads = 1, tiny.weight_type = GgmlType::kQ8_0;
  made = forge::MakeModel(tiny, tmp.string());
  if (!made.ok()) Die(made.status().ToString());
  const Buffer tiny_model = ReadAll(tmp);
  WriteTruncations(dir, "model-tiny-qwen2", tiny_model, {512, 2048, 4096});
  fs::remove(tmp);

  // Byte-patched variants of the value file and the tensor file. Header: magic(4) version(4)
  // n_tensors(8) n_kv(8); the first key follows at 24.
  struct Variant {
    const char* name;
    size_t at;
    uint64_t value;
    int bytes;
  };
  const size_t first_type = 24 + 8 + std::strlen("general.architecture");
  const Variant header_variants[] = {
      {"bad-magic", 0, 0x47554747, 4},
      {"version-1", 4, 1, 4},
      {"version-4", 4, 4, 4},
      {"version-big-endian", 4, 0x03000000, 4},
      {"n-tensors-huge", 8, 1ull << 60, 8},
      {"n-tensors-max", 8, ~0ull, 8},
      {"n-kv-huge", 16, 1ull << 60, 8},
      {"n-kv-plus-one", 16, 0, 8},
      {"key-len-huge", 24, 1ull << 62, 8},
      {"key-len-max", 24, ~0ull, 8},
      {"key-len-zero", 24, 0, 8},
      {"value-type-13", first_type, 13, 4},
      {"value-type-max", first_type, 0xffffffffu, 4},
      {"value-type-array", first_type, 9, 4},
      {"str-len-huge", first_type + 4, 1ull << 40, 8},
  };
  for (const Variant& v : header_variants) {
    Buffer b = value_file;
    uint64_t value = v.value;
    if (std::string(v.name) == "n-kv-plus-one") {
      uint64_t n_kv;
      std::memcpy(&n_kv, b.data() + 16, 8);
      value = n_kv + 1;
    }
    if (v.bytes == 4)
      Patch<uint32_t>(b, v.at, static_cast<uint32_t>(value));
    else
      Patch<uint64_t>(b, v.at, value);
    Write(dir / (std::string("values-") + v.name), b);
  }
  {
    // An array's element type and count.
    Buffer b = value_file;
    const size_t key = FindGgufString(b, "t.a.u8");
    const size_t type = key + 8 + 6, elem = type + 4, count = elem + 4;
    Buffer c = b;
    Patch<uint32_t>(c, elem, 13);
    Write(dir / "values-array-elem-13", c);
    c = b;
    Patch<uint64_t>(c, count, 1ull << 61);
    Write(dir / "values-array-count-huge", c);
    c = b;
    Patch<uint32_t>(c, elem, 9);  // an array of arrays whose headers are the u8 bytes
    Write(dir / "values-array-elem-array", c);
    // tokenizer.ggml.tokens: a string whose length runs past the end.
    const size_t tok = FindGgufString(b, "<unk>");
    c = b;
    Patch<uint64_t>(c, tok, 1ull << 32);
    Write(dir / "values-token-len-huge", c);
    // general.name as a string that is not UTF-8.
    const size_t name = FindGgufString(b, "fuzz seed \xE2\x96\x81 \xF0\x9F\xA6\x99");
    c = b;
    c[name + 8 + 10] = 0xff;
    c[name + 8 + 11] = 0xc0;
    Write(dir / "values-name-not-utf8", c);
  }
  {
    // Alignment values the reader must refuse: general.alignment is the first key when set.
    GgufWriter w(3, 64);
    AddTensor(w, "x", GgmlType::kF32, {4}, seed++);
    const Buffer base = Serialize(w);
    const size_t value = FindGgufString(base, "general.alignment") + 8 + 17 + 4;
    for (uint32_t a : {0u, 3u, 48u, 0x80000000u}) {
      Buffer b = base;
      Patch<uint32_t>(b, value, a);
      Write(dir / ("align-bad-" + std::to_string(a)), b);
    }
    Buffer b = base;
    Patch<uint32_t>(b, value - 4, static_cast<uint32_t>(GgufType::kU64));
    Write(dir / "align-wrong-type", b);
  }
  {
    // Tensor infos: name, n_dims, dims, type, offset. "blk.0.attn_q.weight" has 2 dims.
    const size_t info = FindGgufString(shapes_file, "blk.0.attn_q.weight");
    const size_t n_dims = info + 8 + 19, dims = n_dims + 4, type = dims + 16, offset = type + 4;
    const Variant tensor_variants[] = {
        {"n-dims-0", n_dims, 0, 4},
        {"n-dims-5", n_dims, 5, 4},
        {"n-dims-max", n_dims, 0xffffffffu, 4},
        {"dim-0", dims, 0, 8},
        {"dim-huge", dims + 8, 1ull << 62, 8},
        {"dim-negative", dims, ~0ull, 8},
        {"dim-not-block", dims, 33, 8},
        {"type-unknown", type, 99, 4},
        {"type-iq2-xxs", type, 16, 4},
        {"type-f32-grows", type, 0, 4},
        {"offset-misaligned", offset, 8, 8},
        {"offset-past-end", offset, 1ull << 40, 8},
        {"offset-max", offset, ~0ull - 7, 8},
        {"offset-zero-overlap", offset, 0, 8},
    };
    for (const Variant& v : tensor_variants) {
      Buffer b = shapes_file;
      if (v.bytes == 4)
        Patch<uint32_t>(b, v.at, static_cast<uint32_t>(v.value));
      else
        Patch<uint64_t>(b, v.at, v.value);
      Write(dir / (std::string("tensor-") + v.name), b);
    }
    // Two tensors with one name.
    Buffer b = shapes_file;
    const size_t a = FindGgufString(b, "b");
    b[a + 8] = 'a';
    Write(dir / "tensor-duplicate-name", b);
  }
}

// ---- tokenizer ----

const char* const kTexts[] = {
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n\n",
    " \t \n \r\n ",
    "Hello world",
    " Hello world",
    "Hello World!",
    "hello, world. how are you?",
    "Once upon a time, there was a little girl named Lily.",
    "The quick brown fox jumps over the lazy dog 1234567890",
    "I'm don't you'll we've they're he'd SHE'S",
    "3333333 33 3.14159 1,000,000 0x1F -7e-3",
    "int main(void) { return a[i] + b->c; } // C++\n\tif (x != y) x <<= 2;",
    "def f(x):\n    return {'a': [1, 2, 3]}\n",
    "<html><body class=\"x\">&amp; &#x2581;</body></html>",
    "https://example.com/path?q=1&r=two#frag user@example.org",
    "!!!???...,,,;;;:::---___+++===***///\\\\\\|||~~~^^^```'''\"\"\"",
    "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x9F\xC3\xBC\xC3\xB6\xC3\xA4",
    "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
    "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82",
    "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF "
    "\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A",
    "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 "
    "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80",
    "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D "
    "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5",
    "\xF0\x9F\xA6\x99\xF0\x9F\x94\xA5 "
    "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 "
    "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8",
    "e\xCC\x81 a\xCC\x8A\xCC\x81 \xE2\x80\x8B\xE2\x80\x8C\xEF\xBB\xBF zero-width",
    "\xE2\x96\x81"
    "Hello\xE2\x96\x81world \xE2\x96\x81\xE2\x96\x81",
    "\xC2\xA0non-breaking\xE2\x80\x83spaces\xE3\x80\x80ideographic",
    "\xF4\x8F\xBF\xBF \xEF\xBF\xBD \xEF\xBF\xBF \xE0\xA0\x80 \xF0\x90\x80\x80",
    // Invalid UTF-8: lone continuation, truncated sequences, overlong forms, surrogates, 0xF5+.
    "\x80",
    "abc\x80\xBF"
    "def",
    "\xC3",
    "\xE2\x82",
    "\xF0\x9F\xA6",
    "x\xC0\xAF y\xE0\x80\xAF z\xF0\x80\x80\xAF",
    "\xED\xA0\x80\xED\xBF\xBF",
    "\xF5\x80\x80\x80 \xF8\x88\x80\x80\x80 \xFE\xFF",
    "\xFF\xFE\xFD",
    "ok \xE4\xBD invalid \xE4\xBD\xA0 mixed",
    // Control bytes and NUL.
    "\x01\x02\x03\x07\x08\x0B\x0C\x1B[31mred\x1B[0m\x7F",
    // Special-token texts of the vocabularies the fuzzer loads.
    "<s>",
    "</s>",
    "<unk>",
    "<s> Hello</s><unk>",
    "<0x0A><0xFF><0x00>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|reserved_special_token_0|><|reserved_special_token_250|>",
    "<|endoftext|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|user|>\nhi<|end|>\n<|assistant|>",
    "[CLS] hello [SEP] [PAD] [MASK] [UNK]",
    ">>TITLE<< >>ABSTRACT<< >>COMMENT<<",
    "<|im_st <|im_start <|im_start|| <<s>> <</s> <|eot_id",
    "<|im_start|><|im_start|><|im_start|>",
    "text<s>text</s>text",
    "[PAD151700] <|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
};

// Long runs (pre-tokenizer regexes, merges over long words).
std::vector<std::string> LongTexts() {
  return {std::string(300, ' '),
          std::string(200, '\n'),
          std::string(400, 'a'),
          std::string(120, '9'),
          [] {
            std::string s;
            for (int i = 0; i < 60; ++i) s += "\xE4\xB8\x80";
            return s;
          }(),
          [] {
            std::string s;
            for (int i = 0; i < 100; ++i) s += "\xF0\x9F\x98\x80 ";
            return s;
          }(),
          [] {
            std::string s;
            for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
            return s;
          }(),
          std::string("a\0b\0\0c", 6)};
}

// The texts of llama.cpp's tokenizer tests (DIR/vocab/*.inp), deduplicated.
std::vector<std::string> InpTexts(const fs::path& testdata) {
  std::set<std::string> texts;
  const fs::path vocab = testdata / "vocab";
  if (!fs::is_directory(vocab)) return {};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(vocab)) {
    if (e.path().extension() == ".inp") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (const fs::path& f : files) {
    const Buffer b = ReadAll(f);
    std::string s(b.begin(), b.end());
    size_t at = 0;
    while (at <= s.size()) {
      size_t end = s.find(sep, at);
      if (end == std::string::npos) end = s.size();
      std::string t = s.substr(at, end - at);
      if (t.size() <= 1024) texts.insert(t);
      at = end + sep.size();
    }
  }
  return {texts.begin(), texts.end()};
}

void MakeTokenizerSeeds(const fs::path& dir, const fs::path& testdata) {
  fs::create_directories(dir);
  // byte 0 picks the vocab (modulo the number loaded: 7 from testdata plus the 3 synthetic
  // ones), byte 1 the flags (1 add_special, 2 parse_special, 4 decode special, 8 keep space).
  std::vector<std::string> texts(std::begin(kTexts), std::end(kTexts));
  texts.push_back(std::string("a\0b", 3));
  for (std::string& t : LongTexts()) texts.push_back(std::move(t));
  int n = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    for (int vocab = 0; vocab < 10; ++vocab) {
      for (uint8_t flags : {uint8_t{0}, uint8_t{3}}) {
        std::string seed;
        seed += static_cast<char>(vocab);
        seed += static_cast<char>(flags | (vocab % 2 ? 4 : 0) | (i % 3 == 0 ? 8 : 0));
        seed += texts[i];
        char name[64];
        std::snprintf(name, sizeof name, "text%03zu-v%d-f%d", i, vocab, flags);
        Write(dir / name, seed);
        ++n;
      }
    }
  }
  const std::vector<std::string> inp = InpTexts(testdata);
  for (size_t i = 0; i < inp.size(); ++i) {
    std::string seed;
    seed += static_cast<char>(i % 10);
    seed += static_cast<char>((i / 10) % 16);
    seed += inp[i];
    char name[64];
    std::snprintf(name, sizeof name, "inp%04zu", i);
    Write(dir / name, seed);
  }
  std::printf("tokenizer: %d seeds from built-in texts, %zu from %s\n", n, inp.size(),
              inp.empty() ? "no .inp files (testdata absent)" : (testdata / "vocab").c_str());
}

void MakeVocabs(const fs::path& dir) {
  fs::create_directories(dir);
  struct V {
    const char* name;
    forge::VocabKind kind;
    int64_t n;
  };
  for (const V& v :
       {V{"spm", forge::VocabKind::kSpm, 512}, V{"llama3", forge::VocabKind::kBpeLlama3, 1024},
        V{"qwen2", forge::VocabKind::kBpeQwen2, 1024}}) {
    GgufWriter w;
    w.Set("general.architecture", GgufValue::String("llama"));
    w.Set("general.name", GgufValue::String(std::string("synthetic-") + v.name));
    for (auto& [key, value] : forge::SyntheticVocab(v.kind, v.n)) w.Set(key, value);
    Write(dir / (std::string(v.name) + ".gguf"), Serialize(w));
  }
}

// ---- HTTP ----

std::string Post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void MakeHttpSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string completion = R"({"prompt":"Once upon a time","max_tokens":8,"temperature":0})";
  const std::string chat =
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi \u00e9"}],"max_tokens":4,"stream":true})";
  const std::pair<const char*, std::string> seeds[] = {
      {"get-health", "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"},
      {"get-models",
       "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer k\r\n\r\n"},
      {"get-metrics-http10", "GET /metrics HTTP/1.0\r\n\r\n"},
      {"post-completion", Post("/v1/completions", completion)},
      {"post-completion-stream",
       Post("/v1/completions", R"({"prompt":[1,2,3],"stream":true,"max_tokens":2,"stop":["\n"]})")},
      {"post-chat", Post("/v1/chat/completions", chat, "Connection: close\r\n")},
      {"post-tokenize", Post("/tokenize", R"({"content":"hello <s>","add_special":true})")},
      {"post-embeddings",
       Post("/v1/embeddings",
            R"({"input":["a b",[1,2,3],""],"encoding_format":"base64","dimensions":0})")},
      {"post-detokenize", Post("/detokenize", R"({"tokens":[1,2,-1,999999999]})")},
      {"chunked",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "a\r\n{\"prompt\":\r\n10;ext=1\r\n\"hi\",\"max_tokens\":1}\r\n0\r\nTrailer: x\r\n\r\n"},
      {"expect-continue", Post("/v1/completions", completion, "Expect: 100-continue\r\n")},
      {"pipelined", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
                        Post("/tokenize", R"({"content":"a"})") +
                        "GET /v1/models HTTP/1.1\r\n\r\n"},
      {"duplicate-content-length",
       "POST /tokenize HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: "
       "17\r\n\r\n{\"content\":\"a\"}"},
      {"bad-content-length", "POST /tokenize HTTP/1.1\r\nContent-Length: -1\r\n\r\n{}"},
      {"huge-content-length",
       "POST /tokenize HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n{}"},
      {"bad-chunk-size",
       "POST /tokenize HTTP/1.1\r\nTransfer-Encoding: "
       "chunked\r\n\r\nfffffffffffffffff\r\n{}\r\n0\r\n\r\n"},
      {"bad-request-line", "GET\r\n\r\n"},
      {"http2-preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
      {"non-utf8-path", "GET /\xff\xfe\x80%00%ZZ HTTP/1.1\r\n\r\n"},
      {"folded-header", "GET /health HTTP/1.1\r\nX: a\r\n b\r\nHost: x\r\n\r\n"},
      {"bare-lf", "GET /health HTTP/1.1\nHost: x\n\n"},
      {"deep-json", Post("/v1/completions", std::string(200, '[') + std::string(200, ']'))},
      {"wrong-types",
       Post(
           "/v1/chat/completions",
           R"({"messages":"x","max_tokens":"8","temperature":null,"n":-1,"logit_bias":{"-5":1e999}})")},
      {"invalid-utf8-json", Post("/v1/completions", "{\"prompt\":\"\xc3\x28\xed\xa0\x80\"}")},
  };
  // fuzz/http_fuzz.cc's input: byte 0 sets the size of the pieces the bytes arrive in (1 + it).
  for (const auto& [name, text] : seeds) {
    for (int piece : {256, 1, 7}) {
      Write(dir / (std::string(name) + "-p" + std::to_string(piece)),
            std::string(1, static_cast<char>(piece - 1)) + text);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [--testdata DIR]\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  fs::path testdata;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--testdata") testdata = argv[i + 1];
  }
  for (const char* sub : {"gguf", "tokenizer", "vocabs", "http"}) fs::remove_all(out / sub);
  MakeGgufSeeds(out / "gguf");
  MakeTokenizerSeeds(out / "tokenizer", testdata);
  MakeVocabs(out / "vocabs");
  MakeHttpSeeds(out / "http");
  std::printf("forge_make_fuzz_seeds: %d files under %s\n", g_files, out.c_str());
  return 0;
}
