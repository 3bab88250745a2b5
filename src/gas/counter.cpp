#include <roam/core/detail/node_api.hpp>
#include <roam/gas/counter.hpp>

namespace roam::gas {

struct counter::state {
  std::mutex lock;
  std::size_t pending = 0;
  std::exception_ptr first_error;
  std::shared_ptr<roam::detail::ready_flag> zero;  // made by a wait(); set when pending hits 0
};

counter::counter() : state_(std::make_shared<state>()) {}

void counter::started() {
  std::lock_guard guard(state_->lock);
  ++state_->pending;
}

void counter::finished(state& s, std::exception_ptr error) noexcept {
  std::shared_ptr<roam::detail::ready_flag> wake;
  {
    std::lock_guard guard(s.lock);
    if (error && !s.first_error) s.first_error = std::move(error);
    if (--s.pending == 0) wake = std::move(s.zero);
  }
  if (wake) wake->set();
}

std::size_t counter::pending() const {
  std::lock_guard guard(state_->lock);
  return state_->pending;
}

void counter::wait() {
  for (;;) {
    std::shared_ptr<roam::detail::ready_flag> zero;
    {
      std::lock_guard guard(state_->lock);
      if (state_->pending == 0) {
        if (auto error = std::exchange(state_->first_error, nullptr)) std::rethrow_exception(error);
        return;
      }
      if (!state_->zero) state_->zero = std::make_shared<roam::detail::ready_flag>();
      zero = state_->zero;
    }
    roam::detail::wait(*zero);
  }
}

}  // namespace roam::gas
