// The scenario library (scenarios/ at the top of the repository) as GoogleTests: every scenario
// file x variant, single-process (world size 1) and multi-rank, through the scenario fixtures.
// One instantiation per backend and world size, so that each ctest entry (scenarios/<backend>/ws<N>)
// runs its variants in one process on one reused rank pool.
#include "distmetrics/fixtures/scenario_test.h"

namespace {

distmetrics::harness::Selection only(const char* backend, int world_size) {
  distmetrics::harness::Selection s;
  s.backends = {backend};
  s.world_sizes = {world_size};
  return s;
}

}  // namespace

class ScenarioLibrary : public distmetrics::fixtures::ScenarioVariantTest {};
TEST_P(ScenarioLibrary, Run) { run_case(); }

#define DISTMETRICS_LIBRARY_PART(backend, ws)                                                               \
  INSTANTIATE_TEST_SUITE_P(backend##_ws##ws, ScenarioLibrary,                                               \
                           ::testing::ValuesIn(distmetrics::fixtures::scenario_cases({DISTMETRICS_SCENARIO_DIR}, \
                                                                                     only(#backend, ws))),  \
                           distmetrics::fixtures::scenario_case_name)

DISTMETRICS_LIBRARY_PART(gloo, 1);
DISTMETRICS_LIBRARY_PART(gloo, 2);
DISTMETRICS_LIBRARY_PART(gloo, 3);
DISTMETRICS_LIBRARY_PART(gloo, 4);
DISTMETRICS_LIBRARY_PART(mpi, 1);
DISTMETRICS_LIBRARY_PART(mpi, 2);
DISTMETRICS_LIBRARY_PART(mpi, 3);
DISTMETRICS_LIBRARY_PART(mpi, 4);
DISTMETRICS_LIBRARY_PART(nccl, 1);
DISTMETRICS_LIBRARY_PART(nccl, 2);
