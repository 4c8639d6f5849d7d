// gloo_loop_hurry.h says what; the shim is in the executable, found by name.
#include "distmetrics/runtime/gloo_loop_hurry.h"

#include <dlfcn.h>

namespace distmetrics::runtime {
namespace {

void hurry(bool on) {
  using Hurry = void (*)(bool);
  static const auto shim = reinterpret_cast<Hurry>(::dlsym(RTLD_DEFAULT, "distmetrics_gloo_loop_hurry"));
  if (shim != nullptr) shim(on);
}

}  // namespace

GlooLoopHurry::GlooLoopHurry() { hurry(true); }
GlooLoopHurry::~GlooLoopHurry() { hurry(false); }

}  // namespace distmetrics::runtime
