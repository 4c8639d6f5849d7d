// The gloo backend: c10d::ProcessGroupGloo over a (prefix) store; CPU or CUDA tensors.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the c10d Gloo header is empty without it (LibTorch's targets define it)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>
#ifndef DISTMETRICS_GLOO_LOOP_HURRY
#define DISTMETRICS_GLOO_LOOP_HURRY 1  // 0 where gloo's headers are not the gloo inside LibTorch (sources.cmake)
#endif
#if DISTMETRICS_GLOO_LOOP_HURRY
#include <gloo/transport/tcp/device.h>
#endif
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <mutex>

#include "distmetrics/runtime/gloo_loop_hurry.h"
#include "gloo_collectives.h"
#include "gloo_loop_priority.h"
#if DISTMETRICS_GLOO_INLINE
#include "gloo_inline.h"
#endif

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

// --- The transport, kept per process ----------------------------------------------------------
//
// A gloo tcp Device is an epoll loop thread (plus the address it binds pairs to). Its loop waits
// in epoll_wait with a 10 ms timeout, and every pair that closes a socket from another thread
// (the connecting side of each pair while connecting, every pair when its context goes) waits
// until the loop has ticked once, so that its handler is never called again: with nothing else
// to wake the loop that is up to 10 ms per pair, and destroying a Device joins its loop thread
// after up to 10 ms more. A fresh group per job paid ~30 ms at ws2 and ~70 ms at ws4, almost
// all of it waiting for those ticks (the collectives themselves take ~0.2 ms).
//
// So a process keeps one Device per bind address for its life (the loop thread and its epoll
// descriptor; every job still gets fresh contexts, pairs, sockets and rendezvous), and a
// timerfd registered on that loop makes it tick every kHurryTick while a group is being built or
// torn down (LoopHurry): a pair then waits for at most one such tick instead of 10 ms. Outside
// those windows the timer is off and the loop sleeps as gloo intends.
//
// Where gloo's headers are another revision's (a pip torch with Debian's libgloo-dev,
// DISTMETRICS_GLOO_LOOP_HURRY=0), that handler cannot be built: it subclasses gloo's
// tcp::Handler, whose virtual handleEvents changed signature between them. There the loop shim
// (gloo_loop_shim.h) hurries the loop from its epoll_wait, where the program links it. The
// Device is kept either way.
#if DISTMETRICS_GLOO_LOOP_HURRY
constexpr long kHurryTickNs = 200 * 1000;

class GlooTransport final : public ::gloo::transport::tcp::Handler {
 public:
  explicit GlooTransport(std::shared_ptr<::gloo::transport::Device> device) : device_(std::move(device)) {
    auto* tcp = dynamic_cast<::gloo::transport::tcp::Device*>(device_.get());
    if (tcp == nullptr) return;  // another transport: no loop to hurry
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0) return;   // then groups are slower, not wrong
    tcp->registerDescriptor(timer_fd_, EPOLLIN, this);
  }
  const std::shared_ptr<::gloo::transport::Device>& device() const { return device_; }
  pid_t owner() const { return owner_; }

  // Runs on the loop thread: drains the timer (the tick itself is what the waiting pair needs).
  void handleEvents(int) override {
    std::uint64_t expirations = 0;
    while (::read(timer_fd_, &expirations, sizeof(expirations)) < 0 && errno == EINTR) {
    }
  }

  // Nested and concurrent windows count: the timer runs while any is open.
  void hurry(bool on) {
    if (timer_fd_ < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const int before = hurrying_;
    hurrying_ += on ? 1 : -1;
    if ((before == 0) == (hurrying_ == 0)) return;
    itimerspec period{};
    if (hurrying_ > 0) period.it_interval.tv_nsec = period.it_value.tv_nsec = kHurryTickNs;
    ::timerfd_settime(timer_fd_, 0, &period, nullptr);
  }

 private:
  std::shared_ptr<::gloo::transport::Device> device_;
  pid_t owner_ = ::getpid();  // the process whose loop thread serves device_
  int timer_fd_ = -1;
  std::mutex mutex_;
  int hurrying_ = 0;
};

// While alive, the transport's loop ticks every kHurryTickNs.
class LoopHurry {
 public:
  explicit LoopHurry(GlooTransport& transport) : transport_(transport) { transport_.hurry(true); }
  ~LoopHurry() { transport_.hurry(false); }
  LoopHurry(const LoopHurry&) = delete;
  LoopHurry& operator=(const LoopHurry&) = delete;

 private:
  GlooTransport& transport_;
};

