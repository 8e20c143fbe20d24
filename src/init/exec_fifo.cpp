#include "init/exec_fifo.hpp"

#include <cerrno>
#include <climits>

#include "base/error.hpp"

namespace mrun::runtime {

namespace {
constexpr char failure_mark = '!';

std::string one_printable_line(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line;
}
}  // namespace

std::string start_failure_record(const std::string& message) {
  std::string record = failure_mark + message;
  if (record.size() > PIPE_BUF) record.resize(PIPE_BUF);
  return record;
}

void check_start_record(std::string_view record, const std::string& id) {
  if (record.size() == 1 && record[0] == exec_fifo_go) return;
  if (record.size() > 1 && record[0] == failure_mark) {
    throw Error(one_printable_line(record.substr(1)));
  }
  throw Error("container " + id + " did not take the start signal (did it die?)", ESRCH);
}

}  // namespace mrun::runtime
