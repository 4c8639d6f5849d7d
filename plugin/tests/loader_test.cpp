// The plugin loader: every refusal (with what was expected and what was found, and without
// loading the library when the build record already says no), and plugins that load and work,
// on one process and across ranks (the plugin loaded on every rank, syncing through the
// communicator and through the c10d process group behind it).
#include <gtest/gtest.h>
#include <torch/version.h>

#include <ATen/ATen.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "distmetrics/build_config.h"
#include "distmetrics/fixtures/rank_test.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/plugin/abi.h"
#include "distmetrics/plugin/loader.h"
#include "distmetrics/plugin/process_group.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using distmetrics::metrics::Batch;
using distmetrics::plugin::BuildRecord;
using distmetrics::plugin::PluginError;
using distmetrics::plugin::PluginErrorKind;

// Whether the library at `path` is mapped into this process.
bool is_loaded(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const std::string canonical = fs::canonical(path).string();
  for (std::string line; std::getline(maps, line);)
    if (line.find(canonical) != std::string::npos) return true;
  return false;
}

// The refusal load_plugin(path) throws; fails the test when it loads.
PluginError refusal_of(const std::string& path) {
  try {
    distmetrics::plugin::load_plugin(path);
  } catch (const PluginError& e) {
    return e;
  }
  ADD_FAILURE() << path << " was loaded";
  return PluginError(PluginErrorKind::Missing, "");
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("distmetrics_plugin_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(BuildRecord, ParsesEveryField) {
  const auto r = BuildRecord::parse("distmetrics-plugin-build;interface=3;torch=2.1.0;cxx11_abi=1;distmetrics=0.2.0;compiler=GCC 12.2.0;");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->interface_version, 3);
  EXPECT_EQ(r->torch_version, "2.1.0");
  EXPECT_EQ(r->cxx11_abi, "1");
  EXPECT_EQ(r->distmetrics_version, "0.2.0");
  EXPECT_EQ(r->compiler, "GCC 12.2.0");
}

TEST(BuildRecord, RejectsWhatIsNotARecord) {
  EXPECT_FALSE(BuildRecord::parse("interface=1;torch=1.13.0;"));                        // no prefix
  EXPECT_FALSE(BuildRecord::parse("distmetrics-plugin-build;torch=1.13.0;"));           // no interface
  EXPECT_FALSE(BuildRecord::parse("distmetrics-plugin-build;interface=one;torch=x;"));  // not a number
  EXPECT_FALSE(BuildRecord::parse("distmetrics-plugin-build;interface=1x;"));
}

TEST(BuildRecord, HostTakesLibTorchFromItsHeadersAndAgreesWithCMake) {
  const BuildRecord host = distmetrics::plugin::host_build_record();
  EXPECT_EQ(host.interface_version, DISTMETRICS_PLUGIN_INTERFACE_VERSION);
  EXPECT_EQ(host.torch_version, TORCH_VERSION);
  // CMake's Torch_VERSION (build_config.h) and the headers' TORCH_VERSION name the same LibTorch.
  EXPECT_EQ(host.torch_version, DISTMETRICS_TORCH_VERSION);
  EXPECT_EQ(host.cxx11_abi, std::to_string(_GLIBCXX_USE_CXX11_ABI));
}

TEST(LoaderRefuses, AMissingFile) {
  const auto e = refusal_of("/nonexistent/libnothing.so");
  EXPECT_EQ(e.kind(), PluginErrorKind::Missing);
  EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so: no such file"), std::string::npos) << e.what();
}

TEST(LoaderRefuses, AFolder) {
  const auto e = refusal_of(PLUGIN_TEST_SOURCE_DIR);
  EXPECT_EQ(e.kind(), PluginErrorKind::NotSharedLibrary);
  EXPECT_NE(std::string(e.what()).find("is a folder, not a shared library"), std::string::npos) << e.what();
}

