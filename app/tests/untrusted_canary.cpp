// A shared library that leaves a mark when it is loaded: the CLI must never load it on the word
// of a scenario file (cli_untrusted_input_test.sh).
#include <cstdio>
#include <cstdlib>

__attribute__((constructor)) static void leave_a_mark() {
  if (const char* path = std::getenv("DISTMETRICS_CANARY_MARK")) {
    if (std::FILE* f = std::fopen(path, "w")) std::fclose(f);
  }
}