#else
class GlooTransport final {
 public:
  explicit GlooTransport(std::shared_ptr<::gloo::transport::Device> device) : device_(std::move(device)) {}
  const std::shared_ptr<::gloo::transport::Device>& device() const { return device_; }
  pid_t owner() const { return owner_; }

 private:
  std::shared_ptr<::gloo::transport::Device> device_;
  pid_t owner_ = ::getpid();
};

// The hurry is the loop shim's (gloo_loop_shim.h), where the program has it: the executables
// that run ranks do. It hurries every named loop of the process, this transport's among them.
class LoopHurry {
 public:
  explicit LoopHurry(GlooTransport&) {}

 private:
  GlooLoopHurry hurry_;
};
#endif

std::shared_ptr<::gloo::transport::Device> new_transport_device(const CommSpec& spec) {
  if (!spec.gloo_address.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(spec.gloo_address);
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// This process's transport for the spec's bind address, made on first use. Deliberately leaked:
// its loop thread runs until the process ends (workers leave with _Exit), and a static
// destructor would join it after other statics are gone.
GlooTransport& transport_for(const CommSpec& spec) {
  static std::mutex mutex;
  static auto* transports = new std::map<std::string, GlooTransport*>();
  std::string key = "host:" + spec.gloo_address;
  if (spec.gloo_address.empty()) {
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    key = interface && *interface ? std::string("interface:") + interface : "default";
  }
  std::lock_guard<std::mutex> lock(mutex);
  GlooTransport*& slot = (*transports)[key];
  // A process forked after making one (a peer rank's task child) has the object but not its loop
  // thread: a pair closing there would wait for a tick forever. It makes its own (the inherited
  // one is left as it is: its thread is not in this process).
  if (slot == nullptr || slot->owner() != ::getpid()) {
    const LoopPriority priority = loop_priority_from_environment();
    const std::set<pid_t> before = process_threads();
    slot = new GlooTransport(new_transport_device(spec));
    adopt_new_loop_threads(before, priority);  // gloo_loop_priority.h says why
  }
  return *slot;
}

// ProcessGroupGloo with its contexts reachable, so that they (the pairs) can be closed after
// the group's threads have stopped, inside a short LoopHurry window. On torch 2.x its common CPU
// collectives run in the calling thread (gloo_inline.h).
#if DISTMETRICS_GLOO_INLINE
using GlooGroupBase = InlineGlooGroup;
#else
using GlooGroupBase = c10d::ProcessGroupGloo;
#endif
class FreshGlooGroup final : public GlooGroupBase {
 public:
  using GlooGroupBase::GlooGroupBase;
  std::vector<std::shared_ptr<::gloo::Context>> contexts() const { return contexts_; }
};

class GlooCommunicator final : public GlooCollectives<FreshGlooGroup> {
 public:
  GlooCommunicator(const CommSpec& spec, at::Device device, c10::intrusive_ptr<FreshGlooGroup> group,
                   c10::intrusive_ptr<c10d::Store> store, GlooTransport& transport)
      : GlooCollectives(spec, device, std::move(group), std::move(store)), transport_(transport) {}
  ~GlooCommunicator() override {
    // The group first (it joins its worker threads, which may be inside a collective until its
    // timeout), then its pairs, each of which waits for a tick of the transport's loop.
    auto contexts = group_->contexts();
    group_.reset();
    LoopHurry hurry(transport_);
    contexts.clear();
  }

 private:
  GlooTransport& transport_;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline) {
  // The rendezvous (every rank connects to every other through the store) must finish by the
  // deadline; the store's own timeout bounds each of its waits.
  store->setTimeout(std::max(deadline.remaining(), std::chrono::milliseconds(1)));
  auto options = c10d::ProcessGroupGloo::Options::create(spec.op_timeout + kGlooTimeoutMargin);
  GlooTransport& transport = transport_for(spec);
  options->devices.push_back(transport.device());
  options->threads = 2;
  c10::intrusive_ptr<FreshGlooGroup> group;
  try {
    LoopHurry hurry(transport);  // the connecting side of each pair waits for a loop tick
    group = c10::make_intrusive<FreshGlooGroup>(store, spec.rank, spec.world_size, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("gloo: rank " + std::to_string(spec.rank) + " could not connect to its " +
                             std::to_string(spec.world_size - 1) + " peers: " + short_what(e));
  }
  return std::make_unique<GlooCommunicator>(spec, comm_device_of(spec), std::move(group), store, transport);
}

}  // namespace distmetrics::runtime::detail
