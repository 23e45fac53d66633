// RewriteGguf.
#include "support/gguf_rewrite.h"

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace forge::testing {

std::string RewriteGguf(const std::string& src, const std::string& dst, const GgufKeys& keys,
                        const std::string& drop, const TensorEdit& edit) {
  auto in = GgufFile::Open(src);
  EXPECT_TRUE(in.ok()) << src << ": " << in.status().ToString();
  if (!in.ok()) return dst;
  GgufWriter w;
  for (const auto& [key, value] : (*in)->metadata()) w.Set(key, value);
  for (const auto& [key, value] : keys) w.Set(key, value);
  for (const auto& t : (*in)->tensors()) {
    if (t.name == drop) continue;
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    if (edit) edit(t.name, bytes);
    EXPECT_TRUE(w.AddTensor(t.name, t.type, t.dims, std::move(bytes)).ok()) << t.name;
  }
  EXPECT_TRUE(w.WriteFile(dst).ok()) << dst;
  return dst;
}

}  // namespace forge::testing
