#include "app/cli/cli.h"
#include "app/commands/commands.h"

#include <iostream>

int main(int argc, char** argv) {
  mnemo::app::CommandTable table = mnemo::app::make_command_table();
  return mnemo::app::run_cli(argc, argv, table, std::cout, std::cerr);
}
