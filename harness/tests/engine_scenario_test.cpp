// Scenario files: a valid file loads with its defaults; every bad file of the corpus in
// scenarios/bad/ gives exactly the diagnostics its "# expect:" lines list (line, field, text),
// and nothing in a bad file crashes the loader.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/variant.h"

namespace dh = distmetrics::harness;
namespace fs = std::filesystem;

namespace {

const char* kValid = R"(
description = "Multiclass accuracy"
tags = ["slow"]
[metric]
name = "Accuracy"
params = { task = "multiclass", num_classes = 4 }
[data]
generator = "multiclass"
params = { num_classes = 4, output = "logits" }
seed = 3
num_samples = 37
batch_size = 5
[variants]
world_sizes = [1, 2, 4]
backends = ["gloo"]
shards = ["even", "empty_rank"]
placements = ["cpu", "cuda"]
[golden]
value = 0.5
)";

}  // namespace

TEST(Scenario, LoadsWithDefaults) {
  const auto r = dh::load_scenario_text(kValid, "scenarios/core/acc.toml", "core/acc");
  ASSERT_TRUE(r.scenario) << (r.diagnostics.empty() ? "" : r.diagnostics[0].to_string());
  const auto& s = *r.scenario;
  EXPECT_EQ(s.metric, "Accuracy");
  EXPECT_EQ(s.metric_params.at("top_k"), 1);  // filled in by the registry
  EXPECT_EQ(s.data.params.at("separation"), 1.5);
  EXPECT_EQ(s.data.dtype, "float32");
  EXPECT_EQ(s.script.size(), 10u);  // the default script, with its empty updates
  EXPECT_EQ(s.script[3].text, "update empty ranks=0");
  EXPECT_EQ(s.script[5].text, "update empty");
  EXPECT_EQ(s.single_process, "global");
  // The property table's defaults, in table order (the order they are checked and reported in).
  EXPECT_EQ(s.properties, (std::vector<std::string>{"equal_to_single", "ranks_agree", "idempotent",
                                                    "update_after_compute", "reset_replay", "batch_invariant",
                                                    "golden"}));
  EXPECT_EQ(s.batch_invariant_sizes, (std::vector<std::int64_t>{1, 11}));
  EXPECT_DOUBLE_EQ(s.deadline_seconds, 30.0);
  // JSON round trip (what the ranks receive).
  const auto back = dh::Scenario::from_json(s.to_json());
  EXPECT_EQ(back.to_json(), s.to_json());
}

TEST(Scenario, ExpandsVariantsWithIdsMarkersAndSkips) {
  auto s = *dh::load_scenario_text(kValid, "scenarios/regression/acc.toml", "regression/acc").scenario;
  s.tags.push_back("multilabel");  // every tag is a marker
  const auto variants = dh::expand_variants(s, 0);
  // 3 world sizes x 2 shards x 2 placements, less empty_rank at world size 1 (2 placements).
  ASSERT_EQ(variants.size(), 10u);
  EXPECT_EQ(variants[0].id, "regression/acc:gloo-ws1-even-cpu");
  EXPECT_EQ(variants[1].id, "regression/acc:gloo-ws1-even-cuda");
  EXPECT_EQ(variants[0].markers, (std::vector<std::string>{"gloo", "regression", "slow", "multilabel"}));
  EXPECT_FALSE(variants[0].skip);
  ASSERT_TRUE(variants[1].skip);
  EXPECT_EQ(variants[1].skip->text, "needs a GPU (placement cuda on gloo: its ranks may share one), 0 visible");
  EXPECT_EQ(variants[1].markers, (std::vector<std::string>{"gloo", "gpu", "regression", "slow", "multilabel"}));
  const std::regex allowed("[A-Za-z0-9_./:-]+");
  for (const auto& v : variants) EXPECT_TRUE(std::regex_match(v.id, allowed)) << v.id;
  EXPECT_EQ(variants[0].to_json()["skip"], nullptr);

  dh::Selection sel;
  sel.world_sizes = {2};
  sel.placements = {"cpu"};
  int n = 0;
  for (const auto& v : variants) n += sel.matches(v);
  EXPECT_EQ(n, 2);
  dh::Selection glob;
  glob.filters = {"*:gloo-ws4-empty_rank-*", "*ws1-even-cpu"};
  n = 0;
  for (const auto& v : variants) n += glob.matches(v);
  EXPECT_EQ(n, 3);
}

