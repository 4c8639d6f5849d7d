// The planted cases of check_function_length's own test: exactly one function over 80 lines
// (too_long, 81), one at the limit (at_the_limit, 80), and the constructs the check must read
// past without miscounting: braces in strings, comments and raw strings, an initializer list, a
// lambda (part of its function), a class with a member defined in it, a namespace-scope table.
#include <string>
#include <vector>

namespace planted {

const std::vector<std::string> table{"{", "}}", R"x({ "a": [ } )x"};  // not a function

struct Holder {
  explicit Holder(int v) : value_{v}, name_("}") {}
  int twice() const { return 2 * value_; }
  int value_;
  std::string name_;
};

int at_the_limit() {
  int total = 0;
  total += 0;
  total += 1;
  total += 2;
  total += 3;
  total += 4;
  total += 5;
  total += 6;
  total += 7;
  total += 8;
  total += 9;
  total += 10;
  total += 11;
  total += 12;
  total += 13;
  total += 14;
  total += 15;
  total += 16;
  total += 17;
  total += 18;
  total += 19;
  total += 20;
  total += 21;
  total += 22;
  total += 23;
  total += 24;
  total += 25;
  total += 26;
  total += 27;
  total += 28;
  total += 29;
  total += 30;
  total += 31;
  total += 32;
  total += 33;
  total += 34;
  total += 35;
  total += 36;
  total += 37;
  total += 38;
  total += 39;
  total += 40;
  total += 41;
  total += 42;
  total += 43;
  total += 44;
  total += 45;
  total += 46;
  total += 47;
  total += 48;
  total += 49;
  total += 50;
  total += 51;
  total += 52;
  total += 53;
  total += 54;
  total += 55;
  total += 56;
  total += 57;
  total += 58;
  total += 59;
  total += 60;
  total += 61;
  total += 62;
  total += 63;
  total += 64;
  total += 65;
  total += 66;
  total += 67;
  total += 68;
  total += 69;
  total += 70;
  total += 71;
  total += 72;
  total += 73;
  total += 74;
  total += 75;
  total += 76;
  return total;
}

/* a comment with a brace { that the check must not count */
int too_long(int start) {
  int total = start;
  auto add = [&total](int v) {  // a lambda: part of too_long
    total += v;
  };
  total += 0;
  total += 1;
  total += 2;
  total += 3;
  total += 4;
  total += 5;
  total += 6;
  total += 7;
  total += 8;
  total += 9;
  total += 10;
  total += 11;
  total += 12;
  total += 13;
  total += 14;
  total += 15;
  total += 16;
  total += 17;
  total += 18;
  total += 19;
  total += 20;
  total += 21;
  total += 22;
  total += 23;
  total += 24;
  total += 25;
  total += 26;
  total += 27;
  total += 28;
  total += 29;
  total += 30;
  total += 31;
  total += 32;
  total += 33;
  total += 34;
  total += 35;
  total += 36;
  total += 37;
  total += 38;
  total += 39;
  total += 40;
  total += 41;
  total += 42;
  total += 43;
  total += 44;
  total += 45;
  total += 46;
  total += 47;
  total += 48;
  total += 49;
  total += 50;
  total += 51;
  total += 52;
  total += 53;
  total += 54;
  total += 55;
  total += 56;
  total += 57;
  total += 58;
  total += 59;
  total += 60;
  total += 61;
  total += 62;
  total += 63;
  total += 64;
  total += 65;
  total += 66;
  total += 67;
  total += 68;
  total += 69;
  total += 70;
  total += 71;
  total += 72;
  total += 73;
  add(1);
  return total;
}

}  // namespace planted
