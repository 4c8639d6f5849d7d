// Shrinking (explore.h): simpler neighbours of a failing case, simplest first. The caller keeps
// the first one that fails with the same signature and asks again, until none does.
#include <algorithm>
#include <set>
#include <sstream>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/shard.h"

namespace distmetrics::harness::explore {
namespace {

using nlohmann::json;

void add_unique(std::vector<std::int64_t>& values, std::int64_t v, std::int64_t below) {
  if (v >= 0 && v < below && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
}

std::string ranks_suffix(const std::vector<int>& ranks) {
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
  return ranks.empty() ? "" : " ranks=" + list;
}

// The step without its ranks ("update 2 ranks=0" -> "update 2").
std::string without_ranks(const Step& step) {
  const auto at = step.text.find("ranks=");
  std::string text = step.text.substr(0, at);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// Steps after the last compute do nothing the properties see; steps naming ranks past the world
// size are invalid once it shrinks: both are dropped when the world size or the script changes.
std::vector<Step> fit_script(std::vector<Step> script, int world_size) {
  std::vector<Step> out;
  for (auto& step : script) {
    if (!step.ranks.empty()) {
      std::vector<int> ranks;
      for (int r : step.ranks)
        if (r < world_size) ranks.push_back(r);
      if (ranks.empty()) continue;
      if (ranks.size() != step.ranks.size()) step = parse_step(without_ranks(step) + ranks_suffix(ranks));
    }
    out.push_back(std::move(step));
  }
  while (!out.empty() && out.back().op != Step::Op::Compute) out.pop_back();
  return out;
}

// Fewer ranks (the smallest first): 1, 2, 3, half and one less (each new world size starts a
// rank pool, so not every one).
void fewer_ranks(const Scenario& s, int w, int min_w, std::vector<Scenario>& out) {
  std::set<int> sizes;
  for (int v : {1, 2, 3, w / 2, w - 1})
    if (v >= std::max(1, min_w) && v < w) sizes.insert(v);
  for (int smaller : sizes) {
    Scenario c = s;
    c.world_sizes = {smaller};
    c.script = fit_script(c.script, smaller);
    if (!c.script.empty()) out.push_back(std::move(c));
  }
}

// Fewer samples (generated data, or the first rows of a file).
void fewer_samples(const Scenario& s, std::vector<Scenario>& out) {
  const auto n = s.data.num_samples;
  if (n <= 0) return;
  std::vector<std::int64_t> sizes;
  for (std::int64_t v : {0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16}) add_unique(sizes, v, n);
  for (std::int64_t v : {n / 16, n / 8, n / 4, n / 2, n - 1}) add_unique(sizes, v, n);
  std::sort(sizes.begin(), sizes.end());
  // Each size twice: first with the batch size scaled down with the samples, so that every rank
  // keeps its number of batches (and 'update N', 'update P%' and 'ranks=' steps feed the same
  // share of the data), then with the batch size kept (fewer batches).
  for (auto v : sizes) {
    const std::int64_t kept = std::max<std::int64_t>(1, std::min(s.batch_size, std::max<std::int64_t>(v, 1)));
    const std::int64_t scaled = std::max<std::int64_t>(1, (s.batch_size * v + n - 1) / n);
    std::vector<std::int64_t> batches = {scaled};
    if (kept != scaled) batches.push_back(kept);
    for (const auto batch : batches) {
      Scenario c = s;
      c.data.num_samples = v;
      c.batch_size = batch;
      out.push_back(std::move(c));
    }
  }
}

// Fewer script steps: each step left out; a reset left out with the replays it makes possible
// (alone, each would leave the other invalid or feeding nothing): 'update, reset, replay,
// compute' becomes 'update, compute'.
void fewer_steps(const Scenario& s, int w, std::vector<Scenario>& out) {
  for (std::size_t i = 0; i < s.script.size(); ++i) {
    Scenario c = s;
    c.script.erase(c.script.begin() + static_cast<std::ptrdiff_t>(i));
    c.script = fit_script(c.script, w);
    if (!c.script.empty()) out.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < s.script.size(); ++i) {
    if (s.script[i].op != Step::Op::Reset) continue;
    Scenario c = s;
    c.script.clear();
    bool after = false;
    for (std::size_t j = 0; j < s.script.size(); ++j) {
      if (j == i) {
        after = true;
        continue;
      }
      if (after && s.script[j].op == Step::Op::Reset) after = false;
      if (after && s.script[j].op == Step::Op::Replay) continue;
      c.script.push_back(s.script[j]);
    }
    c.script = fit_script(c.script, w);
    if (!c.script.empty()) out.push_back(std::move(c));
  }
}

// Each update made a plain one ('update', 'update rest').
void plainer_updates(const Scenario& s, std::vector<Scenario>& out) {
  for (std::size_t i = 0; i < s.script.size(); ++i) {
    const Step& step = s.script[i];
    if (step.op != Step::Op::Update || step.amount == Step::Amount::Empty) continue;
    if (step.amount == Step::Amount::Batches && step.count == 1) continue;  // already the plainest
    for (const char* simpler : {"update", "update rest"}) {
      if (step.amount == Step::Amount::Rest && std::string(simpler) == "update rest") continue;
      const std::string text = std::string(simpler) + ranks_suffix(step.ranks);
      if (text == step.text) continue;
      Scenario c = s;
      c.script[i] = parse_step(text);
      out.push_back(std::move(c));
    }
  }
}

// Fewer batches: larger batches, down to one per rank.
void fewer_batches(const Scenario& s, int w, std::vector<Scenario>& out) {
  const auto n = s.data.num_samples;
  if (n <= 0) return;
  const std::int64_t per_rank = (n + w - 1) / w;
  std::vector<std::int64_t> sizes;
  for (std::int64_t v : {per_rank, s.batch_size * 2, s.batch_size + 1})
    if (v > s.batch_size && v <= per_rank && std::find(sizes.begin(), sizes.end(), v) == sizes.end()) sizes.push_back(v);
  for (auto v : sizes) {
    Scenario c = s;
    c.batch_size = v;
    out.push_back(std::move(c));
  }
}

// Plainer variant axes: the even shard, no input dtype.
void plainer_axes(const Scenario& s, const std::string& shard, std::vector<Scenario>& out) {
  if (shard != "even") {
    Scenario c = s;
    c.shards = {"even"};
    out.push_back(std::move(c));
  }
  if (!s.dtypes.empty()) {
    Scenario c = s;
    c.dtypes.clear();
    out.push_back(std::move(c));
  }
}

// Fewer classes (on both sides; class weights cut to match).
void fewer_classes(const Scenario& s, std::vector<Scenario>& out) {
  for (const char* key : {"num_classes", "num_labels"}) {
    if (!s.data.params.contains(key) || !s.data.params[key].is_number_integer()) continue;
    const auto classes = s.data.params[key].get<std::int64_t>();
    for (std::int64_t fewer = 1; fewer < classes; ++fewer) {
      Scenario c = s;
      c.data.params[key] = fewer;
      if (c.metric_params.contains(key)) c.metric_params[key] = fewer;
      if (c.data.params.contains("class_weights") && c.data.params["class_weights"].is_array() &&
          !c.data.params["class_weights"].empty()) {
        json weights = json::array();
        for (std::int64_t k = 0; k < fewer && k < static_cast<std::int64_t>(c.data.params["class_weights"].size()); ++k)
          weights.push_back(c.data.params["class_weights"][k]);
        c.data.params["class_weights"] = weights;
      }
      out.push_back(std::move(c));
    }
  }
}

// Each data and metric parameter back to its default; float32 data; data seed 0.
void plainer_parameters(const Scenario& s, std::vector<Scenario>& out) {
  if (const auto* generator = find_generator(s.data.generator)) {
    for (const auto& p : generator->params) {
      if (p.required() || !s.data.params.contains(p.name) || s.data.params[p.name] == p.default_value) continue;
      Scenario c = s;
      c.data.params[p.name] = p.default_value;
      out.push_back(std::move(c));
    }
  }
  if (const auto* registry = MetricCatalog::instance().registry_for(s.metric))
    if (const auto* spec = registry->find(s.metric))
      for (const auto& p : spec->params) {
        if (p.required() || !s.metric_params.contains(p.name) || s.metric_params[p.name] == p.default_value) continue;
        Scenario c = s;
        c.metric_params[p.name] = p.default_value;
        out.push_back(std::move(c));
      }
  if (s.data.dtype != "float32" && s.data.file.empty()) {
    Scenario c = s;
    c.data.dtype = "float32";
    out.push_back(std::move(c));
  }
  if (s.data.seed != 0) {
    Scenario c = s;
    c.data.seed = 0;
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<Scenario> shrink_candidates(const Scenario& s, std::int64_t most_batches) {
  std::vector<Scenario> out;
  const int w = s.world_sizes.empty() ? 1 : s.world_sizes.front();
  const std::string shard = s.shards.empty() ? "even" : s.shards.front();
  const auto* policy = find_shard_policy(shard);
  fewer_ranks(s, w, policy ? policy->min_world_size : 1, out);
  fewer_samples(s, out);
  fewer_steps(s, w, out);
  plainer_updates(s, out);
  fewer_batches(s, w, out);
  plainer_axes(s, shard, out);
  fewer_classes(s, out);
  plainer_parameters(s, out);
  for (auto& c : out) {
    keep_spread_resolvable(c);  // a parameter back to its default may narrow it
    c.batch_invariant_sizes = batch_invariant_sizes_within(c.data.num_samples, c.batch_size, most_batches);
  }
  return out;
}

std::string size_text(const Scenario& s) {
  std::ostringstream out;
  out << "world size " << (s.world_sizes.empty() ? 1 : s.world_sizes.front()) << ", " << s.data.num_samples
      << " sample(s), batch " << s.batch_size << ", " << s.script.size() << " step(s)";
  return out.str();
}

}  // namespace distmetrics::harness::explore
