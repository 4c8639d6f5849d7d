# Fails when a source calls a C or POSIX library function without including that function's
# header itself (issue 36: peer_runner.cpp called ::_exit with no <unistd.h>, which g++ 12's
# headers brought in through <thread> and g++ 13's did not: the build stopped on Ubuntu 24.04).
# A textual check, not a second build: the one table below says which header declares which
# function. Run as a script:
#   cmake -DSOURCE_DIR=<tree> [-DSTAMP=<file>] -P cmake/check_includes.cmake
# Every .h/.hpp/.cpp/.cc under SOURCE_DIR is checked, except build folders, hidden folders (.git,
# a developer's .devdeps: other projects' headers) and cmake/tests (the planted cases of this
# check's own test).
#
# The table: "<header>[|<another spelling>...]: <names>". A call counts as `name(`, `::name(` or
# `std::name(` (not `obj.name(`, `p->name(`, `other::name(`); a name written `::name` here is an
# ordinary word (close, read, signal...) that members and local functions also use, so only
# `::name(` and `std::name(` count for it. `errno` counts without a call.
cmake_minimum_required(VERSION 3.22)  # IN_LIST, while() on a constant
set(_include_table
  "unistd.h: _exit closefrom dup2 execv execve execvp fork getcwd getegid geteuid getgid getpgid getpid getppid getuid gethostname isatty pipe2 readlink rmdir setpgid setsid sysconf syscall usleep ::access ::chdir ::close ::dup ::lseek ::pause ::pipe ::read ::sleep ::unlink ::write"
  "fcntl.h: fcntl openat ::open"
  "sys/wait.h: waitpid waitid ::wait"
  "csignal|signal.h: killpg pthread_sigmask sigaction sigaddset sigdelset sigemptyset sigfillset sigismember sigprocmask sigsuspend sigtimedwait sigwait ::kill ::raise ::signal"
  "cstring|string.h: memchr memcmp memcpy memmove memset strchr strcmp strerror strlen strncmp strncpy strndup strnlen strrchr strsignal strstr strdup"
  "cstdlib|stdlib.h: _Exit atexit atoi atol getenv mkdtemp mkstemp putenv quick_exit realpath setenv strtod strtof strtol strtoll strtoul strtoull unsetenv ::abort ::calloc ::exit ::free ::malloc ::realloc ::system"
  "cstdio|stdio.h: fclose fdopen fflush fgets fileno fopen fprintf fputs fread fwrite pclose perror popen printf puts setvbuf snprintf sprintf sscanf vsnprintf"
  "cerrno|errno.h: errno"
  "poll.h|sys/poll.h: ppoll ::poll"
  "sys/socket.h: accept4 getpeername getsockname getsockopt recvfrom recvmsg sendmsg sendto setsockopt socketpair ::accept ::bind ::connect ::listen ::recv ::send ::shutdown ::socket"
  "netdb.h: freeaddrinfo gai_strerror getaddrinfo getnameinfo"
  "arpa/inet.h: inet_ntop inet_pton"
  "ifaddrs.h: freeifaddrs getifaddrs"
  "sys/prctl.h: prctl"
  "sched.h: sched_getaffinity sched_setaffinity sched_yield setns unshare"
  "sys/resource.h: getrlimit getrusage prlimit setrlimit"
  "sys/stat.h: fchmod fstat lstat mkfifo umask ::chmod ::mkdir ::stat"
  "dirent.h: closedir opendir readdir"
  "dlfcn.h: dladdr dlclose dlerror dlopen dlsym"
  "link.h: dl_iterate_phdr"
  "execinfo.h: backtrace backtrace_symbols backtrace_symbols_fd"
  "pthread.h: pthread_attr_destroy pthread_attr_init pthread_attr_setstacksize pthread_create pthread_detach pthread_join pthread_kill pthread_self pthread_setname_np"
  "spawn.h: posix_spawn posix_spawnp posix_spawn_file_actions_init posix_spawn_file_actions_destroy posix_spawn_file_actions_adddup2 posix_spawn_file_actions_addclose"
  "sys/timerfd.h: timerfd_create timerfd_gettime timerfd_settime"
  "sys/eventfd.h: eventfd"
  "sys/ioctl.h: ioctl"
  "sys/mman.h: madvise memfd_create mmap mprotect munmap"
  "ctime|time.h: clock_gettime gmtime_r localtime_r mktime nanosleep strftime ::gmtime ::localtime ::time"
  "cmath|math.h: fabs frexp isfinite isinf isnan ldexp llround lround ::ceil ::cos ::exp ::floor ::log ::nan ::pow ::round ::sin ::sqrt ::trunc"
  "cctype|ctype.h: isalnum isalpha isdigit islower isprint ispunct isspace isupper isxdigit tolower toupper")

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_includes: pass -DSOURCE_DIR=<source tree>")
endif()

foreach(_entry ${_include_table})
  string(REGEX MATCH "^([^:]+): (.*)$" _ "${_entry}")
  set(_headers "${CMAKE_MATCH_1}")
  string(REPLACE " " ";" _names "${CMAKE_MATCH_2}")
  foreach(_name ${_names})
    if(_name MATCHES "^::(.*)$")
      set(_name "${CMAKE_MATCH_1}")
      set(_qualified_only_${_name} ON)
    endif()
    if(DEFINED _headers_of_${_name})
      message(FATAL_ERROR "check_includes: '${_name}' is in the table twice")
    endif()
    set(_headers_of_${_name} "${_headers}")
  endforeach()
