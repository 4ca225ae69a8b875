// cli_serve: `mnemoscope` command lines answered by one process, for the Python tests that run
// dozens of them (python/tests/test_models.py, test_models_mtn.py, test_cross_language.py:
// `step`, `eval`, `export-weights` per model family). Each process of the program spends about
// 0.8 CPU s starting LibTorch before main; this one starts it once.
//
//   cli_serve    one request per line on stdin, a JSON array of the arguments after `mnemoscope`
//                (["--threads", "1", "eval", "--checkpoint", "w.safetensors", ...]), answered with
//                one line {"code": exit status, "out": stdout, "err": stderr} on stdout, until
//                stdin ends.
//
// Each request runs what build/mnemoscope's main runs (app/main.cpp): app::run_cli with a new
// command table (no option value carries over from an earlier request), its two streams
// captured. main adds only the xvfb-run hook, which these commands do not reach. Anything a
// command writes to the process's own stdout goes to stderr (fd 1 is pointed there), so the
// answers stay one per line, and a command reads an empty stdin (fd 0 is /dev/null; the
// requests are read from a copy of the original).
#include "app/cli/cli.h"
#include "app/commands/commands.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using nlohmann::json;

int main() {
  const int answers = ::dup(1), requests = ::dup(0);
  FILE* to_client = answers >= 0 ? ::fdopen(answers, "w") : nullptr;
  FILE* from_client = requests >= 0 ? ::fdopen(requests, "r") : nullptr;
  const int null_in = ::open("/dev/null", O_RDONLY);
  if (!to_client || !from_client || null_in < 0 || ::dup2(2, 1) < 0 || ::dup2(null_in, 0) < 0) {
    std::cerr << "cli_serve: cannot set up its input and output\n";
    return 2;
  }
  ::close(null_in);
  char* buf = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&buf, &cap, from_client)) > 0) {
    const std::string line(buf, static_cast<size_t>(buf[n - 1] == '\n' ? n - 1 : n));
    const json req = json::parse(line, nullptr, false);
    std::vector<std::string> args{"mnemoscope"};
    if (req.is_array())
      for (const auto& a : req)
        if (a.is_string()) args.push_back(a.get<std::string>());
    if (!req.is_array() || args.size() != req.size() + 1) {
      std::cerr << "cli_serve: a request is a JSON array of strings (the arguments after mnemoscope); got " << line
                << "\n";
      return 2;
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::ostringstream out, err;
    mnemo::app::CommandTable table = mnemo::app::make_command_table();
    const int code = mnemo::app::run_cli(static_cast<int>(args.size()), argv.data(), table, out, err);
    const std::string answer =
        json{{"code", code}, {"out", out.str()}, {"err", err.str()}}.dump(-1, ' ', false, json::error_handler_t::replace);
    std::fputs(answer.c_str(), to_client);
    std::fputc('\n', to_client);
    std::fflush(to_client);
  }
  std::free(buf);
  return 0;
}
