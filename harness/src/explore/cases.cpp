// explore's cases (explorer.h): the base they start from, a case as the loader reads it, running
// one through a session, and the search's report model and log lines.
#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/explorer.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::explore {
namespace {

using nlohmann::json;

// `generator`'s parameters for a metric with these: its class count the metric's (3 when the
// metric has none), its other required ones 3, the rest their defaults.
json generator_params_for(const DataGenerator& generator, const json& metric_params) {
  json params = json::object();
  for (const auto& p : generator.params) {
    if (p.name == generator.class_count) {
      const auto classes = metric_class_count(metric_params);
      params[p.name] = classes > 0 ? classes : 3;
    } else if (p.required()) {
      params[p.name] = 3;
    }
  }
  return params;
}

// A base scenario for a metric that no file names: the first generator whose data the metric
// accepts (the loader feeds it a few samples), its class count the metric's.
std::optional<Scenario> base_from_generators(const std::string& metric, const json& params, std::string& why) {
  for (const auto& generator : data_generators()) {
    Scenario s;
    s.description = "explore base";
    s.metric = metric;
    s.metric_params = params;
    s.data.params = generator_params_for(generator, params);
    s.data.generator = generator.name;
    s.data.seed = 1;
    s.data.num_samples = 24;
    s.batch_size = 4;
    s.world_sizes = {1};
    s.backends = {"gloo"};
    s.shards = {"even"};
    s.placements = {"cpu"};
    s.script = {parse_step("update rest"), parse_step("compute")};
    std::string problem;
    if (auto loaded = load_case(scenario_to_toml(s, {}, false), "base", &problem)) return loaded;
    if (why.empty()) why = problem;
  }
  return std::nullopt;
}

}  // namespace

void check_space(Space& space, int most) {
  if (space.world_sizes.empty())
    for (int w = 1; w <= most; ++w) space.world_sizes.push_back(w);
  for (int w : space.world_sizes)
    if (w < 1 || w > most)
      throw std::invalid_argument("--world-sizes: " + std::to_string(w) +
                                  " is not a world size this machine's local pool can host (1 to " + std::to_string(most) +
                                  "; at most 8 for explore)");
  const auto backends = runtime::backend_names();
  if (std::find(backends.begin(), backends.end(), space.backend) == backends.end())
    throw std::invalid_argument("--backend: unknown backend '" + space.backend + "'" +
                                runtime::did_you_mean(space.backend, backends));
}

json metric_params(const std::string& metric, const std::vector<runtime::ParamDecl>& declared,
                   const std::vector<std::string>& given) {
  json params = json::object();
  for (const auto& text : given) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--param '" + text + "': give key=value");
    const std::string value = text.substr(eq + 1);
    json parsed = json::parse(value, nullptr, false);
    if (parsed.is_discarded() || parsed.is_object() || parsed.is_null()) parsed = value;
    params[text.substr(0, eq)] = parsed;
  }
  std::vector<std::string> known;
  for (const auto& p : declared) known.push_back(p.name);
  for (const auto& [key, value] : params.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw std::invalid_argument("--param: " + runtime::unknown_param_message("metric '" + metric + "'", key, known));
  return params;
}

