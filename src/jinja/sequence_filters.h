// The filters over sequences and mappings (sequence_filters.cc), for the filter table in
// filters.cc. Each takes the filtered value and the call's arguments.
#pragma once

#include <string_view>

#include "base/status.h"
#include "jinja/value.h"

namespace forge::jinja::internal {

StatusOr<Value> FJoin(const Value& v, const CallArgs& call);
StatusOr<Value> FFirstLast(const Value& v, const CallArgs& call, bool first);
StatusOr<Value> FList(const Value& v, const CallArgs& call);
StatusOr<Value> FItems(const Value& v, const CallArgs& call);
StatusOr<Value> FMap(const Value& v, const CallArgs& call);
// select / reject (attr = false) and selectattr / rejectattr (attr = true); keep = select.
StatusOr<Value> FSelect(const Value& v, const CallArgs& call, bool attr, bool keep);
StatusOr<Value> FSum(const Value& v, const CallArgs& call);
// which: "sort", "unique", "min" or "max".
StatusOr<Value> FOrdered(const Value& v, const CallArgs& call, std::string_view which);
StatusOr<Value> FDictSort(const Value& v, const CallArgs& call);
StatusOr<Value> FReverse(const Value& v, const CallArgs& call);

}  // namespace forge::jinja::internal
