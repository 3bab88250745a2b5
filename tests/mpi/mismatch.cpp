// Two builds of this file differ by one handler (ROAM_EXTRA_HANDLER). Launched together
// (mpiexec -n 1 a : -n 1 b), the job must stop at start-up naming that handler. With
// --extra-node-local, a process makes one more global roam::node_local before the run: its
// globals are numbered differently, which must stop the job too.
#include <roam/roam.hpp>

#include <cstdio>
#include <string_view>

void shared_handler(int v) { std::printf("shared %d\n", v); }

#ifdef ROAM_EXTRA_HANDLER
struct aaa_only_in_second_binary {
  void operator()(int) const {}
};
#endif

roam::node_local<long> counted_everywhere;

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--extra-node-local") {
    static roam::node_local<double> only_on_this_rank;
  }
  return roam::run(argc, argv, [] {
    counted_everywhere.local() = 1;
#ifdef ROAM_EXTRA_HANDLER
    roam::send(roam::this_node(), aaa_only_in_second_binary{}, 1);
#endif
    roam::send(roam::this_node(), shared_handler, 1);
    roam::barrier();
  });
}
