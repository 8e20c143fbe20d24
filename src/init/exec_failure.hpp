// Why an execve that found its file still failed with ENOENT: the kernel reports a
// missing ELF interpreter (a dynamically linked program in an image without its loader)
// or a missing "#!" interpreter with the same errno as a missing program, so the
// message would name a file that is right there. Read inside the container, after the
// failed exec; nothing of it runs on the host.
#pragma once

#include <optional>
#include <string>

#include "base/error.hpp"

namespace mrun::runtime {

struct Interpreter {
  std::string path;
  bool script = false;  // from a "#!" line, else an ELF file's PT_INTERP
};
// The interpreter `program` names, when it names one; nullopt for anything else or an
// unreadable file.
std::optional<Interpreter> program_interpreter(const std::string& program);

// For ENOENT from execve of an existing `program`: "its ELF interpreter
// /lib64/ld-linux-x86-64.so.2 is missing in the container" and the like; "" when the
// interpreter exists or there is none.
std::string missing_interpreter(const std::string& program);

// The error of a failed execve of `name` (found at `path`) with errno `err`, for run and
// exec alike: 127 for ENOENT (naming a missing interpreter when that is the cause), else
// 126.
Error exec_error(const std::string& name, const std::string& path, int err);

}  // namespace mrun::runtime
