// BoundArgs: binds a call's positional and keyword arguments to parameter names as Python does,
// for the builtin filters, tests, methods and globals.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jinja/value.h"

namespace forge::jinja {

class BoundArgs {
 public:
  // Errors: more positional arguments than `params`, an unknown or repeated keyword, or fewer
  // than `required` of the leading params given.
  static StatusOr<BoundArgs> Bind(std::string_view fn, const CallArgs& call,
                                  const std::vector<std::string_view>& params,
                                  size_t required = 0) {
    BoundArgs b;
    b.values_.resize(params.size());
    b.present_.assign(params.size(), false);
    if (call.args.size() > params.size()) {
      return InvalidArgumentError(std::string(fn) + "() takes at most " +
                                  std::to_string(params.size()) + " arguments (" +
                                  std::to_string(call.args.size()) + " given)");
    }
    for (size_t i = 0; i < call.args.size(); ++i) {
      b.values_[i] = call.args[i];
      b.present_[i] = true;
    }
    for (const auto& [name, value] : call.kwargs) {
      size_t i = 0;
      while (i < params.size() && params[i] != name) ++i;
      if (i == params.size()) {
        return InvalidArgumentError(std::string(fn) + "() got an unexpected keyword argument '" +
                                    name + "'");
      }
      if (b.present_[i]) {
        return InvalidArgumentError(std::string(fn) + "() got multiple values for argument '" +
                                    name + "'");
      }
      b.values_[i] = value;
      b.present_[i] = true;
    }
    for (size_t i = 0; i < required && i < params.size(); ++i) {
      if (!b.present_[i]) {
        return InvalidArgumentError(std::string(fn) + "() missing required argument '" +
                                    std::string(params[i]) + "'");
      }
    }
    return b;
  }

  bool has(size_t i) const { return present_[i]; }
  // The argument, or `fallback` when it was not passed.
  Value get(size_t i, Value fallback = Value::None()) const {
    return present_[i] ? values_[i] : fallback;
  }

 private:
  std::vector<Value> values_;
  std::vector<bool> present_;
};

}  // namespace forge::jinja
