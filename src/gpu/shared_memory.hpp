// Loads and stores on memory shared with the driver (the fence page, the ring's
// head and tail). The driver pairs these with smp_store_release/smp_load_acquire.
#pragma once

namespace fakegpu::detail {

template <class T>
T load_acquire(const T* p) noexcept {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

template <class T>
void store_release(T* p, T value) noexcept {
  __atomic_store_n(p, value, __ATOMIC_RELEASE);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

}  // namespace fakegpu::detail
