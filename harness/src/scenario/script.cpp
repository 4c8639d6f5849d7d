#include "distmetrics/harness/script.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace distmetrics::harness {
namespace {

const char* kSyntax =
    "a step is one of: 'update', 'update N', 'update P%', 'update rest', 'update empty' (each optionally followed by "
    "'ranks=0,2'), 'compute', 'compute every', 'reset', 'replay'";

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

std::vector<int> parse_ranks(const std::string& list, const std::string& text) {
  std::vector<int> ranks;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    double r = 0;
    if (!parse_number(item, r) || r < 0 || r != std::floor(r) || r > 4096)
      throw std::invalid_argument("step '" + text + "': ranks= takes rank numbers like 'ranks=0,2', got '" + list + "'");
    ranks.push_back(static_cast<int>(r));
  }
  if (ranks.empty()) throw std::invalid_argument("step '" + text + "': ranks= lists no rank");
  return ranks;
}

}  // namespace

const char* to_string(ComputeRole role) {
  switch (role) {
    case ComputeRole::Fresh: return "fresh";
    case ComputeRole::Repeat: return "repeat";
    case ComputeRole::AfterUpdate: return "after_update";
    case ComputeRole::AfterReset: return "after_reset";
  }
  return "?";
}

Step parse_step(const std::string& text) {
  auto w = words(text);
  Step step;
  step.text = text;
  if (w.empty()) throw std::invalid_argument(std::string("empty step; ") + kSyntax);
  if (w.size() > 1 && w.back().rfind("ranks=", 0) == 0) {
    step.ranks = parse_ranks(w.back().substr(6), text);
    w.pop_back();
    if (w.front() != "update") throw std::invalid_argument("step '" + text + "': only 'update' takes ranks=");
  }
  const std::string& op = w.front();
  if (op == "compute" && w.size() == 2 && w[1] == "every") {
    step.op = Step::Op::ComputeEvery;
    return step;
  }
  if (op == "compute" || op == "reset" || op == "replay") {
    if (w.size() != 1) throw std::invalid_argument("step '" + text + "': '" + op + "' takes no argument; " + kSyntax);
    step.op = op == "compute" ? Step::Op::Compute : op == "reset" ? Step::Op::Reset : Step::Op::Replay;
    return step;
  }
  if (op != "update") throw std::invalid_argument("unknown step '" + text + "'; " + kSyntax);
  step.op = Step::Op::Update;
  if (w.size() == 1) return step;
  if (w.size() > 2) throw std::invalid_argument("step '" + text + "': too many words; " + kSyntax);
  const std::string& amount = w[1];
  if (amount == "rest") {
    step.amount = Step::Amount::Rest;
  } else if (amount == "empty") {
    step.amount = Step::Amount::Empty;
  } else if (!amount.empty() && amount.back() == '%') {
    step.amount = Step::Amount::Percent;
    if (!parse_number(amount.substr(0, amount.size() - 1), step.count) || step.count <= 0 || step.count > 100)
      throw std::invalid_argument("step '" + text + "': a percentage must be in (0, 100], like 'update 50%'");
  } else {
    if (!parse_number(amount, step.count) || step.count < 1 || step.count != std::floor(step.count) ||
        step.count > 1e9)
      throw std::invalid_argument("step '" + text + "': the number of batches must be a whole number >= 1");
  }
  return step;
}

std::vector<std::string> default_script_text(const std::string& single_process) {
  // per_step: an empty update is a step the reference does not take (step-synchronous metrics
  // such as RunningAverage would then differ for a reason that is not theirs).
  if (single_process == "per_step")
    return {"update 50%", "compute", "compute", "update rest", "compute", "reset", "replay", "compute"};
  return {"update 50%", "compute", "compute", "update empty ranks=0", "update rest", "update empty",
          "compute",    "reset",   "replay",  "compute"};
}

namespace {

// The script run on paper: the batches each rank has fed, the epoch (resets so far), and where
// the last compute sits, step by step into a ScriptPlan.
class ScriptSimulator {
 public:
  explicit ScriptSimulator(const std::vector<std::size_t>& batches_per_rank)
      : batches_(batches_per_rank), ws_(batches_per_rank.size()), fed_(ws_, 0), before_reset_(ws_, 0) {}

  ScriptPlan run(const std::vector<Step>& script) {
    for (std::size_t s = 0; s < script.size(); ++s) {
      const Step& step = script[s];
      StepAction action;
      action.op = step.op;
      switch (step.op) {
        case Step::Op::Update:
        case Step::Op::Replay:
          feed(step, action);
          break;
        case Step::Op::Reset:
          reset();
          break;
        case Step::Op::Compute:
          action.compute = add_compute(s);
          break;
        case Step::Op::ComputeEvery:
          every_ = true;
          break;
      }
      if (every_ && (step.op == Step::Op::Update || step.op == Step::Op::Replay)) compute_each_round(s, action);
      plan_.steps.push_back(action);
    }
    return std::move(plan_);
  }

