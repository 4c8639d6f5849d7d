// The search space of `distmetrics explore` (explore.h, docs/explore.md): a case is the base
// scenario with its variant axes, data, batches, script and parameters drawn at random.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/shard.h"

namespace distmetrics::harness::explore {
namespace {

using nlohmann::json;

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  Rng r(a ^ (b * 0x9E3779B97F4A7C15ull));
  r.next();
  return r.next();
}

// Parameters tied between the metric and its data: the same class count on both sides.
bool is_class_count(const std::string& name) { return name == "num_classes" || name == "num_labels"; }

// Magnitudes at the ends of what floating point holds well, and the degenerate ones: a number
// parameter that declares no draws of its own draws from them.
const std::vector<double>& magnitudes() {
  static const std::vector<double> values = {0.0, 1e-7, 1e-3, 1.0, 3.0, 1e3, 1e6, 1e9, 1e12};
  return values;
}

// A value for a declared parameter, or null to leave it alone: one of its choices, the other
// truth value, one of the values its descriptor says explore draws (runtime::ParamDecl::draws,
// with a random sign where it says so), else a magnitude (a float) or a count near the current
// one (an int).
json draw_param(Rng& r, const runtime::ParamDecl& p, const json& current) {
  if (!p.choices.empty()) return r.pick(p.choices);
  if (p.type == "bool") return !(current.is_boolean() && current.get<bool>());
  if (!p.draws.empty()) {
    if (!p.draws_either_sign) return r.pick(p.draws);
    const double sign = r.chance(0.5) ? -1.0 : 1.0;
    return sign * r.pick(p.draws).get<double>();
  }
  if (p.type == "float") return r.pick(magnitudes());
  if (p.type == "int") {
    if (current.is_number_integer()) return std::max<std::int64_t>(0, current.get<std::int64_t>() + r.between(-2, 2));
    return r.between(0, 4);
  }
  return nullptr;  // lists, tables: kept as they are
}

const std::vector<runtime::ParamDecl>* metric_params_of(const std::string& metric) {
  const auto* registry = MetricCatalog::instance().registry_for(metric);
  if (!registry) return nullptr;
  const auto* spec = registry->find(metric);
  return spec ? &spec->params : nullptr;
}

std::int64_t class_count(const Scenario& s) {
  for (const char* key : {"num_classes", "num_labels"}) {
    if (s.data.params.contains(key) && s.data.params[key].is_number_integer()) return s.data.params[key].get<std::int64_t>();
    if (s.metric_params.contains(key) && s.metric_params[key].is_number_integer()) return s.metric_params[key].get<std::int64_t>();
  }
  return 0;
}

void set_class_count(Scenario& s, std::int64_t classes) {
  for (const char* key : {"num_classes", "num_labels"}) {
    if (s.data.params.contains(key)) s.data.params[key] = classes;
    if (s.metric_params.contains(key) && s.metric_params[key].is_number_integer()) s.metric_params[key] = classes;
  }
  if (s.data.params.contains("class_weights") && s.data.params["class_weights"].is_array() &&
      !s.data.params["class_weights"].empty())
    s.data.params["class_weights"] = json::array();
}

// The data's spread stays at least kLeastRelativeSpread of its magnitude (a spread of 1e-7
// around 3 is widened to 3e-3, one of 1 around 1e12 to 1e9; a spread of 0, a constant, stays).
// Below that, a one-pass variance (sum of squares minus square of sum over n: R2Score,
// PearsonCorrelation, torchmetrics' and Ignite's alike) cancels down to float64 rounding: its
// value then depends on the order of summation, so on the batches and the world size, and
// equal_to_single fails for a metric that syncs correctly. That is the formula's
// conditioning on that data, not a distributed bug, and the oracle cannot tell the two apart
// (R2Score, spread 1e-7 around 3: found by the magnitude axis). Magnitudes themselves stay
// extreme: only the spread relative to them is bounded.
constexpr double kLeastRelativeSpread = 1e-3;

void keep_spread_resolvable(json& p, const DataGenerator& generator) {
  auto number = [&](const char* key) -> std::optional<double> {  // as given, else the default
    if (p.contains(key)) return p[key].is_number() ? std::optional<double>(p[key].get<double>()) : std::nullopt;
    for (const auto& decl : generator.params)
      if (decl.name == key && decl.default_value.is_number()) return decl.default_value.get<double>();
    return std::nullopt;
  };
  for (const char* centre : {"offset", "mean"}) {
    const auto c = number(centre);
    const auto spread = number("scale");
    if (!c || !spread || *spread <= 0 || std::fabs(*c) * kLeastRelativeSpread <= *spread) continue;
    p["scale"] = std::fabs(*c) * kLeastRelativeSpread;
  }
  const auto low = number("low"), high = number("high");
  if (low && high && *high > *low) {
    const double size = std::max(std::fabs(*low), std::fabs(*high));
    if (*high - *low < size * kLeastRelativeSpread) p["high"] = *low + size * kLeastRelativeSpread;
  }
}

}  // namespace