Scenario choose_base(const std::string& metric, const json& params, const std::string& base_file, std::ostream& diagnostics) {
  std::optional<Scenario> base;
  if (!base_file.empty()) {
    const auto loaded = load_scenarios({base_file});
    if (!loaded.not_found.empty()) throw std::invalid_argument(loaded.not_found);
    if (!loaded.diagnostics.empty()) {
      print_scenario_diagnostics(loaded.diagnostics, diagnostics);
      throw std::invalid_argument("the base scenario has errors: nothing was run");
    }
    for (const auto& s : loaded.scenarios)
      if (s.metric == metric && !base) base = s;
    if (!base) throw std::invalid_argument("the base scenario " + base_file + " is not of metric " + metric);
  } else {
    const auto loaded = load_scenarios({});
    for (const auto& s : loaded.scenarios)  // in name order
      if (s.metric == metric && !s.data.generator.empty() && !s.names_python() && !base) base = s;
  }
  bool generated = false;
  if (!base) {
    std::string why;
    base = base_from_generators(metric, params, why);
    if (!base)
      throw std::invalid_argument("no data generator gives data that " + metric + " accepts (" + why +
                                  "); give a base scenario file");
    generated = true;
  }
  for (const auto& [key, value] : params.items()) base->metric_params[key] = value;
  if (!params.empty()) {
    std::string why;
    auto reloaded = load_case(scenario_to_toml(*base, {}, false), "base", &why);
    // Parameters that ask for other data (task = binary where the library's scenario is
    // multiclass): the generator they fit, or a base made from the generators.
    if (!reloaded && base_file.empty()) {
      std::string ignored;
      if (const std::string fitting = generator_chooser(*base)(base->metric_params); !fitting.empty()) {
        Scenario other = *base;
        other.data.generator = fitting;
        other.data.params = generator_params_for(*find_generator(fitting), other.metric_params);
        reloaded = load_case(scenario_to_toml(other, {}, false), "base", &ignored);
      }
      if (!reloaded && (reloaded = base_from_generators(metric, params, ignored))) generated = true;
    }
    if (!reloaded) throw std::invalid_argument("--param: the base scenario does not load with these parameters: " + why);
    reloaded->file = generated ? std::string() : base->file;
    base = std::move(reloaded);
  }
  if (generated) base->file.clear();
  return *base;
}

std::function<std::string(const json&)> generator_chooser(const Scenario& base) {
  auto chosen = std::make_shared<std::map<std::string, std::string>>();
  return [base, chosen](const json& metric_params) -> std::string {
    json key = json::object();  // what can change which data the metric takes
    for (const auto& [name, value] : metric_params.items())
      if (!value.is_number_float()) key[name] = value;
    const auto known = chosen->find(key.dump());
    if (known != chosen->end()) return known->second;
    Scenario trial = base;
    trial.metric_params = metric_params;
    trial.data.num_samples = std::max<std::int64_t>(trial.data.num_samples, 8);
    // The base's data, its class count the metric's (a case ties them too).
    const DataGenerator* own = find_generator(base.data.generator);
    if (own && !own->class_count.empty() && metric_class_count(metric_params) > 0) {
      trial.data.params[own->class_count] = metric_class_count(metric_params);
      if (trial.data.params.contains("class_weights")) trial.data.params["class_weights"] = json::array();
    }
    std::string fitting;
    if (load_case(scenario_to_toml(trial, {}, false), "case")) fitting = base.data.generator;
    for (const auto& generator : data_generators()) {
      if (!fitting.empty()) break;
      if (generator.name == base.data.generator) continue;
      trial.data.generator = generator.name;
      trial.data.params = generator_params_for(generator, metric_params);
      if (load_case(scenario_to_toml(trial, {}, false), "case")) fitting = generator.name;
    }
    (*chosen)[key.dump()] = fitting;
    return fitting;
  };
}

std::optional<std::pair<Scenario, std::string>> load_as_case(const Scenario& s, bool extras, std::string* why) {
  std::string toml = scenario_to_toml(s, {}, false);
  auto loaded = load_case(toml, "case", why);
  if (!loaded) return std::nullopt;
  // The loader checks that the metric accepts the data on a few of its samples: with none, it
  // cannot, and a draw the metric would refuse (sample weights for RocAuc) reached the ranks as
  // an empty batch with a weight column, which accepts_empty_batch failed (explore's false
  // failure on RocAuc and Accuracy). The same draw with a few samples decides.
  if (s.data.num_samples == 0 && s.data.file.empty()) {
    Scenario some = s;
    some.data.num_samples = 4;
    if (!load_case(scenario_to_toml(some, {}, false), "case", why)) return std::nullopt;
  }
  if (extras) {
    for (const auto& p : listed_only_properties())
      if (std::find(loaded->properties.begin(), loaded->properties.end(), p) == loaded->properties.end())
        loaded->properties.push_back(p);
    std::string with = scenario_to_toml(*loaded, {}, true);
    if (auto again = load_case(with, "case")) return std::make_pair(std::move(*again), with);
  }
  return std::make_pair(std::move(*loaded), toml);
}

