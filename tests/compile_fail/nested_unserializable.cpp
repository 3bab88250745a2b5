// Must not compile: a handler whose argument holds, inside a container, a type that can
// be neither copied bitwise nor serialized (issue 25: only cereal's own message appeared).
#include <roam/roam.hpp>

#include <string>
#include <vector>

struct opaque {
  std::string text;  // not trivially copyable, and no serialize()
};

void takes_items(int, std::vector<opaque>) {}

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] { roam::send(0, takes_items, 1, std::vector<opaque>{}); });
}
