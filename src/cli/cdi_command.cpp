// mrun cdi generate|list   -- see mrun-cdi(1)
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "base/error.hpp"
#include "cdi/cdi_registry.hpp"
#include "cdi/fakegpu_cdi.hpp"
#include "cli/command.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class CdiCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* cdi = app.add_subcommand("cdi", "Container Device Interface specs for fakegpu");
    cdi->require_subcommand(1);
    generate_ =
        cdi->add_subcommand("generate", "write the CDI spec of this host's fakegpu devices");
    auto* output = generate_->add_option("-o,--output", output_, "write the spec to FILE");
    generate_
        ->add_option("--spec-dir", spec_dir_,
                     "write DIR/fakegpu.example-gpu.json (podman reads /etc/cdi, /var/run/cdi)")
        ->excludes(output);
    list_ = cdi->add_subcommand("list", "list the CDI device names mrun can resolve");
    list_
        ->add_option("--cdi-spec-dir", list_dirs_,
                     "read specs from DIR instead of /etc/cdi and /var/run/cdi")
        ->take_all();
    return cdi;
  }

  int execute(const runtime::GlobalOptions& global) override {
    runtime::Context ctx = runtime::make_context(global);
    if (list_->parsed()) return list(ctx);
    return generate();
  }

 private:
  int generate() {
    auto nodes = cdi::host_fakegpu_nodes();
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) throw_errno("find the mrun binary (/proc/self/exe)");
    // The spec names host paths of the driver: the same ones --gpu binds.
    auto userspace = mount::find_gpu_userspace(std::string(exe, static_cast<std::size_t>(n)),
                                               std::getenv("MRUN_FAKEGPU_LIBDIR"));
    std::string text = cdi::to_json(cdi::fakegpu_spec(nodes, userspace)).dump(2) + "\n";
    std::string path = output_;
    if (!spec_dir_.empty()) {
      sys::make_dirs(spec_dir_, 0755);
      path = spec_dir_ + "/fakegpu.example-gpu.json";
    }
    if (path.empty()) {
      std::cout << text;
      return 0;
    }
    // Readable by all (0644): podman and every user's mrun read it; atomic, so an
    // engine scanning the directory never sees half a spec.
    sys::write_file_atomic(path, text, 0644);
    std::cerr << "mrun: wrote " << path << "\n";
    return 0;
  }

  int list(const runtime::Context& ctx) {
    auto dirs = list_dirs_.empty() ? cdi::default_spec_dirs() : list_dirs_;
    for (const auto& spec : cdi::load_specs(dirs, ctx.log)) {
      for (const auto& device : spec.devices) {
        std::cout << spec.kind << "=" << device.name << "\t" << spec.file << "\n";
      }
    }
    return 0;
  }

  CLI::App* generate_ = nullptr;
  CLI::App* list_ = nullptr;
  std::string output_;
  std::string spec_dir_;
  std::vector<std::string> list_dirs_;
};

}  // namespace

std::unique_ptr<Command> make_cdi_command() {
  return std::make_unique<CdiCommand>();
}

}  // namespace mrun::cli
