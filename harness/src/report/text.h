// Small text helpers shared by the report views.
#pragma once

#include <string>

namespace distmetrics::harness::text {

std::string first_line(const std::string& text);
std::string indent(const std::string& text, const std::string& prefix);
std::string upper(std::string s);
std::string fixed(double value, int precision);
std::string number(double value);  // %g-like, 6 significant digits
std::string html_escape(const std::string& s);

}  // namespace distmetrics::harness::text
