// JsonSchemaConverter's shared rules: JSON whitespace, string characters, numbers, literals,
// any value/object/array, and the string formats (date, time, date-time, uuid, email).
#include "grammar/json_schema_converter.h"

namespace forge {

std::string JsonSchemaConverter::Ws() {
  if (options_.max_whitespace <= 0) return rules_.AddNamed("ws", "\"\"");
  // Compact (nothing or one space) or pretty-printed (a newline and its indentation): never a
  // run of blank lines or spaces that a weak model could fill its whole budget with.
  return rules_.AddNamed("ws", "( \" \" | \"\\n\" [ \\t]{0," +
                                   std::to_string(options_.max_whitespace) + "} )?");
}

std::string JsonSchemaConverter::Char() {
  // One character of a JSON string; \u escapes of surrogates are left out so that each char is
  // one code point (minLength and maxLength count code points).
  rules_.AddNamed("hex", "[0-9a-fA-F]");
  return rules_.AddNamed(
      "char",
      "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] hex{3} | [dD] "
      "[0-7] hex{2}))");
}

std::string JsonSchemaConverter::StringRule() {
  const std::string c = Char();
  return rules_.AddNamed("string", "\"\\\"\" " + c + "* \"\\\"\"");
}

std::string JsonSchemaConverter::IntegerRule() {
  return rules_.AddNamed("integer", "\"-\"? (\"0\" | [1-9] [0-9]{0," +
                                        std::to_string(options_.max_number_digits - 1) + "})");
}

std::string JsonSchemaConverter::NumberRule() {
  return rules_.AddNamed(
      "number", "\"-\"? (\"0\" | [1-9] [0-9]{0," + std::to_string(options_.max_number_digits - 1) +
                    "}) (\".\" [0-9]{1," + std::to_string(options_.max_fraction_digits) +
                    "})? ([eE] [-+]? [0-9]{1,2})?");
}

std::string JsonSchemaConverter::BooleanRule() {
  return rules_.AddNamed("boolean", "\"true\" | \"false\"");
}

std::string JsonSchemaConverter::NullRule() { return rules_.AddNamed("null", "\"null\""); }

std::string JsonSchemaConverter::AnyValue() {
  if (rules_.Has("value")) return "value";
  // Reserve first: value, object and array refer to one another.
  rules_.AddNamed("value", "object | array | " + StringRule() + " | " + NumberRule() + " | " +
                               BooleanRule() + " | " + NullRule());
  AnyObject();
  AnyArray();
  return "value";
}

std::string JsonSchemaConverter::AnyObject() {
  if (rules_.Has("object")) return "object";
  const std::string ws = Ws();
  rules_.AddNamed("object", "\"{\" " + ws + " (member (" + ws + " \",\" " + ws + " member)* " + ws +
                                ")? \"}\"");
  rules_.AddNamed("member", StringRule() + " " + ws + " \":\" " + ws + " value");
  AnyValue();
  return "object";
}

std::string JsonSchemaConverter::AnyArray() {
  if (rules_.Has("array")) return "array";
  const std::string ws = Ws();
  rules_.AddNamed(
      "array", "\"[\" " + ws + " (value (" + ws + " \",\" " + ws + " value)* " + ws + ")? \"]\"");
  AnyValue();
  return "array";
}

StatusOr<std::string> JsonSchemaConverter::Format(const std::string& format,
                                                  const std::string& path) {
  if (format == "date" || format == "date-time") {
    rules_.AddNamed("date-year", "[1-9] [0-9]{3}");
    rules_.AddNamed("date-day28", "\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]");
    rules_.AddNamed("date-day30", "date-day28 | \"29\" | \"30\"");
    rules_.AddNamed("date-day31", "date-day30 | \"31\"");
    // February stops at 28 (29 is valid only in leap years).
    rules_.AddNamed("date",
                    "date-year \"-\" ((\"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | "
                    "\"12\") \"-\" date-day31 | (\"04\" | \"06\" | \"09\" | \"11\") \"-\" "
                    "date-day30 | \"02\" \"-\" date-day28)");
    if (format == "date") return std::string("date");
  }
  if (format == "time" || format == "date-time") {
    rules_.AddNamed("time-hh", "[01] [0-9] | \"2\" [0-3]");
    rules_.AddNamed("time-mm", "[0-5] [0-9]");
    rules_.AddNamed("time",
                    "time-hh \":\" time-mm \":\" time-mm (\".\" [0-9]{1,6})? (\"Z\" | "
                    "[+-] time-hh \":\" time-mm)");
    if (format == "time") return std::string("time");
    return rules_.AddNamed("date-time", "date \"T\" time");
  }
  if (format == "uuid") {
    rules_.AddNamed("hex", "[0-9a-fA-F]");
    return rules_.AddNamed("uuid", "hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}");
  }
  if (format == "email") {
    rules_.AddNamed("email-atom", "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\x2D]{1,32}");
    rules_.AddNamed("email-label", "[A-Za-z0-9] ([A-Za-z0-9\\x2D]{0,30} [A-Za-z0-9])?");
    return rules_.AddNamed("email",
                           "email-atom (\".\" email-atom){0,3} \"@\" email-label "
                           "(\".\" email-label){1,4}");
  }
  return Error(path, "format '" + format +
                         "' is not supported (date, time, date-time, uuid, "
                         "email are)");
}

}  // namespace forge
