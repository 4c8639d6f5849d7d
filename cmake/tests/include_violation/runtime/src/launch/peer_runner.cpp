// Planted for the ctest includes_check_catches_a_missing_header (cmake/check_includes.cmake):
// the bug of issue 36, ::_exit with no <unistd.h> (g++ 12's <thread> happened to bring it in),
// and a message from std::strerror(errno) with neither <cstring> nor <cerrno>.
#include <csignal>
#include <stdexcept>
#include <string>

[[noreturn]] void leave_after_fork(int code) { ::_exit(code); }

void refuse(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

void stop(int pid) { ::kill(pid, SIGTERM); }  // <csignal> is there: not a finding
