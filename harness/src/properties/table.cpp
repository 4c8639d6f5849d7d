// The property table (property.h): each property's descriptor comes from its own file in this
// folder; this list is the one place that names them all, in the order they are checked and
// listed in a verdict. Adding a property: its file, one line here, one row of docs/properties.md.
#include <algorithm>
#include <map>
#include <set>

#include "distmetrics/harness/property.h"

// X(name): the descriptor `Property name()` defined in name.cpp.
#define DISTMETRICS_EACH_PROPERTY(X) \
  X(equal_to_single)                 \
  X(ranks_agree)                     \
  X(idempotent)                      \
  X(update_after_compute)            \
  X(reset_replay)                    \
  X(batch_invariant)                 \
  X(no_hang)                         \
  X(golden)                          \
  X(expected_error)                  \
  X(recovers_after_error)            \
  X(agrees_with_reference)           \
  X(state_roundtrip)                 \
  X(merge_state)                     \
  X(accepts_empty_batch)

namespace distmetrics::harness {
namespace properties {
#define DISTMETRICS_DECLARE_PROPERTY(name) Property name();
DISTMETRICS_EACH_PROPERTY(DISTMETRICS_DECLARE_PROPERTY)
#undef DISTMETRICS_DECLARE_PROPERTY
}  // namespace properties

const std::vector<Property>& property_table() {
#define DISTMETRICS_LIST_PROPERTY(name) properties::name(),
  static const std::vector<Property> table = {DISTMETRICS_EACH_PROPERTY(DISTMETRICS_LIST_PROPERTY)};
#undef DISTMETRICS_LIST_PROPERTY
  return table;
}

const Property* find_property(const std::string& name) {
  for (const auto& p : property_table())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string>& property_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : property_table())
      if (p.listable) out.push_back(p.name);
    return out;
  }();
  return names;
}

std::vector<std::string> default_properties(const Scenario& scenario, const std::vector<ComputeRole>& roles) {
  std::vector<std::string> out;
  for (const auto& p : property_table())
    if (p.by_default && p.by_default(scenario, roles)) out.push_back(p.name);
  return out;
}

std::vector<std::string> listed_only_properties() {
  std::vector<std::string> out;
  for (const auto& p : property_table())
    if (p.listable && !p.by_default && !p.checked_anyway) out.push_back(p.name);
  return out;
}

std::vector<const Property*> properties_by_column() {
  std::vector<const Property*> out;
  for (const auto& p : property_table()) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const Property* a, const Property* b) { return a->column_order < b->column_order; });
  return out;
}

const Property* property_judging(ComputeRole role) {
  for (const auto& p : property_table())
    if (p.needs_compute == role) return &p;
  return nullptr;
}

std::string property_label(const std::string& name) {
  const Property* p = find_property(name);
  return p ? p->label : name;
}

std::vector<std::string> in_column_order(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto* p : properties_by_column())
    if (std::find(names.begin(), names.end(), p->name) != names.end()) out.push_back(p->name);
  for (const auto& name : names)
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::vector<std::string> property_table_problems(const std::vector<Property>& table) {
  std::vector<std::string> problems;
  std::set<std::string> names, labels;
  std::map<int, std::string> columns, priorities;
  for (const auto& p : table) {
    const std::string who = "property '" + p.name + "': ";
    auto problem = [&](const std::string& what) { problems.push_back(who + what); };
    if (p.name.empty()) problem("no name");
    if (!names.insert(p.name).second) problem("its name is used twice");
    if (p.holds_when.empty()) problem("no holds_when (the line docs and listings show)");
    if (p.label.empty()) problem("no label (its report column's header)");
    else if (!labels.insert(p.label).second) problem("label '" + p.label + "' is used twice");
    if (p.column_order < 0) problem("no column_order (its report column's place)");
    else if (!columns.emplace(p.column_order, p.name).second)
      problem("column_order " + std::to_string(p.column_order) + " is also " + columns[p.column_order] + "'s");
    if (p.needs_compute.has_value() != !p.needs_compute_text.empty())
      problem("needs_compute and needs_compute_text come together");
    if (p.judged_by_the_engine) {
      if (p.check) problem("judged by the engine, yet it has a checker");
    } else {
      if (!p.check) problem("no checker (and the engine does not judge it)");
      if (p.hint.empty()) problem("no hint (what its failure means, said in its message)");
    }
    if (!p.listable && !p.checked_anyway) problem("no scenario can list it, and nothing else checks it");
    for (const auto& rule : p.root_causes) {
      if (rule.priority <= 0) problem("a root-cause rule without a priority");
      else if (!priorities.emplace(rule.priority, p.name).second)
        problem("root-cause priority " + std::to_string(rule.priority) + " is also " + priorities[rule.priority] + "'s");
      if (!rule.find) problem("a root-cause rule (priority " + std::to_string(rule.priority) + ") without its finder");
    }
  }
  return problems;
}

}  // namespace distmetrics::harness
