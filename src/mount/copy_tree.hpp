// Copying a directory tree from one descriptor to another (a config's tmpcopyup: the
// image's files at a mount target copied into the fresh tmpfs that will cover them).
// Descriptors only, every entry opened relative to its parent with O_NOFOLLOW: a
// symlink of the image is copied as a symlink, never followed, so the copy reads
// nothing outside the directory it was given.
#pragma once

#include <string>

namespace mrun::mount {

// Copies the entries of `from_dir` into `to_dir` (both directory descriptors):
// directories (recursively), regular files (contents), symlinks (as they are), FIFOs,
// sockets and device nodes (mknod, where allowed); each with its mode and, where the
// user namespace maps it, its owner (an id it does not map stays the copier's). `to_dir`
// itself takes the mode and owner of `from_dir`. Throws mrun::Error naming `what` and the
// entry.
void copy_tree(int from_dir, int to_dir, const std::string& what);

}  // namespace mrun::mount
