#include "distmetrics/harness/observation.h"


#include <c10/util/Exception.h>
#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "distmetrics/harness/compare.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {

using nlohmann::json;

std::string ComputeResult::text() const {
  if (raised()) return "raised " + error_type + ": " + error;
  return value ? value_text(*value) : "none";
}

json ComputeResult::to_json() const {
  if (raised()) return {{"error_type", error_type}, {"error", error}};
  return {{"value", value ? *value : json(nullptr)}};
}

ComputeResult ComputeResult::from_json(const json& j) {
  ComputeResult r;
  if (j.contains("error_type")) {
    r.error_type = j.at("error_type");
    r.error = j.value("error", "");
  } else if (j.contains("value") && !j.at("value").is_null()) {
    r.value = j.at("value");
  }
  return r;
}

const ComputeRecord* RankObservation::compute(int index) const {
  for (const auto& c : computes)
    if (c.index == index) return &c;
  return nullptr;
}

namespace {

json step_error_json(const std::optional<StepError>& error) {
  if (!error) return nullptr;
  return {{"step", error->step}, {"op", error->op},       {"type", error->type},   {"message", error->message},
          {"at", error->at},     {"full_type", error->full_type}, {"where", error->where},
          {"wait_timed_out", error->wait_timed_out}};
}

std::optional<StepError> step_error_from_json(const json& e) {
  if (e.is_null()) return std::nullopt;
  StepError error(e.at("step").get<int>(), e.at("op").get<std::string>(), e.at("type").get<std::string>(),
                  e.at("message").get<std::string>());
  error.at = e.value("at", 0.0);
  error.full_type = e.value("full_type", "");
  error.where = e.value("where", "");
  error.wait_timed_out = e.value("wait_timed_out", false);
  return error;
}

json compute_record_json(const ComputeRecord& c) {
  json out = {{"index", c.index},
              {"step", c.step},
              {"result", c.result.to_json()},
              {"digest_before", c.digest_before},
              {"digest_after", c.digest_after},
              {"collectives", c.collectives},
              {"seconds", c.seconds}};
  if (!c.probed.empty()) {
    json probed = json::object();
    for (const auto& [property, result] : c.probed) probed[property] = result.to_json();
    out["probed"] = probed;
  }
  return out;
}

ComputeRecord compute_record_from_json(const json& c) {
  ComputeRecord r;
  r.index = c.at("index");
  r.step = c.at("step");
  r.result = ComputeResult::from_json(c.at("result"));
  r.digest_before = c.at("digest_before");
  r.digest_after = c.at("digest_after");
  r.collectives = c.at("collectives");
  r.seconds = c.at("seconds");
  if (c.contains("probed"))
    for (const auto& [property, result] : c.at("probed").items()) r.probed[property] = ComputeResult::from_json(result);
  return r;
}

}  // namespace

json observation_header_record(const RankObservation& obs) {
  return {{"header", {{"rank", obs.rank},
                      {"devices", {{"state", obs.state_device}, {"input", obs.input_device}, {"comm", obs.comm_device}}},
                      {"samples", obs.samples},
                      {"batches", obs.batches}}}};
}

json step_done_record(const RankObservation& obs, int step, std::size_t first_compute) {
  json computes = json::array();
  for (std::size_t i = first_compute; i < obs.computes.size(); ++i) computes.push_back(compute_record_json(obs.computes[i]));
  json record = {{"step", step}, {"computes", computes}};
  if (obs.empty_rejected) record["empty_rejected"] = step_error_json(obs.empty_rejected);
  if (!obs.empty_not_fed.empty()) record["empty_not_fed"] = obs.empty_not_fed;
  if (!obs.probe_skipped.empty()) record["probe_skipped"] = obs.probe_skipped;
  if (!obs.probe_error.empty()) record["probe_error"] = obs.probe_error;
  return record;
}

