// explore's cases of a plugin's or a Python source's metric (harness/explorer.h): each case run
// as `distmetrics conform` runs a variant (adapt_scenario, the single-process reference on a
// helper worker, agrees_with_reference: one ConformChecks), on rank pools the session keeps for
// the whole search, so that a pool (and a Python rank's interpreter) starts once per world size,
// not once per case.
#pragma once

#include <memory>

#include "distmetrics/harness/explorer.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::plugin {

class ExploreRunner : public harness::explore::CaseRunner {
 public:
  // `source` (a plugin, or a Python source presented as one) must outlive the runner. Starts the
  // helper worker (its start is not a case's).
  ExploreRunner(const Plugin& source, double deadline, std::size_t max_pools);
  ~ExploreRunner() override;
  harness::Verdict run(const harness::Scenario& scenario) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace distmetrics::plugin
