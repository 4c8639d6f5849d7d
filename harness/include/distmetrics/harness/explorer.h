// `distmetrics explore`'s engine (docs/explore.md): the search, the shrinking of each failure,
// the rerun of a hang that may be the machine's load, the saved scenario files and the summary,
// over a runner of cases. The command (app/src/explore_command.cpp) gives the flags, the runner
// and a listener that prints; as GoogleTest's runner and its listeners.
//
//   explore::SessionRunner runner(deadline, pools);          // or conform's (plugin/explore.h)
//   explore::Explorer explorer(options, base, target, runner);
//   explore::Summary summary = explorer.run(listener);
//   write_reports(files, explore::report_model(summary), err);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness {
class Session;
}

namespace distmetrics::harness::explore {

// Runs one case (a scenario of one variant) and gives its verdict.
class CaseRunner {
 public:
  virtual ~CaseRunner() = default;
  virtual Verdict run(const Scenario& scenario) = 0;
};

// A registered metric's cases (the reference's) through a harness::Session that keeps a few
// world sizes' rank pools up for the whole search.
class SessionRunner : public CaseRunner {
 public:
  explicit SessionRunner(std::size_t max_pools);
  ~SessionRunner() override;
  Verdict run(const Scenario& scenario) override;

 private:
  std::unique_ptr<Session> session_;
};

// The verdict on a case's one variant through `session`, or why it has none (a case that expands
// into no variant is an error; one that cannot run here a skip).
Verdict run_case(Session& session, const Scenario& scenario);

// What is explored: the metric as scenarios name it, and where it comes from (the reproduce
// commands and the saved files' headers name it so).
struct Target {
  std::string metric;
  MetricSource source;  // registered (a reference metric), a plugin (its path), a Python source (as given)
};

struct Options {
  std::uint64_t seed = 0;
  double budget = 0;          // seconds, search and shrinking together
  std::int64_t max_cases = 0;  // 0: the budget alone decides
  int batch = 0;              // cases per world size before the next is drawn; 0: 8, 16 for a Python source
  int shrink_attempts = 150;  // candidates at most per failure
  std::string save_dir;       // each shrunk failure as a scenario file there; empty: not saved
  Space space;
};

// One case run (or drawn and refused by the loader): a line of --log.
struct CaseRecord {
  std::string phase;  // "search", "shrink" or "refused"
  std::uint64_t index = 0;
  bool slow = false;      // a maybe-slow hang that finished with three times the deadline
  bool unjudged = false;  // a maybe-slow hang the budget left no rerun for
  double seconds_since_start = 0;
  double seconds = 0;
  std::string outcome;
  std::optional<std::string> signature;
  std::string reason;  // or, refused, why
  std::string size;
  std::vector<std::string> features;
  std::string toml;
};

// A failure explore found, shrunk to its smallest case that keeps its signature.
struct ShrunkFailure {
  Signature signature;
  std::uint64_t index = 0;  // the case that found it
  double found_after = 0;   // seconds, when that case ended
  std::string original_size, shrunk_size;
  std::string toml;  // the shrunk scenario
  Verdict verdict;   // the shrunk case's
  int shrink_steps = 0, shrink_tried = 0;
  // Why shrinking stopped before no candidate kept the signature (the budget, or
  // --shrink-attempts), and what it had not tried; empty when it ran to its end.
  std::string shrink_cut;
  std::string saved;      // the saved file, or empty
  std::string reproduce;  // the command that reproduces it
};

struct Progress {
  double seconds = 0;
  std::uint64_t cases = 0, refused = 0, slow = 0, unjudged = 0, shrink_cases = 0;
  std::size_t failures = 0;
  double variants_per_second() const;  // cases and shrink cases over the seconds
};

// What explore tells as it goes; every method does nothing unless overridden.
class Listener {
 public:
  virtual ~Listener() = default;
  virtual void case_ran(const CaseRecord&) {}                  // each case, and each refused draw
  virtual void progress(const Progress&, bool /*last*/) {}     // every few seconds, and at the end
  virtual void not_judged(std::uint64_t /*index*/, const std::string& /*size*/) {}
  virtual void failing(std::uint64_t /*index*/, const Signature&, const Verdict&, const std::string& /*size*/) {}
  virtual void shrunk(const ShrunkFailure&) {}
};

struct Summary {
  Target target;
  std::string backend;  // of every case
  std::uint64_t seed = 0;
  double budget = 0;
  std::string started;  // ISO-8601
  double seconds = 0;
  std::uint64_t cases = 0, refused = 0, slow = 0, unjudged = 0, shrink_cases = 0;
  double helper_ready_seconds = 0;           // when the case runner was up
  std::optional<double> first_case_seconds;  // when the first case ended, its pool's start included
  std::map<std::string, std::uint64_t> coverage;  // "world_size=3" -> cases
  std::vector<ShrunkFailure> findings;
  double variants_per_second() const;
  // The coverage by axis: "world_size=3" -> {"world_size", [("3", cases), ...]}.
  std::map<std::string, std::vector<std::pair<std::string, std::uint64_t>>> coverage_by_axis() const;
};

class Explorer {
 public:
  // `runner` is ready (its helper worker, if any, started): `ready_after` seconds went to that.
  Explorer(Options options, Scenario base, Target target, CaseRunner& runner, double ready_after = 0);
  Summary run(Listener& listener);