std::int64_t metric_class_count(const json& metric_params) {
  for (const char* key : {"num_classes", "num_labels"})
    if (metric_params.contains(key) && metric_params[key].is_number_integer() && metric_params[key].get<std::int64_t>() > 0)
      return metric_params[key].get<std::int64_t>();
  return 0;
}

void use_generator(Scenario& s, const std::string& generator_name, Rng& r) {
  const DataGenerator* generator = find_generator(generator_name);
  if (!generator) return;
  s.data.generator = generator->name;
  s.data.params = json::object();
  // Its class count is the metric's (3 when the metric has none), its other required parameters 3.
  for (const auto& p : generator->params) {
    if (p.name == generator->class_count) {
      const auto classes = metric_class_count(s.metric_params);
      s.data.params[p.name] = classes > 0 ? classes : 3;
    } else if (p.required()) {
      s.data.params[p.name] = 3;
    }
  }
  for (const auto& p : generator->params) {
    if (p.name == generator->class_count || p.required() || !r.chance(0.3)) continue;
    json value = draw_param(r, p, p.default_value);
    if (!value.is_null()) s.data.params[p.name] = value;
  }
  keep_spread_resolvable(s);
}

namespace {

Step step(const std::string& text) { return parse_step(text); }

std::vector<Step> draw_script(Rng& r, int world_size) {
  std::vector<Step> script;
  const int length = static_cast<int>(r.between(1, 8));
  bool reset = false;
  bool compute_every = false;
  // Mostly data first: a compute before any update raises on every rank (no samples anywhere),
  // which ends the ranks' scripts and leaves the rest of the case unjudged.
  if (r.chance(0.85)) script.push_back(step(r.chance(0.5) ? "update" : "update " + std::to_string(r.between(1, 9) * 10) + "%"));
  for (int i = 0; i < length; ++i) {
    if (!script.empty() && script.back().op == Step::Op::Reset && r.chance(0.8)) {
      script.push_back(step(r.chance(0.5) ? "replay" : "update"));
      continue;
    }
    const auto roll = r.between(0, 99);
    std::string text;
    if (roll < 14) text = "update";
    else if (roll < 22) text = "update " + std::to_string(r.between(2, 4));
    else if (roll < 30) text = "update " + std::to_string(r.between(1, 9) * 10) + "%";
    else if (roll < 40) text = "update rest";
    else if (roll < 48) text = "update empty";
    else if (roll < 58 && world_size > 1) {  // ranks reach the next compute with different update counts
      std::string ranks;
      for (int rank = 0; rank < world_size; ++rank)
        if (r.chance(0.5)) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
      if (ranks.empty()) ranks = std::to_string(r.between(0, world_size - 1));
      text = std::string(r.chance(0.3) ? "update empty" : "update") + " ranks=" + ranks;
    } else if (roll < 72) text = "compute";
    else if (roll < 80) {
      script.push_back(step("compute"));
      text = "compute";  // compute twice
    } else if (roll < 88) {
      text = "reset";
      reset = true;
    } else if (roll < 94 && reset) text = "replay";
    else if (roll < 97 && !compute_every) {
      text = "compute every";
      compute_every = true;
    } else text = "update rest";
    script.push_back(step(text));
  }
  if (script.empty() || script.back().op != Step::Op::Compute) script.push_back(step("compute"));
  return script;
}

std::int64_t draw_samples(Rng& r, std::int64_t max_samples) {
  const auto roll = r.between(0, 99);
  std::int64_t n;
  if (roll < 5) n = 0;
  else if (roll < 18) n = r.between(1, 3);
  else if (roll < 55) n = r.between(4, 40);
  else if (roll < 85) n = r.between(41, 400);
  else if (roll < 95) n = r.between(401, 5000);
  else n = r.between(5001, std::max<std::int64_t>(5001, max_samples));
  return std::min(n, std::max<std::int64_t>(max_samples, 0));
}

// At most space.max_batches_per_rank batches a rank, and space.max_batches_single in the single
// process's script: thousands of one-sample batches (each a call into the metric, several times
// over for batch_invariant and `compute every`) would spend a case's deadline.
std::int64_t draw_batch_size(Rng& r, std::int64_t samples, int world_size, const Space& space) {
  const std::int64_t per_rank = std::max<std::int64_t>(1, samples / std::max(world_size, 1));
  auto at_least = [](std::int64_t n, std::int64_t most) { return most > 0 ? (n + most - 1) / most : 1; };
  const std::int64_t least =
      std::max(at_least(per_rank, space.max_batches_per_rank), at_least(samples, space.max_batches_single));
  const auto roll = r.between(0, 99);
  std::int64_t size;
  if (roll < 20) size = 1;
  else if (roll < 45) size = r.between(2, 8);
  else if (roll < 80) size = r.between(1, per_rank);
  else size = per_rank + r.between(0, 3);  // one batch per rank (or fewer rows than a batch)
  return std::max(size, least);
}

}  // namespace

