// /dev/console for a container with a terminal (the runtime spec's default devices: "set
// up if terminal is enabled in the config by bind mounting the pseudoterminal pty to
// /dev/console").
//
// The bind is made from the pty's own descriptor onto a descriptor of /dev/console
// opened without following any symlink (CVE-2025-52565: runc bound the pty onto the
// image's /dev/console by path, so a symlink there, or one swapped in during setup,
// sent the bind onto a procfs file such as /proc/sys/kernel/core_pattern and made it
// writable). A missing /dev/console is made as an empty file; a symlink there, or
// anything but a regular file or a character device, is refused.
#pragma once

namespace mrun::mount {

// After pivot_root, while the process still holds CAP_SYS_ADMIN in its user namespace.
// Throws mrun::Error naming /dev/console.
void bind_console(int pty_slave_fd);

}  // namespace mrun::mount
