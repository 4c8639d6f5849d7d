#include "distmetrics/harness/metric_id.h"

#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

constexpr const char* kPythonPrefix = "python:";

}  // namespace

MetricSource MetricSource::parse(const std::string& text) {
  if (text.empty()) return {};
  if (text.rfind(kPythonPrefix, 0) == 0) return python(text.substr(std::string(kPythonPrefix).size()));
  return plugin(text);
}

std::string MetricSource::text() const {
  switch (kind) {
    case Kind::Registered: return "";
    case Kind::Plugin: return location;
    case Kind::Python: return kPythonPrefix + location;
  }
  return "";
}

std::string MetricSource::option() const {
  switch (kind) {
    case Kind::Registered: return "";
    case Kind::Plugin: return "--plugin " + runtime::shell_quote(location);
    case Kind::Python: return "--python " + runtime::shell_quote(location);
  }
  return "";
}

MetricId MetricId::parse(const std::string& qualified) {
  const auto at = qualified.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == qualified.size()) return {qualified, {}};
  return {qualified.substr(0, at), MetricSource::parse(qualified.substr(at + 1))};
}

std::string MetricId::qualified() const {
  const std::string where = source.text();
  return where.empty() ? name : name + "@" + where;
}

}  // namespace distmetrics::harness
