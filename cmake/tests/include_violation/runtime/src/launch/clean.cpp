// Planted beside peer_runner.cpp: nothing here is a call of the C library, so the check must not
// name this file. A comment that says _exit(1) or fork() is not a call.
#include <string>

struct Pipe {
  void close() {}
  int read(char*, int) { return 0; }
};
namespace task {
int fork(int n) { return n; }
}  // namespace task

/* a block comment: waitpid(pid, nullptr, 0); */
int use(Pipe& pipe, Pipe* other) {
  pipe.close();
  char buffer[4];
  const std::string message = "fork() failed; call _exit(2)";
  const char* page = R"html(<script>window.close(); fork(); getenv("x")</script>)html";
  return other->read(buffer, 4) + task::fork(1) + static_cast<int>(message.size()) + (page != nullptr);
}