 private:
  struct Evaluated;
  Evaluated evaluate(const Scenario& scenario, const std::string& toml, const char* phase, std::uint64_t index);
  ShrunkFailure shrink(const Evaluated& failing, const Signature& signature, std::uint64_t index);
  std::string save(const ShrunkFailure& f, int number) const;
  std::string reproduce_command(const std::string& saved) const;
  void progress(bool last);
  double since_start() const;

  Options options_;
  Scenario base_;
  Target target_;
  CaseRunner& runner_;
  Listener* listener_ = nullptr;
  Summary summary_;
  double start_ = 0;
  std::string folder_;  // a private folder: where the cases' files are said to be
};

// Checks the space's world sizes (each 1 to `most`, the local pool's limit; all of them when none
// is given) and its backend; throws std::invalid_argument naming the flag.
void check_space(Space& space, int most);

// The metric parameters given as "key=value" (--param), each a parameter the metric declares; a
// value that reads as JSON (3, 0.5, true, [1,2]) is that, else a string. Their values are checked
// when the base scenario loads with them. Throws std::invalid_argument naming the flag.
nlohmann::json metric_params(const std::string& metric, const std::vector<runtime::ParamDecl>& declared,
                             const std::vector<std::string>& given);

// The base scenario the cases start from: the file given (its first scenario of `metric`), else
// the metric's first scenario of the default library, else one made from the first data
// generator whose data the metric accepts; with `params` set (each kept for every case).
// Throws std::invalid_argument with what is wrong (explore exits 2).
Scenario choose_base(const std::string& metric, const nlohmann::json& params, const std::string& base_file,
                     std::ostream& diagnostics);

// What explore draws a case's data from (Space::generator_for): the generator whose data the
// metric accepts with the case's parameters, the base's when it does, else the first of the
// generator table that does (the loader feeds the metric a few samples); remembered per set of
// parameters that can change it (all but the floats). Empty when none does.
std::function<std::string(const nlohmann::json& metric_params)> generator_chooser(const Scenario& base);

// The scenario as a case: loaded with the properties its script gives, and with the properties
// a scenario checks only when it lists them (property.h: listed_only_properties) when `extras`;
// with its TOML. nullopt (with why) when the loader refuses it.
std::optional<std::pair<Scenario, std::string>> load_as_case(const Scenario& s, bool extras, std::string* why = nullptr);

// The report model of a search: each finding's shrunk case as a variant "explore/METRIC_N", or
// one passing variant for the search when none was found; its JSON and Markdown views are the
// search's summary (findings, coverage, counts).
ReportModel report_model(const Summary& summary);

// A --log line (JSON).
std::string log_line(const CaseRecord& record);

}  // namespace distmetrics::harness::explore
