#!/usr/bin/env bash
# Installs every Debian 12 package mrun needs to build, test and benchmark.
# Idempotent: packages already present are left alone; safe to run twice.
set -euo pipefail

packages=(
  # build
  meson ninja-build g++ pkg-config clang llvm clang-format scdoc git
  # lld: mrun's hot/cold text layout (meson option hot_layout, src/hot-functions.txt)
  lld
  # libFuzzer and the sanitizer runtimes of clang 14 (tests/fuzz/, -fsanitize=fuzzer)
  libclang-rt-14-dev
  libseccomp-dev libbpf-dev libcli11-dev catch2 nlohmann-json3-dev
  # runtime dependencies of a rootless container
  uidmap fuse-overlayfs fuse3 slirp4netns passt busybox-static iproute2 procps
  # iputils' ping, copied into an image by tests/integration/test_network.py
  iputils-ping
  # an NSS module (tests/integration/test_nss_user.py): a host user that only NSS knows
  libnss-extrausers
  # rootful --network bridge: the CNI bridge, host-local and portmap plugins
  containernetworking-plugins
  # the kernel module and the VM harness
  linux-headers-amd64 linux-image-amd64 qemu-system-x86 cpio kmod bpftool
  # comparison runtimes and measurement (bench/ and docs/)
  crun runc bubblewrap strace hyperfine time python3-pytest
  # a real engine driving mrun through the OCI verbs (tests/integration/test_podman.py,
  # bench/podman-run.sh): podman 4.3 with conmon, its network stack and catatonit
  podman conmon golang-github-containers-common netavark catatonit
  # buildah 1.28 building and running images on mrun (tests/integration/test_buildah.py)
  buildah
  # netavark's bridge (rootful podman's default network) sets its NAT rules with iptables
  iptables
  # containerd 1.6 with ctr and its runc shim driving mrun (tests/integration/test_containerd.py,
  # bench/ctr-run.sh): each starts a containerd of its own, never the system service
  containerd
  # containerd's CRI plugin driving mrun as a Kubernetes runtime handler (tests/cri,
  # tests/vm/cri-suite.sh): the tests' own CRI client over gRPC, the proto compiled at
  # test time, and CNI's bridge + host-local for the pod network
  python3-grpcio python3-grpc-tools containernetworking-plugins
  # the CRI's streaming Exec and Attach (tests/cri/streamlib.py): a WebSocket client for
  # containerd's streaming server (k8s remotecommand, v4.channel.k8s.io)
  python3-websocket
  # rootless containerd for docs/KUBERNETES.md's rootless account (its own user and
  # mount namespaces)
  rootlesskit
  # Docker 20.10 driving mrun through --add-runtime (tests/integration/test_docker.py): the
  # test starts a dockerd of its own in a private mount and network namespace
  docker.io
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root (sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# A package's maintainer script must not start a daemon on this machine's own network:
# docker.io would start dockerd (its bridge, iptables rules and /var/run/docker.sock) on
# the host. policy-rc.d exiting 101 is Debian's way to forbid that (invoke-rc.d(8)); one
# the administrator put there is left alone.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
