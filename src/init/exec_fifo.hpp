// The exec fifo between a created container and `mrun start`. The container's init
// holds it open for writing until `start` opens it for reading; then it runs the
// startContainer hooks and writes one record: runc's byte "0" to go on to exec, or "!"
// and the error that stopped it. `start` prints that error, since `mrun create`, which
// would have, returned long ago.
#pragma once

#include <string>
#include <string_view>

namespace mrun::runtime {

inline constexpr char exec_fifo_go = '0';

// "!" and `message`, cut to fit one write of PIPE_BUF bytes, which a fifo delivers whole:
// `start` reads the record in one read.
std::string start_failure_record(const std::string& message);

// What `start` read from the fifo of container `id`: returns for the go byte; throws the
// container's error for a failure record (one line, control characters replaced, since
// whoever reaches the fifo may write to it), or "did not take the start signal" when
// nothing came (the init died, or was killed, before writing).
void check_start_record(std::string_view record, const std::string& id);

}  // namespace mrun::runtime
