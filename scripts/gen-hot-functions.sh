#!/usr/bin/env bash
# Regenerates src/hot-functions.txt: the functions mrun's common starts run, in the
# order they first run, for the hot/cold layout (meson option hot_layout, lld's
# --symbol-ordering-file). Why: the kernel maps mrun's text 64 KiB around each page a
# start touches, so where those functions lie decides how much of the binary is
# resident in every container's mrun (bench/README.md, "Peak RSS").
#
#   scripts/gen-hot-functions.sh        as root; needs the release build (build/)
#
# 1. builds mrun with -finstrument-functions into build-hot-trace/, linked with
#    scripts/hot_functions_hook.c, which writes each function's first entry to fd 1000;
# 2. as the unprivileged test user (tests/setup-user.sh): run --rm without and with
#    the default network, run -d, exec, list, kill, delete, and an OCI bundle's
#    create, start, state, delete (the engines' path);
# 3. names the recorded offsets (nm of the traced build) and keeps those the release
#    build (build/src/mrun, or $MRUN_BUILD_DIR) has as functions of their own, with
#    their compiler clones (name.constprop.N, .isra.N, .part.N; .cold parts stay cold);
# 4. adds what the trace cannot see (libseccomp, libbpf, libstdc++, code after the
#    container closed fd 1000): the same starts with a cold copy of the release build,
#    the disk's readahead set to 0 for the while, so that the page cache then holds
#    exactly the pages the starts touched (mincore); every function on a touched text
#    page of that copy, in address order. Skipped, with a line saying so, where
#    read_ahead_kb cannot be written.
# Rerun it after changes that move the start's path; a stale list costs memory, never
# correctness (lld skips names it does not find).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release=${MRUN_BUILD_DIR:-$repo/build}
trace_build=$repo/build-hot-trace
user=${MRUN_TEST_USER:-mrun-test}
[ "$(id -u)" -eq 0 ] || { echo "gen-hot-functions: run as root (it traces as $user)" >&2; exit 1; }
[ -x "$release/src/mrun" ] || { echo "gen-hot-functions: $release/src/mrun not built (scripts/build.sh)" >&2; exit 1; }

