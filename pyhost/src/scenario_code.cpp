// The harness's hooks for the Python a scenario names, on the embedded interpreter: the Python
// side is distmetrics._scenario_code (the convention of each call is documented there and in
// docs/scenarios.md).
#include "distmetrics/pyhost/scenario_code.h"

#include <torch/csrc/autograd/python_variable.h>

#include "distmetrics/harness/scenario_python.h"
#include "interpreter.h"

namespace distmetrics::pyhost {
namespace {

namespace py = detail::py;

py::object wrap(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
}

py::module_ code_module() { return py::module_::import("distmetrics._scenario_code"); }

// The Python error being handled, as one message: a SourceError's own words, else its type,
// message and where it was raised.
std::runtime_error python_error(py::error_already_set& e) {
  auto [type, text] = detail::describe_python_error(e);
  if (type == "SourceError") return std::runtime_error(text.substr(0, text.find(" (Python traceback")));
  return std::runtime_error(type + ": " + text);
}

}  // namespace

void install_scenario_python_hooks() {
  harness::ScenarioPython hooks;
  hooks.check = [](const std::string& spec) {
    detail::ensure_interpreter();
    py::gil_scoped_acquire gil;
    try {
      code_module().attr("check")(spec);
    } catch (py::error_already_set& e) {
      throw python_error(e);
    }
  };
  hooks.generate = [](const std::string& spec, std::uint64_t seed, const nlohmann::json& params,
                      const std::string& structured_path, std::int64_t num_samples) {
    detail::ensure_interpreter();
    py::gil_scoped_acquire gil;
    harness::ScenarioPython::Generated out;
    try {
      py::object made = code_module().attr("generate")(spec, seed, params.dump(), structured_path, num_samples);
      if (py::isinstance<py::int_>(made)) {  // structured samples, saved to structured_path
        out.structured_rows = made.cast<std::int64_t>();
        return out;
      }
      for (auto item : made.cast<py::dict>()) {
        if (!THPVariable_Check(item.second.ptr())) throw std::runtime_error("a generated value is not a tensor");
        out.tensors[item.first.cast<std::string>()] = THPVariable_Unpack(item.second.ptr());
      }
    } catch (py::error_already_set& e) {
      throw python_error(e);
    }
    return out;
  };
  hooks.structured_rows = [](const std::string& path) {
    detail::ensure_interpreter();
    py::gil_scoped_acquire gil;
    try {
      return code_module().attr("structured_rows")(path).cast<std::int64_t>();
    } catch (py::error_already_set& e) {
      throw python_error(e);
    }
  };
  hooks.reference = [](const std::string& spec, const nlohmann::json& kwargs, const metrics::Batch& all) {
    detail::ensure_interpreter();
    py::gil_scoped_acquire gil;
    try {
      const std::string value =
          code_module()
              .attr("reference")(spec, kwargs.dump(), wrap(all.target), wrap(all.input), wrap(all.weight), all.structured_file)
              .cast<std::string>();
      return nlohmann::json::parse(value);
    } catch (py::error_already_set& e) {
      throw python_error(e);
    }
  };
  harness::install_scenario_python(std::move(hooks));
}

}  // namespace distmetrics::pyhost
