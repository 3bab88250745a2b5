// Must not compile: a lambda with captures as a handler (issue 25: the error said only
// "must be default constructible").
#include <roam/roam.hpp>

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {
    int offset = 3;
    roam::send(
        0, [offset](int x) { return x + offset; }, 1);
  });
}
