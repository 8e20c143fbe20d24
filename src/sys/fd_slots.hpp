// --preserve-fds: which of the caller's descriptors the container gets, and that no
// descriptor of mrun's own lands among them.
#pragma once

namespace mrun::sys {

// --preserve-fds N, at mrun's start: each of fds 3..3+N-1 the caller did not pass is
// held by a close-on-exec placeholder, so that no descriptor mrun opens later lands
// there and is handed to the container.
void hold_fd_slots(int count);

// --preserve-fds N, right before the command's exec: of fds 3..3+N-1 exactly the
// caller's stay open. Those are told apart by FD_CLOEXEC: an fd inherited over the
// caller's exec of mrun cannot carry it, and every fd mrun opens (placeholders
// included) does, so those are closed. Every fd from 3+N becomes close-on-exec
// (close_range: no /proc listing the container could have covered).
void keep_fds_across_exec(int preserve);

}  // namespace mrun::sys
