#include "distmetrics/pyhost/source.h"

#include <map>
#include <memory>
#include <mutex>

#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/pyhost/python_metric.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/embedded_python.h"
#include "distmetrics/runtime/phases.h"
#include "distmetrics/runtime/rank_pool.h"
#include "interpreter.h"

namespace distmetrics::pyhost {
namespace {

namespace py = detail::py;
using nlohmann::json;

std::mutex& sources_mutex() {
  static std::mutex m;
  return m;
}
// By canonical spec; also by the value given, so a second load with the same text is a lookup.
std::map<std::string, std::unique_ptr<PythonSource>>& sources() {
  static std::map<std::string, std::unique_ptr<PythonSource>> s;
  return s;
}
std::map<std::string, const PythonSource*>& by_value() {
  static std::map<std::string, const PythonSource*> s;
  return s;
}
// Qualified registries, per source.
std::map<const PythonSource*, std::unique_ptr<metrics::MetricRegistry>>& qualified() {
  static std::map<const PythonSource*, std::unique_ptr<metrics::MetricRegistry>> s;
  return s;
}

// Per source spec, per metric name: the registry's entry as that source's import left it. Never
// freed: Python objects must not be released after the interpreter stops taking calls at exit.
std::map<std::string, std::map<std::string, py::object>>& remembered() {
  static auto* r = new std::map<std::string, std::map<std::string, py::object>>();
  return *r;
}

py::object registry_dict() {
  py::object registry = py::module_::import("distmetrics.registry");
  return py::hasattr(registry, "_REGISTRY") ? py::object(registry.attr("_REGISTRY")) : py::object(py::none());
}

// A freshly imported source's own registrations (the registry as its import left it, alone).
void remember_own(const std::string& spec, const py::dict& own) {
  auto& mine = remembered()[spec];
  for (auto item : own) mine[item.first.cast<std::string>()] = py::reinterpret_borrow<py::object>(item.second);
}

metrics::MetricSpec spec_for(const std::string& registered_name, const std::string& spec_name, const std::string& adapter,
                             const std::string& description, const std::string& source) {
  metrics::MetricSpec spec;
  spec.name = spec_name;
  spec.family = "python";
  spec.description = description.empty() ? "Python metric (" + adapter + " adapter)" : description;
  // The reference metric's parameters, so the scenario's pass through as they are.
  // "Average[SumMetric]": the parameters of Average (harness::reference_metric_name).
  if (const auto* reference = metrics::MetricRegistry::reference().find(harness::reference_metric_name(registered_name)))
    spec.params = reference->params;
  spec.make = [registered_name, source](const json& params) -> std::unique_ptr<metrics::Metric> {
    return std::make_unique<PythonMetric>(registered_name, params, source);
  };
  return spec;
}

std::string python_error_text(py::error_already_set& e) {
  // The host's SourceError carries a full message; anything else gets type and frames.
  auto [type, text] = detail::describe_python_error(e);
  if (type == "SourceError") return text.substr(0, text.find("\nPython traceback"));  // its message says it all
  return type + ": " + text;
}

}  // namespace

namespace detail {

void remember_registrations(const std::string& spec, const std::vector<std::string>& names) {
  const py::object registry = registry_dict();
  if (!py::isinstance<py::dict>(registry)) return;  // a registry of another shape: names stay global
  auto& mine = remembered()[spec];
  for (const auto& name : names)
    if (registry.contains(py::str(name))) mine[name] = registry[py::str(name)];
}

void use_registration_of(const std::string& spec, const std::string& name) {
  const auto source = remembered().find(spec);
  if (source == remembered().end()) return;
  const auto entry = source->second.find(name);
  if (entry == source->second.end()) return;
  py::object registry = registry_dict();
  if (py::isinstance<py::dict>(registry)) registry[py::str(name)] = entry->second;
}

}  // namespace detail

std::string python_qualified_name(const std::string& metric, const std::string& spec) {
  return harness::MetricId{metric, harness::MetricSource::python(spec)}.qualified();
}

const PythonSource& load_python_source(const std::string& value, const std::vector<std::string>& metrics) {
  detail::ensure_interpreter();
  std::lock_guard<std::mutex> lock(sources_mutex());
  if (auto it = by_value().find(value); it != by_value().end()) return *it->second;
  runtime::PhaseScope importing("interpreter");  // a rank that imports a source in a variant pays it there
  py::gil_scoped_acquire gil;
  json described;
  try {
    // A source imported for the first time sees an empty registry: what it registers is then
    // exactly its own, also the names an earlier source registered from factories of a shared
    // module (the host tells a source's names by what its import added, or by their module).
    // Every earlier registration is put back after, this source's winning where both have one.
    const std::string canonical = detail::host_module().attr("canonical")(value).cast<std::string>();
    py::object registry = registry_dict();
    const bool fresh = sources().count(canonical) == 0 && py::isinstance<py::dict>(registry) && py::len(registry) > 0;
    py::object earlier;  // a copy (py::dict(a dict) would be the same object)
    if (fresh) {
      earlier = registry.attr("copy")();
      registry.attr("clear")();
    }
    try {
      described = json::parse(detail::host_module().attr("load")(value, metrics).cast<std::string>());
    } catch (py::error_already_set&) {
      if (fresh) registry.attr("update")(earlier);
      throw;
    }
    if (fresh) {
      py::dict own = registry.attr("copy")();
      registry.attr("update")(earlier);
      registry.attr("update")(own);
      remember_own(canonical, own);
    }
  } catch (py::error_already_set& e) {
    throw PythonSourceError(python_error_text(e));
  }
  const std::string spec = described.at("spec");
  auto& slot = sources()[spec];
  if (!slot) {
    auto source = std::make_unique<PythonSource>();
    source->spec = spec;
    source->module = described.at("name");
    source->version = described.at("version");
    source->torch_version = py::module_::import("torch").attr("__version__").cast<std::string>();
    std::vector<std::string> names;
    for (const auto& m : described.at("metrics")) {
      source->registry.add(spec_for(m.at("name"), m.at("name"), m.at("adapter"), m.at("description"), spec));
      names.push_back(m.at("name"));
    }
    if (!remembered().count(spec)) detail::remember_registrations(spec, names);  // right after its import
    slot = std::move(source);
  }
  by_value()[value] = slot.get();
  return *slot;
}

std::string check_python_metric(const PythonSource& source, const std::string& metric, const json& params) {
  detail::ensure_interpreter();
  py::gil_scoped_acquire gil;
  try {
    detail::use_registration_of(source.spec, metric);
    return detail::host_module().attr("check")(metric, params.dump()).cast<std::string>();
  } catch (py::error_already_set& e) {
    if (auto reason = detail::unsupported_reason(e)) throw metrics::ForeignError(harness::kUnsupportedType, *reason);
    throw PythonSourceError(source.spec + ": " + python_error_text(e));
  }
}

void install_python_resolver() {
  static const bool installed = [] {
    harness::MetricCatalog::instance().add_resolver([](const std::string& name) -> const metrics::MetricRegistry* {
      const auto id = harness::MetricId::parse(name);
      if (!id.source.is_python()) return nullptr;
      const std::string& metric = id.name;
      const std::string& spec = id.source.location;
      // Only code named on the command line is imported: a scenario file may name a Python
      // source given with --python, never make us import one. A rank worker imports what its
      // supervisor sends (which the supervisor checked so), as for plugins.
      bool given = false;
      {
        std::lock_guard<std::mutex> lock(sources_mutex());
        given = sources().count(spec) > 0 || by_value().count(spec) > 0;
      }
      if (!given && !runtime::this_process_is_a_rank_worker()) {
        throw std::runtime_error("metric '" + name + "' names the Python source " + spec +
                                 ", which was not given with --python: a scenario cannot make distmetrics import code; "
                                 "check it with `distmetrics conform --python " + spec + "`");
      }
      const PythonSource& source = load_python_source(spec, {metric});
      std::lock_guard<std::mutex> lock(sources_mutex());
      auto& registry = qualified()[&source];
      if (!registry) {
        registry = std::make_unique<metrics::MetricRegistry>();
        for (const auto& n : source.registry.names()) {
          const auto* s = source.registry.find(n);
          registry->add(spec_for(n, python_qualified_name(n, source.spec), "", s->description, source.spec));
        }
      }
      if (!registry->find(name))
        throw std::runtime_error("Python source " + source.spec + " " + harness::kConformNoMetric + " '" + metric + "'");
      return registry.get();
    });
    return true;
  }();
  (void)installed;
}

std::optional<runtime::Unavailable> python_backend_unavailable(const std::string& backend) {
  detail::ensure_interpreter();
  py::gil_scoped_acquire gil;
  if (detail::host_module().attr("backend_available")(backend).cast<bool>()) return std::nullopt;
  return runtime::Unavailable("python metrics: torch.distributed in this Python has no " + backend + " process group",
                              " (Debian's torch has gloo only), so a Python metric's own collectives cannot run on " +
                                  backend);
}

bool fork_workers_with_python_loaded() {
  if (!Py_IsInitialized()) return false;
  {
    // What each freshly forked rank would otherwise do in its first variant (_host.py says what).
    py::gil_scoped_acquire gil;
    py::list names;
    for (const auto& backend : runtime::backends()) names.append(backend.name);
    try {
      detail::host_module().attr("prepare_for_forked_ranks")(names);
    } catch (py::error_already_set&) {  // the ranks do it themselves, as before
    }
  }
  return runtime::restart_worker_zygote(runtime::python_fork_hooks());
}

}  // namespace distmetrics::pyhost
