#pragma once
// Names the runtime's threads, so that `top -H`, gdb and perf tell workers, the
// communication thread and service threads apart from the application's.
#include <pthread.h>

#include <cstdio>

namespace roam::detail {

/// Names the calling thread "<role><node>.<index>" (Linux keeps 15 characters; longer
/// names are cut). Best effort: a platform without thread names keeps the default one.
inline void name_current_thread(const char* role, unsigned node, unsigned index) noexcept {
  char name[16];
  std::snprintf(name, sizeof name, "%s%u.%u", role, node, index);
  (void)pthread_setname_np(pthread_self(), name);
}

}  // namespace roam::detail
