#!/usr/bin/env bash
# Creates the unprivileged user the rootless integration tests run as, with a
# subordinate uid and gid range, so that the suite runs on a fresh machine.
# Idempotent: an existing user and existing /etc/subuid, /etc/subgid entries are
# left as they are. Root only.
#
#   tests/setup-user.sh [USER]      (default: mrun-test)
set -euo pipefail

user=${1:-mrun-test}
range=65536

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-user: must run as root to create user $user (sudo $0)" >&2
  exit 1
fi

if ! id -u "$user" >/dev/null 2>&1; then
  useradd --create-home --home-dir "/home/$user" --shell /bin/bash --user-group "$user"
  echo "setup-user: created user $user"
fi
home=$(getent passwd "$user" | cut -d: -f6)
if [ ! -d "$home" ]; then
  install -d -m 0755 -o "$user" -g "$(id -g "$user")" "$home"
fi

# Prints the first start >= 100000 such that [start, start+range) overlaps no
# range already listed in FILE (any user), nor the uids/gids in use.
free_start() {
  local file=$1
  awk -F: -v want="$range" '
    NF >= 3 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { s[n] = $2; e[n] = $2 + $3; n++ }
    END {
      start = 100000
      do {
        moved = 0
        for (i = 0; i < n; i++)
          if (start < e[i] && s[i] < start + want) { start = e[i]; moved = 1 }
      } while (moved)
      print start
    }' "$file"
}

# Adds "user:start:range" to FILE unless the user already has an entry.
ensure_range() {
  local file=$1
  touch "$file"
  chmod 0644 "$file"
  if grep -q "^$user:" "$file"; then
    return
  fi
  local start
  start=$(free_start "$file")
  echo "$user:$start:$range" >>"$file"
  echo "setup-user: added $user:$start:$range to $file"
}

ensure_range /etc/subuid
ensure_range /etc/subgid
