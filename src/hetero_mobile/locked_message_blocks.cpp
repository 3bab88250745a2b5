// The transport's large-block locking, done by the heterogeneous framework (the transport knows
// nothing of devices; see roam/transport/message.hpp, block_locking).
#include <roam/hetero/device.hpp>
#include <roam/hetero_mobile/detail/locked_message_blocks.hpp>
#include <roam/transport/message.hpp>

namespace roam::detail {

bool install_locked_message_blocks() noexcept {
  (void)set_large_block_locking({&lock_host_memory, &unlock_host_memory});
  return true;
}

}  // namespace roam::detail
