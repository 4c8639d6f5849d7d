// The hooks through which the harness calls the Python a scenario names (scenario_python.h).
#include "distmetrics/harness/scenario_python.h"

#include <map>
#include <mutex>
#include <optional>
#include <regex>

namespace distmetrics::harness {
namespace {

struct Installed {
  std::mutex mutex;
  std::optional<ScenarioPython> hooks;
  bool allowed = false;
};

Installed& installed() {
  static Installed state;
  return state;
}

}  // namespace

void install_scenario_python(ScenarioPython hooks) {
  std::lock_guard<std::mutex> lock(installed().mutex);
  installed().hooks = std::move(hooks);
}

void allow_scenario_python(bool allowed) {
  std::lock_guard<std::mutex> lock(installed().mutex);
  installed().allowed = allowed;
}

std::string scenario_python_unavailable() {
  std::lock_guard<std::mutex> lock(installed().mutex);
  if (!installed().hooks)
    return "this distmetrics was built without Python support (python3-dev, pybind11-dev, python3-torch), so it "
           "cannot call the Python a scenario names";
  if (!installed().allowed)
    return "a scenario file cannot make distmetrics run code: give --allow-python to let scenario files call the "
           "Python they name (data.python, data.structured, reference.python)";
  return "";
}

std::string builtin_python_unavailable() {
  std::lock_guard<std::mutex> lock(installed().mutex);
  if (!installed().hooks)
    return "its samples are made in Python, which this process has not started: check a Python metric "
           "(`distmetrics conform --python SOURCE`), or give --allow-python";
  return "";
}

const ScenarioPython& scenario_python() {
  std::lock_guard<std::mutex> lock(installed().mutex);
  if (!installed().hooks) throw std::logic_error("no Python hooks are installed");
  return *installed().hooks;
}

nlohmann::json python_reference_value(const Scenario& scenario, const Dataset& data) {
  if (!scenario.reference) throw std::logic_error("the scenario has no [reference]");
  data.require_whole("reference.python");
  struct Answer {
    nlohmann::json value;
    std::string error;
  };
  static std::mutex mutex;
  static std::map<std::string, Answer> answers;
  const std::string key = scenario.reference->python + "\n" + scenario.reference->kwargs.dump() + "\n" + scenario.data.to_json().dump();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = answers.find(key);
  if (it == answers.end()) {
    Answer answer;
    try {
      if (const auto why = scenario_python_unavailable(); !why.empty()) throw std::runtime_error(why);
      metrics::Batch all;
      all.input = data.input;
      all.target = data.target;
      all.weight = data.weight;
      all.structured_file = data.structured_file;
      answer.value = scenario_python().reference(scenario.reference->python, scenario.reference->kwargs, all);
    } catch (const std::exception& e) {
      answer.error = e.what();
    }
    it = answers.emplace(key, std::move(answer)).first;
  }
  if (!it->second.error.empty()) throw std::runtime_error(it->second.error);
  return it->second.value;
}

std::string python_callable_spec_problem(const std::string& spec) {
  static const std::regex form("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*");
  if (std::regex_match(spec, form)) return "";
  return "'" + spec + "' is not a Python callable's name: write 'module:attribute', e.g. 'sklearn.metrics:f1_score'";
}

}  // namespace distmetrics::harness