TEST(Scenario, InputDtypesAreAVariantAxisCheckedByName) {
  std::string text = kValid;
  text.replace(text.find("placements = [\"cpu\", \"cuda\"]"), std::string("placements = [\"cpu\", \"cuda\"]").size(),
               "placements = [\"cpu\"]\ndtypes = [\"float16\", \"int32\"]");
  const auto r = dh::load_scenario_text(text, "scenarios/core/acc.toml", "core/acc");
  ASSERT_TRUE(r.scenario) << (r.diagnostics.empty() ? "" : r.diagnostics[0].to_string());
  EXPECT_EQ(r.scenario->dtypes, (std::vector<std::string>{"float16", "int32"}));
  EXPECT_EQ(dh::Scenario::from_json(r.scenario->to_json()).dtypes, r.scenario->dtypes);
  const auto variants = dh::expand_variants(*r.scenario, 0);
  ASSERT_EQ(variants.size(), 10u);  // (3 + 2) x 2 dtypes
  EXPECT_EQ(variants[0].id, "core/acc:gloo-ws1-even-cpu-float16");
  EXPECT_EQ(variants[1].id, "core/acc:gloo-ws1-even-cpu-int32");
  EXPECT_EQ(variants[1].short_id(), "gloo-ws1-even-cpu-int32");
  EXPECT_EQ(variants[1].to_json().at("dtype"), "int32");
  dh::Selection sel;  // --dtype int32
  sel.dtypes = {"int32"};
  int n = 0;
  for (const auto& v : variants) n += sel.matches(v);
  EXPECT_EQ(n, 5);
  dh::Variant plain;  // a scenario without input dtypes has no variant of one
  EXPECT_FALSE(sel.matches(plain));

  text.replace(text.find("\"float16\""), 9, "\"flaot16\"");
  const auto bad = dh::load_scenario_text(text, "scenarios/core/acc.toml", "core/acc");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].field, "variants.dtypes[0]");
  EXPECT_NE(bad.diagnostics[0].message.find("did you mean one of 'float16', 'bfloat16'?"), std::string::npos) << bad.diagnostics[0].message;
}

// serve finds the variant an id names without expanding the others: the same variant the
// expansion makes (checked for every id of the library and of a scenario with input dtypes),
// and none for an id the scenario does not expand into.
TEST(Scenario, FindsAVariantByIdAsTheExpansionMakesIt) {
  std::string text = kValid;
  text.replace(text.find("placements = [\"cpu\", \"cuda\"]"), std::string("placements = [\"cpu\", \"cuda\"]").size(),
               "placements = [\"cpu\", \"cuda\"]\ndtypes = [\"float16\", \"int32\"]");
  const auto r = dh::load_scenario_text(text, "scenarios/regression/acc.toml", "regression/acc");
  ASSERT_TRUE(r.scenario) << (r.diagnostics.empty() ? "" : r.diagnostics[0].to_string());
  const auto& s = *r.scenario;
  const auto variants = dh::expand_variants(s, 0);
  ASSERT_EQ(variants.size(), 20u);
  for (const auto& v : variants) {
    const auto found = dh::find_variant(s, v.id, 0);
    ASSERT_TRUE(found) << v.id;
    EXPECT_EQ(found->to_json(), v.to_json());
    EXPECT_EQ(found->reproduce(), v.reproduce());
    EXPECT_EQ(found->skip, v.skip);
  }
  for (const std::string id : {"regression/acc:gloo-ws1-empty_rank-cpu-float16",  // empty_rank needs 2 ranks
                               "regression/acc:gloo-ws3-even-cpu-float16",          // no world size 3
                               "regression/acc:gloo-ws1-even-cpu",                  // a dtype is part of every id
                               "regression/acc:gloo-ws1-even-cpu-float64", "regression/acc:gloo-ws1-even-cpu-float16-",
                               "regression/acc:mpi-ws1-even-cpu-float16", "regression/acc:gloo-ws1-even-gpu-int32",
                               "regression/ac:gloo-ws1-even-cpu-float16", "regression/acc", "regression/acc:", ""})
    EXPECT_FALSE(dh::find_variant(s, id, 0)) << id;

  // The library: every id found, as expanded (markers, skips, deadlines, reproduce commands).
  const auto library = dh::load_scenarios({(fs::path(DISTMETRICS_DOCS_DIR).parent_path() / "scenarios").string()});
  ASSERT_TRUE(library.diagnostics.empty());
  std::size_t ids = 0;
  for (const auto& scenario : library.scenarios) {
    for (const auto& v : dh::expand_variants(scenario, 2)) {
      const auto found = dh::find_variant(scenario, v.id, 2);
      ASSERT_TRUE(found) << v.id;
      EXPECT_EQ(found->to_json(), v.to_json()) << v.id;
      ++ids;
    }
  }
  EXPECT_GT(ids, 500u);
}