std::vector<std::int64_t> batch_invariant_sizes_within(std::int64_t samples, std::int64_t batch_size,
                                                       std::int64_t most_batches) {
  if (most_batches <= 0 || samples <= most_batches) return {};
  std::vector<std::int64_t> sizes;
  for (std::int64_t size : {(samples + most_batches - 1) / most_batches, 2 * batch_size + 1})
    if (size != batch_size && std::find(sizes.begin(), sizes.end(), size) == sizes.end()) sizes.push_back(size);
  return sizes;
}

void keep_spread_resolvable(Scenario& s) {
  if (const auto* generator = find_generator(s.data.generator)) keep_spread_resolvable(s.data.params, *generator);
}

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::int64_t Rng::between(std::int64_t low, std::int64_t high) {
  if (high <= low) return low;
  const auto span = static_cast<std::uint64_t>(high - low) + 1;
  return low + static_cast<std::int64_t>(next() % span);
}

bool Rng::chance(double p) { return unit() < p; }
double Rng::unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

namespace {

// The base without what a drawn case must not inherit: its expectations, its properties, its
// batch sizes for batch_invariant; the space's deadline.
void reset_from_base(Scenario& s, const Scenario& base, const Space& space) {
  s = base;
  s.golden.reset();
  s.reference.reset();
  s.expect = Expectation{};
  s.properties.clear();
  s.batch_invariant_sizes.clear();
  s.deadline_seconds = space.deadline_seconds;
}

// The world size, backend, placement, shard policy and input dtype; returns the world size.
int draw_axes(Rng& r, Scenario& s, const Space& space) {
  const int w = space.world_sizes.empty() ? 1 : r.pick(space.world_sizes);
  s.world_sizes = {w};
  s.backends = {space.backend};
  s.placements = {"cpu"};
  std::vector<std::string> shards;
  // Not "padded": it repeats samples as torch's DistributedSampler does, so equal_to_single fails
  // for every metric by design (regression/pytorch_25162_padded_sampler expects it).
  // `empty_rank` twice: a rank with no data at a compute is where the most common distributed
  // bugs show (a local decision before the collective: PyTorch-Ignite #1242), and the budget of
  // a slow (Python) source reaches only a few dozen cases.
  for (const auto& policy : shard_policies()) {
    if (policy.min_world_size > w || policy.name == "padded") continue;
    shards.push_back(policy.name);
    if (policy.name == "empty_rank") shards.push_back(policy.name);
  }
  s.shards = {r.pick(shards)};
  s.dtypes.clear();
  if (r.chance(0.2) && space.input_dtypes) s.dtypes = {r.pick(input_dtype_names())};
  return w;
}

// Generated data: its seed, size, dtype, the generator's parameters, the classes and weights.
void draw_generated_data(Rng& r, Scenario& s, const Space& space) {
  s.data.seed = static_cast<std::uint64_t>(r.between(0, 999999));
  s.data.num_samples = draw_samples(r, space.max_samples);
  if (r.chance(0.3)) s.data.dtype = r.chance(0.5) ? "float32" : "float64";
  if (const auto* generator = find_generator(s.data.generator)) {
    for (const auto& p : generator->params) {
      if (p.name == generator->class_count || !r.chance(0.3)) continue;
      const json current = s.data.params.value(p.name, p.default_value);
      json value = draw_param(r, p, current);
      if (!value.is_null()) s.data.params[p.name] = value;
    }
    if (s.data.params.contains("low") && s.data.params.contains("high") && s.data.params["low"].is_number() &&
        s.data.params["high"].is_number() && s.data.params["high"].get<double>() <= s.data.params["low"].get<double>())
      s.data.params["high"] = s.data.params["low"].get<double>() + 1.0;
    explore::keep_spread_resolvable(s);
  }
  // Classes: a count from 1 (a single class) up, and weights with absent classes.
  if (const auto classes = class_count(s); classes > 0 && r.chance(0.4)) set_class_count(s, r.between(1, 8));
  if (const auto classes = class_count(s); classes > 0 && s.data.params.contains("class_weights") && r.chance(0.4)) {
    json weights = json::array();
    const auto only = r.chance(0.3) ? r.between(0, classes - 1) : -1;  // a single class present
    for (std::int64_t k = 0; k < classes; ++k)
      weights.push_back(only >= 0 ? (k == only ? 1.0 : 0.0) : (r.chance(0.3) ? 0.0 : static_cast<double>(r.between(1, 10))));
    s.data.params["class_weights"] = weights;
  }
}

// The metric's parameters, and the generator they call for.
void draw_metric_params(Rng& r, Scenario& s, const Space& space, std::uint64_t seed, std::uint64_t index) {
  if (const auto* params = metric_params_of(s.metric)) {
    for (const auto& p : *params) {
      // An accumulator's dtype stays the scenario's: a float32 sum is a precision choice whose
      // dependence on the batches the harness itself names "float32 rounding".
      const bool precision = p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, "_dtype") == 0;
      if (is_class_count(p.name) || precision || !r.chance(0.3)) continue;
      const json current = s.metric_params.value(p.name, p.default_value);
      json value = draw_param(r, p, current);
      if (!value.is_null()) s.metric_params[p.name] = value;
    }
  }
  // Parameters that change what data the metric takes (a task, binary against multiclass) call
  // for another generator: the one the space's chooser says the metric accepts. Its parameters
  // are drawn from a stream of their own, so that a case the base's generator fits is drawn as
  // it always was.
  if (space.generator_for && s.data.file.empty()) {
    const std::string fitting = space.generator_for(s.metric_params);
    if (!fitting.empty() && fitting != s.data.generator) {
      Rng data_rng(mix(seed, index) ^ 0xD1B54A32D192ED03ull);
      use_generator(s, fitting, data_rng);
    }
  }
}

}  // namespace

