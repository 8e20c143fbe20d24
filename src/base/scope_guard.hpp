// Runs a cleanup action on scope exit unless dismissed: used for multi-step setup
// where each completed step must be undone if a later one fails.
#pragma once

#include <utility>

namespace mrun {

template <typename F>
class ScopeGuard {
 public:
  explicit ScopeGuard(F action) : action_(std::move(action)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard() {
    if (active_) {
      try {
        action_();
      } catch (...) {
        // Cleanup is best effort: a destructor must not throw.
      }
    }
  }
  void dismiss() noexcept { active_ = false; }

 private:
  F action_;
  bool active_ = true;
};

}  // namespace mrun
