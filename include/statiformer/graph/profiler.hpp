// statiformer — per-layer profiler with a user-supplied clock, fixed storage, no heap.
//
// Models call `prof.begin(name, index)` / `prof.end(name, index)` around each layer (not nested). `NullProfiler` (the
// default) has empty inline members, so profiling compiles to nothing when not asked for. `Profiler<Clock, Capacity>`
// accumulates ticks per distinct layer name; Clock is any callable returning an unsigned tick count (steady_clock
// nanoseconds on a host, SysTick or a cycle counter on a microcontroller).
#pragma once

#include <cstdint>
#include <cstring>

#include <statiformer/config.hpp>

namespace stf {

struct NullProfiler {
  static constexpr bool enabled = false;
  constexpr void begin(const char*, index_t = 0) const noexcept {}
  constexpr void end(const char*, index_t = 0) const noexcept {}
};

template <class Clock, index_t Capacity = 32>
class Profiler {
 public:
  static constexpr bool enabled = true;
  struct Entry {
    const char* name = nullptr;
    index_t index = 0;  ///< layer index within a stack
    std::uint64_t ticks = 0;
    std::uint64_t calls = 0;
  };

  explicit Profiler(Clock clock) : clock_(clock) {}

  void begin(const char*, index_t = 0) noexcept { start_ = clock_(); }
  void end(const char* name, index_t index = 0) noexcept {
    const std::uint64_t t = static_cast<std::uint64_t>(clock_() - start_);
    for (index_t i = 0; i < count_; ++i)
      if (entries_[i].index == index && std::strcmp(entries_[i].name, name) == 0) {
        entries_[i].ticks += t;
        ++entries_[i].calls;
        return;
      }
    if (count_ < Capacity)
      entries_[count_++] = Entry{name, index, t, 1};
    else
      ++dropped_;
  }
  void reset() noexcept {
    count_ = 0;
    dropped_ = 0;
  }
  index_t size() const noexcept { return count_; }
  const Entry& operator[](index_t i) const noexcept { return entries_[i]; }
  index_t dropped() const noexcept { return dropped_; }

 private:
  Clock clock_;
  decltype(clock_()) start_{};
  Entry entries_[Capacity]{};
  index_t count_ = 0;
  index_t dropped_ = 0;
};

}  // namespace stf