endforeach()

# The text of a source with its comments and string and character literals taken out, so that a
# name in a comment, a message or an HTML page is not a call.
function(_code_of file out_var)
  file(READ "${file}" text)
  # Raw strings, R"delim( ... )delim" (the HTML report's page): cut by hand, regexes cannot pair delimiters.
  while(text MATCHES "R\"([A-Za-z0-9_]*)\\(")
    set(open "${CMAKE_MATCH_0}")
    set(close ")${CMAKE_MATCH_1}\"")
    string(FIND "${text}" "${open}" begin)
    string(LENGTH "${open}" open_length)
    math(EXPR body_begin "${begin} + ${open_length}")
    string(SUBSTRING "${text}" ${body_begin} -1 rest)
    string(FIND "${rest}" "${close}" end)
    if(end LESS 0)
      break()
    endif()
    string(LENGTH "${close}" close_length)
    math(EXPR after "${end} + ${close_length}")
    string(SUBSTRING "${text}" 0 ${begin} head)
    string(SUBSTRING "${rest}" ${after} -1 tail)
    set(text "${head}\"\"${tail}")
  endwhile()
  string(REGEX REPLACE "\"([^\"\\\\\n]|\\\\.)*\"" "\"\"" text "${text}")
  string(REGEX REPLACE "'([^'\\\\\n]|\\\\.)+'" "''" text "${text}")
  # Block comments, then line comments.
  while(TRUE)
    string(FIND "${text}" "/*" begin)
    if(begin LESS 0)
      break()
    endif()
    string(SUBSTRING "${text}" ${begin} -1 rest)
    string(FIND "${rest}" "*/" end)
    if(end LESS 0)
      string(SUBSTRING "${text}" 0 ${begin} text)
      break()
    endif()
    math(EXPR after "${end} + 2")
    string(SUBSTRING "${text}" 0 ${begin} head)
    string(SUBSTRING "${rest}" ${after} -1 tail)
    set(text "${head} ${tail}")
  endwhile()
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE _files "${SOURCE_DIR}/*.h" "${SOURCE_DIR}/*.hpp" "${SOURCE_DIR}/*.cpp" "${SOURCE_DIR}/*.cc")
set(_missing "")
set(_checked 0)
foreach(_file ${_files})
  file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${_file}")
  if(_rel MATCHES "^(build[^/]*|\\.[^/]*|cmake/tests)/")
    continue()
  endif()
  math(EXPR _checked "${_checked} + 1")
  file(STRINGS "${_file}" _include_lines REGEX "^[ \t]*#[ \t]*include[ \t]*<[^>]+>")
  set(_included "")
  foreach(_line ${_include_lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<([^>]+)>.*" "\\1" _header "${_line}")
    list(APPEND _included "${_header}")
  endforeach()
  _code_of("${_file}" _code)
  # Each name followed by "(", with what qualifies it and the word before it (a type: a declaration).
  string(REGEX MATCHALL "([A-Za-z_][A-Za-z0-9_]*[ \t\n]+)?(::|[.>~])?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*[ \t]*\\("
         _calls "${_code}")
  if(_code MATCHES "(^|[^A-Za-z0-9_.>:])errno([^A-Za-z0-9_]|$)")
    list(APPEND _calls "errno")
  endif()
  set(_reported "")
  foreach(_call ${_calls})
    string(REGEX REPLACE "[ \t]*\\($" "" _call "${_call}")
    if(_call MATCHES "^([A-Za-z_][A-Za-z0-9_]*)[ \t\n]+(.*)$")
      set(_call "${CMAKE_MATCH_2}")
      if(NOT CMAKE_MATCH_1 MATCHES "^(return|throw|else|do|case|co_return|co_await|co_yield)$")
        continue()  # `int fork(int n)`: a function of that name declared or defined, not called
      endif()
    endif()
    if(_call MATCHES "^(::|std::)([A-Za-z_][A-Za-z0-9_]*)$")
      set(_name "${CMAKE_MATCH_2}")
    elseif(_call MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      set(_name "${_call}")
      if(_qualified_only_${_name})
        continue()
      endif()
    else()
      continue()  # a member, or another namespace's function
    endif()
    if(NOT DEFINED _headers_of_${_name} OR _name IN_LIST _reported)
      continue()
    endif()
    string(REPLACE "|" ";" _wanted "${_headers_of_${_name}}")
    set(_found OFF)
    foreach(_header ${_wanted})
      if(_header IN_LIST _included)
        set(_found ON)
        break()
      endif()
    endforeach()
    if(NOT _found)
      list(APPEND _reported "${_name}")
      string(REPLACE "|" "> or <" _spellings "${_headers_of_${_name}}")
      list(APPEND _missing "  ${_rel}: uses ${_name} without #include <${_spellings}>")
    endif()
  endforeach()
endforeach()

if(_missing)
  list(JOIN _missing "\n" _text)
  message(FATAL_ERROR "check_includes: sources that use a C or POSIX library function without its header "
                      "(another compiler's headers need not bring it in):\n${_text}\n"
                      "Include the header in that file (the table is in cmake/check_includes.cmake).")
endif()
message(STATUS "check_includes: ${_checked} sources include what they use")
if(STAMP)
  file(WRITE "${STAMP}" "includes ok\n")
endif()
