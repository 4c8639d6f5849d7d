// Small text helpers shared by the report views.
#pragma once

#include <string>

namespace distmetrics::harness::text {

std::string first_line(const std::string& text);
// A message without its "variant:" and "reproduce:" lines (a report says those once).
std::string without_variant_lines(const std::string& message);
std::string indent(const std::string& text, const std::string& prefix);
std::string upper(std::string s);
std::string fixed(double value, int precision);
std::string number(double value);  // %g-like, 6 significant digits
std::string html_escape(const std::string& s);

}  // namespace distmetrics::harness::text
