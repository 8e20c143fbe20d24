// The shared user namespace's holder process (shared_userns.hpp) as a program of its
// own: mrun re-executes itself as `mrun-userns UID` inside the new user namespace, so
// that what `ps` shows is what it is (not the command line of the mrun that started
// it, arguments and all, which read as a container that never exited and could hold
// secrets), and so that nothing of that mrun's memory or environment stays with it.
//
// Once mrun has mapped the new namespace's ids and written the record, it writes one
// line to the go pipe, "go LINGER RECORD\n" (end-of-file instead: mrun gave up); the
// child reads it and only then execs, as the namespace's root, which keeps its
// capabilities there. The program's descriptors: 0, 1 and 2 on /dev/null, 3 a pipe
// holding the go line, 4 the socket it hands spare network namespaces out on (or
// closed).
#pragma once

#include <string>

namespace mrun::userns {

// The holder's argv[0]: main hands the process to holder_program_main when it is this.
inline constexpr const char* kHolderProgramName = "mrun-userns";

// In the holder's first moments (a child in the new user namespace): waits for the go
// line on GO_FD, arranges the descriptors above and execs this binary (SELF_EXE_FD,
// opened before the clone) as `mrun-userns UID`. Never returns: _exit(1) when the exec
// fails, _exit(0) when mrun gave up.
[[noreturn]] void exec_holder(int self_exe_fd, int go_fd, int listen_fd, uid_t caller_uid);

// The "go" line mrun writes (shared_userns.cpp), and its reading in the holder.
std::string holder_go_line(int linger_seconds, const std::string& record);
bool parse_holder_go_line(const std::string& line, int* linger_seconds, std::string* record);

// `mrun-userns UID`: waits for the go line, then holds the namespace until idle for
// LINGER seconds or until RECORD no longer names it. Returns the exit status.
int holder_program_main(int argc, char** argv);

}  // namespace mrun::userns
