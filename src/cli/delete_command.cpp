// mrun delete [-f] NAME...   -- see mrun(1), mrun-oci(1)
#include "base/error.hpp"
#include "cli/command.hpp"
#include "lifecycle/lifecycle.hpp"

namespace mrun::cli {

namespace {

class DeleteCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* del = app.add_subcommand("delete", "remove containers (state and storage)");
    del->alias("rm");
    del->add_option("NAME", names_, "container names")->required();
    del->add_flag("-f,--force", force_, "kill a running container first");
    return del;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    int status = 0;
    for (const auto& name : names_) {
      try {
        runtime::delete_container(ctx, name, force_);
      } catch (const Error& e) {
        ctx.log.error(e.what());
        status = exit_code::runtime_error;
      }
    }
    return status;
  }

 private:
  std::vector<std::string> names_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_delete_command() {
  return std::make_unique<DeleteCommand>();
}

}  // namespace mrun::cli
