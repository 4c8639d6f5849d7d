// The report model: one run's verdicts laid out for reading (the matrix, the findings, the
// timelines, the skips), and every report rendered from it: the JSON report
// (docs/cli-contract.md), JUnit XML, the console, Markdown (a pull-request comment) and a
// self-contained HTML page. `run`, `conform` and `explore` build their reports here.
//
//   ReportModel model = report_model(verdicts, started, seconds);
//   render_console(model, std::cout, {});
//   write(render_json(model).dump(2)), write(render_junit(model)), write(render_html(model));
//
// The matrix has one row per scenario (`run`) or per metric (`conform`) and one column per
// property; a cell holds the worst outcome over the row's variants and how many did not pass.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness {

// A cell shows the worst of its variants' outcomes (outcome_severity, outcome.h). "pass" above
// "skip" (nothing ran) is not a ranking: a cell with any run variant shows that one.
// Columns come in the property table's column order, headed by each property's label
// (property.h: in_column_order, property_label).

struct ReportCell {
  std::string worst;  // the worst outcome of its run variants, "skip" when all skipped, "" not checked
  int ran = 0;        // variants that ran (not skipped)
  int bad = 0;        // of those, not passed
  int skipped = 0;
  std::vector<std::size_t> variants;  // indices into ReportModel::variants
  std::string anchor;                 // HTML id of the cell's variant table
  bool checked() const { return !worst.empty(); }
  std::string counts() const;  // "3/12 fail", "12/12 pass", "4 skipped"
};

struct ReportRow {
  std::string name;
  std::vector<ReportCell> cells;  // one per ReportModel::columns
  int variants = 0, ran = 0, bad = 0, skipped = 0;
  std::string worst;  // over its variants
};

// One rank's part in a failed property.
struct RankValue {
  int rank = 0;
  std::string value;                  // text of its value ("3.74", "raised NotComputableError")
  std::optional<double> difference;   // |value - single| when both are numbers (largest entry)
  std::optional<std::int64_t> samples, batches;
  bool differs = false;
};

struct Finding {  // a property that failed
  std::string property;
  std::string headline;  // the message's first line: what failed and what it means
  std::string single;    // the single-process value's text
  std::vector<RankValue> ranks;
  std::optional<double> difference;
  std::string tolerance;  // "rtol 1e-06, atol 1e-09; integer tensors exact"
  std::string message;    // the full message, without its variant and reproduce lines
};

// A per-rank timeline of collectives, aligned by sequence number.
struct TimelineCell {
  bool present = false;  // the rank issued a collective with this sequence number
  std::string op, dtype, shape;
  int script_step = 0;  // 0: not recorded
  std::string step_text;
  bool blocked = false;  // the rank was inside it when it stopped
  // Where its rank broke the pattern (Timeline::deviation): a collective it issued in that step
  // that its peers never did, or the place of the one it passed that step without. `parted`:
  // the same on an even split, where neither side is blamed.
  bool deviates = false, parted = false;
  std::string signature() const { return op + " " + dtype + " " + shape; }
};
// Where the ranks' collectives of one script step parted: the verdict's deviation.
using TimelineDeviation = Deviation;
struct Timeline {
  std::vector<int> ranks;
  std::vector<std::string> states;      // per rank
  std::vector<std::string> errors;      // per rank, one line or empty
  std::vector<std::uint64_t> seqs;      // rows shown
  std::vector<std::vector<TimelineCell>> rows;  // per row, per rank
  std::optional<std::uint64_t> divergence;      // first seq where the ranks differ
  std::optional<TimelineDeviation> deviation;   // the step where the blamed ranks broke the pattern
  std::size_t omitted = 0;              // leading rows left out (all ranks agreed)
  std::size_t omitted_after = 0;        // rows after the divergence left out
};

struct ReportVariant {
  Verdict verdict;  // what it was built from: the JSON and JUnit views write it as it is
  std::size_t index = 0;
  std::string id, row, scenario, file, backend, shard, placement, outcome, reason, reproduce, diagnosis;
  std::string source;  // conform with several sources: the path of the one it checked
  int world_size = 0;
  double seconds = 0;
  std::string anchor;  // HTML id
  std::vector<std::pair<std::string, std::string>> cells;  // property -> outcome, in column order
  std::vector<Finding> findings;  // failed properties
  std::vector<RankValue> rank_counts;  // per rank: samples and batches, when reported
  std::optional<Timeline> timeline;    // hang, crash and error outcomes whose ranks issued collectives
  std::string details;  // the console text: what differed (or happened); no reproduce line
  bool passed() const { return outcome_passed(outcome); }
};