std::optional<PartialObservation> observation_from_records(const std::vector<json>& records) {
  std::optional<PartialObservation> out;
  for (const auto& record : records) {
    if (record.contains("header")) {
      const auto& h = record.at("header");
      out.emplace();
      auto& o = out->observation;
      o.rank = h.at("rank");
      o.state_device = h.at("devices").at("state");
      o.input_device = h.at("devices").at("input");
      o.comm_device = h.at("devices").at("comm");
      o.samples = h.at("samples");
      o.batches = h.at("batches");
      continue;
    }
    if (!out || !record.contains("step")) continue;
    auto& o = out->observation;
    for (const auto& c : record.at("computes")) o.computes.push_back(compute_record_from_json(c));
    if (record.contains("empty_rejected")) o.empty_rejected = step_error_from_json(record.at("empty_rejected"));
    if (record.contains("empty_not_fed")) o.empty_not_fed = record.at("empty_not_fed").get<std::string>();
    if (record.contains("probe_skipped")) o.probe_skipped = record.at("probe_skipped").get<std::map<std::string, std::string>>();
    if (record.contains("probe_error")) o.probe_error = record.at("probe_error").get<std::map<std::string, std::string>>();
    out->steps_done = record.at("step").get<int>() + 1;
  }
  return out;
}

json RankObservation::to_json() const {
  json computes_json = json::array();
  for (const auto& c : computes) computes_json.push_back(compute_record_json(c));
  json j = {{"rank", rank},
            {"devices", {{"state", state_device}, {"input", input_device}, {"comm", comm_device}}},
            {"samples", samples},
            {"batches", batches},
            {"computes", computes_json},
            {"collectives", collectives},
            {"trace", trace},
            {"seconds", seconds},
            {"probe_skipped", probe_skipped},
            {"probe_error", probe_error}};
  j["error"] = step_error_json(error);
  if (empty_rejected) j["empty_rejected"] = step_error_json(empty_rejected);
  if (!empty_not_fed.empty()) j["empty_not_fed"] = empty_not_fed;
  return j;
}

RankObservation RankObservation::from_json(const json& j) {
  RankObservation o;
  o.rank = j.at("rank");
  const auto& devices = j.at("devices");
  o.state_device = devices.at("state");
  o.input_device = devices.at("input");
  o.comm_device = devices.at("comm");
  o.samples = j.at("samples");
  o.batches = j.at("batches");
  for (const auto& c : j.at("computes")) o.computes.push_back(compute_record_from_json(c));
  o.collectives = j.at("collectives");
  if (j.contains("trace")) o.trace = j.at("trace").get<std::vector<std::string>>();
  o.seconds = j.at("seconds");
  if (j.contains("probe_skipped")) o.probe_skipped = j.at("probe_skipped").get<std::map<std::string, std::string>>();
  if (j.contains("probe_error")) o.probe_error = j.at("probe_error").get<std::map<std::string, std::string>>();
  o.error = step_error_from_json(j.at("error"));
  if (j.contains("empty_rejected")) o.empty_rejected = step_error_from_json(j.at("empty_rejected"));
  if (j.contains("empty_not_fed")) o.empty_not_fed = j.at("empty_not_fed").get<std::string>();
  return o;
}

std::string exception_full_type_name(const std::exception& e) {
  // A Python metric's error: the type it had in Python.
  if (const auto* foreign = dynamic_cast<const metrics::ForeignError*>(&e)) return foreign->type_name();
  const char* mangled = typeid(e).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && demangled ? demangled.get() : mangled;
}

StepError step_error(int step, const std::string& op, const std::exception& e) {
  StepError error;
  error.step = step;
  error.op = op;
  error.type = runtime::exception_type_name(e);
  error.full_type = exception_full_type_name(e);
  error.at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  error.message = runtime::error_message(e);
  error.wait_timed_out = is_wait_timeout(e);
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    // LibTorch's errors carry "Exception raised from <function> at <file>:<line>".
    const std::string full = c10->what();
    const std::string mark = "Exception raised from ";
    const auto from = full.find(mark);
    if (from != std::string::npos) {
      const auto end = full.find_first_of("(\n", from + mark.size());
      error.where = full.substr(from + mark.size(), end == std::string::npos ? std::string::npos : end - from - mark.size());
      while (!error.where.empty() && error.where.back() == ' ') error.where.pop_back();
    }
  }
  return error;
}

bool is_wait_timeout(const std::exception& e) {
  if (const auto* collective = dynamic_cast<const runtime::CollectiveError*>(&e))
    return collective->kind() == runtime::CollectiveFailure::Timeout;
  if (dynamic_cast<const runtime::BackendTimeout*>(&e)) return true;
  // A wait the metric made itself (its own c10d work, a Python library's torch.distributed call)
  // raises that library's error, which says it gave up only in words: read here, once, into
  // StepError::wait_timed_out.
  std::string lower = runtime::error_message(e);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos ||
         lower.find("deadline") != std::string::npos;
}

}  // namespace distmetrics::harness
