// A Scenario written back as scenario TOML (explore.h): the cases explore runs and the shrunk
// scenarios it saves are files of the one format, read by the one loader and written from its
// one field table.
#include <set>

#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/scenario_fields.h"

namespace distmetrics::harness::explore {
// Every field as its descriptor's to_toml says (scenario_fields.h); `properties` only when asked.
std::string scenario_to_toml(const Scenario& s, const std::vector<std::string>& header, bool with_properties) {
  std::string out;
  for (const auto& line : header) out += "# " + line + "\n";
  const std::set<std::string> leave_out = with_properties ? std::set<std::string>{} : std::set<std::string>{"properties"};
  return out + scenario_fields_toml(s, scenario_fields(), leave_out);
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
