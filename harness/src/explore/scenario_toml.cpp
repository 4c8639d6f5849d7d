// A Scenario written back as scenario TOML (explore.h): the cases explore runs and the shrunk
// scenarios it saves are files of the one format, read by the one loader.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "distmetrics/harness/explore.h"

namespace distmetrics::harness::explore {
namespace {

using nlohmann::json;

std::string toml_string(const std::string& text) { return json(text).dump(); }  // JSON escapes are TOML's

std::string toml_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string toml_value(const json& v) {
  if (v.is_string()) return toml_string(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return toml_float(v.get<double>());
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_value(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += std::string(first ? " " : ", ") + toml_string(key) + " = " + toml_value(value);
      first = false;
    }
    return out + (first ? "}" : " }");
  }
  return "\"\"";  // null has no TOML form; the parameters explore writes are never null
}

std::string list(const std::vector<std::string>& items) {
  json array = json::array();
  for (const auto& item : items) array.push_back(item);
  return toml_value(array);
}

}  // namespace

std::string scenario_to_toml(const Scenario& s, const std::vector<std::string>& header, bool with_properties) {
  std::ostringstream out;
  for (const auto& line : header) out << "# " << line << "\n";
  out << "description = " << toml_string(s.description) << "\n";
  if (!s.tags.empty()) out << "tags = " << list(s.tags) << "\n";
  out << "deadline = " << toml_float(s.deadline_seconds) << "\n";
  out << "single_process = " << toml_string(s.single_process) << "\n";
  std::vector<std::string> steps;
  for (const auto& step : s.script) steps.push_back(step.text);
  out << "script = " << list(steps) << "\n";
  if (with_properties) out << "properties = " << list(s.properties) << "\n";

  out << "\n[metric]\nname = " << toml_string(s.metric) << "\n";
  if (!s.metric_params.empty()) out << "params = " << toml_value(s.metric_params) << "\n";

  out << "\n[data]\n";
  if (!s.data.file.empty() && s.data.generator.empty()) {  // a built-in generator's structured file: its generator
    out << "file = " << toml_string(s.data.file) << "\n";
    if (s.data.num_samples >= 0) out << "num_samples = " << s.data.num_samples << "\n";
  } else {
    out << "generator = " << toml_string(s.data.generator) << "\n";
    if (!s.data.params.empty()) out << "params = " << toml_value(s.data.params) << "\n";
    out << "num_samples = " << s.data.num_samples << "\n";
  }
  out << "seed = " << s.data.seed << "\n";
  out << "batch_size = " << s.batch_size << "\n";
  out << "dtype = " << toml_string(s.data.dtype) << "\n";

  out << "\n[variants]\n";
  json sizes = json::array();
  for (int w : s.world_sizes) sizes.push_back(w);
  out << "world_sizes = " << toml_value(sizes) << "\n";
  out << "backends = " << list(s.backends) << "\n";
  out << "shards = " << list(s.shards) << "\n";
  out << "placements = " << list(s.placements) << "\n";
  if (!s.dtypes.empty()) out << "dtypes = " << list(s.dtypes) << "\n";

  // batch_invariant's other sizes, unless they are what the loader gives a file without them.
  if (!s.batch_invariant_sizes.empty() && s.batch_invariant_sizes != default_batch_invariant_sizes(s.batch_size)) {
    json sizes_json = json::array();
    for (auto size : s.batch_invariant_sizes) sizes_json.push_back(size);
    out << "\n[batch_invariant]\nbatch_sizes = " << toml_value(sizes_json) << "\n";
  }

  out << "\n[tolerance]\nrtol = " << toml_float(s.tolerance.rtol) << "\natol = " << toml_float(s.tolerance.atol) << "\n";
  if (!s.tolerance.exact.empty()) out << "exact = " << list(s.tolerance.exact) << "\n";
  return out.str();
}

std::optional<Scenario> load_case(const std::string& toml, const std::string& name, std::string* why) {
  LoadResult loaded = load_scenario_text(toml, name + ".toml", name);
  if (!loaded.diagnostics.empty()) {
    if (why) *why = loaded.diagnostics.front().to_string();
    return std::nullopt;
  }
  return std::move(loaded.scenario);
}

}  // namespace distmetrics::harness::explore
