// explore's engine (explorer.h): the search, the shrinking, the rerun of maybe-slow hangs, the
// saved files.
#include "distmetrics/harness/explorer.h"
#include "distmetrics/harness/number_text.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::explore {
namespace {

namespace fs = std::filesystem;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string fixed(double v) { return fixed_text(v, 1); }

// A later batch's world size: w with weight 1/w. A case costs about its number of ranks in CPU
// (past the machine's cores, in wall time too), so each size gets a like share of the budget,
// not a like number of cases, and small cases, where most bugs shrink to, come often; every
// allowed size is still drawn.
int draw_world_size(Rng& rng, const std::vector<int>& sizes) {
  double total = 0;
  for (int w : sizes) total += 1.0 / w;
  double left = rng.unit() * total;
  for (int w : sizes) {
    left -= 1.0 / w;
    if (left < 0) return w;
  }
  return sizes.back();
}

bool lists_extras(const Scenario& s) {
  const auto extras = listed_only_properties();
  return !extras.empty() && std::find(s.properties.begin(), s.properties.end(), extras.front()) != s.properties.end();
}

std::string script_text(const Scenario& s) {
  std::string text;
  for (const auto& step : s.script) text += step.text + ";";
  return text;
}

// What a shrink cut short had not tried: "stopped at the budget (20.0 s): 14 candidate(s) of
// this round untried (fewer samples, fewer steps, ...)".
std::string cut_text(const std::string& at, const Scenario& current,
                     const std::vector<std::pair<Scenario, std::string>>& candidates, std::size_t from) {
  std::vector<std::string> kinds;
  for (std::size_t i = from; i < candidates.size(); ++i) {
    const auto& c = candidates[i].first;
    const std::string kind = c.world_sizes != current.world_sizes             ? "fewer ranks"
                             : c.data.num_samples != current.data.num_samples ? "fewer samples"
                             : c.script.size() != current.script.size()       ? "fewer steps"
                             : script_text(c) != script_text(current)         ? "plainer steps"
                             : c.batch_size != current.batch_size             ? "fewer batches"
                                                                              : "plainer data or parameters";
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  std::string text = "stopped at " + at + ": " + std::to_string(candidates.size() - std::min(from, candidates.size())) +
                     " candidate(s) of this round untried";
  for (std::size_t k = 0; k < kinds.size(); ++k) text += (k ? ", " : " (") + kinds[k] + (k + 1 == kinds.size() ? ")" : "");
  return text;
}

// The metric's name as a file name's part: "MeanAbsoluteError", "Average_SumMetric_".
std::string file_part(std::string metric) {
  for (auto& ch : metric)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return metric;
}

}  // namespace

double Progress::variants_per_second() const { return (cases + shrink_cases) / std::max(seconds, 1e-9); }
double Summary::variants_per_second() const { return (cases + shrink_cases) / std::max(seconds, 1e-9); }

std::map<std::string, std::vector<std::pair<std::string, std::uint64_t>>> Summary::coverage_by_axis() const {
  std::map<std::string, std::vector<std::pair<std::string, std::uint64_t>>> axes;
  for (const auto& [feature, count] : coverage) {
    const auto cut = feature.find_first_of("= ");
    axes[cut == std::string::npos ? feature : feature.substr(0, cut)].emplace_back(
        cut == std::string::npos ? "" : feature.substr(cut + 1), count);
  }
  return axes;
}

struct Explorer::Evaluated {
  Scenario scenario;
  std::string toml;
  Verdict verdict;
  double finished_at = 0;  // seconds since the start
  // A hang that may be the machine's load (maybe_slow) whose rerun with three times the deadline
  // the budget left no time for: neither a finding nor a pass.
  bool unjudged = false;
};

Explorer::Explorer(Options options, Scenario base, Target target, CaseRunner& runner, double ready_after)
    : options_(std::move(options)), base_(std::move(base)), target_(std::move(target)), runner_(runner) {
  start_ = now_seconds() - ready_after;
  // Drawn metric parameters may ask for other data (a task): the generator that fits them.
  if (options_.space.vary_metric_params && !options_.space.generator_for && base_.data.file.empty() &&
      !base_.data.generator.empty())
    options_.space.generator_for = generator_chooser(base_);
  summary_.target = target_;
  summary_.backend = options_.space.backend;
  summary_.seed = options_.seed;
  summary_.budget = options_.budget;
  summary_.helper_ready_seconds = ready_after;
  summary_.started = now_iso8601();
}

double Explorer::since_start() const { return now_seconds() - start_; }

void Explorer::progress(bool last) {
  Progress p;
  p.seconds = since_start();
  p.cases = summary_.cases;
  p.refused = summary_.refused;
  p.slow = summary_.slow;
  p.unjudged = summary_.unjudged;
  p.shrink_cases = summary_.shrink_cases;
  p.failures = summary_.findings.size();
  listener_->progress(p, last);
}

// Runs a case. A hang that may be the machine's load (maybe_slow) runs again with three times
// the deadline while the budget lasts: only if it runs out again is it a hang (or that error);
// otherwise the longer run's verdict stands.
Explorer::Evaluated Explorer::evaluate(const Scenario& scenario, const std::string& toml, const char* phase,
                                       std::uint64_t index) {
  Evaluated e{scenario, toml, {}, 0, false};
  e.scenario.name = "explore_case";
  e.scenario.file = folder_ + "/explore_case.toml";
  e.verdict = runner_.run(e.scenario);
  bool slow = false;
  if (maybe_slow(e.verdict) && since_start() >= options_.budget) e.unjudged = true;
  if (maybe_slow(e.verdict) && since_start() < options_.budget) {
    Scenario longer = e.scenario;
    longer.deadline_seconds = 3 * e.scenario.deadline_seconds;
    Verdict again = runner_.run(longer);
    if (again.outcome != Outcome::Hang && again.outcome != Outcome::Skip && !maybe_slow(again)) {
      slow = true;
      ++summary_.slow;
      e.verdict = std::move(again);
    }
  }
  e.finished_at = since_start();
  if (!summary_.first_case_seconds) summary_.first_case_seconds = e.finished_at;
  const auto sig = failure_signature(e.verdict);
  CaseRecord record;
  record.phase = phase;
  record.index = index;
  record.slow = slow;
  record.unjudged = e.unjudged;
  record.seconds_since_start = since_start();
  record.seconds = e.verdict.seconds;
  record.outcome = to_string(e.verdict.outcome);
  if (sig) record.signature = sig->text();
  record.reason = e.verdict.reason;
  record.size = size_text(e.scenario);
  record.features = features_of(e.scenario);
  record.toml = e.toml;
  listener_->case_ran(record);
  return e;
}

ShrunkFailure Explorer::shrink(const Evaluated& failing, const Signature& signature, std::uint64_t index) {
  ShrunkFailure f;
  f.signature = signature;
  f.index = index;
  f.original_size = size_text(failing.scenario);
  Scenario current = failing.scenario;
  f.toml = failing.toml;
  f.verdict = failing.verdict;
  std::set<std::string> seen = {failing.toml};
  // Shrinking takes its time from the budget: what is left of it, at most (the search goes on
  // after it while any is left). Cut there, the finding is the smallest case found so far.
  bool progressed = true;
  while (progressed && f.shrink_cut.empty()) {
    progressed = false;
    std::vector<std::pair<Scenario, std::string>> candidates;
    const bool extras = lists_extras(current);
    for (auto& c : shrink_candidates(current, options_.space.max_batches_single)) {
      c.description = current.description;
      auto loaded = load_as_case(c, extras);
      if (!loaded || !seen.insert(loaded->second).second) continue;
      candidates.push_back(std::move(*loaded));
    }
    // In order, one at a time: the first that keeps the signature wins, and the candidates after
    // it are not run (a candidate that hangs costs a respawned pool: a Python one's start is
    // seconds). The winner does not depend on the timing.
    for (std::size_t at = 0; at < candidates.size() && !progressed; ++at) {
      const bool attempts = f.shrink_tried >= options_.shrink_attempts;
      if (attempts || since_start() >= options_.budget) {
        f.shrink_cut = cut_text(attempts ? "--shrink-attempts " + std::to_string(options_.shrink_attempts)
                                         : "the budget (" + fixed(options_.budget) + " s)",
                                current, candidates, at);
        break;
      }
      const Evaluated r = evaluate(candidates[at].first, candidates[at].second, "shrink", index);
      ++f.shrink_tried;
      ++summary_.shrink_cases;
      if (!r.unjudged) {  // a hang the budget left no rerun for keeps nothing
        const auto sig = failure_signature(r.verdict);
        if (sig && *sig == signature) {
          current = r.scenario;
          f.toml = r.toml;
          f.verdict = r.verdict;
          ++f.shrink_steps;
          progressed = true;
          f.shrink_cut.clear();  // a smaller case kept it; the next round starts from that one
        }
      }
      progress(false);
    }
  }
  f.shrunk_size = size_text(current);
  return f;
}

std::string Explorer::reproduce_command(const std::string& path) const {
  const bool registered = target_.source.kind == MetricSource::Kind::Registered;
  if (path.empty())  // not saved: the search again, which finds it the same way (a budget cut aside)
    return "distmetrics explore " + (registered ? std::string() : target_.source.option() + " ") + "--metric " +
           runtime::shell_quote(target_.metric) + " --seed " + std::to_string(options_.seed) + " --budget " +
           fixed(options_.budget) + " --save DIR";
  return registered ? "distmetrics run " + runtime::shell_quote(path)
                    : "distmetrics conform " + target_.source.option() + " --metric " + runtime::shell_quote(target_.metric) +
                          " " + runtime::shell_quote(path);
}

// The shrunk case as a scenario file of its own: a header that says how it was found and how to
// reproduce it, then the scenario.
std::string Explorer::save(const ShrunkFailure& f, int number) const {
  fs::create_directories(options_.save_dir);
  const std::string path = (fs::path(options_.save_dir) / ("explore_" + file_part(target_.metric) + "_seed" +
                                                           std::to_string(options_.seed) + "_" + std::to_string(number) +
                                                           ".toml"))
                               .string();
  auto scenario = load_case(f.toml, "saved");
  const bool registered = target_.source.kind == MetricSource::Kind::Registered;
  const std::vector<std::string> header = {
      "Found by `distmetrics explore " + (registered ? std::string() : target_.source.option() + " ") + "--metric " +
          target_.metric + " --seed " + std::to_string(options_.seed) + "` (case " + std::to_string(f.index) + ", after " +
          fixed(f.found_after) + " s).",
      "Failure: " + f.signature.text() + ": " + runtime::first_line(f.verdict.reason),
      "Shrunk in " + std::to_string(f.shrink_steps) + " step(s) from " + f.original_size + " to " + f.shrunk_size + ".",
      "Reproduce: " + reproduce_command(path),
      "Keep it as a regression: move it to scenarios/regression/ and say in `description` what it checks (docs/explore.md)."};
  std::string text = f.toml;
  if (scenario) {
    scenario->description = "explore: " + target_.metric + " " + f.signature.text() + " (seed " +
                            std::to_string(options_.seed) + ", case " + std::to_string(f.index) + ")";
    text = scenario_to_toml(*scenario, header, lists_extras(*scenario));
  }
  std::ofstream(path) << text;
  return path;
}

Summary Explorer::run(Listener& listener) {
  listener_ = &listener;
  char templ[] = "/tmp/distmetrics-explore-XXXXXX";
  const char* tmp = ::mkdtemp(templ);
  if (!tmp) throw std::runtime_error("cannot make a private folder under /tmp");
  folder_ = tmp;
  std::map<std::string, std::size_t> found_at;  // signature text -> finding
  std::uint64_t index = 0;
  const int batch = options_.batch > 0 ? options_.batch : target_.source.is_python() ? 16 : 8;
  const auto& sizes = options_.space.world_sizes;
  const auto cases_left = [&](std::size_t drawn) {
    return options_.max_cases <= 0 || summary_.cases + drawn < static_cast<std::uint64_t>(options_.max_cases);
  };
  for (std::uint64_t batch_number = 0; since_start() < options_.budget && cases_left(0); ++batch_number) {
    // Each batch runs at one world size (one rank pool); its cases are (seed, index) functions.
    // The first batch is distributed and small (2 or 3 ranks, where most sync bugs already show
    // and a pool starts fastest) when those sizes are allowed; later ones draw from them all.
    Rng size_rng(options_.seed * 1000003ull + batch_number);
    Space space = options_.space;
    std::vector<int> first;
    for (int w : sizes)
      if (w == 2 || w == 3) first.push_back(w);
    space.world_sizes = {batch_number == 0 && !first.empty() ? size_rng.pick(first) : draw_world_size(size_rng, sizes)};
    std::vector<std::pair<Scenario, std::string>> cases;
    std::vector<std::uint64_t> indices;
    for (int k = 0; k < batch && cases_left(cases.size()); ++k, ++index) {
      const Case c = generate_case(base_, space, options_.seed, index);
      std::string why;
      // Half the cases also check the listed-only properties (the choice is the case's own).
      const bool extras = Rng(options_.seed * 7919ull + index).chance(0.5);
      auto loaded = load_as_case(c.scenario, extras, &why);
      if (!loaded) {
        ++summary_.refused;
        CaseRecord refused;
        refused.phase = "refused";
        refused.index = index;
        refused.reason = why;
        refused.toml = scenario_to_toml(c.scenario, {}, false);
        listener_->case_ran(refused);
        continue;
      }
      cases.push_back(std::move(*loaded));
      indices.push_back(index);
    }
    // One case at a time: a new failure is shrunk at once, while the budget has the most left
    // (the batch's other cases wait; what each case is does not depend on when it runs).
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (i > 0) progress(false);
      if (since_start() >= options_.budget) break;
      const Evaluated r = evaluate(cases[i].first, cases[i].second, "search", indices[i]);
      ++summary_.cases;
      for (const auto& f : features_of(r.scenario)) ++summary_.coverage[f];
      if (r.unjudged) {
        ++summary_.unjudged;
        listener_->not_judged(indices[i], size_text(r.scenario));
        continue;
      }
      const auto sig = failure_signature(r.verdict);
      if (!sig || found_at.count(sig->text())) continue;  // each failure reported once
      listener_->failing(indices[i], *sig, r.verdict, size_text(r.scenario));
      ShrunkFailure f = shrink(r, *sig, indices[i]);
      f.found_after = r.finished_at;  // when that case ended, not its batch
      if (!options_.save_dir.empty()) f.saved = save(f, static_cast<int>(summary_.findings.size()) + 1);
      f.reproduce = reproduce_command(f.saved);
      listener_->shrunk(f);
      found_at[sig->text()] = summary_.findings.size();
      summary_.findings.push_back(std::move(f));
    }
    if (!cases.empty()) progress(false);
  }
  progress(true);
  fs::remove_all(folder_);
  summary_.seconds = since_start();
  return summary_;
}

}  // namespace distmetrics::harness::explore