TEST(Scenario, FindsFilesAndNamesThemFromTheScenariosFolder) {
  const fs::path root = fs::temp_directory_path() / ("dm_engine_find_" + std::to_string(::getpid()));
  fs::create_directories(root / "scenarios" / "core");
  fs::create_directories(root / "elsewhere");
  std::ofstream(root / "scenarios" / "core" / "a.toml") << "x = 1\n";
  std::ofstream(root / "scenarios" / "b.toml") << "x = 1\n";
  std::ofstream(root / "scenarios" / "core" / "notes.txt") << "not a scenario\n";
  std::ofstream(root / "elsewhere" / "c.toml") << "x = 1\n";
  std::vector<dh::Diagnostic> diags;
  const auto files = dh::find_scenario_files({(root / "scenarios").string(), (root / "elsewhere" / "c.toml").string(),
                                              (root / "scenarios" / "core" / "a.toml").string(), (root / "missing").string()},
                                             diags);
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c", "core/a"}));  // a file given twice is loaded once
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("no such scenario file or folder"), std::string::npos);
  fs::remove_all(root);
}

TEST(Scenario, ANameWithForbiddenCharactersIsRejected) {
  const auto r = dh::load_scenario_text(kValid, "scenarios/core/a b.toml", "core/a b");
  ASSERT_FALSE(r.scenario);
  EXPECT_NE(r.diagnostics[0].message.find("may hold only letters"), std::string::npos);
}

// The corpus of bad files. Each starts with lines "# expect: LINE FIELD | TEXT" (FIELD "-" for
// none), and must give exactly those diagnostics.
TEST(Scenario, BadFilesGiveEveryErrorWithLineAndField) {
  const fs::path dir = fs::path(DISTMETRICS_TEST_SCENARIOS) / "bad";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    struct Expect {
      int line;
      std::string field, text;
    };
    std::vector<Expect> expected;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::regex expect_line("# expect: (\\d+) (\\S+) \\| (.*)");
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_match(line, m, expect_line))
        expected.push_back({std::stoi(m[1]), m[2] == "-" ? "" : std::string(m[2]), m[3]});
    }
    ASSERT_FALSE(expected.empty()) << "no # expect: lines";
    const auto result = dh::load_scenario(entry.path().string(), "bad/" + entry.path().stem().string());
    EXPECT_FALSE(result.scenario);
    std::ostringstream got;
    for (const auto& d : result.diagnostics) got << "  " << d.to_string() << "\n";
    for (const auto& e : expected) {
      const bool found = std::any_of(result.diagnostics.begin(), result.diagnostics.end(), [&](const dh::Diagnostic& d) {
        return d.line == e.line && d.field == e.field && d.message.find(e.text) != std::string::npos &&
               d.file == entry.path().string();
      });
      EXPECT_TRUE(found) << "missing: line " << e.line << " field '" << e.field << "': " << e.text << "\ngot:\n" << got.str();
    }
    EXPECT_EQ(result.diagnostics.size(), expected.size()) << "got:\n" << got.str();
  }
  EXPECT_GE(files, 15);
}

// A built-in generator whose samples Python makes (`text`): in a process without the Python
// hooks (this test binary), the error names the field and says what is missing; per-sample
// weights are refused by name before any Python runs.
TEST(Scenario, AStructuredGeneratorSaysWhatItNeeds) {
  const std::string text = R"(
description = "text data"

[metric]
name = "MeanSquaredError"

[data]
generator = "text"
seed = 1
num_samples = 8
batch_size = 4
)";
  const auto r = dh::load_scenario_text(text, "scenarios/core/text.toml", "core/text");
  ASSERT_FALSE(r.scenario);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].field, "data.generator");
  EXPECT_NE(r.diagnostics[0].message.find("distmetrics.text_data:make"), std::string::npos) << r.diagnostics[0].message;
  EXPECT_NE(r.diagnostics[0].message.find("made in Python"), std::string::npos) << r.diagnostics[0].message;

  std::string weighted = text;
  weighted.replace(weighted.find("batch_size = 4"), 14, "batch_size = 4\nparams = { weights = \"uniform\" }");
  const auto w = dh::load_scenario_text(weighted, "scenarios/core/text.toml", "core/text");
  ASSERT_FALSE(w.scenario);
  ASSERT_EQ(w.diagnostics.size(), 1u);
  EXPECT_EQ(w.diagnostics[0].field, "data.params.weights");

  // The detection generator's samples are made in Python as well, by its own maker.
  std::string detection = text;
  detection.replace(detection.find("generator = \"text\""), 18, "generator = \"detection\"");
  const auto d = dh::load_scenario_text(detection, "scenarios/core/detection.toml", "core/detection");
  ASSERT_FALSE(d.scenario);
  ASSERT_EQ(d.diagnostics.size(), 1u);
  EXPECT_EQ(d.diagnostics[0].field, "data.generator");
  EXPECT_NE(d.diagnostics[0].message.find("distmetrics.detection_data:make"), std::string::npos)
      << d.diagnostics[0].message;
}
