// Whether this build keeps spares: what a container leaves (its storage and state
// directories, sys/spare_dirs.hpp) for the next start, and a network namespace made
// ahead by the shared user namespace's holder (userns/spare_netns.hpp). Meson's
// `spares` option; off, every start makes its own, so that bench/compare-builds.sh can
// time a start with and without them.
#pragma once

namespace mrun {

#ifdef MRUN_NO_SPARES
inline constexpr bool kKeepSpares = false;
#else
inline constexpr bool kKeepSpares = true;
#endif

}  // namespace mrun
