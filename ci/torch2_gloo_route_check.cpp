// The gloo route of the pip torch build (runtime/src/comm/gloo_through_python.cpp, docs/gpu.md),
// checked without distmetrics: torch's ProcessGroupGloo made through its Python binding in an
// embedded interpreter started as the venv's python, a C++ c10d store handed over through
// torch's own pybind11 registration, the group used from C++ as a c10d::Backend (allreduce of
// rank+1 over 2 ranks: 3 on each), held alone afterwards (use count 1). Two ranks by fork on a
// TCPStore on loopback; ROUTE_PARENT_PY=1 starts Python (and imports torch) before the fork, as a
// peer runner's forked task child has it. Built and run by `ci/test_torch2.sh --route-check`:
//   g++ -std=c++20 -DPYEXE='"VENV/bin/python"' -isystem TORCH/include -isystem TORCH/include/torch/csrc/api/include \
//       -isystem PYTHON_INCLUDE ci/torch2_gloo_route_check.cpp -LTORCH/lib -Wl,-rpath,TORCH/lib \
//       -ltorch_python -ltorch -ltorch_cpu -lc10 -lpython3.11
#include <pybind11/embed.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <ATen/ATen.h>
#include <sys/wait.h>
#include <unistd.h>
#include <iostream>
namespace py = pybind11;

void start() {
  PyConfig config; PyConfig_InitPythonConfig(&config); config.parse_argv = 0; config.install_signal_handlers = 0;
  PyConfig_SetBytesString(&config, &config.program_name, PYEXE);
  py::initialize_interpreter(&config, 0, nullptr, true);
}
int rank_main(int rank, int ws, int port) {
  c10d::TCPStoreOptions o; o.port = port; o.isServer = rank == 0; o.numWorkers = ws; o.waitWorkers = false;
  o.timeout = std::chrono::seconds(30);
  auto tcp = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::PrefixStore>("v1", tcp);
  const bool inherited = Py_IsInitialized();
  if (!inherited) start();
  c10::intrusive_ptr<c10d::Backend> backend;
  {
    py::gil_scoped_acquire gil;
    py::module_::import("torch.distributed");
    py::object gloo = py::module_::import("torch._C._distributed_c10d").attr("ProcessGroupGloo");
    py::object opts = gloo.attr("_Options")();
    py::list devs; devs.append(gloo.attr("create_device")(py::arg("hostname") = "127.0.0.1"));
    opts.attr("_devices") = devs; opts.attr("_threads") = 2;
    opts.attr("_timeout") = py::module_::import("datetime").attr("timedelta")(py::arg("seconds") = 30);
    std::cout << "rank " << rank << " torch " << py::module_::import("torch").attr("__version__").cast<std::string>()
              << " from " << py::module_::import("torch").attr("__file__").cast<std::string>() << std::endl;
    py::object g = gloo(py::cast(store), rank, ws, opts);
    backend = c10::intrusive_ptr<c10d::Backend>::unsafe_reclaim_from_nonowning(g.cast<c10d::Backend*>());
  }
  if (!inherited) PyEval_SaveThread();
  std::cout << "rank " << rank << (inherited ? " (Python inherited from the parent by fork)" : "") << std::endl;
  std::vector<at::Tensor> t{at::full({3}, double(rank + 1), at::kDouble)};
  backend->allreduce(t)->wait(std::chrono::seconds(10));
  std::cout << "rank " << rank << " " << backend->getBackendName() << " allreduce: " << t[0][0].item<double>()
            << " refcount " << backend.use_count() << std::endl;
  backend.reset();
  return t[0][0].item<double>() == ws * (ws + 1) / 2.0 ? 0 : 1;
}

int main() {
  const int ws = 2, port = 29777;
  if (const char* v = getenv("ROUTE_PARENT_PY"); v && *v) {  // the ForkedChild case: Python started (torch imported) before the fork
    start();
    py::module_::import("torch.distributed");
    PyEval_SaveThread();
  }
  pid_t kids[ws];
  for (int r = 0; r < ws; ++r) if ((kids[r] = fork()) == 0) _exit(rank_main(r, ws, port));
  int bad = 0;
  for (int r = 0; r < ws; ++r) { int st; waitpid(kids[r], &st, 0); bad |= !(WIFEXITED(st) && WEXITSTATUS(st) == 0); }
  std::cout << (bad ? "FAILED" : "OK") << std::endl;
  return bad;
}
