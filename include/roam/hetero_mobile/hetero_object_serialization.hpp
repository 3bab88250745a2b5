#pragma once
// hetero_object<T> as a message argument and as a member of a mobile object (thesis §5.2).
//
// Wire form: a presence byte, the element count, then the elements' bytes. A hetero_object
// argument therefore costs 9 bytes plus its data: an object of up to about 500 bytes travels
// inside the header message (the transport's inline threshold, 512 bytes by default); a larger
// one follows it in a second message, received straight into a message block.
//
// Packing (a message argument, or the object's owner migrating):
// - it first waits for every task and host request already submitted on the object, so a mobile
//   object stays on its node while its device tasks run (readers included);
// - then it takes read access on the host, which copies the newest data back from the device
//   holding it (into the page-locked host pool when a CUDA device exists: the staging buffer of
//   the thesis), and copies it into the message. Device copies stay valid on the sender.
// Inside a handler both waits suspend its lightweight thread (detail/fiber_waits.hpp); the worker
// runs other work meanwhile.
//
// Unpacking makes a new object, valid on the receiver's host only; the receiver's framework
// moves it to whichever device its first task is placed on. A message carries a copy: the
// sender's object and the receiver's are independent afterwards. A mobile object's members
// migrate the same way, and the copies on the old node are freed with it.
//
// Needs a live hetero_runtime on the receiving process (unpacking throws device_error without).
#include <roam/hetero/hetero_object.hpp>
#include <roam/hetero_mobile/detail/fiber_waits.hpp>
#include <roam/hetero_mobile/detail/held_host_view.hpp>

#include <cereal/cereal.hpp>

#include <cstdint>
#include <span>

namespace roam {

template <class Archive, class T>
void save(Archive& ar, const hetero_object<T>& object) {
  const auto present = static_cast<std::uint8_t>(static_cast<bool>(object));
  ar(present);
  if (!present) return;
  hetero_object<T> handle = object;  // request() and release() are not const
  // Both waits run at once: the tasks' end is taken before the request joins the object's users
  // (it would otherwise wait for itself), and the request's copy to the host starts as soon as
  // the last writer is done.
  const hetero_future<void> settled = handle.tasks_done();
  hetero_future<host_view<T>> requested = handle.request(data_access::read);
  settled.wait();
  requested.wait();
  if (handle.state_on_host() == coherence::invalid) {
    // A task that opted out of implicit ordering (no writer the request waited for) wrote the
    // object on a device after the read was granted: the view shows the host's copy without
    // that write. Every task has ended now, so a second request sees the newest copy.
    handle.release();
    requested = handle.request(data_access::read);
  }
  const detail::held_host_view<T> held(handle, requested);
  const host_view<T>& view = held.view();
  ar(cereal::make_size_tag(static_cast<std::uint64_t>(view.size())));
  ar(cereal::binary_data(view.data(), view.size() * sizeof(T)));
}

template <class Archive, class T>
void load(Archive& ar, hetero_object<T>& object) {
  std::uint8_t present = 0;
  ar(present);
  if (present == 0) {
    object = hetero_object<T>();
    return;
  }
  std::uint64_t count = 0;
  ar(cereal::make_size_tag(count));  // roam's archive bounds it by the bytes that remain
  object = hetero_object<T>::with_contents(static_cast<std::size_t>(count), [&](std::span<T> data) {
    ar(cereal::binary_data(data.data(), data.size_bytes()));
  });
}

}  // namespace roam
