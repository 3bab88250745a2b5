// roam-settings: prints every setting of every layer of this build of roam (the table
// --roam-help prints in any roam program, here with all layers linked), for users and for
// tools/settings_table.py, which keeps the README's table of settings true.
#include <roam/coll/coll_settings.hpp>
#include <roam/gas/gas_settings.hpp>
#include <roam/hetero_mobile.hpp>

#include <iostream>

int main() {
  // Referencing the heterogeneous framework's, the collectives' and global memory's settings
  // links (and registers) them.
  (void)roam::hetero_options::registration();
  (void)roam::coll::coll_settings::registration();
  (void)roam::gas::gas_settings::registration();
  std::cout << roam::config::help_text();
  return 0;
}
