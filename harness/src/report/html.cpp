// The HTML view: one self-contained page (inline CSS and a few lines of JS, nothing fetched):
// the verdict, the matrix coloured by worst outcome, the variants behind each cell, and for
// each variant that did not pass what differed, each rank's part, the per-rank timeline of
// collectives for a hang, and the reproduce command with a copy button.
#include <algorithm>
#include <sstream>

#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/runtime/text.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

using text::html_escape;

constexpr const char* kStyle = R"CSS(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg)}
body{margin:0;background:#fff;font-size:14px;line-height:1.45}
header,main,footer{max-width:1200px;margin:0 auto;padding:0 24px}
header{padding-top:20px}
h1{font-size:20px;margin:0 0 8px}
h2{font-size:16px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px}
h4{font-size:13px;margin:12px 0 4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.o-pass{--c:#116329;--bg:#dafbe1;--solid:#1f883d}
.o-skip{--c:#59636e;--bg:#eff2f5;--solid:#818b98}
.verdict{font-size:17px;font-weight:600;margin:6px 0;padding:10px 14px;border-radius:6px;border-left:6px solid var(--solid);background:var(--panel)}
.chips{margin:8px 0}
.chip{display:inline-block;padding:1px 9px;margin-right:6px;border-radius:10px;background:var(--bg);color:var(--c);font-weight:600;font-size:12px}
.chip.zero{opacity:.35}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:10px 0;color:var(--muted)}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
table{border-collapse:collapse}
table.matrix th,table.matrix td{border:1px solid #fff;padding:0}
table.matrix thead th{font-size:12px;color:var(--muted);font-weight:600;padding:4px 8px;text-align:center;vertical-align:bottom}
table.matrix tbody th{text-align:left;padding:4px 12px 4px 4px;font-weight:500;white-space:nowrap}
td.cell{background:var(--bg);color:var(--c);text-align:center;min-width:86px;border-radius:4px}
td.cell a{display:block;padding:6px 8px;color:inherit;text-decoration:none;font-weight:600;font-size:12.5px}
td.cell a:hover{outline:2px solid var(--fg);outline-offset:-2px;border-radius:4px}
td.cell.none{background:transparent;color:#b0b8c1}
td.tally{padding:4px 10px;color:var(--muted);font-size:12px;white-space:nowrap}
.legend{color:var(--muted);font-size:12px}
.legend .chip{font-weight:500}
details.skips{margin:10px 0;color:var(--muted)}
details.skips summary{cursor:pointer}
.panel{display:none;border:1px solid var(--line);border-radius:6px;padding:12px 14px;margin:12px 0;background:var(--panel)}
.panel:target{display:block}
table.grid th,table.grid td{border:1px solid var(--line);padding:3px 9px;text-align:left;font-size:12.5px}
table.grid thead th{background:var(--panel)}
.badge{display:inline-block;padding:0 7px;border-radius:4px;background:var(--bg);color:var(--c);font-weight:700;font-size:11.5px;text-transform:uppercase}
article.failure{border:1px solid var(--line);border-left:6px solid var(--solid);border-radius:6px;padding:12px 16px;margin:14px 0}
article.failure:target{box-shadow:0 0 0 3px #0969da55}
.facts{color:var(--muted);margin:2px 0 8px}
.hint{margin:6px 0;font-weight:500}
tr.differs td{color:#a40e26;font-weight:600}
.tolerance{color:var(--muted);font-size:12.5px;margin:4px 0}
.repro{display:flex;gap:8px;align-items:center;margin:10px 0 2px}
.repro code{flex:1;background:#0d1117;color:#e6edf3;padding:7px 10px;border-radius:6px;overflow-x:auto;white-space:pre}
button.copy{border:1px solid var(--line);background:#fff;border-radius:6px;padding:5px 12px;cursor:pointer;font-size:12.5px}
button.copy:hover{background:var(--panel)}
pre{background:var(--panel);padding:8px 10px;border-radius:6px;overflow-x:auto;margin:4px 0;white-space:pre-wrap}
table.timeline{margin:4px 0}
table.timeline th,table.timeline td{border:1px solid var(--line);padding:3px 9px;font-size:12px;vertical-align:top;min-width:150px}
table.timeline td.seq,table.timeline th.seq{min-width:0;color:var(--muted);text-align:right}
table.timeline td.op small{color:var(--muted)}
table.timeline td.missing{background:repeating-linear-gradient(45deg,#fff,#fff 5px,#f1f3f5 5px,#f1f3f5 10px);color:var(--muted)}
table.timeline td.blocked{outline:2px solid #bf8700;outline-offset:-2px;background:#fff8c5}
.blocked-label{font-size:11px;font-weight:700;color:#7d4e00;text-transform:uppercase;margin-left:4px}
table.timeline tr.diverge td{border-top:3px solid #cf222e}
table.timeline tr.diverge td.seq{color:#cf222e;font-weight:700}
.diverge-note{color:#a40e26;font-weight:600;margin:4px 0}
table.timeline td.deviates{outline:3px solid #cf222e;outline-offset:-3px;background:#ffebe9}
table.timeline td.parted{outline:2px dashed #cf222e;outline-offset:-2px}
table.timeline th.blamed{color:#a40e26;background:#ffebe9}
.deviation-note{color:#a40e26;margin:4px 0}
.back{font-size:12px}
footer{color:var(--muted);font-size:12px;padding:24px}
)CSS";

constexpr const char* kScript = R"JS(
document.querySelectorAll('button.copy').forEach(function (button) {
  button.addEventListener('click', function () {
    var text = button.getAttribute('data-copy');
    function done() { button.textContent = 'copied'; setTimeout(function () { button.textContent = 'copy'; }, 1500); }
    function fallback() {
      var area = document.createElement('textarea');
      area.value = text; document.body.appendChild(area); area.select();
      try { document.execCommand('copy'); done(); } catch (e) {}
      document.body.removeChild(area);
    }
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  });
});
)JS";

// The colours of the outcomes that did not pass, from the outcome table (white text on the
// outcome's colour); pass and skip have light styles of their own in kStyle.
std::string outcome_style() {
  std::string css;
  for (const auto& kind : outcome_kinds())
    if (!outcome_passed(kind.name))
      css += std::string(".o-") + kind.name + "{--c:#fff;--bg:" + kind.colour + ";--solid:" + kind.colour + "}\n";
  return css;
}

std::string outcome_class(const std::string& outcome) { return outcome.empty() ? "none" : "o-" + outcome; }

std::string badge(const std::string& outcome) {
  return "<span class=\"badge " + outcome_class(outcome) + "\">" + html_escape(outcome) + "</span>";
}

std::string optional_number(const std::optional<std::int64_t>& n) { return n ? std::to_string(*n) : ""; }

void chips(std::ostringstream& h, const ReportCounts& c) {
  h << "<p class=\"chips\">";
  for (const auto& kind : outcome_kinds()) {
    const int n = c.of(kind.outcome);
    h << "<span class=\"chip o-" << kind.name << (n ? "" : " zero") << "\" data-kind=\"" << kind.name << "\">" << n << " "
      << kind.counted << "</span>";
  }
  h << " in " << fixed_text(c.seconds, 1) << " s</p>\n";
}

void matrix(std::ostringstream& h, const ReportModel& m) {
  h << "<section id=\"matrix\"><h2>" << html_escape(m.row_kind == "metric" ? "Metrics" : "Scenarios")
    << " × properties</h2>\n<table class=\"matrix\"><thead><tr><th>" << html_escape(m.row_kind) << "</th>";
  for (const auto& c : m.columns) h << "<th title=\"" << html_escape(c) << "\">" << html_escape(c) << "</th>";
  h << "<th></th></tr></thead>\n<tbody>\n";
  for (const auto& row : m.rows) {
    h << "<tr data-row=\"" << html_escape(row.name) << "\"><th scope=\"row\"><code>" << html_escape(row.name)
      << "</code></th>";
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      const auto& cell = row.cells[c];
      if (!cell.checked()) {
        h << "<td class=\"cell none\" data-property=\"" << html_escape(m.columns[c]) << "\">–</td>";
        continue;
      }
      h << "<td class=\"cell " << outcome_class(cell.worst) << "\" data-outcome=\"" << cell.worst << "\" data-property=\""
        << html_escape(m.columns[c]) << "\" title=\"" << html_escape(row.name + " × " + m.columns[c]) << "\"><a href=\"#"
        << cell.anchor << "\">" << html_escape(cell.counts()) << "</a></td>";
    }
    h << "<td class=\"tally\">" << row.variants << " variant" << (row.variants == 1 ? "" : "s");
    if (row.skipped) h << ", " << row.skipped << " skipped";
    h << "</td></tr>\n";
  }
  h << "</tbody></table>\n<p class=\"legend\">Each cell: the worst outcome over the row's variants for that property, "
       "and how many did not pass. Click a cell for its variants. ";
  for (const auto& kind : outcome_kinds())
    h << "<span class=\"chip " << outcome_class(kind.name) << "\">" << kind.name << "</span>";
  h << "</p>\n";
  if (!m.skips.empty()) {
    h << "<details class=\"skips\" id=\"skips\"><summary>" << m.counts.of(Outcome::Skip) << " skipped: ";
    for (std::size_t i = 0; i < m.skips.size(); ++i)
      h << (i ? "; " : "") << html_escape(m.skips[i].reason) << (m.skips.size() > 1 ? " (" + std::to_string(m.skips[i].count) + ")" : "");
    h << "</summary><ul>";
    for (const auto& s : m.skips)
      for (const auto& [reason, count] : s.reasons) h << "<li><b>" << count << "</b> " << html_escape(reason) << "</li>";
    h << "</ul></details>\n";
  }
  h << "</section>\n";
}

void cell_panels(std::ostringstream& h, const ReportModel& m) {
  h << "<section id=\"cells\">\n";
  for (const auto& row : m.rows) {
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      const auto& cell = row.cells[c];
      if (!cell.checked()) continue;
      h << "<div class=\"panel\" id=\"" << cell.anchor << "\"><h3><code>" << html_escape(row.name) << "</code> × <code>"
        << html_escape(m.columns[c]) << "</code> " << badge(cell.worst) << " " << html_escape(cell.counts())
        << "</h3>\n<table class=\"grid variants\"><thead><tr><th>backend</th><th>world size</th><th>shard</th>"
           "<th>placement</th><th>outcome</th><th>seconds</th><th></th></tr></thead><tbody>\n";
      for (std::size_t i : cell.variants) {
        const auto& v = m.variants[i];
        const std::string& outcome = v.cells[c].second;
        h << "<tr class=\"" << outcome_class(outcome) << "\" data-variant=\"" << html_escape(v.id) << "\"><td>"
          << html_escape(v.backend) << "</td><td>" << v.world_size << "</td><td>" << html_escape(v.shard) << "</td><td>"
          << html_escape(v.placement) << "</td><td>" << badge(outcome) << "</td><td>"
          << (v.outcome == "skip" ? "" : fixed_text(v.seconds, 2)) << "</td><td>";
        if (!v.passed()) h << "<a class=\"to-failure\" href=\"#" << v.anchor << "\">what happened</a>";
        else if (v.outcome == "skip") h << html_escape(v.reason);
        h << "</td></tr>\n";
      }
      h << "</tbody></table><p class=\"back\"><a href=\"#matrix\">back to the matrix</a></p></div>\n";
    }
  }
  h << "</section>\n";
}

void finding(std::ostringstream& h, const Finding& f) {
  bool values = f.single != "none";
  for (const auto& r : f.ranks) values = values || !r.value.empty();
  h << "<div class=\"finding\" data-property=\"" << html_escape(f.property) << "\">";
  if (!values) {  // e.g. no_hang: nothing was computed to compare; the headline says it
    h << "<p class=\"headline\">" << html_escape(f.headline) << "</p></div>\n";
    return;
  }
  h << "<h4><code>" << html_escape(f.property) << "</code></h4><p class=\"headline\">" << html_escape(f.headline)
    << "</p>\n";
  h << "<table class=\"grid values\"><thead><tr><th></th><th>value</th><th>difference</th><th>samples</th>"
       "<th>batches</th></tr></thead><tbody>\n";
  std::int64_t samples = 0, batches = 0;
  bool counted = !f.ranks.empty();
  for (const auto& r : f.ranks) {
    counted = counted && r.samples && r.batches;
    if (r.samples) samples += *r.samples;
    if (r.batches) batches += *r.batches;
  }
  h << "<tr class=\"single\"><th>single process</th><td class=\"mono\">" << html_escape(f.single) << "</td><td></td><td>"
    << (counted ? std::to_string(samples) : "") << "</td><td>" << (counted ? std::to_string(batches) : "")
    << "</td></tr>\n";
  for (const auto& r : f.ranks) {
    h << "<tr class=\"rank" << (r.differs ? " differs" : "") << "\" data-rank=\"" << r.rank << "\"><th>rank " << r.rank
      << "</th><td class=\"mono\">" << html_escape(r.value) << "</td><td class=\"mono\">"
      << (r.difference ? number_text(*r.difference) : "") << "</td><td>" << optional_number(r.samples) << "</td><td>"
      << optional_number(r.batches) << "</td></tr>\n";
  }
  h << "</tbody></table>\n";
  if (!f.tolerance.empty()) h << "<p class=\"tolerance\">tolerance: " << html_escape(f.tolerance) << "</p>\n";
  h << "</div>\n";
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// The step where the blamed ranks broke the pattern, in words: the cells marked in the table.
void deviation_note(std::ostringstream& h, const Timeline& t) {
  const TimelineDeviation& d = *t.deviation;
  std::string step = "script step " + std::to_string(d.script_step);
  for (const auto& row : t.rows)
    for (const auto& cell : row)
      if (cell.script_step == d.script_step && !cell.step_text.empty() && step.find('\'') == std::string::npos)
        step += " '" + cell.step_text + "'";
  if (d.compute) step += " (compute " + std::to_string(*d.compute) + ")";
  h << "<p class=\"deviation-note\">";
  if (d.blamed.empty()) {
    h << "The ranks split evenly at " << html_escape(step) << ": " << ranks_text(d.more) << " issued "
      << html_escape(d.op) << " there, which " << ranks_text(d.fewer)
      << " never issued; neither side is blamed (dashed: where they part).";
  } else if (d.blamed == d.more) {
    h << "<b>" << ranks_text(d.blamed) << " broke the pattern at " << html_escape(step) << "</b>: "
      << (d.blamed.size() == 1 ? "it" : "they") << " issued " << html_escape(d.op) << " there, which "
      << ranks_text(d.fewer) << " never issued (marked).";
  } else {
    h << "<b>" << ranks_text(d.blamed) << " broke the pattern at " << html_escape(step) << "</b>: "
      << (d.blamed.size() == 1 ? "it" : "they") << " passed it without " << html_escape(d.op) << ", which "
      << ranks_text(d.more) << " issued (marked: what " << (d.blamed.size() == 1 ? "it" : "they")
      << " issued at #" << d.seq << " instead).";
  }
  h << "</p>\n";
}

void timeline(std::ostringstream& h, const Timeline& t) {
  h << "<div class=\"timeline-wrap\"><h4>Collectives per rank, aligned by sequence number</h4>\n";
  if (t.divergence) {
    h << "<p class=\"diverge-note\">The ranks diverge at collective #" << *t.divergence << ": ";
    const auto& row = t.rows[*t.divergence - t.omitted];
    for (std::size_t r = 0; r < t.ranks.size(); ++r)
      h << (r ? "; " : "") << "rank " << t.ranks[r] << " "
        << html_escape(row[r].present ? row[r].op + (row[r].blocked ? " (blocked)" : "") : "issued none");
    h << ".</p>\n";
  }
  if (t.deviation) deviation_note(h, t);
  if (t.omitted) h << "<p class=\"facts\">" << t.omitted << " earlier collectives, the same on every rank, not shown.</p>\n";
  h << "<table class=\"timeline\"><thead><tr><th class=\"seq\">#</th>";
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    const bool blamed = t.deviation && std::count(t.deviation->blamed.begin(), t.deviation->blamed.end(), t.ranks[r]);
    h << "<th data-rank=\"" << t.ranks[r] << "\"" << (blamed ? " class=\"blamed\"" : "") << ">rank " << t.ranks[r]
      << (blamed ? " · to blame" : "") << "<br><small>" << html_escape(t.states[r])
      << (t.errors[r].empty() ? "" : ": " + html_escape(t.errors[r])) << "</small></th>";
  }
  h << "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const bool diverge = t.divergence && *t.divergence == t.seqs[i];
    h << "<tr data-seq=\"" << t.seqs[i] << "\"" << (diverge ? " class=\"diverge\"" : "") << "><td class=\"seq\">"
      << t.seqs[i] << (diverge ? " ◀" : "") << "</td>";
    for (const auto& cell : t.rows[i]) {
      const std::string marks = std::string(cell.deviates ? " deviates" : "") + (cell.parted ? " parted" : "");
      if (!cell.present) {
        h << "<td class=\"missing" << marks << "\">none</td>";
        continue;
      }
      h << "<td class=\"op" << (cell.blocked ? " blocked" : "") << marks << "\"><b>" << html_escape(cell.op) << "</b>"
        << (cell.blocked ? " <span class=\"blocked-label\">blocked here</span>" : "") << "<br><small>" << html_escape(cell.dtype) << " " << html_escape(cell.shape);
      if (cell.script_step)
        h << " · step " << cell.script_step << (cell.step_text.empty() ? "" : " '" + html_escape(cell.step_text) + "'");
      h << "</small></td>";
    }
    h << "</tr>\n";
  }
  h << "</tbody></table>";
  if (t.omitted_after) h << "<p class=\"facts\">" << t.omitted_after << " later collectives not shown.</p>";
  h << "</div>\n";
}

void failures(std::ostringstream& h, const ReportModel& m) {
  const auto bad = m.not_passed();
  if (bad.empty()) return;
  h << "<section id=\"failures\"><h2>Not passed (" << bad.size() << ")</h2>\n";
  for (const auto* v : bad) {
    h << "<article class=\"failure " << outcome_class(v->outcome) << "\" id=\"" << v->anchor << "\" data-outcome=\""
      << v->outcome << "\">\n<h3>" << badge(v->outcome) << " <code>" << html_escape(v->id) << "</code></h3>\n"
      << "<p class=\"facts\">" << html_escape(m.row_kind) << " <code>" << html_escape(v->row) << "</code> · backend "
      << html_escape(v->backend) << " · world size " << v->world_size << " · shard " << html_escape(v->shard)
      << " · placement " << html_escape(v->placement) << " · " << fixed_text(v->seconds, 2) << " s · <code>"
      << html_escape(v->file) << "</code></p>\n";
    // The reason, unless the first failed property's headline says the same just below.
    if (v->findings.empty() || v->findings.front().headline != v->reason)
      h << "<p class=\"hint\">" << html_escape(v->reason) << "</p>\n";
    for (const auto& f : v->findings) finding(h, f);
    if (v->findings.empty() && !v->rank_counts.empty()) {
      bool any = false;
      for (const auto& r : v->rank_counts) any = any || r.samples;
      if (any) {
        h << "<table class=\"grid counts\"><thead><tr><th></th><th>samples</th><th>batches</th></tr></thead><tbody>";
        for (const auto& r : v->rank_counts)
          h << "<tr><th>rank " << r.rank << "</th><td>" << optional_number(r.samples) << "</td><td>"
            << optional_number(r.batches) << "</td></tr>";
        h << "</tbody></table>\n";
      }
    }
    if (v->timeline) timeline(h, *v->timeline);
    if (!v->diagnosis.empty())
      h << "<details class=\"diagnosis\"" << (v->outcome != "fail" ? " open" : "") << "><summary>diagnosis</summary><pre>"
        << html_escape(v->diagnosis) << "</pre></details>\n";
    else if (!v->details.empty())
      h << "<details class=\"message\"><summary>full message</summary><pre>" << html_escape(v->details)
        << "</pre></details>\n";
    if (const std::string kept = v->verdict.kept_verdicts_text(); !kept.empty() && v->outcome != "fail")
      h << "<details class=\"kept\" open><summary>judged before the variant died</summary><pre>" << html_escape(kept)
        << "</pre></details>\n";
    h << "<div class=\"repro\"><code class=\"reproduce\">" << html_escape(v->reproduce)
      << "</code><button type=\"button\" class=\"copy\" data-copy=\"" << html_escape(v->reproduce)
      << "\">copy</button></div>\n<p class=\"back\"><a href=\"#matrix\">back to the matrix</a></p>\n</article>\n";
  }
  h << "</section>\n";
}

}  // namespace

std::string render_html(const ReportModel& m) {
  std::ostringstream h;
  const std::string overall = m.worst.empty() ? "skip" : m.worst;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n<title>"
    << html_escape(m.title + ": " + m.verdict()) << "</title>\n<style>" << kStyle << outcome_style() << "</style></head>\n<body>\n<header>\n<h1>"
    << html_escape(m.title) << "</h1>\n<p id=\"verdict\" class=\"verdict " << outcome_class(overall) << "\">"
    << html_escape(m.verdict()) << "</p>\n";
  chips(h, m.counts);
  h << "<dl class=\"meta\">";
  for (const auto& [label, value] : m.header) h << "<dt>" << html_escape(label) << "</dt><dd>" << html_escape(value) << "</dd>";
  h << "<dt>distmetrics</dt><dd>" << html_escape(m.distmetrics_version) << " on LibTorch " << html_escape(m.torch_version)
    << (m.started.empty() ? "" : ", started " + html_escape(m.started)) << "</dd></dl>\n</header>\n<main>\n";
  if (!m.rows.empty()) matrix(h, m);
  failures(h, m);
  cell_panels(h, m);
  h << "</main>\n<footer>" << html_escape(m.last_line_prefix + ": " + m.counts.line())
    << " · rendered from the verdicts, as the JSON report is (docs/cli-contract.md)</footer>\n<script>" << kScript
    << "</script>\n</body></html>\n";
  return h.str();
}

}  // namespace distmetrics::harness
