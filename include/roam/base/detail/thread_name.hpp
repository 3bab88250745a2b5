#pragma once
// Names the runtime's threads, so that `top -H`, gdb and perf tell workers, the
// communication thread, service threads and the heterogeneous framework's threads apart
// from the application's. In the base layer: every layer that starts threads uses it.
#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <string>

namespace roam::detail {

/// Names `thread` `role`, followed by `node` and then ".index" when given (a negative number
/// leaves it out): "roam-w1.0", "roam-lb1", "roam-hetero". Linux keeps 15 characters; longer
/// names are cut. Best effort: a platform without thread names keeps the default one. A
/// thread named by its creator has its name before it runs anything.
inline void name_thread(pthread_t thread, const char* role, int node = -1,
                        int index = -1) noexcept {
  try {
    std::string name = role;
    if (node >= 0) name += std::to_string(node);
    if (node >= 0 && index >= 0) name += "." + std::to_string(index);
    name.resize(std::min<std::size_t>(name.size(), 15));
    (void)pthread_setname_np(thread, name.c_str());
  } catch (...) {  // no memory for a name: the thread keeps its default one
  }
}

}  // namespace roam::detail
