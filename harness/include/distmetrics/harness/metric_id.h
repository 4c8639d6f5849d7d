// A metric's identity as a scenario carries it to every process: its name and where it comes
// from. ONE type spells and reads it; no other code splits a metric's name at '@' or looks for
// "python:".
//
//   "MeanAbsoluteError"                          a registered metric (the reference's, a test's)
//   "MeanAbsoluteError@/abs/libacme.so"          a plugin's (plugin/catalog.h resolves it)
//   "MeanAbsoluteError@python:/abs/metrics.py"   a Python source's (pyhost/source.h resolves it)
//
// Metric names hold no '@'; a plugin's path may (the name ends at the first '@').
#pragma once

#include <string>

namespace distmetrics::harness {

// Where a metric comes from: registered in this process, a plugin's shared library, or a Python
// source (`conform --plugin` / `--python` present either as a plugin whose path is text()).
struct MetricSource {
  enum class Kind { Registered, Plugin, Python };
  Kind kind = Kind::Registered;
  std::string location;  // Plugin: the library's absolute path; Python: the source's canonical spec

  static MetricSource plugin(std::string path) { return {Kind::Plugin, std::move(path)}; }
  static MetricSource python(std::string spec) { return {Kind::Python, std::move(spec)}; }
  // From text(): "/abs/lib.so" (a plugin), "python:spec" (a Python source), "" (registered).
  static MetricSource parse(const std::string& text);
  std::string text() const;
  // The command-line option that names it again, its value shell-quoted: "--plugin /abs/lib.so",
  // "--python spec"; empty for a registered metric.
  std::string option() const;
  bool is_python() const { return kind == Kind::Python; }
};

struct MetricId {
  std::string name;
  MetricSource source;

  // "Name" alone is a registered metric's; "Name@<MetricSource::text()>" another source's.
  static MetricId parse(const std::string& qualified);
  std::string qualified() const;
};

}  // namespace distmetrics::harness
