// How `explore` runs its cases: each through a harness::Session as `distmetrics run` runs a
// reference metric's variant and `distmetrics conform` a plugin's or a Python source's
// (adapt_scenario, the single-process reference on a helper worker, agrees_with_reference), on
// rank pools the session keeps for the whole search, so that a pool (and a Python rank's
// interpreter) starts once per world size, not once per case.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::plugin {
struct Plugin;
}

namespace distmetrics::app {

struct CaseSource {
  std::string metric;                        // the metric's name in the scenarios
  const plugin::Plugin* plugin = nullptr;    // a plugin or a Python source; null: the reference metric
  std::string plugin_path, python;           // as given (for reproduce commands)
  double deadline = 10;
  std::size_t max_pools = 3;  // rank pools kept up at once (one per world size)
};

class CaseRunner {
 public:
  explicit CaseRunner(const CaseSource& source);
  ~CaseRunner();
  // The verdict on the scenario's one variant.
  harness::Verdict run(const harness::Scenario& scenario);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace distmetrics::app