TEST(LoaderRefuses, ATextFile) {
  const std::string path = temp_path("libfake.so");
  std::ofstream(path) << "this is not a shared library\n";
  const auto e = refusal_of(path);
  fs::remove(path);
  EXPECT_EQ(e.kind(), PluginErrorKind::NotSharedLibrary);
  EXPECT_NE(std::string(e.what()).find("is not a shared library (it does not start with the ELF magic number)"),
            std::string::npos)
      << e.what();
}

TEST(LoaderRefuses, ASharedLibraryThatIsNotAPluginWithoutLoadingIt) {
  const auto e = refusal_of(PLUGIN_NOT_A_PLUGIN);
  EXPECT_EQ(e.kind(), PluginErrorKind::NotPlugin);
  EXPECT_NE(std::string(e.what()).find("is a shared library but not a distmetrics plugin: it carries no build record "
                                       "and exports no `distmetrics_plugin_entry`"),
            std::string::npos)
      << e.what();
  EXPECT_FALSE(is_loaded(PLUGIN_NOT_A_PLUGIN));
}

TEST(LoaderRefuses, AnotherInterfaceVersionWithoutLoadingIt) {
  const auto e = refusal_of(PLUGIN_HANDMADE_WRONG_INTERFACE);
  EXPECT_EQ(e.kind(), PluginErrorKind::WrongInterface);
  const std::string what = e.what();
  EXPECT_NE(what.find("was built for plugin interface 99, this distmetrics loads interface 2: rebuild it against this "
                      "version's headers (this distmetrics is " DISTMETRICS_VERSION ", the plugin's headers 9.9.9)"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("expected interface 2, found 99"), std::string::npos) << what;
  EXPECT_NE(what.find("It was not loaded."), std::string::npos) << what;
  EXPECT_FALSE(is_loaded(PLUGIN_HANDMADE_WRONG_INTERFACE));
}

// A plugin as a user builds it (DISTMETRICS_PLUGIN, distmetrics_add_plugin) against the headers
// of plugin interface 1: refused before it is loaded, never loaded and then found lacking.
TEST(LoaderRefuses, APluginBuiltForInterface1WithoutLoadingIt) {
  ASSERT_EQ(distmetrics::plugin::read_build_record(PLUGIN_INTERFACE1_REGRESSION_METRICS).interface_version, 1);
  const auto e = refusal_of(PLUGIN_INTERFACE1_REGRESSION_METRICS);
  EXPECT_EQ(e.kind(), PluginErrorKind::WrongInterface);
  const std::string what = e.what();
  EXPECT_EQ(what.rfind(std::string("plugin ") + PLUGIN_INTERFACE1_REGRESSION_METRICS +
                           " was built for plugin interface 1, this distmetrics loads interface 2: rebuild it against "
                           "this version's headers",
                       0),
            0u)
      << what;
  EXPECT_NE(what.find("expected interface 2, found 1. It was not loaded."), std::string::npos) << what;
  EXPECT_FALSE(is_loaded(PLUGIN_INTERFACE1_REGRESSION_METRICS));
  EXPECT_EQ(distmetrics::plugin::find_loaded_plugin(PLUGIN_INTERFACE1_REGRESSION_METRICS), nullptr);
}

TEST(LoaderRefuses, AnotherLibTorchWithoutLoadingIt) {
  const auto e = refusal_of(PLUGIN_HANDMADE_WRONG_TORCH);
  EXPECT_EQ(e.kind(), PluginErrorKind::WrongTorch);
  const std::string what = e.what();
  EXPECT_NE(what.find("was built against LibTorch 0.0.1, but this distmetrics runs on LibTorch " TORCH_VERSION),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("expected LibTorch " TORCH_VERSION ", found 0.0.1"), std::string::npos) << what;
  EXPECT_FALSE(is_loaded(PLUGIN_HANDMADE_WRONG_TORCH));
}

TEST(LoaderRefuses, AnotherCxxAbiWithoutLoadingIt) {
  const auto e = refusal_of(PLUGIN_HANDMADE_WRONG_CXX11_ABI);
  EXPECT_EQ(e.kind(), PluginErrorKind::WrongCxxAbi);
  EXPECT_NE(std::string(e.what()).find("found 7"), std::string::npos) << e.what();
  EXPECT_FALSE(is_loaded(PLUGIN_HANDMADE_WRONG_CXX11_ABI));
}

TEST(LoaderRefuses, ALibraryWithARecordButNoEntryPoint) {
  const auto e = refusal_of(PLUGIN_HANDMADE_NO_ENTRY);
  EXPECT_EQ(e.kind(), PluginErrorKind::NotPlugin);
  EXPECT_NE(std::string(e.what()).find("exports no `distmetrics_plugin_entry` function"), std::string::npos) << e.what();
}

TEST(LoaderRefuses, AnEntryPointThatContradictsItsRecord) {
  const auto e = refusal_of(PLUGIN_HANDMADE_WRONG_STRUCT_INTERFACE);
  EXPECT_EQ(e.kind(), PluginErrorKind::WrongInterface);
  EXPECT_NE(std::string(e.what()).find("expected interface 2, found 1"), std::string::npos) << e.what();
}

TEST(LoaderRefuses, AFailedRegistrationWithThePluginsMessage) {
  const auto e = refusal_of(PLUGIN_HANDMADE_REGISTRATION_FAILS);
  EXPECT_EQ(e.kind(), PluginErrorKind::RegistrationFailed);
  EXPECT_NE(std::string(e.what()).find("(handmade): registering its metrics failed: the handmade plugin refuses to "
                                       "register anything"),
            std::string::npos)
      << e.what();
}

TEST(LoaderRefuses, APluginWithoutMetrics) {
  const auto e = refusal_of(PLUGIN_HANDMADE_NO_METRICS);
  EXPECT_EQ(e.kind(), PluginErrorKind::RegistrationFailed);
  EXPECT_NE(std::string(e.what()).find("registered no metric"), std::string::npos) << e.what();
}

TEST(Loader, LoadsAPluginOnceAndDescribesIt) {
  const auto& plugin = distmetrics::plugin::load_plugin(PLUGIN_EXAMPLE_REGRESSION_METRICS);
  EXPECT_EQ(plugin.name, "example_regression_metrics");
  EXPECT_EQ(plugin.version, "1.0.0");
  EXPECT_EQ(plugin.build.interface_version, DISTMETRICS_PLUGIN_INTERFACE_VERSION);
  EXPECT_EQ(plugin.build.torch_version, TORCH_VERSION);
  EXPECT_EQ(plugin.build.distmetrics_version, DISTMETRICS_VERSION);
  EXPECT_EQ(plugin.metric_names(), (std::vector<std::string>{"MaximumAbsoluteError", "MeanAbsoluteError"}));
  EXPECT_EQ(plugin.describe().rfind(
                "example_regression_metrics 1.0.0 (interface 2, LibTorch " TORCH_VERSION ", " PLUGIN_TEST_COMPILER, 0),
            0u)
      << plugin.describe();
  EXPECT_EQ(&distmetrics::plugin::load_plugin(PLUGIN_EXAMPLE_REGRESSION_METRICS), &plugin);
  EXPECT_TRUE(is_loaded(PLUGIN_EXAMPLE_REGRESSION_METRICS));
}

Batch regression_batch(std::vector<double> input, std::vector<double> target) {
  Batch b;
  b.input = at::tensor(input, at::kDouble);
  b.target = at::tensor(target, at::kDouble);
  return b;
}

TEST(Loader, APluginsMetricsWorkInOneProcess) {
  const auto& plugin = distmetrics::plugin::load_plugin(PLUGIN_EXAMPLE_REGRESSION_METRICS);
  auto mae = plugin.registry.make("MeanAbsoluteError", nlohmann::json::object());
  auto maxae = plugin.registry.make("MaximumAbsoluteError", nlohmann::json::object());
  for (auto* m : {mae.get(), maxae.get()}) {
    m->update(regression_batch({1, 2, 3}, {0, 0, 5}));  // |e| = 1 2 2
    m->update(regression_batch({0.5}, {4.0}));          // |e| = 3.5
  }
  EXPECT_DOUBLE_EQ(mae->compute().scalar(), 8.5 / 4);
  EXPECT_DOUBLE_EQ(maxae->compute().scalar(), 3.5);
  // compute() leaves local state alone; reset() empties it, and then nothing can be computed.
  const std::string digest = mae->state_digest();
  EXPECT_DOUBLE_EQ(mae->compute().scalar(), 8.5 / 4);
  EXPECT_EQ(mae->state_digest(), digest);
  mae->reset();
  EXPECT_NE(mae->state_digest(), digest);
  EXPECT_THROW(mae->compute(), distmetrics::metrics::NotComputableError);
  // Its input checks are the reference's kind of error.
  EXPECT_THROW(mae->update(regression_batch({1, 2}, {1})), distmetrics::metrics::InputError);
  // Parameters are checked against what the plugin declared (none).
  EXPECT_THROW(plugin.registry.make("MeanAbsoluteError", {{"sum_dtype", "float64"}}), distmetrics::metrics::ParamError);
}

// Every rank loads the plugin and syncs its metrics: MeanAbsoluteError through the communicator,
// MaximumAbsoluteError through the gloo process group directly (process_group.h), which the
// communicator's trace does not see.
DISTMETRICS_RANK_TEST(PluginAcrossRanks, LoadedOnEveryRankAndSynced, DISTMETRICS_WORLD_SIZES(1, 2, 4).deadline(60s)) {
  const auto& plugin = distmetrics::plugin::load_plugin(PLUGIN_EXAMPLE_REGRESSION_METRICS);
  auto mae = plugin.registry.make("MeanAbsoluteError", nlohmann::json::object());
  auto maxae = plugin.registry.make("MaximumAbsoluteError", nlohmann::json::object());
  mae->set_communicator(&ctx.comm);
  maxae->set_communicator(&ctx.comm);
  // Rank r holds r + 1 samples, each with |e| = r + 1; the last rank of 4 holds none.
  const bool empty = ctx.world_size == 4 && ctx.rank == 3;
  if (!empty) {
    const std::vector<double> input(ctx.rank + 1, double(ctx.rank + 1));
    const Batch b = regression_batch(input, std::vector<double>(ctx.rank + 1, 0.0));
    mae->update(b);
    maxae->update(b);
  }
  double sum = 0, count = 0, largest = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < ctx.world_size; ++r) {
    if (ctx.world_size == 4 && r == 3) continue;
    sum += double(r + 1) * (r + 1);
    count += r + 1;
    largest = std::max(largest, double(r + 1));
  }
  const auto before = ctx.comm.collectives_issued();
  EXPECT_DOUBLE_EQ(mae->compute().scalar(), sum / count);
  EXPECT_EQ(ctx.comm.collectives_issued() - before, 2u);  // float64 sums and int64 counts
  const auto between = ctx.comm.collectives_issued();
  EXPECT_DOUBLE_EQ(maxae->compute().scalar(), largest);
#if DISTMETRICS_HAVE_GLOO
  if (ctx.backend == "gloo") {
    ASSERT_TRUE(distmetrics::plugin::gloo_process_group(ctx.comm));
    EXPECT_EQ(ctx.comm.collectives_issued() - between, 1u);  // the counts; the max went through c10d
    return;
  }
  EXPECT_FALSE(distmetrics::plugin::gloo_process_group(ctx.comm));
#endif
#if DISTMETRICS_HAVE_NCCL
  if (ctx.backend == "nccl") {
    EXPECT_TRUE(distmetrics::plugin::nccl_process_group(ctx.comm));  // there for plugins' own c10d calls
    EXPECT_EQ(ctx.comm.collectives_issued() - between, 2u);         // the example syncs through comm
    return;
  }
#endif
  EXPECT_FALSE(ctx.comm.process_group());  // mpi has no c10d process group
  EXPECT_EQ(ctx.comm.collectives_issued() - between, 2u);
}

}  // namespace
