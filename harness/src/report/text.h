// Small text helpers shared by the report views (numbers: distmetrics/harness/number_text.h; a
// text's first line: runtime::first_line).
#pragma once

#include <string>

namespace distmetrics::harness::text {

std::string indent(const std::string& text, const std::string& prefix);
std::string upper(std::string s);
std::string html_escape(const std::string& s);

}  // namespace distmetrics::harness::text
