// Test helper: renders templates with Debian's python3-jinja2 set up as HF transformers sets it
// up (render.py beside this file), in one python3 process per batch of cases, so that the C++
// interpreter can be compared with it byte for byte. Also converts JSON test variables to
// jinja::Value.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jinja/value.h"
#include "support/test_env.h"

namespace forge::testing {

using OrderedJson = nlohmann::ordered_json;  // Python dicts keep insertion order; so must we

struct OracleCase {
  std::string tmpl;
  OrderedJson variables = OrderedJson::object();
  int64_t now = 0;  // what strftime_now() formats
};

struct OracleResult {
  bool ok = false;
  std::string output;   // when ok
  bool raised = false;  // the template called raise_exception()
  std::string type;     // the Python exception type otherwise
  std::string message;
};

// This folder: under $FORGE_SOURCE_DIR, else the checkout the tests were built from, else the
// working directory (the GPU machine runs the suite from a copy of the checkout).
inline std::string ChatTemplatesDir() {
  const std::string rel = "/tests/tokenizer/chat_templates";
  const char* env = std::getenv("FORGE_SOURCE_DIR");
  for (const std::string& root : {std::string(env ? env : ""), std::string(FORGE_SOURCE_DIR)}) {
    if (!root.empty() && FileExists(root + rel + "/render.py")) return root + rel;
  }
  return "." + rel;
}

inline std::string RenderScriptPath() { return ChatTemplatesDir() + "/render.py"; }

// Empty when python3 with jinja2 can run; else why not (the caller skips).
inline std::string JinjaUnavailableReason() {
  static const std::string reason = [] {
    if (std::system("python3 -c 'import jinja2' >/dev/null 2>&1") != 0) {
      return std::string("python3-jinja2 is not installed (apt-get install python3-jinja2)");
    }
    return std::string();
  }();
  return reason;
}

// Renders every case with jinja2; fails the current test if the script itself fails.
inline std::vector<OracleResult> RunOracle(const std::vector<OracleCase>& cases) {
  OrderedJson in = OrderedJson::array();
  for (const OracleCase& c : cases) {
    in.push_back({{"template", c.tmpl}, {"variables", c.variables}, {"now", c.now}});
  }
  const std::string dir = TempDir();
  const std::string in_path = dir + "/cases.json", out_path = dir + "/results.json";
  std::ofstream(in_path) << in.dump();
  const std::string cmd = "python3 '" + RenderScriptPath() + "' '" + in_path + "' > '" + out_path +
                          "' 2> '" + dir + "/stderr.txt'";
  std::vector<OracleResult> results;
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream err(dir + "/stderr.txt");
    std::stringstream ss;
    ss << err.rdbuf();
    ADD_FAILURE() << "render.py failed: " << ss.str();
    return results;
  }
  std::ifstream out(out_path);
  const OrderedJson parsed = OrderedJson::parse(out);
  for (const auto& r : parsed) {
    OracleResult o;
    o.ok = r.at("ok").get<bool>();
    if (o.ok) {
      o.output = r.at("output").get<std::string>();
    } else {
      o.raised = r.at("raised").get<bool>();
      o.type = r.at("type").get<std::string>();
      o.message = r.at("message").get<std::string>();
    }
    results.push_back(std::move(o));
  }
  EXPECT_EQ(results.size(), cases.size());
  return results;
}

inline jinja::Value ToValue(const OrderedJson& j) {
  switch (j.type()) {
    case OrderedJson::value_t::null:
      return jinja::Value::None();
    case OrderedJson::value_t::boolean:
      return jinja::Value::Bool(j.get<bool>());
    case OrderedJson::value_t::number_integer:
    case OrderedJson::value_t::number_unsigned:
      return jinja::Value::Int(j.get<int64_t>());
    case OrderedJson::value_t::number_float:
      return jinja::Value::Float(j.get<double>());
    case OrderedJson::value_t::string:
      return jinja::Value::String(j.get<std::string>());
    case OrderedJson::value_t::array: {
      jinja::ValueList items;
      for (const auto& item : j) items.push_back(ToValue(item));
      return jinja::Value::List(std::move(items));
    }
    case OrderedJson::value_t::object: {
      jinja::ValueMap map;
      for (const auto& [key, value] : j.items()) map.Set(key, ToValue(value));
      return jinja::Value::Map(std::move(map));
    }
    default:
      return jinja::Value::Undefined();
  }
}

inline std::vector<std::pair<std::string, jinja::Value>> ToVariables(const OrderedJson& j) {
  std::vector<std::pair<std::string, jinja::Value>> vars;
  for (const auto& [key, value] : j.items()) vars.emplace_back(key, ToValue(value));
  return vars;
}

inline std::string ReadTemplate(const std::string& name) {
  const std::string path = ChatTemplatesDir() + "/" + name + ".jinja";
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace forge::testing
