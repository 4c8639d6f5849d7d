#include "text.h"

#include <cctype>
#include <sstream>

namespace distmetrics::harness::text {

std::string indent(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) out << prefix << line << "\n";
  return out.str();
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace distmetrics::harness::text
