// A metric source that includes the scenario engine, a layer above it: check_layers must fail.
#include "distmetrics/harness/scenario.h"
#include "distmetrics/runtime/comm.h"  // a layer below: fine
