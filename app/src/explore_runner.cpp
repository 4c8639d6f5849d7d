#include "explore_runner.h"

#include <fstream>
#include <sstream>

#include "distmetrics/app/cli.h"

namespace distmetrics::app {

CaseRun run_case_folder(const CaseSource& source, const std::string& folder) {
  const std::string report = folder + "/report.json";
  std::vector<std::string> args = {"distmetrics"};
  if (source.plugin.empty() && source.python.empty()) {
    args.insert(args.end(), {"run", folder});
  } else {
    args.insert(args.end(), {"conform", source.plugin.empty() ? "--python" : "--plugin",
                             source.plugin.empty() ? source.python : source.plugin, "--metric", source.metric, folder});
  }
  std::ostringstream deadline;
  deadline << source.deadline;
  args.insert(args.end(), {"--json", report, "--quiet", "--hide-skips", "--deadline", deadline.str()});
  if (source.allow_python) args.push_back("--allow-python");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  cli_main(static_cast<int>(args.size()), argv.data(), out, err);

  CaseRun run;
  std::ifstream in(report);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!in || j.is_discarded() || !j.contains("variants")) {
    run.error = "the run wrote no report: " + err.str() + out.str();
    return run;
  }
  for (const auto& v : j["variants"])
    if (v.contains("scenario") && v["scenario"].is_string()) run.verdicts[v["scenario"].get<std::string>()] = v;
  return run;
}

}  // namespace distmetrics::app
