#include "scenario_reader.h"

#include <cmath>
#include <functional>

namespace distmetrics::harness::detail {

using nlohmann::json;

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// A TOML number as a double: toml++'s value<double>() is empty for an integer no double holds
// exactly (9223372036854775807), which is rounded here instead (found by scenario_fuzz).
double number_as_double(const toml::node& n) {
  if (const auto* i = n.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = n.as_floating_point()) return f->get();
  return NAN;
}

std::optional<json> golden_to_value(const toml::node& node, std::string& problem) {
  if (node.is_number()) return number_as_double(node);
  if (const auto* s = node.as_string()) {
    const std::string v = s->get();
    if (v == "nan" || v == "inf" || v == "-inf") return json(v);
    problem = "a golden string must be \"nan\", \"inf\" or \"-inf\", got \"" + v + "\"";
    return std::nullopt;
  }
  if (const auto* t = node.as_table()) {
    json out = json::object();
    for (auto&& [key, value] : *t) {
      auto v = golden_to_value(value, problem);
      if (!v) return std::nullopt;
      out[std::string(key.str())] = *v;
    }
    return out;
  }
  if (node.is_array()) {
    // Shape from the first element at every depth; every sub-list must match it.
    std::vector<std::int64_t> shape;
    const toml::node* probe = &node;
    while (const auto* a = probe->as_array()) {
      shape.push_back(static_cast<std::int64_t>(a->size()));
      if (a->empty()) break;
      probe = a->get(0);
    }
    json values = json::array();
    std::function<bool(const toml::node&, std::size_t)> flatten = [&](const toml::node& n, std::size_t depth) {
      if (depth == shape.size()) {
        if (!n.is_number()) {
          problem = std::string("a golden tensor must hold numbers, found ") + toml_type_name(n);
          return false;
        }
        values.push_back(number_as_double(n));
        return true;
      }
      const auto* a = n.as_array();
      if (!a || static_cast<std::int64_t>(a->size()) != shape[depth]) {
        problem = "a golden tensor must be rectangular (every list at one depth the same length)";
        return false;
      }
      for (const auto& item : *a)
        if (!flatten(item, depth + 1)) return false;
      return true;
    };
    if (!flatten(node, 0)) return std::nullopt;
    return json{{"dtype", "float64"}, {"shape", shape}, {"values", values}};
  }
  problem = std::string("a golden value must be a number, a list or a table, got ") + toml_type_name(node);
  return std::nullopt;
}

}  // namespace distmetrics::harness::detail
