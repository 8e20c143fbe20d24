#!/usr/bin/env bash
# The README's first command: build mrun and run a rootless container on the built-in
# busybox rootfs.
#   As root: installs the Debian packages, builds, installs mrun into /usr/local,
#            creates the unprivileged user mrun-demo (with /etc/subuid and
#            /etc/subgid ranges) and runs the container as that user.
#   As a user: builds (the packages must be there: sudo scripts/install-deps.sh) and
#            runs the container as you.
# Extra arguments replace the demo command: scripts/demo.sh /bin/sh -c 'ls /'
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

if [ $# -gt 0 ]; then
  command=("$@")
else
  command=(/bin/sh -c 'echo "hello from a rootless mrun container"; id; echo "uid_map:"; cat /proc/self/uid_map; echo "hostname: $(hostname)  pid: $$"; ps')
fi

bash scripts/install-deps.sh
# The build's own progress lines: a first build takes minutes on two cores.
echo "demo: building mrun (meson, ninja) under ${MRUN_BUILD_DIR:-build}/"
scripts/build.sh

if [ "$(id -u)" -eq 0 ]; then
  # Stripped: the build tree's binary carries ~90 MB of debug information, the
  # installed one none (meson's default is strip=true too; said here for build dirs
  # configured before that).
  meson install -C "${MRUN_BUILD_DIR:-build}" --quiet --strip
  bash tests/setup-user.sh mrun-demo
  echo "demo: running as the unprivileged user mrun-demo: mrun run --rm -- ${command[*]}"
  cd /
  exec runuser -u mrun-demo -- env -i HOME=/home/mrun-demo PATH=/usr/local/bin:/usr/bin:/bin \
    /usr/local/bin/mrun run --rm -- "${command[@]}"
fi
echo "demo: running as $(id -un): mrun run --rm -- ${command[*]}"
exec "${MRUN_BUILD_DIR:-build}/src/mrun" run --rm -- "${command[@]}"
