// Configure check (DistmetricsDependencies.cmake): can this LibTorch's own ProcessGroupGloo be made
// from C++ with gloo headers that are not the gloo inside it (Debian's libgloo-dev against a pip
// wheel, which ships none)? It is the use runtime/src/comm/gloo.cpp makes of them, no more: every
// gloo object is made inside libtorch_cpu and held here by pointer only, so gloo's headers supply
// declarations, never a layout or an inline body this program runs. Linking proves that every
// symbol it names is exported with that signature; running proves a 2-rank group works end to end
// (rendezvous, all_reduce, all_gather, barrier, teardown). Exit 0 only if all of it did.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

// gloo.cpp's FreshGlooGroup: the contexts reachable, to close them after the group.
class Group final : public c10d::ProcessGroupGloo {
 public:
  using ProcessGroupGloo::ProcessGroupGloo;
  std::vector<std::shared_ptr<::gloo::Context>> contexts() const { return contexts_; }
};

bool rank_main(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(20000));
  options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  options->threads = 2;
  auto group = c10::make_intrusive<Group>(store, rank, 2, options);
  std::vector<at::Tensor> sum{at::full({3}, rank + 1.0)};
  group->allreduce(sum)->wait();
  std::vector<std::vector<at::Tensor>> gathered{{at::empty({2}), at::empty({2})}};
  std::vector<at::Tensor> mine{at::full({2}, static_cast<double>(rank))};
  group->allgather(gathered, mine)->wait();
  group->barrier()->wait();
  auto contexts = group->contexts();
  group.reset();
  contexts.clear();
  return sum[0].sum().item<double>() == 9.0 && gathered[0][1].sum().item<double>() == 2.0;
}

}  // namespace

int main() {
  // The configure waits for this program: a rendezvous or collective that never completes must
  // not hold it. The store's waits and the group's ops are bounded (20 s); the whole, at 60 s.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::fprintf(stderr, "gloo group from foreign headers: no answer within 60 s (a hang): not used\n");
    std::_Exit(3);
  }).detach();
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::milliseconds(20000));
  bool ok[2] = {false, false};
  std::thread peer([&] { ok[1] = rank_main(store, 1); });
  ok[0] = rank_main(store, 0);
  peer.join();
  std::printf("gloo group from foreign headers: %s\n", ok[0] && ok[1] ? "works" : "wrong results");
  return ok[0] && ok[1] ? 0 : 1;
}
