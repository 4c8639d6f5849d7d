#include "protocol.h"

#include "../blame/diagnosis.h"

#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime {

const char* to_string(RankState state) {
  switch (state) {
    case RankState::Finished: return "finished";
    case RankState::Raised: return "raised";
    case RankState::TimedOut: return "timed_out";
    case RankState::Stuck: return "stuck";
    case RankState::Crashed: return "crashed";
    case RankState::Ended: return "ended";
  }
  return "?";
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Completed: return "completed";
    case RunStatus::Error: return "error";
    case RunStatus::Hang: return "hang";
    case RunStatus::Crash: return "crash";
  }
  return "?";
}

nlohmann::json JobResult::to_json() const {
  nlohmann::json ranks_json = nlohmann::json::array();
  for (const auto& outcome : ranks) ranks_json.push_back(detail::to_json(outcome));
  nlohmann::json json = {{"status", to_string(status)}, {"blamed_rank", blamed_rank}, {"diagnosis", diagnosis},
                         {"seconds", seconds}, {"start_seconds", start_seconds}, {"ranks", ranks_json}};
  if (blame_rule != BlameRule::None) json["blame_rule"] = to_string(blame_rule);
  if (!diagnosis_once_told.empty()) json["diagnosis_once_told"] = diagnosis_once_told;
  if (!phases.empty()) json["phases"] = phases;
  return json;
}

namespace detail {

nlohmann::json to_json(const CollectiveRecord& record) {
  nlohmann::json j = {{"seq", record.seq}, {"op", record.op}, {"dtype", record.dtype}, {"shape", record.shape}};
  if (record.step >= 0) j["step"] = record.step;
  if (record.compute >= 0) j["compute"] = record.compute;
  return j;
}

CollectiveRecord record_from_json(const nlohmann::json& json) {
  CollectiveRecord record;
  record.seq = json.at("seq").get<std::uint64_t>();
  record.op = json.at("op").get<std::string>();
  record.dtype = json.value("dtype", "");
  record.shape = json.value("shape", std::vector<std::int64_t>{});
  record.step = json.value("step", -1);
  record.compute = json.value("compute", -1);
  return record;
}

nlohmann::json to_json(const Job& job) {
  return {{"id", job.id},
          {"task", job.task},
          {"params", job.params},
          {"backend", job.backend},
          {"comm_device", job.comm_device},
          {"deadline_ms", job.deadline.count()},
          {"op_timeout_ms", job.op_timeout.count()}};
}

Job job_from_json(const nlohmann::json& json) {
  Job job;
  job.id = json.at("id").get<std::string>();
  job.task = json.at("task").get<std::string>();
  job.params = json.value("params", nlohmann::json::object());
  job.backend = json.at("backend").get<std::string>();
  job.comm_device = json.value("comm_device", "cpu");
  job.deadline = std::chrono::milliseconds(json.at("deadline_ms").get<std::int64_t>());
  job.op_timeout = std::chrono::milliseconds(json.value("op_timeout_ms", std::int64_t{0}));
  return job;
}

nlohmann::json to_json(const RankOutcome& outcome) {
  nlohmann::json trace = nlohmann::json::array();
  for (const auto& record : outcome.trace) trace.push_back(to_json(record));
  nlohmann::json json = {{"rank", outcome.rank},
                         {"pid", outcome.pid},
                         {"state", to_string(outcome.state)},
                         {"result", outcome.result},
                         {"error", outcome.error},
                         {"error_type", outcome.error_type},
                         {"trace", trace},
                         {"blocked_in", nullptr},
                         {"how_died", outcome.how_died},
                         {"log_tail", outcome.log_tail}};
  if (outcome.blocked_in) json["blocked_in"] = to_json(*outcome.blocked_in);
  if (!outcome.phases.empty()) json["phases"] = outcome.phases;
  if (outcome.blocked_on_store) json["blocked_on_store"] = true;
  if (outcome.peer_left) json["peer_left"] = true;
  if (outcome.died_of_signal != 0) json["died_of_signal"] = outcome.died_of_signal;
  if (!outcome.records.empty()) json["records"] = outcome.records;
  return json;
}

RankState rank_state_from_string(const std::string& text) {
  for (RankState state : {RankState::Finished, RankState::Raised, RankState::TimedOut, RankState::Stuck,
                          RankState::Crashed, RankState::Ended}) {
    if (text == to_string(state)) return state;
  }
  throw ConfigError("unknown rank state '" + text + "'");
}

RunStatus run_status_from_string(const std::string& text) {
  for (RunStatus status : {RunStatus::Completed, RunStatus::Error, RunStatus::Hang, RunStatus::Crash}) {
    if (text == to_string(status)) return status;
  }
  throw ConfigError("unknown run status '" + text + "'");
}

RankOutcome outcome_from_json(const nlohmann::json& json) {
  RankOutcome outcome;
  outcome.rank = json.at("rank").get<int>();
  outcome.pid = json.value("pid", 0L);
  outcome.state = rank_state_from_string(json.at("state").get<std::string>());
  outcome.result = json.value("result", nlohmann::json());
  outcome.error = json.value("error", "");
  outcome.error_type = json.value("error_type", "");
  for (const auto& record : json.value("trace", nlohmann::json::array())) outcome.trace.push_back(record_from_json(record));
  if (json.contains("blocked_in") && !json["blocked_in"].is_null()) outcome.blocked_in = record_from_json(json["blocked_in"]);
  outcome.how_died = json.value("how_died", "");
  outcome.died_of_signal = json.value("died_of_signal", 0);
  outcome.log_tail = json.value("log_tail", "");
  outcome.phases = json.value("phases", PhaseSeconds{});
  outcome.blocked_on_store = json.value("blocked_on_store", false);
  outcome.peer_left = json.value("peer_left", false);
  if (json.contains("records")) outcome.records = json.at("records").get<std::vector<nlohmann::json>>();
  return outcome;
}

JobResult job_result_from_json(const nlohmann::json& json) {
  JobResult run;
  run.status = run_status_from_string(json.at("status").get<std::string>());
  // Rank 0's blame module decided; the other ranks read its decision as it was.
  assign_blame(run, blame_rule_from_string(json.value("blame_rule", "none")), json.value("blamed_rank", -1));
  run.diagnosis = json.value("diagnosis", "");
  run.diagnosis_once_told = json.value("diagnosis_once_told", "");
  run.seconds = json.value("seconds", 0.0);
  run.start_seconds = json.value("start_seconds", 0.0);
  run.phases = json.value("phases", PhaseSeconds{});
  for (const auto& rank : json.value("ranks", nlohmann::json::array())) run.ranks.push_back(outcome_from_json(rank));
  return run;
}

std::chrono::milliseconds op_timeout_of(const Job& job) {
  return job.op_timeout.count() > 0 ? job.op_timeout : job.deadline;
}

}  // namespace detail
}  // namespace distmetrics::runtime
