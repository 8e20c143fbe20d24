// A sealed in-memory file: what exec/cloned_binary.hpp copies mrun into, so that a
// container can never write through /proc/PID/exe to the binary on the host
// (CVE-2019-5736).
#pragma once

#include <cstddef>
#include <string>

#include "base/unique_fd.hpp"

namespace mrun::sys {

// memfd_create(2) with MFD_CLOEXEC | MFD_ALLOW_SEALING, and MFD_EXEC where the kernel
// knows it (6.3+: without it, vm.memfd_noexec may make the memfd non-executable; older
// kernels refuse the unknown flag, so it is retried without).
UniqueFd memfd_create_executable(const std::string& name);

// fcntl(F_GET_SEALS): the seals of `fd`, or -1 when the file cannot carry seals (EINVAL:
// not a memfd or shmem file).
int file_seals(int fd);

void add_seals(int fd, int seals);

// Copies the first `count` bytes of `from` (from its current offset) to `to` with
// sendfile(2); throws if `from` ends before.
void copy_file_contents(int from, int to, std::size_t count, const std::string& what);

}  // namespace mrun::sys
