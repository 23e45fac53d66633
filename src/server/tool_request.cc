// ParseRequestTools and ParseMessageToolFields: the tool-calling fields of a request.
#include "server/tool_request.h"

#include <set>

#include "server/jinja_json.h"
#include "server/json_body.h"

namespace forge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ApiError Bad(const std::string& field, const std::string& what) {
  return ApiError::InvalidRequest("'" + field + "': " + what, field);
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

std::optional<ApiError> ParseRequestTools(const json& body, const ordered_json* ordered_body,
                                          RequestTools* out) {
  *out = RequestTools{};
  auto tools = body.find("tools");
  if (tools != body.end()) {
    if (!tools->is_array()) return Bad("tools", "expected a list");
    if (tools->size() > kMaxTools) {
      return Bad("tools", "at most " + std::to_string(kMaxTools) + " tools");
    }
    // The same list in the client's key order (schemas' properties keep their order).
    ordered_json ordered;
    if (ordered_body != nullptr && ordered_body->contains("tools")) {
      ordered = (*ordered_body)["tools"];
    }
    if (!ordered.is_array() || ordered.size() != tools->size()) {
      ordered = ordered_json::parse(tools->dump());
    }
    std::set<std::string> names;
    for (size_t i = 0; i < ordered.size(); ++i) {
      const std::string field = "tools[" + std::to_string(i) + "]";
      const ordered_json& t = ordered[i];
      if (!t.is_object()) return Bad(field, "expected an object");
      if (t.contains("type") && t["type"] != "function") {
        return Bad(field + ".type", "only \"function\" tools are supported");
      }
      if (!t.contains("function") || !t["function"].is_object()) {
        return Bad(field + ".function", "expected an object");
      }
      const ordered_json& f = t["function"];
      if (!f.contains("name") || !f["name"].is_string() ||
          !ValidName(f["name"].get<std::string>())) {
        return Bad(field + ".function.name", "expected a name of 1 to 64 of [A-Za-z0-9_-]");
      }
      const std::string name = f["name"].get<std::string>();
      if (!names.insert(name).second) return Bad(field + ".function.name", "'" + name + "' twice");
      if (f.contains("description") && !f["description"].is_null() &&
          !f["description"].is_string()) {
        return Bad(field + ".function.description", "expected a string");
      }
      ToolSpec spec;
      spec.name = name;
      if (f.contains("parameters") && !f["parameters"].is_null()) {
        if (!f["parameters"].is_object()) {
          return Bad(field + ".function.parameters", "expected a JSON schema (an object)");
        }
        spec.parameters = f["parameters"];
      }
      out->specs.push_back(std::move(spec));
    }
    out->template_value = JinjaFromJson(ordered);
    out->json_text = ordered.dump();
  }
  if (auto pc = body.find("parallel_tool_calls"); pc != body.end()) {
    if (!pc->is_boolean()) return Bad("parallel_tool_calls", "expected a boolean");
    out->parallel = pc->get<bool>();
  }
  if (auto tc = body.find("tool_choice"); tc != body.end()) {
    if (tc->is_string()) {
      const std::string c = tc->get<std::string>();
      if (c == "auto") {
        out->choice = ToolChoice::kAuto;
      } else if (c == "none") {
        out->choice = ToolChoice::kNone;
      } else if (c == "required") {
        out->choice = ToolChoice::kRequired;
      } else {
        return Bad("tool_choice", "expected \"none\", \"auto\", \"required\" or a function");
      }
    } else if (tc->is_object() && tc->contains("function") && (*tc)["function"].is_object() &&
               (*tc)["function"].contains("name") && (*tc)["function"]["name"].is_string()) {
      out->choice = ToolChoice::kNamed;
      out->named = (*tc)["function"]["name"].get<std::string>();
      bool known = false;
      for (const ToolSpec& s : out->specs) known |= s.name == out->named;
      if (!known) {
        return Bad("tool_choice", "names the function '" + out->named + "', which is not a tool");
      }
    } else {
      return Bad("tool_choice", "expected \"none\", \"auto\", \"required\" or "
                                "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (out->specs.empty() && out->choice != ToolChoice::kNone) {
      return Bad("tool_choice", "given without tools");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessageToolFields(
    const json& message, const std::string& field, ChatMessage* msg,
    std::vector<std::pair<std::string, std::string>>* texts) {
  if (auto id = message.find("tool_call_id"); id != message.end() && !id->is_null()) {
    if (!id->is_string()) return Bad(field + ".tool_call_id", "expected a string");
    msg->tool_call_id = id->get<std::string>();
    texts->emplace_back(field + ".tool_call_id", msg->tool_call_id);
  }
  if (auto name = message.find("name"); name != message.end() && !name->is_null()) {
    if (!name->is_string()) return Bad(field + ".name", "expected a string");
    msg->name = name->get<std::string>();
    texts->emplace_back(field + ".name", msg->name);
  }
  auto calls = message.find("tool_calls");
  if (calls == message.end() || calls->is_null()) return std::nullopt;
  if (!calls->is_array()) return Bad(field + ".tool_calls", "expected a list");
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string f = field + ".tool_calls[" + std::to_string(i) + "]";
    const json& c = (*calls)[i];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) {
      return Bad(f, "expected {\"id\", \"type\": \"function\", \"function\": {...}}");
    }
    const json& fn = c["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) {
      return Bad(f + ".function.name", "expected a string");
    }
    ChatToolCall call;
    call.name = fn["name"].get<std::string>();
    if (c.contains("id") && !c["id"].is_null()) {
      if (!c["id"].is_string()) return Bad(f + ".id", "expected a string");
      call.id = c["id"].get<std::string>();
    }
    // The arguments: JSON text of an object (as OpenAI sends them); an object is taken too.
    ordered_json args = ordered_json::object();
    if (fn.contains("arguments") && !fn["arguments"].is_null()) {
      if (fn["arguments"].is_string()) {
        const std::string& text = fn["arguments"].get_ref<const std::string&>();
        if (auto e = CheckJsonShape(text, JsonLimits{})) {
          return Bad(f + ".function.arguments", e->message);
        }
        args = ordered_json::parse(text, nullptr, false);
      } else {
        args = ordered_json::parse(fn["arguments"].dump());
      }
      if (!args.is_object()) {
        return Bad(f + ".function.arguments", "expected the JSON text of an object");
      }
    }
    call.arguments = JinjaFromJson(args);
    texts->emplace_back(f + ".function.name", call.name);
    texts->emplace_back(f + ".id", call.id);
    texts->emplace_back(f + ".function.arguments", args.dump());
    msg->tool_calls.push_back(std::move(call));
  }
  return std::nullopt;
}

}  // namespace forge::server