Case generate_case(const Scenario& base, const Space& space, std::uint64_t seed, std::uint64_t index) {
  Rng r(mix(seed, index));
  Case c;
  Scenario& s = c.scenario;
  reset_from_base(s, base, space);
  const int w = draw_axes(r, s, space);
  if (s.data.file.empty()) draw_generated_data(r, s, space);
  else s.data.seed = static_cast<std::uint64_t>(r.between(0, 999999));  // draws the uneven shard sizes
  const std::int64_t samples = std::max<std::int64_t>(s.data.num_samples, 1);
  s.batch_size = draw_batch_size(r, samples, w, space);
  s.script = draw_script(r, w);
  if (space.vary_metric_params) draw_metric_params(r, s, space, seed, index);
  s.batch_invariant_sizes = batch_invariant_sizes_within(s.data.num_samples, s.batch_size, space.max_batches_single);
  s.description = "explore case " + std::to_string(index) + " of seed " + std::to_string(seed) + " around " +
                  (base.name.empty() ? base.metric : base.name);
  c.features = features_of(s);
  return c;
}

std::vector<std::string> features_of(const Scenario& s) {
  std::vector<std::string> f;
  for (int w : s.world_sizes) f.push_back("world_size=" + std::to_string(w));
  for (const auto& shard : s.shards) f.push_back("shard=" + shard);
  f.push_back("dtype=" + s.data.dtype);
  for (const auto& d : s.dtypes) f.push_back("input_dtype=" + d);
  const auto n = s.data.num_samples;
  f.push_back(n < 0 ? "samples=file" : n == 0 ? "samples=0" : n <= 3 ? "samples=1-3" : n <= 40 ? "samples=4-40"
              : n <= 400 ? "samples=41-400" : n <= 5000 ? "samples=401-5000" : "samples=5001+");
  const int w = s.world_sizes.empty() ? 1 : s.world_sizes.front();
  if (s.batch_size == 1) f.push_back("batch=1");
  if (n > 0 && n < w) f.push_back("ranks_without_data");
  if (n > 0 && (n / std::max(w, 1)) % std::max<std::int64_t>(s.batch_size, 1) != 0) f.push_back("batch=uneven_last");
  if (n > 0 && s.batch_size >= (n + w - 1) / std::max(w, 1)) f.push_back("batch=one_per_rank");
  std::set<std::string> steps;
  for (const auto& step : s.script) {
    std::string kind = step.text;
    if (step.op == Step::Op::Update) {
      kind = step.amount == Step::Amount::Empty ? "update empty" : step.amount == Step::Amount::Rest ? "update rest"
             : step.amount == Step::Amount::Percent ? "update P%" : "update N";
      if (!step.ranks.empty()) kind += " ranks=";
    }
    steps.insert(kind);
  }
  for (std::size_t i = 1; i < s.script.size(); ++i)
    if (s.script[i].op == Step::Op::Compute && s.script[i - 1].op == Step::Op::Compute) steps.insert("compute twice");
  for (const auto& k : steps) f.push_back("step=" + k);
  const auto& p = s.data.params;
  auto number = [&](const char* key) { return p.contains(key) && p[key].is_number() ? p[key].get<double>() : NAN; };
  if (p.contains("class_weights") && p["class_weights"].is_array()) {
    int zeros = 0, nonzero = 0;
    for (const auto& weight : p["class_weights"]) (weight.is_number() && weight.get<double>() == 0 ? zeros : nonzero)++;
    if (zeros > 0) f.push_back("data=absent_class");
    if (nonzero == 1) f.push_back("data=single_class");
  }
  if (class_count(s) == 1) f.push_back("data=single_class");
  if (number("scale") == 0) f.push_back("data=constant_target");
  if (number("noise") == 0) f.push_back("data=exact_predictions");
  if (number("positive_rate") == 0 || number("positive_rate") == 1) f.push_back("data=one_label_only");
  if (p.contains("ties") && p["ties"] == true) f.push_back("data=ties");
  for (const char* key : {"scale", "offset", "low", "high", "mean", "data_range", "noise"}) {
    const double v = std::fabs(number(key));
    if (v >= 1e6) f.push_back("data=extreme_large");
    if (v > 0 && v <= 1e-6) f.push_back("data=extreme_small");
  }
  for (const auto& name : s.properties)
    if (name == "state_roundtrip" || name == "merge_state") f.push_back("property=" + name);
  for (const auto& [key, value] : s.metric_params.items())
    if (value.is_primitive()) f.push_back("param " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  return f;
}

std::set<int> computes_without_data(const ScriptPlan& plan, const ShardPlan& shards) {
  std::set<int> out;
  for (const auto& point : plan.computes) {
    bool any = false;
    for (std::size_t r = 0; r < point.fed.size() && r < shards.ranks.size() && !any; ++r)
      for (std::size_t b = 0; b < point.fed[r] && b < shards.ranks[r].size() && !any; ++b) any = !shards.ranks[r][b].empty();
    if (!any) out.insert(point.index);
  }
  return out;
}

std::string Signature::text() const {
  std::string out = outcome + " [";
  for (std::size_t i = 0; i < properties.size(); ++i) out += (i ? ", " : "") + properties[i];
  out += "]";
  if (!blame.empty()) {
    out += " ranks:";
    for (std::size_t i = 0; i < blame.size(); ++i) out += (i ? ", " : " ") + blame[i];
  }
  return out;
}

std::optional<Signature> failure_signature(const Verdict& verdict) {
  if (verdict.outcome == Outcome::Pass || verdict.outcome == Outcome::Skip) return std::nullopt;
  Signature sig;
  sig.outcome = to_string(verdict.outcome);
  for (const auto& p : verdict.properties)
    if (p.outcome == Outcome::Fail && !p.expected_failure && p.consequence_of.empty()) sig.properties.push_back(p.name);
  // A comparison with the single process (update_after_compute; reset_replay with no earlier
  // compute of the same batches) that failed where the first compute was not judged is the first
  // comparison with the single process failing, as equal_to_single's would: nothing in that case
  // tells them apart (the root cause says so), so it is the same failure. A metric whose own bug
  // is in a later compute shows it, under its own name, in a case where the first compute held.
  // (The verdict does not say which reset_replay compared with: one against an earlier compute
  // after another reset is renamed too; rare, and such a bug also shows where the first held.)
  if (const Property* fresh = property_judging(ComputeRole::Fresh)) {
    const PropertyResult* first = verdict.property(fresh->name);
    if (!first || first->outcome == Outcome::Skip)
      for (auto& name : sig.properties)
        if (const Property* p = find_property(name); p && p->compares_with_single_process) name = fresh->name;
  }
  std::set<std::string> states;
  for (const auto& r : verdict.ranks)
    if (r.state != runtime::RankState::Finished) states.insert(runtime::to_string(r.state));
  sig.blame.assign(states.begin(), states.end());
  std::sort(sig.properties.begin(), sig.properties.end());
  sig.properties.erase(std::unique(sig.properties.begin(), sig.properties.end()), sig.properties.end());
  return sig;
}

bool maybe_slow(const Verdict& verdict) {
  if (verdict.outcome == Outcome::Error) return verdict.single_past_deadline;
  if (verdict.outcome != Outcome::Hang || verdict.deviation) return false;
  for (const auto& r : verdict.ranks)
    if (r.state == runtime::RankState::Raised || r.state == runtime::RankState::Crashed ||
        r.state == runtime::RankState::TimedOut)
      return false;
  return true;
}

}  // namespace distmetrics::harness::explore
