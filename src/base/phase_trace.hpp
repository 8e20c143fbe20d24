// Timestamps of a start's phases, for bench/phases.sh: in a build configured with
// -Dphase_trace=true, MRUN_PHASE("name") appends "name NANOSECONDS PID" (CLOCK_MONOTONIC)
// to the file $MRUN_PHASE_FILE names, opened once per mrun (the container's setup
// inherits the descriptor, which closes on its exec). In every other build it is
// nothing at all: no branch, no getenv.
#pragma once

#ifdef MRUN_PHASE_TRACE
namespace mrun {
void trace_phase(const char* name) noexcept;
}  // namespace mrun
#define MRUN_PHASE(name) ::mrun::trace_phase(name)
#else
#define MRUN_PHASE(name) ((void)0)
#endif
