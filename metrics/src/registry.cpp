#include "distmetrics/metrics/registry.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "distmetrics/metrics/errors.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Levenshtein distance, case-insensitive.
std::size_t edit_distance(const std::string& a_in, const std::string& b_in) {
  const std::string a = lower(a_in), b = lower(b_in);
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean "x"?)" for the closest candidates, or "" when none is close.
std::string suggestion(const std::string& given, const std::vector<std::string>& candidates) {
  std::vector<std::string> close;
  std::size_t best = std::string::npos;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(given, c);
    const bool contains = given.size() >= 3 && lower(c).find(lower(given)) != std::string::npos;
    const std::size_t limit = std::max<std::size_t>(2, std::min(given.size(), c.size()) / 3);
    if (d > limit && !contains) continue;
    const std::size_t score = contains ? 0 : d;
    if (score < best) {
      best = score;
      close.clear();
    }
    if (score == best) close.push_back(c);
  }
  if (close.empty()) return "";
  std::string out = " (did you mean ";
  for (std::size_t i = 0; i < close.size(); ++i) out += (i ? " or \"" : "\"") + close[i] + "\"";
  return out + "?)";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::string type_description(const std::string& type) {
  if (type == "int") return "an integer";
  if (type == "float") return "a number";
  if (type == "bool") return "true or false";
  if (type == "string") return "a string";
  if (type == "int_list") return "a list of integers";
  if (type == "float_list") return "a list of numbers";
  if (type == "object") return "a table (JSON object)";
  return type;
}

bool has_type(const nlohmann::json& value, const std::string& type) {
  if (type == "int") return value.is_number_integer();
  if (type == "float") return value.is_number();
  if (type == "bool") return value.is_boolean();
  if (type == "string") return value.is_string();
  if (type == "object") return value.is_object();
  if (type == "int_list" || type == "float_list") {
    if (!value.is_array()) return false;
    for (const auto& item : value) {
      if (!(type == "int_list" ? item.is_number_integer() : item.is_number())) return false;
    }
    return true;
  }
  throw std::logic_error("ParamSpec: unknown type \"" + type + "\"");
}

std::string shown(const nlohmann::json& value) {
  std::string text = value.dump();
  const char* kind = value.is_string() ? "string" : value.is_boolean() ? "bool"
                     : value.is_number_integer() ? "integer" : value.is_number() ? "number"
                     : value.is_array() ? "list" : value.is_object() ? "table" : "null";
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text + " (" + kind + ")";
}

}  // namespace

MetricRegistry& MetricRegistry::reference() {
  static MetricRegistry* registry = [] {
    auto* r = new MetricRegistry();  // never destroyed: plugins may look it up during exit
    detail::register_reference_metrics(*r);
    return r;
  }();
  return *registry;
}

void MetricRegistry::add(MetricSpec spec) {
  if (spec.name.empty()) throw std::invalid_argument("MetricRegistry: a metric needs a name");
  if (!spec.make) throw std::invalid_argument("MetricRegistry: metric \"" + spec.name + "\" has no make function");
  if (specs_.count(spec.name)) {
    throw std::invalid_argument("MetricRegistry: metric \"" + spec.name + "\" is already registered");
  }
  const std::string name = spec.name;
  specs_.emplace(name, std::move(spec));
}

const MetricSpec* MetricRegistry::find(const std::string& name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

std::vector<std::string> MetricRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, spec] : specs_) out.push_back(name);
  return out;
}

nlohmann::json MetricRegistry::resolve_params(const std::string& name, const nlohmann::json& params) const {
  const MetricSpec* spec = find(name);
  if (spec == nullptr) {
    throw ParamError(name, "", "unknown metric \"" + name + "\"" + suggestion(name, names()) +
                                   "; known metrics: " + join(names()));
  }
  if (!params.is_null() && !params.is_object()) {
    throw ParamError(name, "", name + ": parameters must be a table (JSON object), got " + shown(params));
  }
  std::vector<std::string> known;
  for (const ParamSpec& p : spec->params) known.push_back(p.name);
  if (params.is_object()) {
    for (const auto& [key, value] : params.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        throw ParamError(name, key, "unknown parameter" + suggestion(key, known) + "; " + name +
                                        (known.empty() ? " takes no parameters" : " takes: " + join(known)));
      }
    }
  }
  nlohmann::json resolved = nlohmann::json::object();
  for (const ParamSpec& p : spec->params) {
    if (!params.is_object() || !params.contains(p.name)) {
      if (p.required()) throw ParamError(name, p.name, "required (" + p.description + ")");
      resolved[p.name] = p.default_value;
      continue;
    }
    const nlohmann::json& value = params.at(p.name);
    if (!has_type(value, p.type)) {
      throw ParamError(name, p.name, "expected " + type_description(p.type) + ", got " + shown(value));
    }
    if (!p.choices.empty()) {
      const std::string text = value.get<std::string>();
      if (std::find(p.choices.begin(), p.choices.end(), text) == p.choices.end()) {
        throw ParamError(name, p.name, "expected one of " + join(p.choices) + ", got \"" + text + "\"" +
                                           suggestion(text, p.choices));
      }
    }
    resolved[p.name] = p.type == "float" ? nlohmann::json(value.get<double>()) : value;
  }
  if (spec->validate) spec->validate(resolved);
  return resolved;
}

std::unique_ptr<Metric> MetricRegistry::make(const std::string& name, const nlohmann::json& params,
                                             c10::Device device) const {
  const nlohmann::json resolved = resolve_params(name, params);
  std::unique_ptr<Metric> metric;
  try {
    metric = find(name)->make(resolved);
  } catch (const InputError& e) {  // a constructor rejecting a value (e.g. num_classes 0 for multiclass)
    const std::string text = e.what();
    const std::string prefix = e.metric() + ": " + e.argument() + ": ";
    throw ParamError(name, e.argument(), text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text);
  }
  metric->to(device);
  return metric;
}

}  // namespace distmetrics::metrics
