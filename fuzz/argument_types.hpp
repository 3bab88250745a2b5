// The user type among the arguments the `arguments` target decodes: shared by the target
// and write_seeds.cpp, which encodes its seeds.
#pragma once

#include <string>
#include <vector>

namespace roam_fuzz {

struct record {
  int id = 0;
  std::string name;
  std::vector<double> values;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id, name, values);
  }
};

}  // namespace roam_fuzz
