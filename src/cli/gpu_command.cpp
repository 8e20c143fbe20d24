// mrun gpu matrix [--rootless-user USER] [--json] [--output FILE]
// mrun gpu doctor [--container NAME]                       -- see mrun-gpu(1)
// mrun gpu ps [--json]
// What rootless GPU passthrough breaks and what fixes it, from real runs (matrix), and
// the debugging ladder of a GPU in a container (doctor). The work is in src/gpucheck/.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "gpucheck/gpu_ps.hpp"
#include "gpucheck/host_facts.hpp"
#include "gpucheck/ladder.hpp"
#include "gpucheck/matrix_run.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class GpuCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* gpu =
        app.add_subcommand("gpu", "GPU passthrough: the rootful/rootless matrix, doctor, ps");
    gpu->require_subcommand(1);
    matrix_ = gpu->add_subcommand(
        "matrix", "run fakegpu-client in the grid of configurations, rootful and rootless");
    matrix_->add_option("--rootless-user", user_,
                        "who runs the rootless rows (default: $SUDO_USER)");
    matrix_->add_flag("--json", json_, "print JSON instead of a Markdown table");
    matrix_->add_option("--output", output_, "write the result to FILE instead of stdout");
    doctor_ =
        gpu->add_subcommand("doctor", "climb the GPU debugging ladder, stop at the first fix");
    doctor_->add_option("--container", container_,
                        "add the rungs seen from inside this running container");
    ps_ = gpu->add_subcommand(
        "ps", "who holds the GPU: processes, their containers, contexts, memory, jobs, Xids");
    ps_->add_flag("--json", ps_json_, "print JSON instead of a table");
    return gpu;
  }

  int execute(const runtime::GlobalOptions& global) override {
    if (ps_->parsed()) return ps(global);
    return matrix_->parsed() ? matrix() : doctor(global);
  }

 private:
  int matrix() {
    if (::geteuid() != 0)
      throw Error("mrun gpu matrix must run as root", 0,
                  "the rootful rows need root and it sets up the nodes: sudo mrun gpu matrix "
                  "[--rootless-user USER]");
    if (user_.empty()) {
      const char* sudo_user = std::getenv("SUDO_USER");
      if (!sudo_user || !*sudo_user || std::string(sudo_user) == "root")
        throw Error("mrun gpu matrix: no user for the rootless rows", 0,
                    "name one with --rootless-user USER (it needs /etc/subuid entries)");
      user_ = sudo_user;
    }
    gpucheck::MatrixOptions options;
    options.rootless_user = user_;
    options.progress = [](const std::string& line) {
      std::cerr << "mrun gpu matrix: " << line << std::endl;
    };
    auto report = gpucheck::run_matrix(options);
    // The Markdown names the kernel in its own header line.
    std::string text =
        json_ ? gpucheck::to_json(report).dump(2) + "\n" : gpucheck::render_markdown(report);
    if (output_.empty()) {
      std::cout << text << std::flush;
    } else {
      sys::write_file_atomic(output_, text, 0644);
    }
    // 0: every run that ran reached what its row expects; 1: at least one differs.
    return gpucheck::all_as_expected(report) ? 0 : 1;
  }

  int doctor(const runtime::GlobalOptions& global) {
    std::string state_root;
    if (!container_.empty()) state_root = runtime::make_context(global).state_root;
    auto facts = gpucheck::gather_doctor_facts(container_, state_root);
    auto rungs = gpucheck::climb(facts);
    std::cout << gpucheck::render_rungs(rungs) << std::flush;
    return gpucheck::doctor_status(rungs);
  }

  // The caller's containers (root: root's), named next to the processes inside them.
  int ps(const runtime::GlobalOptions& global) {
    std::vector<gpucheck::ContainerRef> containers;
    runtime::StateStore store(runtime::make_context(global).state_root);
    for (const auto& s : store.list()) {
      const auto status = runtime::effective_status(s);
      if (status == runtime::Status::running || status == runtime::Status::created)
        containers.push_back({s.name, s.pid});
    }
    auto result = gpucheck::gather_gpu_ps(containers);
    if (ps_json_)
      std::cout << gpucheck::gpu_ps_json(result).dump(2) << "\n";
    else
      std::cout << gpucheck::render_gpu_ps(result);
    std::cout << std::flush;
    return 0;
  }

  CLI::App* ps_ = nullptr;
  bool ps_json_ = false;
  CLI::App* matrix_ = nullptr;
  CLI::App* doctor_ = nullptr;
  std::string user_;
  bool json_ = false;
  std::string output_;
  std::string container_;
};

}  // namespace

std::unique_ptr<Command> make_gpu_command() {
  return std::make_unique<GpuCommand>();
}

}  // namespace mrun::cli
