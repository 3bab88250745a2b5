// Two builds of this file differ by one handler (ROAM_EXTRA_HANDLER). Launched together
// (mpiexec -n 1 a : -n 1 b), the job must stop at start-up naming that handler.
#include <roam/roam.hpp>

#include <cstdio>

void shared_handler(int v) { std::printf("shared %d\n", v); }

#ifdef ROAM_EXTRA_HANDLER
struct aaa_only_in_second_binary {
  void operator()(int) const {}
};
#endif

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {
#ifdef ROAM_EXTRA_HANDLER
    roam::send(roam::this_node(), aaa_only_in_second_binary{}, 1);
#endif
    roam::send(roam::this_node(), shared_handler, 1);
    roam::barrier();
  });
}
