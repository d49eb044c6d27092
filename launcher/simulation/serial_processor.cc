#include "launcher/simulation/serial_processor.h"

#include <algorithm>
#include <utility>

namespace monsoon {

void SerialProcessor::Handle(double bytes, std::function<void()> handled) {
  if (bytes_per_second_ <= 0) {
    handled();
    return;
  }
  const double seconds = bytes / bytes_per_second_;
  free_at_ = std::max(free_at_, loop_->seconds()) + seconds;
  busy_ += seconds;
  loop_->At(free_at_, std::move(handled));
}

}  // namespace monsoon
