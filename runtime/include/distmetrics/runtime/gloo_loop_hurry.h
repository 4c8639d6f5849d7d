// While a GlooLoopHurry lives, every gloo transport loop of this process waits at most 1 ms at a
// time, and the wait under way is woken: a pair that connects or closes waits for its loop's next
// tick, and an idle loop ticks every 10 ms (runtime/src/comm/gloo_loop_shim.h). For the
// windows in which groups are made or destroyed: the variant's communicator does it itself; a
// Python metric's torch.distributed group and its library's own (PyTorch-Ignite makes and
// destroys one per process group it meets) are made inside one in pyhost.
//
// Only where the program links the loop shim (the distmetrics front, the test and bench
// programs), and only for loop threads named gloo_tcp_loop (every torch 2.x wheel's; Debian's
// torch 1.13 names none but the kept transport's, which its own timer hurries): elsewhere it does
// nothing, and groups take gloo's own time.
#pragma once

namespace distmetrics::runtime {

class GlooLoopHurry {
 public:
  GlooLoopHurry();
  ~GlooLoopHurry();
  GlooLoopHurry(const GlooLoopHurry&) = delete;
  GlooLoopHurry& operator=(const GlooLoopHurry&) = delete;
};

}  // namespace distmetrics::runtime
