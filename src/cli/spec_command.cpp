// mrun spec [--rootless] [--bundle DIR]   -- see mrun-oci(1)
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "oci/spec.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class SpecCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* spec = app.add_subcommand("spec", "write a new OCI config.json, as runc spec does");
    spec->add_flag("--rootless", rootless_, "a config for a rootless container");
    spec->add_option("-b,--bundle", bundle_, "where to write config.json (default: .)");
    return spec;
  }

  int execute(const runtime::GlobalOptions& /*global*/) override {
    std::string path = bundle_ + "/config.json";
    if (sys::exists(path)) {
      throw Error("File " + path + " exists. Remove it first", EEXIST);
    }
    auto spec = oci::default_spec(rootless_, ::getuid(), ::getgid());
    std::ofstream out(path);
    out << oci::to_json(spec).dump(2) << "\n";
    if (!out.flush()) throw_errno("write " + path);
    return 0;
  }

 private:
  bool rootless_ = false;
  std::string bundle_ = ".";
};

}  // namespace

std::unique_ptr<Command> make_spec_command() {
  return std::make_unique<SpecCommand>();
}

}  // namespace mrun::cli
