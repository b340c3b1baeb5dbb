// statiformer — per-layer profiler with a user-supplied clock, fixed storage, no heap.
//
// Models call `prof.begin(path)` / `prof.end(path)` around each layer (not nested), where `path` is
// the layer's parameter prefix as PyTorch's state_dict names it (`encoder.layers.0`), built with
// `/` the way `params.visit` builds parameter names. `NullProfiler` (the default) has empty inline
// members, so profiling compiles to nothing when not asked for. `Profiler<Clock, Capacity>`
// accumulates ticks per distinct path; Clock is any callable returning an unsigned tick count
// (steady_clock nanoseconds on a host, SysTick or a cycle counter on a microcontroller).
// `graph/summary.hpp` prints the results (text table or CSV).
#pragma once

#include <cstdint>

#include <statiformer/config.hpp>

namespace stf {

/// A layer's name as the prefix of its parameters ("encoder.layers.0"), built like `Name`
/// (`LayerPath("encoder") / "layers" / i`) but without copying characters: up to `capacity` parts,
/// each a static string (a literal, a `Named` prefix) or an index. Two paths are equal when their
/// parts are (a part is compared by its characters). Cheap to build, so a call site with a
/// `NullProfiler` costs nothing after optimization.
struct LayerPath {
  static constexpr index_t capacity = 4;
  struct Part {
    const char* text = nullptr;  ///< the part's characters (not null), unless is_index
    index_t index = 0;
    bool is_index = false;
  };
  Part parts[capacity] = {};
  index_t size = 0;
  bool truncated = false;  ///< more than `capacity` parts were appended (the rest are dropped)

  constexpr LayerPath() = default;
  constexpr LayerPath(const char* s) { push({s, 0, false}); }  // NOLINT: implicit on purpose, like Name

  /// `path / "norm"` → "path.norm" (an empty part changes nothing, as in Name).
  constexpr LayerPath operator/(const char* part) const {
    LayerPath p = *this;
    p.push({part, 0, false});
    return p;
  }
  constexpr LayerPath operator/(index_t i) const {
    LayerPath p = *this;
    p.push({nullptr, i, true});
    return p;
  }

  constexpr bool operator==(const LayerPath& o) const {
    if (size != o.size || truncated != o.truncated) return false;
    for (index_t k = 0; k < size; ++k) {
      const Part &a = parts[k], &b = o.parts[k];
      // (no comparison of the pointers with null: GCC 12 under -fsanitize cannot evaluate one for a
      // Named prefix, a template parameter object, in a constant expression)
      if (a.is_index != b.is_index) return false;
      if (a.is_index) {
        if (a.index != b.index) return false;
      } else if (a.text != b.text) {
        const char *x = a.text, *y = b.text;
        while (*x && *x == *y) ++x, ++y;
        if (*x != *y) return false;
      }
    }
    return true;
  }

  /// Writes the dotted name ("encoder.layers.0"; "..." after it if truncated) into buf, at most
  /// n - 1 characters and a terminating NUL; returns the characters written.
  constexpr index_t write(char* buf, index_t n) const {
    if (n == 0) return 0;
    index_t len = 0;
    auto put = [&](char c) {
      if (len + 1 < n) buf[len++] = c;
    };
    for (index_t k = 0; k < size; ++k) {
      if (k) put('.');
      if (!parts[k].is_index) {
        for (const char* s = parts[k].text; *s; ++s) put(*s);
      } else {
        char digits[24] = {};
        index_t d = 0, v = parts[k].index;
        do {
          digits[d++] = static_cast<char>('0' + v % 10);
          v /= 10;
        } while (v);
        while (d) put(digits[--d]);
      }
    }
    if (truncated)
      for (int k = 0; k < 3; ++k) put('.');
    buf[len] = '\0';
    return len;
  }

 private:
  constexpr void push(Part part) {
    if (!part.is_index && !*part.text) return;
    if (size == capacity) {
      truncated = true;
      return;
    }
    parts[size++] = part;
  }
};

struct NullProfiler {
  static constexpr bool enabled = false;
  constexpr void begin(const LayerPath&) const noexcept {}
  constexpr void end(const LayerPath&) const noexcept {}
};

/// Accumulates ticks and calls per distinct layer path, in order of first appearance, in
/// `Capacity` fixed entries. A measurement of a path that finds no free entry is not recorded: it
/// is counted in `dropped()` (and its ticks in `dropped_ticks()`), which the printers report.
template <class Clock, index_t Capacity = 32>
class Profiler {
 public:
  static_assert(Capacity >= 1, "Profiler: Capacity must be at least 1");
  static constexpr bool enabled = true;
  static constexpr index_t capacity = Capacity;
  struct Entry {
    LayerPath path;
    std::uint64_t ticks = 0;
    std::uint64_t calls = 0;
    /// The dotted name into buf (see LayerPath::write).
    index_t name(char* buf, index_t n) const { return path.write(buf, n); }
  };

  explicit Profiler(Clock clock) : clock_(clock) {}

  void begin(const LayerPath&) noexcept { start_ = clock_(); }
  void end(const LayerPath& path) noexcept {
    const std::uint64_t t = static_cast<std::uint64_t>(clock_() - start_);
    for (index_t i = 0; i < count_; ++i)
      if (entries_[i].path == path) {
        entries_[i].ticks += t;
        ++entries_[i].calls;
        return;
      }
    if (count_ < Capacity) {
      entries_[count_++] = Entry{path, t, 1};
    } else {
      ++dropped_;
      dropped_ticks_ += t;
    }
  }
  void reset() noexcept {
    count_ = 0;
    dropped_ = 0;
    dropped_ticks_ = 0;
  }
  index_t size() const noexcept { return count_; }
  const Entry& operator[](index_t i) const noexcept { return entries_[i]; }
  /// Measurements not recorded because every entry held another path.
  std::uint64_t dropped() const noexcept { return dropped_; }
  std::uint64_t dropped_ticks() const noexcept { return dropped_ticks_; }

 private:
  Clock clock_;
  decltype(clock_()) start_{};
  Entry entries_[Capacity]{};
  index_t count_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t dropped_ticks_ = 0;
};

}  // namespace stf