 private:
  // An update or a replay: how far each rank feeds, and which ranks call an empty update().
  void feed(const Step& step, StepAction& action) {
    action.feed.resize(ws_);
    for (std::size_t r = 0; r < ws_; ++r) {
      std::size_t target = fed_[r];
      const bool selected =
          step.ranks.empty() || std::find(step.ranks.begin(), step.ranks.end(), static_cast<int>(r)) != step.ranks.end();
      if (step.op == Step::Op::Replay) {
        target = std::max(fed_[r], before_reset_[r]);
      } else if (step.amount == Step::Amount::Empty) {
        // One update() with no rows: it must change nothing (the reference does not feed it).
        if (action.empty_update.empty()) action.empty_update.assign(ws_, false);
        action.empty_update[r] = selected;
      } else if (selected) {
        const std::size_t n = batches_[r];
        std::size_t more = 0;
        if (step.amount == Step::Amount::Rest) more = n;
        else if (step.amount == Step::Amount::Percent) more = static_cast<std::size_t>(std::ceil(step.count / 100.0 * n));
        else more = static_cast<std::size_t>(step.count);
        target = std::min(n, fed_[r] + more);
      }
      action.feed[r] = {fed_[r], target};
      fed_[r] = target;
    }
    last_was_compute_ = false;
  }

  void reset() {
    before_reset_ = fed_;
    std::fill(fed_.begin(), fed_.end(), 0);
    ++epoch_;
    first_compute_of_epoch_ = -1;
    last_was_compute_ = false;
  }

  // After `compute every`: one compute after each round of batches; the step's feed stays as planned.
  void compute_each_round(std::size_t s, StepAction& action) {
    std::size_t rounds = 0;
    for (const auto& [from, to] : action.feed) rounds = std::max(rounds, to - from);
    if (rounds == 0 && !action.empty_update.empty()) rounds = 1;  // 'update empty' computes once too
    const auto after = fed_;
    for (std::size_t t = 0; t < rounds; ++t) {
      for (std::size_t r = 0; r < ws_; ++r) fed_[r] = std::min(action.feed[r].first + t + 1, action.feed[r].second);
      last_was_compute_ = false;  // a round feeds before it computes
      action.round_computes.push_back(add_compute(s));
    }
    fed_ = after;
  }

  // A compute after the batches fed so far: its role by where it sits (script.h).
  int add_compute(std::size_t s) {
    ComputePoint point;
    point.index = static_cast<int>(plan_.computes.size());
    point.step = static_cast<int>(s);
    point.fed = fed_;
    point.all_data = true;
    for (std::size_t r = 0; r < ws_; ++r) point.all_data = point.all_data && fed_[r] == batches_[r];
    set_role(point);
    if (first_compute_of_epoch_ < 0) first_compute_of_epoch_ = point.index;
    plan_.computes.push_back(point);
    last_was_compute_ = true;
    return point.index;
  }

  void set_role(ComputePoint& point) const {
    if (last_was_compute_) {
      point.role = ComputeRole::Repeat;
      point.previous = point.index - 1;
    } else if (first_compute_of_epoch_ >= 0) {
      point.role = ComputeRole::AfterUpdate;
    } else if (epoch_ > 0) {
      point.role = ComputeRole::AfterReset;
      // Only the first compute of an epoch shows what the data alone gives: a later one
      // also shows what earlier computes did to the state (an in-place sync), which is not
      // reset()'s fault.
      for (int k = point.index - 1; k >= 0; --k) {
        const auto role = plan_.computes[k].role;
        if (plan_.computes[k].fed == fed_ && (role == ComputeRole::Fresh || role == ComputeRole::AfterReset)) {
          point.replay_of = k;
          break;
        }
      }
    } else {
      point.role = ComputeRole::Fresh;
    }
  }

  const std::vector<std::size_t>& batches_;
  const std::size_t ws_;
  ScriptPlan plan_;
  std::vector<std::size_t> fed_, before_reset_;
  int epoch_ = 0;
  int first_compute_of_epoch_ = -1;
  bool last_was_compute_ = false;
  bool every_ = false;
};

}  // namespace

ScriptPlan simulate_script(const std::vector<Step>& script, const std::vector<std::size_t>& batches_per_rank) {
  return ScriptSimulator(batches_per_rank).run(script);
}

std::vector<std::pair<int, std::string>> check_script(const std::vector<Step>& script) {
  std::vector<std::pair<int, std::string>> problems;
  bool reset_seen = false, compute_seen = false;
  for (std::size_t s = 0; s < script.size(); ++s) {
    if (script[s].op == Step::Op::Reset) reset_seen = true;
    if (script[s].op == Step::Op::Compute || script[s].op == Step::Op::ComputeEvery) compute_seen = true;
    if (script[s].op == Step::Op::Replay && !reset_seen)
      problems.emplace_back(static_cast<int>(s), "'replay' feeds again what was fed before a reset: put a 'reset' before it");
  }
  if (!compute_seen) problems.emplace_back(-1, "the script has no 'compute': nothing would be checked");
  return problems;
}

std::vector<ComputeRole> roles_in(const std::vector<Step>& script) {
  std::vector<ComputeRole> roles;
  // Roles depend on the data only through 'compute every' (a compute per round of batches): 4
  // batches give every role such a script can have.
  for (const auto& point : simulate_script(script, {4}).computes) roles.push_back(point.role);
  return roles;
}

}  // namespace distmetrics::harness