Verdict run_case(Session& session, const Scenario& scenario) {
  auto variants = expand_variants(scenario, runtime::visible_gpu_count());
  if (variants.empty()) {
    Verdict verdict;
    verdict.outcome = Outcome::Error;
    verdict.reason = "the case expands into no variant";
    return verdict;
  }
  if (variants.front().skip) return skip_verdict(variants.front());
  return session.run(SessionItem{&scenario, variants.front(), std::nullopt});
}

SessionRunner::SessionRunner(std::size_t max_pools) {
  SessionOptions options;  // no engine-wide deadline: each case's own (explore sets it to --deadline)
  options.max_pools = max_pools;
  session_ = std::make_unique<Session>(std::move(options));
}

SessionRunner::~SessionRunner() { session_->close(); }

Verdict SessionRunner::run(const Scenario& scenario) { return run_case(*session_, scenario); }

ReportModel report_model(const Summary& summary) {
  const std::string metric = [&] {
    std::string m = summary.target.metric;
    for (auto& ch : m)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return m;
  }();
  // Each finding's shrunk case as a variant of its own ("explore/METRIC_N"), or, when none was
  // found, one passing variant for the search.
  std::vector<Verdict> verdicts;
  for (std::size_t i = 0; i < summary.findings.size(); ++i) {
    const auto& f = summary.findings[i];
    Verdict v = f.verdict;
    auto& variant = v.variant;
    variant.scenario = "explore/" + metric + "_" + std::to_string(i + 1);
    variant.file = f.saved;
    variant.id = variant_id(variant.scenario, variant.backend, variant.world_size, variant.shard, variant.placement,
                            variant.dtype);
    variant.reproduce_command = f.reproduce;
    verdicts.push_back(std::move(v));
  }
  if (verdicts.empty()) {
    Verdict v;
    v.variant.scenario = "explore/" + metric;
    v.variant.id = v.variant.scenario + ":search";
    v.variant.backend = summary.backend;
    v.seconds = summary.seconds;
    PropertyResult p;
    p.name = "explore";
    p.message = "explore held: " + std::to_string(summary.cases) + " case(s) of seed " + std::to_string(summary.seed) +
                ", no failure within the budget of " + fixed_text(summary.budget, 1) + " s";
    v.properties.push_back(p);
    verdicts.push_back(std::move(v));
  }
  ReportModel model = harness::report_model(verdicts, summary.started, summary.seconds);
  SearchSummary search;
  search.metric = summary.target.metric;
  search.seed = summary.seed;
  search.budget = summary.budget;
  search.seconds = summary.seconds;
  search.cases = summary.cases;
  search.refused = summary.refused;
  search.slow = summary.slow;
  search.unjudged = summary.unjudged;
  search.shrink_cases = summary.shrink_cases;
  search.variants_per_second = summary.variants_per_second();
  search.helper_ready_seconds = summary.helper_ready_seconds;
  search.first_case_seconds = summary.first_case_seconds;
  search.coverage = summary.coverage;
  for (const auto& f : summary.findings)
    search.findings.push_back({f.signature.text(), f.signature.outcome, f.signature.properties, f.signature.blame, f.index,
                               f.found_after, f.original_size, f.shrunk_size, f.shrink_steps, f.shrink_tried, f.shrink_cut,
                               f.saved, f.toml, f.verdict});
  model.search = std::move(search);
  return model;
}

std::string log_line(const CaseRecord& r) {
  if (r.phase == "refused")
    return json({{"phase", r.phase}, {"case", r.index}, {"why", r.reason}, {"scenario", r.toml}}).dump();
  return json({{"phase", r.phase},
               {"case", r.index},
               {"slow", r.slow},
               {"unjudged", r.unjudged},
               {"seconds_since_start", r.seconds_since_start},
               {"seconds", r.seconds},
               {"outcome", r.outcome},
               {"signature", r.signature ? json(*r.signature) : json(nullptr)},
               {"reason", r.reason},
               {"size", r.size},
               {"features", r.features},
               {"scenario", r.toml}})
      .dump();
}

}  // namespace distmetrics::harness::explore
