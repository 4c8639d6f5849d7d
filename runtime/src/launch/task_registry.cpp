#include "distmetrics/runtime/task.h"

namespace distmetrics::runtime {

TaskRegistry& TaskRegistry::instance() {
  static TaskRegistry registry;
  return registry;
}

void TaskRegistry::add(const std::string& name, TaskFn fn) { tasks_[name] = std::move(fn); }

const TaskFn* TaskRegistry::find(const std::string& name) const {
  auto it = tasks_.find(name);
  return it == tasks_.end() ? nullptr : &it->second;
}

std::vector<std::string> TaskRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : tasks_) out.push_back(entry.first);
  return out;
}

}  // namespace distmetrics::runtime
