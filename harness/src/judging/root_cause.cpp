// Root causes from the evidence of a variant's properties (root_cause.h): the rules are in the
// property descriptors (harness/src/properties/), tried here in priority order.
#include "distmetrics/harness/root_cause.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

#include "distmetrics/harness/property.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

// Relative differences up to this are what float32 arithmetic does to a sum of a few thousand
// terms (eps 1.2e-7 times a modest growth): rounding, not a wrong formula.
constexpr double kFloat32Scale = 2e-5;

// The magnitude of a Value JSON number (a scalar, or a tensor's largest entry); NaN otherwise.
double magnitude(const nlohmann::json& value) {
  if (value.is_number()) return std::fabs(value.get<double>());
  if (value.is_object() && value.contains("values")) {
    double largest = 0;
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
      if (v.is_number()) largest = std::max(largest, std::fabs(v.get<double>()));
      else if (v.is_array())
        for (const auto& x : v) walk(x);
    };
    walk(value.at("values"));
    return largest;
  }
  return NAN;
}

// The magnitude of a property's single-process value (NaN when it has none, or raised).
double magnitude(const std::optional<ComputeResult>& single) {
  if (!single || !single->value || single->raised()) return NAN;
  return magnitude(*single->value);
}

bool judged_by_the_engine(const std::string& name) {
  const Property* p = find_property(name);
  return p && p->judged_by_the_engine;
}

bool own_finding(const std::string& name) {
  const Property* p = find_property(name);
  return p && p->own_finding;
}

// Every failed property but the cause's own, the engine's (no_hang) and own findings.
std::vector<std::string> others(const std::vector<PropertyResult>& results, const std::string& cause) {
  std::vector<std::string> names;
  for (const auto& p : results)
    if (p.outcome == Outcome::Fail && !p.expected_failure && p.name != cause && !judged_by_the_engine(p.name) &&
        !own_finding(p.name))
      names.push_back(p.name);
  return names;
}

// Every rule of the table, lowest priority first.
const std::vector<const RootCauseRule*>& rules_by_priority() {
  static const std::vector<const RootCauseRule*> rules = [] {
    std::vector<const RootCauseRule*> out;
    for (const auto& p : property_table())
      for (const auto& rule : p.root_causes) out.push_back(&rule);
    std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->priority < b->priority; });
    return out;
  }();
  return rules;
}

}  // namespace

std::string cause_number(double v) { return number_text(v, 3); }

const PropertyResult* Evidence::result(const std::string& property) const {
  for (const auto& p : results)
    if (p.name == property) return &p;
  return nullptr;
}

bool Evidence::failed(const std::string& property) const {
  const auto* p = result(property);
  return p && p->outcome == Outcome::Fail && !p->expected_failure;
}

std::vector<std::string> Evidence::failed_properties() const {
  std::vector<std::string> names;
  for (const auto& p : results)
    if (p.outcome == Outcome::Fail && !p.expected_failure && !judged_by_the_engine(p.name)) names.push_back(p.name);
  return names;
}

bool Evidence::within_float32_rounding(const std::string& property) const {
  const auto* p = result(property);
  if (!p || !p->difference || !std::isfinite(*p->difference) || *p->difference == 0) return false;
  const double scale = magnitude(p->single);
  if (!std::isfinite(scale) || scale == 0) return false;
  return *p->difference / scale <= kFloat32Scale;
}

double Evidence::relative_difference(const std::string& property) const {
  const auto* p = result(property);
  if (!p || !p->difference) return NAN;
  return *p->difference / magnitude(p->single);
}

std::optional<RootCause> find_root_cause(const CheckContext& ctx, const std::vector<PropertyResult>& results) {
  const Evidence evidence{ctx, results};
  const auto all_failed = evidence.failed_properties();
  if (all_failed.empty()) return std::nullopt;
  std::optional<RootCause> cause;
  for (const auto* rule : rules_by_priority())
    if ((cause = rule->find(evidence))) break;
  if (!cause) {
    // No rule names a cause: the first failure leads (one that is not an own finding, if any).
    const auto first = std::find_if(all_failed.begin(), all_failed.end(), [](const auto& n) { return !own_finding(n); });
    cause.emplace();
    cause->property = first != all_failed.end() ? *first : all_failed.front();
    const auto* p = evidence.result(cause->property);
    cause->headline = runtime::first_line(p->message);
    cause->evidence = cause->property + " failed";
  }
  // The cause's own property may have held (e.g. an in-place sync caught only later): it is
  // then not listed as failed, and its evidence line says what was seen.
  cause->consequences = others(results, cause->property);
  return cause;
}

namespace {
// A property that failed alone (golden, agrees_with_reference) has its hint in its own message.
std::string hint_line(const RootCause& cause) { return cause.hint.empty() ? "" : "\n  hint: " + cause.hint; }
}  // namespace

void apply_root_cause(Verdict& verdict, const RootCause& cause) {
  verdict.root_cause = cause;
  verdict.reason = "root cause: " + cause.headline;
  const std::set<std::string> consequences(cause.consequences.begin(), cause.consequences.end());
  for (auto& p : verdict.properties) {
    if (p.name == cause.property && p.outcome == Outcome::Fail) {
      p.message = "root cause: " + cause.headline + "\n  evidence: " + cause.evidence + hint_line(cause) +
                  (cause.consequences.empty() ? std::string() : "\n  consequences: " + [&] {
                    std::string list;
                    for (const auto& c : cause.consequences) list += (list.empty() ? "" : ", ") + c;
                    return list;
                  }()) +
                  "\n" + p.message;
    } else if (consequences.count(p.name)) {
      p.consequence_of = cause.property;
      p.message = "  (a consequence of the root cause above, " + cause.property + ") " + p.message;
    }
  }
  // The cause first (after no_hang), then its consequences, then the rest, each in their order.
  auto rank_of = [&](const PropertyResult& p) {
    if (judged_by_the_engine(p.name)) return 0;
    if (p.name == cause.property) return 1;
    if (consequences.count(p.name)) return 2;
    return 3;
  };
  std::stable_sort(verdict.properties.begin(), verdict.properties.end(),
                   [&](const PropertyResult& a, const PropertyResult& b) { return rank_of(a) < rank_of(b); });
  if (!std::any_of(verdict.properties.begin(), verdict.properties.end(),
                   [&](const PropertyResult& p) { return p.name == cause.property && p.outcome == Outcome::Fail; })) {
    // The cause's property held (the in-place sync caught later): lead the first consequence.
    for (auto& p : verdict.properties) {
      if (p.outcome != Outcome::Fail || judged_by_the_engine(p.name)) continue;
      p.message = "root cause: " + cause.headline + "\n  evidence: " + cause.evidence + hint_line(cause) + "\n" + p.message;
      break;
    }
  }
}

}  // namespace distmetrics::harness
