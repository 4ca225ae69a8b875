#include "app/cli.h"

int main(int argc, char** argv) { return mnemo::app::run_cli(argc, argv); }