// Skips grouped by the gist of their reason ("needs 2 GPUs"), with the full reasons behind it.
struct SkipGroup {
  std::string reason;  // the reason up to its first " (": "needs 2 GPUs"
  int count = 0;
  std::vector<std::pair<std::string, int>> reasons;  // each full reason and its count
};

struct ReportCounts : OutcomeCounts {
  double seconds = 0;
  std::string line() const;  // "118 passed, 1 failed, 0 hang, 0 crash, 0 error, 1 skipped in 52.3 s"
};

// explore's search (explorer.h), whose JSON and Markdown views are its summary: each failure it
// found (the shrunk case's verdict as the case ran), the cases per value of each axis, the counts.
struct SearchFinding {
  std::string signature, outcome;
  std::vector<std::string> properties, blame;
  std::uint64_t index = 0;  // the case that found it
  double found_after = 0;
  std::string original_size, shrunk_size;
  int shrink_steps = 0, shrink_tried = 0;
  std::string shrink_cut, saved, toml;
  Verdict verdict;
};
struct SearchSummary {
  std::string metric;
  std::uint64_t seed = 0;
  double budget = 0, seconds = 0;
  std::uint64_t cases = 0, refused = 0, slow = 0, unjudged = 0, shrink_cases = 0;
  double variants_per_second = 0, helper_ready_seconds = 0;
  std::optional<double> first_case_seconds;
  std::map<std::string, std::uint64_t> coverage;
  std::vector<SearchFinding> findings;
};

struct ReportModel {
  std::string title = "distmetrics run";
  std::string last_line_prefix = "distmetrics";  // the greppable last line: "<prefix>: N passed, ..."
  std::vector<std::pair<std::string, std::string>> header;  // label, value
  std::string row_kind = "scenario";  // "scenario" or "metric"
  std::vector<std::string> columns;   // properties
  std::vector<ReportRow> rows;
  std::vector<ReportVariant> variants;
  std::vector<SkipGroup> skips;  // grouped reasons, most frequent first
  ReportCounts counts;
  std::string started, distmetrics_version, torch_version;
  std::string worst;  // over every variant that ran; "" when none did
  // conform's matrix (ReportLayout::by_metric): the JSON report carries the columns
  // ("properties"), each variant's cells ("matrix") and each variant's "metric" and "source".
  bool by_metric = false;
  // Top-level fields only the JSON report carries (conform: "plugin", "plugins", "findings").
  nlohmann::json json_fields = nlohmann::json::object();
  // explore's: the JSON and Markdown views write the search's summary instead of a run's report.
  std::optional<SearchSummary> search;

  std::string verdict() const;  // one line: "FAILED: 2 of 31 variants did not pass (1 fail, 1 hang); 28 skipped"
  std::vector<const ReportVariant*> not_passed() const;
};

// How a report lays out its matrix. The default is `run`'s: a row per scenario, a column per
// property judged (the property table's column order), and a variant that hung, crashed, raised
// or was skipped shows that outcome in the columns its row checks. conform's: a row per metric,
// its columns given, and such a variant's outcome in every column (none could be judged).
struct ReportLayout {
  bool by_metric = false;
  std::vector<std::string> metrics;  // by_metric: per verdict, the metric it checked (its row)
  std::vector<std::string> sources;  // by_metric with several sources: per verdict, its source's path
  std::vector<std::string> columns;  // the properties; empty: those the verdicts judged
};

// The model of one run: its verdicts (in order), when it started (ISO-8601) and its seconds.
// Throws std::invalid_argument when a layout's per-verdict list has another length.
ReportModel report_model(const std::vector<Verdict>& verdicts, const std::string& started, double seconds,
                         const ReportLayout& layout = {});

// conform's cell of a verdict: an outcome name, or "" when the property was not checked on it.
// A variant that did not pass or fail has its outcome in every column.
std::string matrix_cell(const Verdict& verdict, const std::string& property);

struct ConsoleOptions {
  bool quiet = false;       // no matrix: only what did not pass, and the last line
  bool verbose = false;     // the caller printed a line per variant; list skipped variants too
  bool hide_skips = false;  // not even the folded line that counts the skipped variants
};
// The matrix, its legend, the folded skips, what did not pass with the command that
// reproduces it (once), and the greppable last line.
void render_console(const ReportModel& model, std::ostream& out, const ConsoleOptions& options);
std::string render_markdown(const ReportModel& model);
std::string render_html(const ReportModel& model);
// The JSON report (docs/cli-contract.md, docs/report.schema.json): each variant as its verdict
// says (Verdict::to_json), the summary, and conform's matrix and fields.
nlohmann::json render_json(const ReportModel& model);
// JUnit XML: a test suite per scenario, a test case per variant.
std::string render_junit(const ReportModel& model);

}  // namespace distmetrics::harness
