// Configure check (DistmetricsDependencies.cmake): can this LibTorch's own ProcessGroupGloo be made
// from C++ with gloo headers that are not the gloo inside it (Debian's libgloo-dev against a pip
// wheel, which ships none)? It is the use runtime/src/comm/gloo.cpp makes of them, no more: every
// gloo object is made inside libtorch_cpu and held here by pointer only, so gloo's headers supply
// declarations, never a layout or an inline body this program runs. Linking proves that every
// symbol it names is exported with that signature; running proves a 2-rank group works end to end
// (rendezvous, all_reduce, all_gather, barrier, teardown). Exit 0 only if all of it did.
//
// The collectives that run in the calling thread (runtime/src/comm/gloo_inline.cpp, compiled into
// this program) are the exception: they build gloo's option classes (gloo::AllreduceOptions and
// the rest) from these headers' inline code and hand them to the wheel's gloo::allreduce and the
// rest. Their layout is the same in Debian's 2022 gloo and gloo's main branch, but that is checked
// here too, in a child forked before any thread (a layout that differed could crash, not only
// give wrong results): it prints "inline collectives: works" only if every one of them gave the
// right values on both ranks and ran in the calling thread. The build runs them only then.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#ifndef DISTMETRICS_CHECK_INLINE
#define DISTMETRICS_CHECK_INLINE 1
#endif
#if DISTMETRICS_CHECK_INLINE  // the configure compiles this check without it where it did not compile
#include "gloo_inline.cpp"
#endif

namespace {

// gloo.cpp's FreshGlooGroup: the contexts reachable, to close them after the group.
class Group final : public c10d::ProcessGroupGloo {
 public:
  using ProcessGroupGloo::ProcessGroupGloo;
  std::vector<std::shared_ptr<::gloo::Context>> contexts() const { return contexts_; }
};

// A 2-rank group of type G (ops bounded at 20 s), and its end: the group, then its pairs.
template <class G>
c10::intrusive_ptr<G> make_group(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(20000));
  options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  options->threads = 2;
  return c10::make_intrusive<G>(store, rank, 2, options);
}

template <class G>
void end_group(c10::intrusive_ptr<G>& group) {
  auto contexts = group->contexts();
  group.reset();
  contexts.clear();
}

// Runs rank_fn as ranks 0 and 1 (two threads, one store): true if both returned true.
template <class Fn>
bool on_two_ranks(Fn rank_fn) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::milliseconds(20000));
  bool ok[2] = {false, false};
  std::thread peer([&] { ok[1] = rank_fn(store, 1); });
  ok[0] = rank_fn(store, 0);
  peer.join();
  return ok[0] && ok[1];
}

bool rank_main(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  auto group = make_group<Group>(store, rank);
  std::vector<at::Tensor> sum{at::full({3}, rank + 1.0)};
  group->allreduce(sum)->wait();
  std::vector<std::vector<at::Tensor>> gathered{{at::empty({2}), at::empty({2})}};
  std::vector<at::Tensor> mine{at::full({2}, static_cast<double>(rank))};
  group->allgather(gathered, mine)->wait();
  group->barrier()->wait();
  end_group(group);
  return sum[0].sum().item<double>() == 9.0 && gathered[0][1].sum().item<double>() == 2.0;
}

#if DISTMETRICS_CHECK_INLINE
// Every collective gloo_inline.cpp runs in the calling thread, checked against what it must give.
class InlineGroup final : public distmetrics::runtime::detail::InlineGlooGroup {
 public:
  using InlineGlooGroup::InlineGlooGroup;
  std::vector<std::shared_ptr<::gloo::Context>> contexts() const { return contexts_; }
};

bool inline_rank_main(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  auto group = make_group<InlineGroup>(store, rank);
  c10d::ProcessGroupGloo& ops = *group;  // called as torch calls it: through the base, its default options
  bool ok = true;
  std::vector<at::Tensor> sum{at::full({3}, rank + 1.5, at::kFloat)};
  ops.allreduce(sum)->wait();
  ok = ok && sum[0].equal(at::full({3}, 4.0, at::kFloat));
  c10d::AllreduceOptions max_opts;
  max_opts.reduceOp = c10d::ReduceOp::MAX;
  std::vector<at::Tensor> most{at::tensor({static_cast<std::int64_t>(rank) * 7, std::int64_t{5}})};
  ops.allreduce(most, max_opts)->wait();
  ok = ok && most[0].equal(at::tensor({std::int64_t{7}, std::int64_t{5}}));
  std::vector<std::vector<at::Tensor>> gathered{{at::empty({}, at::kDouble), at::empty({}, at::kDouble)}};
  std::vector<at::Tensor> mine{at::full({}, rank + 0.25, at::kDouble)};
  ops.allgather(gathered, mine)->wait();
  ok = ok && gathered[0][0].item<double>() == 0.25 && gathered[0][1].item<double>() == 1.25;
  std::vector<at::Tensor> shared{rank == 1 ? at::arange(6, at::kInt).reshape({2, 3}) : at::zeros({2, 3}, at::kInt)};
  c10d::BroadcastOptions from_one;
  from_one.rootRank = 1;
  ops.broadcast(shared, from_one)->wait();
  ok = ok && shared[0].equal(at::arange(6, at::kInt).reshape({2, 3}));
  ops.barrier()->wait();
  ok = ok && group->counts().inline_ops == 5 && group->counts().queued_ops == 0;
  end_group(group);
  return ok;
}
#endif

}  // namespace

int main() {
  // The inline collectives in a child of their own, forked before this process has a thread.
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child == 0) {
    alarm(50);  // a hang there ends the child, not the check
#if DISTMETRICS_CHECK_INLINE
    const bool works = on_two_ranks(inline_rank_main);
    std::printf("inline collectives: %s\n", works ? "works" : "wrong results");
#else
    const bool works = false;
    std::printf("inline collectives: gloo_inline.cpp did not compile with these headers\n");
#endif
    std::fflush(stdout);
    std::_Exit(works ? 0 : 1);
  }
  // The configure waits for this program: a rendezvous or collective that never completes must
  // not hold it. The store's waits and the group's ops are bounded (20 s); the whole, at 60 s.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::fprintf(stderr, "gloo group from foreign headers: no answer within 60 s (a hang): not used\n");
    std::_Exit(3);
  }).detach();
  const bool works = on_two_ranks(rank_main);
  int status = 0;
  if (child > 0 && ::waitpid(child, &status, 0) == child && !(WIFEXITED(status) && WEXITSTATUS(status) <= 1)) {
    std::printf("inline collectives: the check ended abnormally (status %d)\n", status);
  }
  std::printf("gloo group from foreign headers: %s\n", works ? "works" : "wrong results");
  return works ? 0 : 1;
}
