// frame_times.h — rolling CPU time of the frame function over the last `capacity` frames.
// Units: milliseconds. Filled by run_frame (frame.cpp); shown in the status bar and published to
// the browser tests (Module.frameTimeStats).
// Limitations: CPU time of our frame function only (poll, ImGui, report, GL command submission);
// the GPU's and the browser compositor's time are not included.
#pragma once

#include <algorithm>
#include <array>

struct FrameTimes {
  static constexpr int capacity = 120;
  std::array<float, capacity> milliseconds{};
  int next = 0;   // slot the next sample goes to
  int count = 0;  // samples held, at most capacity

  void record(float sample) {
    milliseconds[static_cast<std::size_t>(next)] = sample;
    next = (next + 1) % capacity;
    count = std::min(count + 1, capacity);
  }
  float mean() const {
    float sum = 0.0f;
    for (int i = 0; i < count; ++i) sum += milliseconds[static_cast<std::size_t>(i)];
    return count > 0 ? sum / static_cast<float>(count) : 0.0f;
  }
  float max() const {
    float largest = 0.0f;
    for (int i = 0; i < count; ++i)
      largest = std::max(largest, milliseconds[static_cast<std::size_t>(i)]);
    return largest;
  }
};
