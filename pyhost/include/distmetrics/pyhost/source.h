// Python sources of metrics: `--python pkg.mod:factory`, `--python pkg.mod` or
// `--python ./metrics.py`, imported in every process that meets them (the supervisor, to list
// and check the metrics before any variant runs, and each rank worker).
//
// A Python metric travels in a scenario under a qualified name,
// "<metric>@python:<canonical source>" (python_qualified_name()), which the resolver installed by
// install_python_resolver() turns into a PythonMetric in any process.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "distmetrics/metrics/registry.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::pyhost {

// A source that cannot be used: it does not import, it has no such factory, a factory with the
// wrong signature, a metric that does not fit its adapter. The message says which and why, with
// the Python error's type, message and last frames.
class PythonSourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PythonSource {
  std::string spec;     // canonical: "/abs/metrics.py", "pkg.mod:factory", "pkg.mod"
  std::string module;   // the module's name
  std::string version;  // its __version__, if any
  std::string torch_version;  // torch.__version__ of the interpreter it runs in (the torch its metrics run on)
  // The source's metrics under their own names (their parameters: the reference metric's of the
  // same name, so the scenario's parameters pass through; none for a metric distmetrics lacks).
  metrics::MetricRegistry registry;
  std::vector<std::string> metric_names() const { return registry.names(); }
};

// Starts the interpreter if needed and imports the source (once per process and source).
// `metrics`: the names --metric gave (a bare `mod:factory` is registered under them). Throws
// PythonSourceError.
const PythonSource& load_python_source(const std::string& value, const std::vector<std::string>& metrics = {});

// Builds the metric once with these parameters and checks it fits its adapter (the methods and
// the update() signature the convention needs). Throws PythonSourceError; a metrics::ForeignError
// of type harness::kUnsupportedType (its message the reason) when the factory or the adapter
// raised Unsupported: these parameters are not something the metric takes. Returns JSON: the adapter's
// "style" and the "conventions" it declares for these parameters.
std::string check_python_metric(const PythonSource& source, const std::string& metric, const nlohmann::json& params);

// "MeanAbsoluteError@python:/abs/metrics.py" (harness::MetricId).
std::string python_qualified_name(const std::string& metric, const std::string& spec);

// Installs, in the process-wide MetricCatalog, the resolver of Python-qualified names (idempotent).
void install_python_resolver();

// Why a variant on `backend` cannot run a Python metric here (torch.distributed has no such
// backend: Debian's torch has no MPI process group), or nullopt.
std::optional<runtime::Unavailable> python_backend_unavailable(const std::string& backend);

// Makes rank workers forked from now on start with every source loaded so far imported (torch
// and the library: seconds each): the worker zygote is restarted from this process, with the
// interpreter's fork handling (GIL, import lock) around each fork. False when it cannot be (threads
// run already; no interpreter started): workers then import in the pools' warm-up as before.
bool fork_workers_with_python_loaded();

}  // namespace distmetrics::pyhost
