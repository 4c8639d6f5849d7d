// text: hypothesis and reference strings, structured samples that the descriptor's Python makes
// (python/distmetrics/text_data.py): each sample from (seed, its index) only, words of a fixed
// vocabulary, the hypothesis a noisy copy of the first reference.
#include "making.h"

namespace distmetrics::harness::generators {

DataGenerator text() {
  DataGenerator g;
  g.name = "text";
  g.description =
      "text (structured, Python): input [N] hypothesis strings; target [N] reference strings (or lists of references); "
      "words of a fixed vocabulary, some hypotheses empty";
  g.params = with_common(
      {drawn(ranged(param("vocabulary", "int", "words used, the first of a fixed list of 20", 12), 2, 20), {2, 5, 20}),
       drawn(ranged(param("max_words", "int", "most words a reference holds (at least 1)", 8), 1, 100), {1, 3, 30}),
       drawn(ranged(param("error_rate", "float", "chance that a word of the hypothesis is substituted, dropped or doubled",
                          0.3),
                    0, 1),
             {0.0, 0.1, 1.0}),
       drawn(ranged(param("empty_rate", "float", "fraction of empty hypotheses", 0.1), 0, 1), {0.0, 0.5, 1.0}),
       drawn(ranged(param("references", "int", "references a sample: 1 gives a string, more a list of strings", 1), 1, 8),
             {1, 2, 4})});
  g.produces = {{"input", "[N]", "str", "`[N]` hypothesis strings (some empty)"},
                {"target", "[N]", "str or list of str", "`[N]` reference strings, or lists of `references` of them"}};
  g.carrier = DataCarrier::Structured;
  g.python = "distmetrics.text_data:make";
  g.elements_per_sample = [](const nlohmann::json& p) { return 2 * size_param(p, "max_words", 8) + 1; };
  return g;
}

}  // namespace distmetrics::harness::generators