stage=$(mktemp -d /var/tmp/mrun-hot.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
gcc -O2 -fPIC -c "$repo/scripts/hot_functions_hook.c" -o "$stage/hook.o"
if [ ! -f "$trace_build/build.ninja" ]; then
  meson setup "$trace_build" -Dtests=false -Dhot_layout=false \
    -Dcpp_args=-finstrument-functions -Dc_args=-finstrument-functions >/dev/null
fi
cp "$stage/hook.o" "$trace_build/hot_functions_hook.o"
meson configure "$trace_build" -Dcpp_link_args="$trace_build/hot_functions_hook.o" >/dev/null
meson compile -C "$trace_build" src/mrun >/dev/null

bash "$repo/tests/setup-user.sh" "$user" >/dev/null
chmod 0755 "$stage"
install -m 0755 "$trace_build/src/mrun" "$stage/mrun"
install -m 0666 /dev/null "$stage/trace.txt"
chown "$user" "$stage"
# train MRUN: the starts, as the test user, in a fresh state root; fd 1000 to trace.txt.
train() {
  rm -rf --one-file-system "$stage/state" "$stage/bundle"
  runuser -u "$user" -- env -i HOME="$stage" PATH=/usr/bin:/usr/sbin:/bin STAGE="$stage" MRUN="$1" \
  bash -euo pipefail -c '
  cd "$STAGE"
  m() { "$MRUN" --root "$STAGE/state" "$@" 1000>>"$STAGE/trace.txt"; }
  [ -d "$STAGE/rootfs" ] || m rootfs busybox "$STAGE/rootfs" >/dev/null
  m run --rm --network none "$STAGE/rootfs" /bin/true
  m run --rm "$STAGE/rootfs" /bin/true
  m run -d --name kept --network none "$STAGE/rootfs" /bin/sleep 60 >/dev/null
  m exec kept /bin/true
  m list >/dev/null
  m kill kept KILL
  for _ in $(seq 50); do m state kept 2>/dev/null | grep -q "\"stopped\"" && break; sleep 0.1; done
  m delete kept
  mkdir "$STAGE/bundle" && ln -s "$STAGE/rootfs" "$STAGE/bundle/rootfs"
  m spec --rootless -b "$STAGE/bundle"
  sed -i "s/\"sh\"/\"true\"/; s/\"terminal\": true/\"terminal\": false/" "$STAGE/bundle/config.json"
  m create --bundle "$STAGE/bundle" oci
  m state oci >/dev/null
  m start oci
  for _ in $(seq 50); do m state oci | grep -q "\"stopped\"" && break; sleep 0.1; done
  m delete oci'
}
train "$stage/mrun"

nm "$trace_build/src/mrun" >"$stage/traced.nm"
nm "$release/src/mrun" >"$stage/release.nm"
/usr/bin/python3 - "$stage" "$repo/src/hot-functions.txt" <<'PY'
import sys
stage, out = sys.argv[1:]
def functions(path):
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            yield int(f[0], 16), f[2]
traced = {}
for addr, name in functions(stage + "/traced.nm"):
    traced.setdefault(addr, name)
release = {name for _, name in functions(stage + "/release.nm")}
clones = {}
for name in release:
    base, dot, _ = name.partition(".")
    if dot and ".cold" not in name:
        clones.setdefault(base, []).append(name)
order, seen = [], set()
for line in open(stage + "/trace.txt"):
    name = traced.get(int(line, 16))
    if name is None:
        continue
    for n in [name] + sorted(clones.get(name, [])):
        if n in release and n not in seen:
            seen.add(n)
            order.append(n)
open(out, "w").write("".join(n + "\n" for n in order))
print(f"gen-hot-functions: {len(order)} functions of {len(release)} recorded by the trace")
PY

# 4. The touched pages of a cold copy of the release build.
majmin=$(stat -c '%d' "$stage" | awk '{printf "%d:%d", int($1 / 256), $1 % 256}')
ra=
for q in "/sys/dev/block/$majmin/queue" "/sys/dev/block/$majmin/../queue"; do
  [ -w "$q/read_ahead_kb" ] && { ra=$q/read_ahead_kb; break; }
done
if [ -z "$ra" ]; then
  echo "gen-hot-functions: no writable read_ahead_kb for $stage's disk ($majmin): the list has the trace alone"
  exit 0
fi
install -m 0755 "$release/src/mrun" "$stage/mrun-cold"
sync "$stage/mrun-cold"
/usr/bin/python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$stage/mrun-cold"
saved=$(cat "$ra")
echo 0 >"$ra"
train "$stage/mrun-cold" || { echo "$saved" >"$ra"; exit 1; }
echo "$saved" >"$ra"
readelf -lW "$release/src/mrun" >"$stage/release.phdrs"
nm -S -n "$release/src/mrun" >"$stage/release-sized.nm"
/usr/bin/python3 - "$stage" "$repo/src/hot-functions.txt" <<'PY'
import bisect, ctypes, os, sys
stage, out = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
fd = os.open(stage + "/mrun-cold", os.O_RDONLY)
size = os.fstat(fd).st_size
addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
pages = (size + 4095) // 4096
vec = (ctypes.c_ubyte * pages)()
if libc.mincore(addr, size, vec) != 0:
    sys.exit(f"gen-hot-functions: mincore: {os.strerror(ctypes.get_errno())}")
texts = []  # (file offset, vaddr, size) of executable PT_LOADs
for line in open(stage + "/release.phdrs"):
    f = line.split()
    if f and f[0] == "LOAD" and "E" in "".join(f[6:-1]):
        texts.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
syms = []
for line in open(stage + "/release-sized.nm"):
    f = line.split()
    if len(f) == 4 and f[2] in "tTwW":
        syms.append((int(f[0], 16), max(int(f[1], 16), 1), f[3]))
starts = [a for a, _, _ in syms]
touched, seen = [], set()
for page in range(pages):
    if not vec[page] & 1:
        continue
    for off, vaddr, length in texts:
        if off <= page * 4096 < off + length:
            lo = vaddr + page * 4096 - off
            i = max(bisect.bisect_right(starts, lo) - 1, 0)
            while i < len(syms) and syms[i][0] < lo + 4096:
                a, s, n = syms[i]
                if a + s > lo and n not in seen:
                    seen.add(n)
                    touched.append(n)
                i += 1
order = [line.strip() for line in open(out)]
known = set(order)
added = [n for n in touched if n not in known]
open(out, "w").write("".join(n + "\n" for n in order + added))
print(f"gen-hot-functions: {len(added)} more on the {len(touched)} functions of "
      f"touched text pages; {len(order) + len(added)} in {out}")
PY
