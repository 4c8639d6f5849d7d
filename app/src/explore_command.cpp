// `distmetrics explore` (explore_command.h, docs/explore.md).
#include "explore_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "explore_runner.h"
#include "distmetrics/app/cli.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/plugin/loader.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {
namespace {

namespace fs = std::filesystem;
namespace ex = harness::explore;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kMaxWorldSize = 8;

std::function<const plugin::Plugin&(const std::string&)>& python_loader() {
  static std::function<const plugin::Plugin&(const std::string&)> loader;
  return loader;
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fixed(double v, int digits = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

// "k=v": v as JSON when it reads as JSON (3, 0.5, true, [1,2]), else a string.
std::optional<std::pair<std::string, json>> parse_param(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  const std::string value = text.substr(eq + 1);
  json parsed = json::parse(value, nullptr, false);
  if (parsed.is_discarded() || parsed.is_object() || parsed.is_null()) parsed = value;
  return std::make_pair(text.substr(0, eq), parsed);
}

// A base scenario for a metric that no file names: the first generator whose data the metric
// accepts (the loader feeds it a few samples), with the required class count set.
std::optional<harness::Scenario> base_from_generators(const std::string& metric, const json& params, std::string& why) {
  for (const auto& generator : harness::data_generators()) {
    harness::Scenario s;
    s.description = "explore base";
    s.metric = metric;
    s.metric_params = params;
    for (const char* key : {"num_classes", "num_labels"})
      if (params.contains(key)) s.data.params[key] = params[key];
    for (const auto& p : generator.params)
      if (p.required() && !s.data.params.contains(p.name)) s.data.params[p.name] = 3;
    s.data.generator = generator.name;
    s.data.seed = 1;
    s.data.num_samples = 24;
    s.batch_size = 4;
    s.world_sizes = {1};
    s.backends = {"gloo"};
    s.shards = {"even"};
    s.placements = {"cpu"};
    s.script = {harness::parse_step("update rest"), harness::parse_step("compute")};
    std::string problem;
    if (auto loaded = ex::load_case(ex::scenario_to_toml(s, {}, false), "base", &problem)) return loaded;
    if (why.empty()) why = problem;
  }
  return std::nullopt;
}

// The properties checked only when listed (state_roundtrip, merge_state; docs/properties.md),
// added to the ones the loader derives from the script; a metric that cannot save its state has
// them skip.
const std::vector<std::string>& listed_only_properties() {
  static const std::vector<std::string> names = {"state_roundtrip", "merge_state"};
  return names;
}

// A later batch's world size: w with weight 1/w. A case costs about its number of ranks in CPU
// (past the machine's cores, in wall time too), so each size gets a like share of the budget,
// not a like number of cases, and small cases, where most bugs shrink to, come often; every
// allowed size is still drawn.
int draw_world_size(ex::Rng& rng, const std::vector<int>& sizes) {
  double total = 0;
  for (int w : sizes) total += 1.0 / w;
  double left = rng.unit() * total;
  for (int w : sizes) {
    left -= 1.0 / w;
    if (left < 0) return w;
  }
  return sizes.back();
}

bool lists_extras(const harness::Scenario& s) {
  return std::find(s.properties.begin(), s.properties.end(), listed_only_properties().front()) != s.properties.end();
}

// The scenario as a case: loaded with the properties its script gives, and with the listed-only
// ones when `extras`. nullopt (with why) when the loader refuses it.
std::optional<std::pair<harness::Scenario, std::string>> load_as_case(const harness::Scenario& s, bool extras,
                                                                      std::string* why = nullptr) {
  std::string toml = ex::scenario_to_toml(s, {}, false);
  auto loaded = ex::load_case(toml, "case", why);
  if (!loaded) return std::nullopt;
  // The loader checks that the metric accepts the data on a few of its samples: with none, it
  // cannot, and a draw the metric would refuse (sample weights for RocAuc) reached the ranks as
  // an empty batch with a weight column, which accepts_empty_batch failed (explore's false
  // failure on RocAuc and Accuracy). The same draw with a few samples decides.
  if (s.data.num_samples == 0 && s.data.file.empty()) {
    harness::Scenario some = s;
    some.data.num_samples = 4;
    if (!ex::load_case(ex::scenario_to_toml(some, {}, false), "case", why)) return std::nullopt;
  }
  if (extras) {
    for (const auto& p : listed_only_properties())
      if (std::find(loaded->properties.begin(), loaded->properties.end(), p) == loaded->properties.end())
        loaded->properties.push_back(p);
    std::string with = ex::scenario_to_toml(*loaded, {}, true);
    if (auto again = ex::load_case(with, "case")) return std::make_pair(std::move(*again), with);
  }
  return std::make_pair(std::move(*loaded), toml);
}

std::string script_text(const harness::Scenario& s) {
  std::string text;
  for (const auto& step : s.script) text += step.text + ";";
  return text;
}

// What a shrink cut short had not tried: "stopped at the budget (20.0 s): 14 candidate(s) of
// this round untried (fewer samples, fewer steps, ...)".
std::string cut_text(const std::string& at, const harness::Scenario& current,
                     const std::vector<std::pair<harness::Scenario, std::string>>& candidates, std::size_t from) {
  std::vector<std::string> kinds;
  for (std::size_t i = from; i < candidates.size(); ++i) {
    const auto& c = candidates[i].first;
    const std::string kind = c.world_sizes != current.world_sizes       ? "fewer ranks"
                             : c.data.num_samples != current.data.num_samples ? "fewer samples"
                             : c.script.size() != current.script.size()     ? "fewer steps"
                             : script_text(c) != script_text(current)       ? "plainer steps"
                             : c.batch_size != current.batch_size           ? "fewer batches"
                                                                            : "plainer data or parameters";
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  std::string text = "stopped at " + at + ": " + std::to_string(candidates.size() - std::min(from, candidates.size())) +
                     " candidate(s) of this round untried";
  for (std::size_t k = 0; k < kinds.size(); ++k) text += (k ? ", " : " (") + kinds[k] + (k + 1 == kinds.size() ? ")" : "");
  return text;
}

// A hang with no sign of a bug of the metric's own: no rank raised, crashed or timed out inside
// a collective, and the ranks' collectives did not part (no deviation). A rank still busy at
// the deadline on a loaded machine looks like this.
// The same for a plugin's or Python source's single-process run on the helper worker that ran
// past the deadline: one process, no collective, so nothing to part; a long case of a Python
// metric (hundreds of update() calls, a compute after each) on a loaded machine does this.
bool maybe_slow(const json& verdict) {
  const std::string reason = verdict.value("reason", "");
  if (verdict.value("outcome", "") == "error")
    return reason.rfind("the single-process reference failed: ", 0) == 0 &&
           reason.find("did not finish within the deadline") != std::string::npos;
  if (verdict.value("outcome", "") != "hang" || !verdict.value("deviation", json()).is_null()) return false;
  for (const auto& r : verdict.value("ranks", json::array())) {
    const std::string state = r.value("state", "");
    if (state == "raised" || state == "crashed" || state == "timed_out") return false;
  }
  return true;
}

struct Finding {
  ex::Signature signature;
  std::uint64_t index = 0;
  double found_after = 0;
  std::string original_size, shrunk_size;
  std::string toml;  // the shrunk scenario
  json verdict;      // the shrunk case's verdict
  harness::Verdict object;
  int shrink_steps = 0, shrink_tried = 0;
  // Why shrinking stopped before no candidate kept the signature (the budget, or
  // --shrink-attempts), and what it had not tried; empty when it ran to its end.
  std::string shrink_cut;
  std::string saved;
  std::string reproduce;  // the command that reproduces it
};

class Explorer {
 public:
  Explorer(const ExploreOptions& o, harness::Scenario base, ex::Space space, CaseSource source, std::ostream& out)
      : o_(o), base_(std::move(base)), space_(std::move(space)), source_(std::move(source)), out_(out) {}

  int run(std::ostream& err);

 private:
  struct Evaluated {
    harness::Scenario scenario;
    std::string toml;
    json verdict;
    harness::Verdict object;  // the verdict itself (the reports' views)
    double finished_at = 0;   // seconds since the start
    // A hang that may be the machine's load (maybe_slow) whose rerun with three times the deadline
    // the budget left no time for: neither a finding nor a pass.
    bool unjudged = false;
  };
  // Runs the scenarios (already loaded) as one folder; nullopt verdict where none came back.
  std::vector<Evaluated> evaluate(const std::vector<std::pair<harness::Scenario, std::string>>& cases, const char* phase,
                                  std::uint64_t first_index);
  void log(const json& line);
  // --junit, --html: each finding's shrunk case as a variant of its own ("explore/METRIC_N"),
  // or, when none was found, one passing variant for the search.
  std::vector<harness::Verdict> report_verdicts() const;
  void progress(bool last);
  Finding shrink(const Evaluated& failing, const ex::Signature& signature, std::uint64_t index);
  std::string save(const Finding& f, int number);
  std::string reproduce_command(const std::string& saved) const;

  const ExploreOptions& o_;
  harness::Scenario base_;
  ex::Space space_;
  CaseSource source_;
  std::ostream& out_;
  std::string folder_;
  std::ofstream log_;
  Clock::time_point start_ = Clock::now();
  std::string started_ = harness::now_iso8601();
  Clock::time_point last_progress_ = Clock::now();
  std::uint64_t tried_ = 0, rejected_ = 0, shrink_runs_ = 0;
  std::uint64_t slow_ = 0;  // hangs that ran to their end with three times the deadline
  std::uint64_t unjudged_ = 0;  // maybe-slow hangs the budget left no rerun for (Evaluated::unjudged)
  double ready_after_ = 0;             // when the case runner was up (a source's helper worker started)
  double seconds_to_first_case_ = -1;  // when the first case ended, its pool's start included; -1: none
  std::map<std::string, std::uint64_t> coverage_;
  std::vector<Finding> findings_;
  std::vector<std::string> run_errors_;
  std::unique_ptr<CaseRunner> runner_;
};

std::vector<Explorer::Evaluated> Explorer::evaluate(const std::vector<std::pair<harness::Scenario, std::string>>& cases,
                                                    const char* phase, std::uint64_t first_index) {
  std::vector<Evaluated> out;
  // The budget bounds the whole run, search and shrinking, also within a batch (a case that has
  // started runs to its end or its deadline).
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (since(start_) >= o_.budget) break;
    Evaluated e{cases[i].first, cases[i].second, nullptr, {}, 0};
    e.scenario.name = "explore_case";
    e.scenario.file = folder_ + "/explore_case.toml";
    e.object = runner_->run(e.scenario);
    e.verdict = e.object.to_json();
    // A hang that may be the machine's load, not the metric (no rank raised, crashed or timed
    // out in a collective, and their collectives did not part; or the single process ran past
    // the deadline): run again with three times the deadline. Only if it runs out again is it a
    // hang (or that error); otherwise the longer run's verdict stands.
    bool slow = false;
    if (maybe_slow(e.verdict) && since(start_) >= o_.budget) e.unjudged = true;
    if (maybe_slow(e.verdict) && since(start_) < o_.budget) {
      harness::Scenario longer = e.scenario;
      longer.deadline_seconds = 3 * e.scenario.deadline_seconds;
      harness::Verdict again = runner_->run(longer);
      if (again.outcome != harness::Outcome::Hang && again.outcome != harness::Outcome::Skip && !maybe_slow(again.to_json())) {
        slow = true;
        ++slow_;
        e.object = std::move(again);
        e.verdict = e.object.to_json();
      }
    }
    e.finished_at = since(start_);
    if (seconds_to_first_case_ < 0) seconds_to_first_case_ = e.finished_at;
    const auto sig = ex::failure_signature(e.verdict);
    log({{"phase", phase},
         {"case", first_index + i},
         {"slow", slow},
         {"unjudged", e.unjudged},
         {"seconds_since_start", since(start_)},
         {"seconds", e.verdict.value("seconds", 0.0)},
         {"outcome", e.verdict.value("outcome", "")},
         {"signature", sig ? json(sig->text()) : json(nullptr)},
         {"reason", e.verdict.value("reason", "")},
         {"size", ex::size_text(e.scenario)},
         {"features", ex::features_of(e.scenario)},
         {"scenario", e.toml}});
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<harness::Verdict> Explorer::report_verdicts() const {
  std::string metric = source_.metric;
  for (auto& ch : metric)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  std::vector<harness::Verdict> out;
  for (std::size_t i = 0; i < findings_.size(); ++i) {
    harness::Verdict v = findings_[i].object;
    auto& variant = v.variant;
    variant.scenario = "explore/" + metric + "_" + std::to_string(i + 1);
    variant.file = findings_[i].saved;
    variant.id = harness::variant_id(variant.scenario, variant.backend, variant.world_size, variant.shard, variant.placement,
                                     variant.dtype);
    variant.reproduce_command = findings_[i].reproduce;
    out.push_back(std::move(v));
  }
  if (out.empty()) {
    harness::Verdict v;
    v.variant.scenario = "explore/" + metric;
    v.variant.id = v.variant.scenario + ":search";
    v.variant.backend = space_.backend;
    v.seconds = since(start_);
    harness::PropertyResult p;
    p.name = "explore";
    p.message = "explore held: " + std::to_string(tried_) + " case(s) of seed " + std::to_string(o_.seed) +
                ", no failure within the budget of " + fixed(o_.budget) + " s";
    v.properties.push_back(p);
    out.push_back(std::move(v));
  }
  return out;
}

void Explorer::log(const json& line) {
  if (log_.is_open()) log_ << line.dump() << "\n" << std::flush;
}

void Explorer::progress(bool last) {
  if (o_.quiet && !last) return;
  if (!last && since(last_progress_) < 5 && !o_.verbose) return;
  last_progress_ = Clock::now();
  const double seconds = since(start_);
  out_ << "explore: " << fixed(seconds) << " s, " << tried_ << " case(s) tried (" << rejected_ << " drawn and refused by "
       << "the loader; " << slow_ << " slow hang(s) that finished with 3x the deadline"
       << (unjudged_ ? "; " + std::to_string(unjudged_) + " past the budget, not judged" : std::string()) << "), " << shrink_runs_ << " shrink case(s), " << fixed((tried_ + shrink_runs_) / std::max(seconds, 1e-9))
       << " variants/s, " << findings_.size() << " failure(s)\n"
       << std::flush;
}

Finding Explorer::shrink(const Evaluated& failing, const ex::Signature& signature, std::uint64_t index) {
  Finding f;
  f.signature = signature;
  f.index = index;
  f.original_size = ex::size_text(failing.scenario);
  harness::Scenario current = failing.scenario;
  f.toml = failing.toml;
  f.verdict = failing.verdict;
  f.object = failing.object;
  std::set<std::string> seen = {failing.toml};
  // Shrinking takes its time from the budget: what is left of it, at most (the search goes on
  // after it while any is left). Cut there, the finding is the smallest case found so far.
  const double limit = o_.budget;
  bool progressed = true;
  while (progressed && f.shrink_cut.empty()) {
    progressed = false;
    std::vector<std::pair<harness::Scenario, std::string>> candidates;
    const bool extras = lists_extras(current);
    for (auto& c : ex::shrink_candidates(current, space_.max_batches_single)) {
      c.description = current.description;
      auto loaded = load_as_case(c, extras);
      if (!loaded || !seen.insert(loaded->second).second) continue;
      candidates.push_back(std::move(*loaded));
    }
    // In order, one at a time: the first that keeps the signature wins, and the candidates after
    // it are not run (a candidate that hangs costs a respawned pool: a Python one's start is
    // seconds). The winner does not depend on the timing.
    constexpr std::size_t kChunk = 1;
    for (std::size_t at = 0; at < candidates.size() && !progressed; at += kChunk) {
      const bool attempts = f.shrink_tried >= o_.shrink_attempts;
      if (attempts || since(start_) >= limit) {
        f.shrink_cut = cut_text(attempts ? "--shrink-attempts " + std::to_string(o_.shrink_attempts)
                                         : "the budget (" + fixed(o_.budget) + " s)",
                                current, candidates, at);
        break;
      }
      const std::vector<std::pair<harness::Scenario, std::string>> chunk(
          candidates.begin() + static_cast<std::ptrdiff_t>(at),
          candidates.begin() + static_cast<std::ptrdiff_t>(std::min(candidates.size(), at + kChunk)));
      const auto results = evaluate(chunk, "shrink", index);
      f.shrink_tried += static_cast<int>(results.size());
      shrink_runs_ += results.size();
      if (results.size() < chunk.size() && f.shrink_cut.empty())  // the budget ended within the chunk
        f.shrink_cut = cut_text("the budget (" + fixed(o_.budget) + " s)", current, candidates, at + results.size());
      for (const auto& r : results) {
        if (r.unjudged) continue;  // a hang the budget left no rerun for keeps nothing
        const auto sig = ex::failure_signature(r.verdict);
        if (!sig || !(*sig == signature)) continue;
        current = r.scenario;
        f.toml = r.toml;
        f.verdict = r.verdict;
        f.object = r.object;
        ++f.shrink_steps;
        progressed = true;
        f.shrink_cut.clear();  // a smaller case kept it; the next round starts from that one
        break;
      }
      progress(false);
    }
  }
  f.shrunk_size = ex::size_text(current);
  return f;
}

std::string Explorer::reproduce_command(const std::string& path) const {
  const std::string source = source_.plugin_path.empty() ? "--python " + runtime::shell_quote(source_.python)
                                                         : "--plugin " + runtime::shell_quote(source_.plugin_path);
  if (path.empty())  // not saved: the search again, which finds it the same way (a budget cut aside)
    return "distmetrics explore " + (source_.plugin ? source + " " : std::string()) + "--metric " +
           runtime::shell_quote(source_.metric) + " --seed " + std::to_string(o_.seed) + " --budget " + fixed(o_.budget) +
           " --save DIR";
  return !source_.plugin ? "distmetrics run " + runtime::shell_quote(path)
                         : "distmetrics conform " + source + " --metric " + runtime::shell_quote(source_.metric) + " " +
                               runtime::shell_quote(path);
}

std::string Explorer::save(const Finding& f, int number) {
  fs::create_directories(o_.save_dir);
  std::string metric = source_.metric;
  for (auto& ch : metric)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  const std::string path = (fs::path(o_.save_dir) / ("explore_" + metric + "_seed" + std::to_string(o_.seed) + "_" +
                                                      std::to_string(number) + ".toml")).string();
  auto scenario = ex::load_case(f.toml, "saved");
  std::vector<std::string> header = {
      "Found by `distmetrics explore " +
          (source_.plugin ? (source_.plugin_path.empty() ? "--python " + runtime::shell_quote(source_.python)
                                                         : "--plugin " + runtime::shell_quote(source_.plugin_path)) + " "
                          : std::string()) +
          "--metric " + source_.metric + " --seed " + std::to_string(o_.seed) + "` (case " +
          std::to_string(f.index) + ", after " + fixed(f.found_after) + " s).",
      "Failure: " + f.signature.text() + ": " + runtime::first_line(f.verdict.value("reason", "")),
      "Shrunk in " + std::to_string(f.shrink_steps) + " step(s) from " + f.original_size + " to " + f.shrunk_size + ".",
      "Reproduce: " + reproduce_command(path),
      "Keep it as a regression: move it to scenarios/regression/ and say in `description` what it checks (docs/explore.md)."};
  std::string text = f.toml;
  if (scenario) {
    scenario->description = "explore: " + source_.metric + " " + f.signature.text() + " (seed " + std::to_string(o_.seed) +
                            ", case " + std::to_string(f.index) + ")";
    text = ex::scenario_to_toml(*scenario, header, lists_extras(*scenario));
  }
  std::ofstream(path) << text;
  return path;
}

int Explorer::run(std::ostream& err) {
  char templ[] = "/tmp/distmetrics-explore-XXXXXX";
  const char* tmp = ::mkdtemp(templ);
  if (!tmp) {
    err << "distmetrics explore: cannot make a private folder under /tmp\n";
    return kBadInput;
  }
  folder_ = tmp;
  runner_ = std::make_unique<CaseRunner>(source_);
  ready_after_ = since(start_);
  if (!o_.log_file.empty()) {
    log_.open(o_.log_file);
    if (!log_) {
      err << "distmetrics explore: --log: cannot write " << o_.log_file << "\n";
      return kBadInput;
    }
  }
  out_ << "distmetrics explore: " << source_.metric
       << (!source_.plugin ? std::string(" (reference)")
                           : source_.python.empty() ? " (plugin " + source_.plugin_path + ")" : " (python " + source_.python + ")")
       << " around " << (base_.file.empty() ? std::string("a generated base") : base_.file) << ", seed " << o_.seed
       << ", budget " << fixed(o_.budget) << " s, world sizes";
  for (int w : space_.world_sizes) out_ << " " << w;
  out_ << ", backend " << space_.backend << "\n";
  std::map<std::string, std::size_t> found_at;  // signature text -> finding
  std::uint64_t index = 0;
  // A Python rank pool costs about 17 s to start here (a C++ one well under 1 s): more cases
  // per world size for a Python source.
  const int batch = o_.batch > 0 ? o_.batch : source_.python.empty() ? 8 : 16;
  for (std::uint64_t batch_number = 0; since(start_) < o_.budget; ++batch_number) {
    if (o_.max_cases > 0 && tried_ >= static_cast<std::uint64_t>(o_.max_cases)) break;
    // Each batch runs at one world size (one rank pool); its cases are (seed, index) functions.
    ex::Rng size_rng(o_.seed * 1000003ull + batch_number);
    ex::Space space = space_;
    // The first batch is distributed and small (2 or 3 ranks, where most sync bugs already show
    // and a pool starts fastest) when those sizes are allowed; later ones draw from them all,
    // weighted by 1/w (draw_world_size).
    std::vector<int> first;
    for (int w : space_.world_sizes)
      if (w == 2 || w == 3) first.push_back(w);
    space.world_sizes = {batch_number == 0 && !first.empty() ? size_rng.pick(first)
                                                             : draw_world_size(size_rng, space_.world_sizes)};
    std::vector<std::pair<harness::Scenario, std::string>> cases;
    std::vector<std::uint64_t> indices;
    for (int k = 0; k < batch; ++k, ++index) {
      if (o_.max_cases > 0 && tried_ + cases.size() >= static_cast<std::uint64_t>(o_.max_cases)) break;
      const ex::Case c = ex::generate_case(base_, space, o_.seed, index);
      std::string why;
      // Half the cases also check the listed-only properties (the choice is the case's own).
      const bool extras = ex::Rng(o_.seed * 7919ull + index).chance(0.5);
      auto loaded = load_as_case(c.scenario, extras, &why);
      if (!loaded) {
        ++rejected_;
        log({{"phase", "refused"}, {"case", index}, {"why", why}, {"scenario", ex::scenario_to_toml(c.scenario, {}, false)}});
        continue;
      }
      cases.push_back(std::move(*loaded));
      indices.push_back(index);
    }
    if (cases.empty()) continue;
    // One case at a time: a new failure is shrunk at once, while the budget has the most left
    // (the batch's other cases wait; what each case is does not depend on when it runs).
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (i > 0) progress(false);
      const auto results = evaluate({cases[i]}, "search", indices[i]);
      if (results.empty()) break;  // the budget
      tried_ += 1;
      const auto& r = results.front();
      for (const auto& f : ex::features_of(r.scenario)) ++coverage_[f];
      if (r.unjudged) {
        ++unjudged_;
        out_ << "explore: case " << indices[i] << " ran past its deadline with no sign of a bug (" << ex::size_text(r.scenario)
             << ") and the budget left no time to rerun it with 3x the deadline: not judged\n"
             << std::flush;
        continue;
      }
      const auto sig = ex::failure_signature(r.verdict);
      if (!sig) continue;
      const auto known = found_at.find(sig->text());
      if (known != found_at.end()) continue;  // reported once
      const double found_after = r.finished_at;  // when that case ended, not its batch
      out_ << "explore: case " << indices[i] << " fails: " << sig->text() << ": "
           << runtime::first_line(r.verdict.value("reason", "")) << "\n  shrinking " << ex::size_text(r.scenario) << " ...\n"
           << std::flush;
      Finding f = shrink(r, *sig, indices[i]);
      f.found_after = found_after;
      if (!o_.save_dir.empty()) f.saved = save(f, static_cast<int>(findings_.size()) + 1);
      f.reproduce = reproduce_command(f.saved);
      out_ << "  shrunk in " << f.shrink_steps << " step(s) (" << f.shrink_tried << " candidate(s)"
           << (f.shrink_cut.empty() ? "" : "; " + f.shrink_cut) << ") to " << f.shrunk_size
           << (f.saved.empty() ? "" : ": " + f.saved) << "\n"
           << std::flush;
      found_at[sig->text()] = findings_.size();
      findings_.push_back(std::move(f));
    }
    progress(false);
  }
  progress(true);
  runner_.reset();  // ends the rank pools
  fs::remove_all(folder_);
  const double seconds = since(start_);

  // Coverage by axis: "world_size=3" -> axis world_size, value 3.
  std::map<std::string, std::vector<std::pair<std::string, std::uint64_t>>> axes;
  for (const auto& [feature, count] : coverage_) {
    const auto cut = feature.find_first_of("= ");
    const std::string axis = cut == std::string::npos ? feature : feature.substr(0, cut);
    axes[axis].emplace_back(cut == std::string::npos ? "" : feature.substr(cut + 1), count);
  }
  out_ << "explore: covered (cases per value):\n";
  for (const auto& [axis, values] : axes) {
    out_ << "  " << axis << ":";
    for (const auto& [value, count] : values) out_ << " " << value << " (" << count << ")";
    out_ << "\n";
  }
  if (!run_errors_.empty()) out_ << "explore: " << run_errors_.size() << " run(s) wrote no report; the first: " << run_errors_.front() << "\n";
  for (std::size_t i = 0; i < findings_.size(); ++i) {
    const auto& f = findings_[i];
    out_ << "explore: failure " << i + 1 << ": " << f.signature.text() << " (case " << f.index << ", after "
         << fixed(f.found_after) << " s): " << runtime::first_line(f.verdict.value("reason", "")) << "\n  shrunk to "
         << f.shrunk_size << (f.saved.empty() ? "" : "\n  saved: " + f.saved) << "\n";
    if (o_.verbose || f.saved.empty()) out_ << f.toml;
  }
  // Over the whole run (pool starts, respawns and reruns included), as a library run's.
  const double throughput = (tried_ + shrink_runs_) / std::max(seconds, 1e-9);
  out_ << "explore: " << tried_ << " case(s) and " << shrink_runs_ << " shrink case(s) in " << fixed(seconds) << " s ("
       << fixed(throughput) << " variants/s; the first case ended after " << fixed(std::max(seconds_to_first_case_, 0.0))
       << " s, its rank pool's start included), " << findings_.size() << " distinct failure(s)\n";

  json summary = {{"metric", source_.metric},     {"seed", o_.seed},        {"budget", o_.budget},
                  {"seconds", seconds},           {"cases", tried_},        {"refused", rejected_}, {"slow", slow_},
                  {"unjudged", unjudged_},
                  {"shrink_cases", shrink_runs_}, {"variants_per_second", throughput},
                  {"helper_ready_seconds", ready_after_},
                  {"first_case_seconds", seconds_to_first_case_ < 0 ? json(nullptr) : json(seconds_to_first_case_)},
                  {"coverage", coverage_},        {"findings", json::array()}};
  for (const auto& f : findings_)
    summary["findings"].push_back({{"signature", f.signature.text()},
                                   {"outcome", f.signature.outcome},
                                   {"properties", f.signature.properties},
                                   {"blame", f.signature.blame},
                                   {"case", f.index},
                                   {"found_after_seconds", f.found_after},
                                   {"original_size", f.original_size},
                                   {"shrunk_size", f.shrunk_size},
                                   {"shrink_steps", f.shrink_steps},
                                   {"shrink_candidates", f.shrink_tried},
                                   {"shrink_cut", f.shrink_cut.empty() ? json(nullptr) : json(f.shrink_cut)},
                                   {"saved", f.saved.empty() ? json(nullptr) : json(f.saved)},
                                   {"scenario", f.toml},
                                   {"verdict", f.verdict}});
  bool written = true;
  if (!o_.json_file.empty()) written = harness::write_report_file(o_.json_file, summary.dump(2) + "\n", err) && written;
  if (!o_.markdown_file.empty()) {
    std::ostringstream md;
    md << "## distmetrics explore: " << source_.metric << "\n\n" << tried_ << " case(s), seed " << o_.seed << ", "
       << fixed(seconds) << " s, " << findings_.size() << " distinct failure(s)\n\n";
    for (const auto& f : findings_)
      md << "- **" << f.signature.text() << "** (case " << f.index << "): " << runtime::first_line(f.verdict.value("reason", ""))
         << "; shrunk to " << f.shrunk_size << "\n\n```toml\n" << f.toml << "```\n";
    written = harness::write_report_file(o_.markdown_file, md.str(), err) && written;
  }
  if (!o_.junit_file.empty() || !o_.html_file.empty()) {
    harness::ReportFiles files;
    files.junit = o_.junit_file;
    files.html = o_.html_file;
    const auto verdicts = report_verdicts();
    written = harness::write_reports(files, harness::report_model(verdicts, started_, seconds), err) && written;
  }
  if (!written) return kBadInput;
  if (tried_ == 0 && seconds_to_first_case_ < 0) {
    err << "distmetrics explore: no case ran within the budget of " << fixed(o_.budget) << " s (" << rejected_
        << " drawn and refused by the loader; starting the helper worker took " << fixed(ready_after_)
        << " s): give a larger --budget\n";
    return kBadInput;
  }
  if (tried_ == 0) {
    err << "distmetrics explore: no case ran (" << rejected_ << " drawn, all refused by the loader"
        << (run_errors_.empty() ? "" : "; " + run_errors_.front()) << ")\n";
    return kBadInput;
  }
  return findings_.empty() ? 0 : 1;
}

}  // namespace

void register_explore_python_loader(std::function<const plugin::Plugin&(const std::string& source)> loader) {
  python_loader() = std::move(loader);
}

CLI::App* add_explore_command(CLI::App& app, ExploreOptions& o) {
  auto* cmd = app.add_subcommand("explore",
                                 "search scenarios at random for a time budget and shrink every failure to a minimal "
                                 "scenario file (docs/explore.md)");
  cmd->add_option("base", o.base, "a base scenario file whose metric, data generator and tolerance the cases start from "
                                  "(default: the metric's first scenario under the default scenarios, else a generated one)");
  cmd->add_option("--metric", o.metric, "the metric to explore (a reference metric, or one of --plugin/--python)");
  cmd->add_option("--param", o.params, "a metric parameter, key=value (repeatable); given ones are not varied")
      ->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--budget", o.budget, "seconds to search (required)")->required();
  cmd->add_option("--seed", o.seed, "the search's seed: the same seed draws the same cases (default 0)");
  cmd->add_option("--world-sizes", o.world_sizes, "world sizes to draw from, comma-separated (default: 1 to 8, as many as the local pool allows)")
      ->delimiter(',');
  cmd->add_option("--backend", o.backend, "the backend of every case (default gloo)");
  cmd->add_option("--plugin", o.plugin, "explore a plugin's metric (its shared library)");
  cmd->add_option("--python", o.python, "explore a Python source's metric (pkg.module:factory, pkg.module or file.py)");
  cmd->add_option("--save", o.save_dir, "write each shrunk failure as a scenario file into DIR");
  cmd->add_option("--log", o.log_file, "write a JSON line per tried case to FILE");
  cmd->add_option("--json", o.json_file, "write the summary (findings, coverage, counts) as JSON to FILE");
  cmd->add_option("--markdown", o.markdown_file, "write the summary as Markdown to FILE");
  cmd->add_option("--junit", o.junit_file, "write JUnit XML to FILE: each finding's shrunk case as a failing test case "
                                           "(one passing case for the search when none was found)");
  cmd->add_option("--html", o.html_file, "write the HTML report of the findings' shrunk cases to FILE");
  cmd->add_option("--deadline", o.deadline, "seconds each case may take (default 10)")->check(CLI::Range(0.5, 600.0));
  cmd->add_option("--max-samples", o.max_samples, "the most samples a case draws (default 20000)")->check(CLI::Range(0, 1000000));
  cmd->add_option("--max-cases", o.max_cases, "stop after this many cases as well (default: the budget alone decides)")
      ->check(CLI::Range(0, 100000000));
  cmd->add_option("--batch", o.batch, "cases per world size before the next is drawn (default 8; 16 for a Python source)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--shrink-attempts", o.shrink_attempts, "candidate cases tried at most per failure (default 150)")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--quiet", o.quiet, "print only the failures and the last lines");
  cmd->add_flag("--verbose", o.verbose, "a progress line after every run, and each shrunk scenario's text");
  cmd->add_flag("--allow-python", o.allow_python, "a base scenario may call the Python it names (as for `run`)");
  return cmd;
}

int run_explore(const ExploreOptions& o, std::ostream& out, std::ostream& err) {
  auto bad = [&err](const std::string& message) {
    err << "distmetrics explore: " << message << "\n";
    return kBadInput;
  };
  if (!(o.budget > 0)) return bad("--budget must be a positive number of seconds (the time to search)");
  if (!o.plugin.empty() && !o.python.empty()) return bad("give --plugin or --python, not both");
  // The local pool's limit on this machine, and explore's own of 8.
  const int most = std::min(kMaxWorldSize, runtime::max_local_world_size());
  ex::Space space;
  space.world_sizes = o.world_sizes;
  if (space.world_sizes.empty())
    for (int w = 1; w <= most; ++w) space.world_sizes.push_back(w);
  for (int w : space.world_sizes)
    if (w < 1 || w > most)
      return bad("--world-sizes: " + std::to_string(w) + " is not a world size this machine's local pool can host (1 to " +
                 std::to_string(most) + "; at most 8 for explore)");
  const auto backends = runtime::backend_names();
  if (std::find(backends.begin(), backends.end(), o.backend) == backends.end())
    return bad("--backend: unknown backend '" + o.backend + "'" + runtime::did_you_mean(o.backend, backends));
  space.backend = o.backend;
  space.deadline_seconds = o.deadline;
  space.max_samples = o.max_samples;

  // The metric, from the reference registry or the plugin or Python source given.
  const metrics::MetricRegistry* registry = &metrics::MetricRegistry::reference();
  const plugin::Plugin* source = nullptr;
  try {
    if (!o.plugin.empty()) source = &plugin::load_plugin(o.plugin);
    if (!o.python.empty()) {
      if (!python_loader()) return bad("--python: this distmetrics was built without Python metrics");
      source = &python_loader()(o.python);
      space.max_batches_per_rank = 40;  // explore.h: a Python metric's call costs milliseconds
      space.max_batches_single = 100;
    }
  } catch (const std::exception& e) {
    const std::string what = e.what();
    const std::string option = o.plugin.empty() ? "--python" : "--plugin";
    if (what.rfind(option, 0) == 0) return bad(what);  // the loader named it already
    return bad(option + " " + (o.plugin.empty() ? o.python : o.plugin) + ": " + what);
  }
  if (source) {
    space.input_dtypes = false;  // explore.h: Space::input_dtypes
    registry = &source->registry;
    harness::MetricCatalog::instance().add("plugin " + source->path, &source->registry);
  }
  if (o.metric.empty()) return bad("--metric NAME is required (it provides " + runtime::quoted_list(registry->names()) + ")");
  if (!registry->find(o.metric))
    return bad("--metric: no metric '" + o.metric + "'" + runtime::did_you_mean(o.metric, registry->names()) +
               (source ? " in " + source->name : std::string(" among the reference metrics")) + " (" +
               runtime::quoted_list(registry->names()) + ")");
  json params = json::object();
  for (const auto& text : o.params) {
    const auto kv = parse_param(text);
    if (!kv) return bad("--param '" + text + "': give key=value");
    params[kv->first] = kv->second;
  }
  // Names here; values when the base scenario is loaded with them (below), beside the
  // parameters the metric needs and the base sets.
  {
    std::vector<std::string> known;
    for (const auto& p : registry->find(o.metric)->params) known.push_back(p.name);
    for (const auto& [key, value] : params.items())
      if (std::find(known.begin(), known.end(), key) == known.end())
        return bad("--param: " + runtime::unknown_param_message("metric '" + o.metric + "'", key, known));
  }
  harness::allow_scenario_python(o.allow_python);

  // The base scenario: the file given, else the metric's first scenario, else a generated one.
  std::optional<harness::Scenario> base;
  if (!o.base.empty()) {
    const auto loaded = harness::load_scenarios({o.base});
    if (!loaded.not_found.empty()) return bad(loaded.not_found);
    if (!loaded.diagnostics.empty()) {
      harness::print_scenario_diagnostics(loaded.diagnostics, err);
      return bad("the base scenario has errors: nothing was run");
    }
    for (const auto& s : loaded.scenarios)
      if (s.metric == o.metric && !base) base = s;
    if (!base) return bad("the base scenario " + o.base + " is not of metric " + o.metric);
  } else {
    const auto loaded = harness::load_scenarios({});
    for (const auto& s : loaded.scenarios)  // in name order
      if (s.metric == o.metric && !s.data.generator.empty() && !s.names_python() && !base) base = s;
  }
  bool generated_base = false;
  if (!base) {
    std::string why;
    base = base_from_generators(o.metric, params, why);
    if (!base) return bad("no data generator gives data that " + o.metric + " accepts (" + why + "); give a base scenario file");
    generated_base = true;
  }
  for (const auto& [key, value] : params.items()) base->metric_params[key] = value;
  if (!params.empty()) {
    space.vary_metric_params = false;
    std::string why;
    auto reloaded = ex::load_case(ex::scenario_to_toml(*base, {}, false), "base", &why);
    if (!reloaded) return bad("--param: the base scenario does not load with these parameters: " + why);
    reloaded->file = base->file;
    base = std::move(reloaded);
  }
  if (generated_base) base->file.clear();

  CaseSource cases;
  cases.metric = o.metric;
  cases.plugin = source;
  cases.plugin_path = o.plugin.empty() ? "" : source->path;
  cases.python = o.python;
  cases.deadline = o.deadline;
  // A C++ rank is light; a Python rank holds an interpreter and torch (about 0.3 GB).
  cases.max_pools = std::min<std::size_t>(space.world_sizes.size(), o.python.empty() ? 8 : 3);
  Explorer explorer(o, *base, space, cases, out);
  return explorer.run(err);
}

}  // namespace distmetrics::app
