// mrun rootfs busybox DIR   -- see mrun-rootfs(1)
#include <iostream>

#include "cli/command.hpp"
#include "mount/busybox_rootfs.hpp"

namespace mrun::cli {

namespace {

class RootfsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* rootfs = app.add_subcommand("rootfs", "make root filesystems for containers");
    rootfs->require_subcommand(1);
    busybox_ =
        rootfs->add_subcommand("busybox", "make a busybox rootfs from the host's busybox-static");
    busybox_->add_option("DIR", dir_, "directory to create (must be new or empty)")->required();
    return rootfs;
  }

  int execute(const runtime::GlobalOptions&) override {
    mount::make_busybox_rootfs(dir_, mount::find_static_busybox());
    std::cout << dir_ << std::endl;
    return 0;
  }

 private:
  CLI::App* busybox_ = nullptr;
  std::string dir_;
};

}  // namespace

std::unique_ptr<Command> make_rootfs_command() {
  return std::make_unique<RootfsCommand>();
}

}  // namespace mrun::cli
