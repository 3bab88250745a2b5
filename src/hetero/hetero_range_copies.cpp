// The engine's range copies (hetero_object::read_range and write_range): a task with no kernel
// that moves part of an object between host memory and the copies valid where they are, with
// no copy changing its MSI state unless a transfer fails. See hetero_engine.hpp.
#include <cstring>

#include "hetero_engine.hpp"
#include "when_all.hpp"

namespace roam::detail {

device_event hetero_engine::copy_range(const std::shared_ptr<hetero_object_state>& object,
                                       bool write, std::size_t offset, std::size_t bytes,
                                       void* data, std::shared_ptr<void> owner) {
  range_copy range;
  range.write = write;
  range.offset = offset;
  range.bytes = bytes;
  // Staging costs a memcpy of the range: only where a device needs it (CUDA and pageable memory)
  // or, for a write, where the caller keeps its memory (a span).
  const bool staged = (write && !owner) || !memory_->direct_everywhere(data, bytes);
  if (staged) {
    std::lock_guard lock(mutex_);
    range.staging = memory_->allocate_host(bytes);  // counted when the copy starts
  }
  if (!write) {
    range.user = data;
  } else if (staged) {
    std::memcpy(range.staging, data, bytes);  // the caller may reuse its memory at once
    range.source = range.staging;
    owner.reset();  // here, not under the engine's lock
  } else {
    range.source = data;
    range.owner = std::move(owner);
  }
  auto task = new_task(std::move(range));
  task->implicit = true;  // ordered like a task of its access, whatever the default
  task_argument argument;
  argument.object = object;
  argument.access = write ? data_access::read_write : data_access::read;
  task->arguments.push_back(std::move(argument));
  submit(task);
  return device_event(task->finished);
}

hetero_engine::attempt_result hetero_engine::attempt_range(
    const std::shared_ptr<hetero_task_state>& task) {
  std::vector<device_event> issued;
  const auto result =
      task->as_range()->write ? write_range(task, issued) : read_range(task, issued);
  if (result != attempt_result::started) return result;
  task->phase = task_phase::running;
  release(task->launch_dependents);
  if (issued.empty()) {
    finish(task, nullptr);
  } else {
    notify_when_done(when_all(issued, true), task->id, when_done::finish);
  }
  return attempt_result::started;
}

hetero_engine::attempt_result hetero_engine::read_range(
    const std::shared_ptr<hetero_task_state>& task, std::vector<device_event>& issued) {
  auto& range = *task->as_range();
  auto* object = task->objects.front().first;
  auto& host = object->copies[0];
  if (object->states.valid(0)) {
    // The host's copy is valid once what writes it (a fetch from a device) is done.
    if (defer_until(task, {host.ready}, nullptr, true)) return attempt_result::deferred;
    std::memcpy(range.user, static_cast<std::byte*>(object->host) + range.offset, range.bytes);
    if (range.staging != nullptr) memory_->release_host(range.staging, range.bytes);
    range.staging = nullptr;
    return attempt_result::started;
  }
  // Straight from the device holding the newest copy: only these bytes move, and no copy
  // changes state.
  const auto space = static_cast<int>(object->states.newest_device_space());
  auto& copy = object->copies[space];
  auto* d = memory_->device_of_space(space);
  if (defer_until(task, {copy.ready}, d, true)) return attempt_result::deferred;
  auto e = d->copy_to_host(device_queue::device_to_host(),
                           range.staging != nullptr ? range.staging : range.user, copy.buffer,
                           range.offset, range.bytes, std::span(&copy.ready, 1));
  copy.read_by(e);
  memory_->touch(*object, space);
  ++statistics_.range_transfers;
  statistics_.range_bytes += range.bytes;
  if (range.staging != nullptr) ++statistics_.staged_range_copies;
  issued.push_back(std::move(e));
  return attempt_result::started;
}

hetero_engine::attempt_result hetero_engine::write_range(
    const std::shared_ptr<hetero_task_state>& task, std::vector<device_event>& issued) {
  auto& range = *task->as_range();
  auto* object = task->objects.front().first;
  auto& host = object->copies[0];
  // Every valid copy takes the bytes, so no state changes (a device-resident object stays
  // there). What still reads or writes a copy's old contents ends first: on a device by the
  // transfer waiting for it there, on the host before the memcpy. All waits are checked
  // before anything is written, so a deferred attempt has changed nothing.
  if (object->states.valid(0) && defer_until(task, host.pending(), nullptr))
    return attempt_result::deferred;
  for (std::size_t space = 1; space < object->copies.size(); ++space) {
    if (object->states.valid(space) &&
        defer_until(task, object->copies[space].pending(),
                    memory_->device_of_space(static_cast<int>(space))))
      return attempt_result::deferred;
  }
  (void)object->settle_failed_copies();  // a copy a transfer just failed to fill takes no bytes
  if (range.staging != nullptr) ++statistics_.staged_range_copies;
  bool updated = false;  // some copy holds the new bytes
  if (object->states.valid(0)) {
    std::memcpy(static_cast<std::byte*>(object->host) + range.offset, range.source, range.bytes);
    updated = true;
  }
  std::uint64_t failed = 0;
  std::exception_ptr failure;
  for (std::size_t space = 1; space < object->copies.size(); ++space) {
    if (!object->states.valid(space)) continue;
    auto& copy = object->copies[space];
    try {
      auto e = memory_->device_of_space(static_cast<int>(space))
                   ->copy_to_device(device_queue::host_to_device(), copy.buffer, range.offset,
                                    range.source, range.bytes, copy.pending());
      copy.written_by(e);  // e waited for its readers
      memory_->touch(*object, static_cast<int>(space));
      ++statistics_.range_transfers;
      statistics_.range_bytes += range.bytes;
      issued.push_back(std::move(e));
      updated = true;
    } catch (...) {
      failure = std::current_exception();
      failed |= std::uint64_t{1} << space;
    }
  }
  if (failure) {
    // Nothing written: the write fails and every copy keeps the old contents.
    if (!updated) std::rethrow_exception(failure);
    // A copy that missed the bytes is stale (the copies that took them are valid).
    (void)object->states.failed(failed);
    // The task fails once the transfers already issued end (they read the source).
    auto failed_event = std::make_shared<device_event_state>();
    failed_event->complete(failure);
    issued.emplace_back(std::move(failed_event));
  }
  return attempt_result::started;
}

void hetero_engine::end_range(range_copy& range, const std::exception_ptr& failure) {
  if (range.owner) graveyard_.sources.push_back(std::move(range.owner));
  if (range.staging == nullptr) return;
  if (!range.write && !failure) std::memcpy(range.user, range.staging, range.bytes);
  memory_->release_host(range.staging, range.bytes);
  range.staging = nullptr;
}

}  // namespace roam::detail
