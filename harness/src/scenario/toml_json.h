// TOML nodes as JSON (parameters travel as JSON), and readable TOML type names for messages.
#pragma once

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <string>

namespace distmetrics::harness::detail {

inline const char* toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "a list";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

inline nlohmann::json toml_to_json(const toml::node& node) {
  if (const auto* t = node.as_table()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto&& [key, value] : *t) out[std::string(key.str())] = toml_to_json(value);
    return out;
  }
  if (const auto* a = node.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& value : *a) out.push_back(toml_to_json(value));
    return out;
  }
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return i->get();
  if (const auto* f = node.as_floating_point()) return f->get();
  if (const auto* b = node.as_boolean()) return b->get();
  std::ostringstream text;
  if (const auto* d = node.as_date()) text << d->get();
  else if (const auto* tm = node.as_time()) text << tm->get();
  else if (const auto* dt = node.as_date_time()) text << dt->get();
  return text.str();
}

}  // namespace distmetrics::harness::detail
