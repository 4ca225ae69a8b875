// Synthetic tasks (core/data/tasks.h): exact strings for fixed seeds, the quadratic
// generator's arithmetic, batching into segments, config validation, the task registry.
#include "core/data/tasks.h"
#include "core/data/tokenizer.h"
#include "core/models/stepping.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace mnemo;

namespace {

TaskConfig task_cfg(const std::string& name, int64_t segments = 1) {
  TaskConfig c;
  c.name = name;
  c.segments = segments;
  return c;
}


// Parses "x^2+3*x-4=0" style monic or scaled equations: returns {a, b, c}.
std::vector<int64_t> parse_equation(const std::string& eq) {
  std::vector<int64_t> out;
  size_t i = 0;
  auto number = [&](int64_t dflt) -> int64_t {
    int64_t sign = 1;
    if (eq[i] == '+') ++i;
    else if (eq[i] == '-') {
      sign = -1;
      ++i;
    }
    if (!std::isdigit(static_cast<unsigned char>(eq[i]))) return sign * dflt;
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(eq[i]))) v = v * 10 + (eq[i++] - '0');
    return sign * v;
  };
  out.push_back(number(1));
  if (eq[i] == '*') ++i;
  REQUIRE(eq.compare(i, 3, "x^2") == 0);
  i += 3;
  out.push_back(number(1));
  REQUIRE(eq.compare(i, 2, "*x") == 0);
  i += 2;
  out.push_back(number(0));
  REQUIRE(eq.compare(i, 2, "=0") == 0);
  return out;
}

std::vector<std::string> split_steps(const std::string& text, size_t w = 30) {
  std::vector<std::string> steps;
  for (size_t p = 0; p < text.size(); p += w) {
    std::string s = text.substr(p, w);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    steps.push_back(s);
  }
  return steps;
}

}  // namespace

TEST_CASE("tasks: exact strings for fixed seeds") {
  Task copy(task_cfg("copy"));
  Task reverse(task_cfg("reverse"));
  TaskConfig ac = task_cfg("assoc");
  Task assoc(ac);
  Task quad(task_cfg("quadratic"));
  CHECK(copy.example(Split::kTrain, 0).text() == "hhaijddiaceddibgfdbfbebh>hhaijddiaceddibgfdbfbebhhhaijddiaceddibgfdbfbebh");
  CHECK(copy.example(Split::kTest, 7).text() == "ahghhcbbbjfgjcafigjdbihh>ahghhcbbbjfgjcafigjdbihhahghhcbbbjfgjcafigjdbihh");
  CHECK(reverse.example(Split::kTrain, 0).text() == "hhaijddiaceddibgfdbfbebh>hbebfbdfgbiddecaiddjiahh");
  CHECK(assoc.example(Split::kTrain, 0).text() == "h9j3c3g8?c3");
  CHECK(assoc.example(Split::kValid, 1).text() == "f9g1e9j4?f9");
  CHECK(quad.example(Split::kTrain, 0).text() ==
        "8*x^2-1016*x+32256=0          x^2-127*x+4032=0              D=127^2-4*1*4032=1=1^2        "
        "x=(127-1)/2=63                x=(127+1)/2=64                63,64                         ");
  CHECK(copy.length() == 73);
  CHECK(reverse.length() == 49);
  CHECK(assoc.length() == 11);
  CHECK(quad.length() == 180);
}

TEST_CASE("tasks: deterministic, split-dependent, and the target is what the task says") {
  Task copy(task_cfg("copy"));
  auto a = copy.example(Split::kTrain, 5), b = copy.example(Split::kTrain, 5);
  CHECK(a.ids == b.ids);
  CHECK(copy.example(Split::kTrain, 5).ids != copy.example(Split::kValid, 5).ids);
  CHECK(copy.example(Split::kTrain, 5).ids != copy.example(Split::kTrain, 6).ids);
  // index wraps at the split size
  CHECK(copy.example(Split::kTrain, 5).ids == copy.example(Split::kTrain, 5 + 100000).ids);
  TaskConfig other = task_cfg("copy");
  other.seed = 2;
  CHECK(Task(other).example(Split::kTrain, 5).ids != a.ids);
  for (int i = 0; i < 20; ++i) {
    auto c = copy.example(Split::kTest, i).text();
    const std::string src = c.substr(0, 24);
    CHECK(c == src + ">" + src + src);
    auto r = Task(task_cfg("reverse")).example(Split::kTest, i).text();
    const std::string rsrc = r.substr(0, 24);
    CHECK(r == rsrc + ">" + std::string(rsrc.rbegin(), rsrc.rend()));
    for (char ch : src) CHECK((ch >= 'a' && ch < 'a' + 10));
    auto as = Task(task_cfg("assoc")).example(Split::kTest, i).text();
    REQUIRE(as.size() == 11);
    CHECK(as[8] == '?');
    const char key = as[9];
    int found = 0;
    for (int p = 0; p < 4; ++p)
      if (as[static_cast<size_t>(2 * p)] == key) {
        ++found;
        CHECK(as[10] == as[static_cast<size_t>(2 * p + 1)]);
      }
    CHECK(found == 1);  // keys are distinct
  }
  auto ex = copy.example(Split::kTrain, 0);
  for (size_t g = 0; g < ex.ids.size(); ++g) CHECK(ex.target[g] == (g >= 25 ? 1 : 0));
}

TEST_CASE("quadratic: the paper's example, and every generated solution checks out") {
  auto s = quadratic_steps(true, 6, 92, 0, 0, 4);
  CHECK(s == std::vector<std::string>{"4*x^2-392*x+2208=0", "x^2-98*x+552=0", "D=98^2-4*1*552=7396=86^2",
                                      "x=(98-86)/2=6", "x=(98+86)/2=92", "6,92"});
  auto n = quadratic_steps(false, 0, 0, 4, 13, 1);
  CHECK(n == std::vector<std::string>{"x^2+4*x+13=0", "x^2+4*x+13=0", "D=4^2-4*1*13=-36<0", "", "", "none"});

  Task quad(task_cfg("quadratic"));
  int none = 0;
  const int count = 1000;
  for (int i = 0; i < count; ++i) {
    auto ex = quad.example(Split::kTrain, i);
    auto text = ex.text();
    REQUIRE(text.size() == 180);
    auto st = split_steps(text);
    REQUIRE(st.size() == 6);
    auto eq = parse_equation(st[0]);
    auto mon = parse_equation(st[1]);
    REQUIRE(mon[0] == 1);
    const int64_t alpha = eq[0];
    CHECK(alpha >= 1);
    CHECK(alpha <= 10);
    CHECK(eq[1] == alpha * mon[1]);
    CHECK(eq[2] == alpha * mon[2]);
    const int64_t b = mon[1], c = mon[2], d = b * b - 4 * c;
    std::ostringstream ds;
    ds << "D=" << std::llabs(b) << "^2-4*1*" << c << "=" << d;
    CHECK(st[2].rfind(ds.str(), 0) == 0);
    if (d < 0) {
      ++none;
      CHECK(st[2] == ds.str() + "<0");
      CHECK(st[5] == "none");
      continue;
    }
    int64_t x1 = 0, x2 = 0;
    char comma = 0;
    std::istringstream ans(st[5]);
    ans >> x1 >> comma >> x2;
    CHECK(comma == ',');
    CHECK(x1 <= x2);
    CHECK(x1 >= -100);
    CHECK(x2 <= 100);
    CHECK(x1 * x1 + b * x1 + c == 0);
    CHECK(x2 * x2 + b * x2 + c == 0);
    CHECK((x1 - x2) * (x1 - x2) == d);
    CHECK(st[3].substr(st[3].rfind('=') + 1) == std::to_string(x1));
    CHECK(st[4].substr(st[4].rfind('=') + 1) == std::to_string(x2));
    // target: everything after the equation step; scored: the answer step only
    for (size_t g = 0; g < 180; ++g) {
      CHECK(ex.target[g] == (g >= 30 ? 1 : 0));
      CHECK(ex.scored[g] == (g >= 150 ? 1 : 0));
    }
  }
  CHECK(none > count * 15 / 100);
  CHECK(none < count * 25 / 100);
}

TEST_CASE("tasks: batches split input + target into segments, targets = next token on target positions") {
  Task copy(task_cfg("copy", 4));  // 73 tokens -> 4 segments of 19 (3 padding)
  CHECK(copy.segment_len() == 19);
  auto tb = copy.batch(Split::kTrain, {0, 1});
  REQUIRE(tb.segments.size() == 4);
  auto ex = copy.example(Split::kTrain, 1);
  for (int64_t t = 0; t < 4; ++t) {
    const auto& s = tb.segments[static_cast<size_t>(t)];
    CHECK(s.tokens.sizes() == torch::IntArrayRef({2, 19}));
    for (int64_t j = 0; j < 19; ++j) {
      const int64_t g = t * 19 + j;
      const bool real = g < 73;
      CHECK(s.valid[1][j].item<bool>() == real);
      CHECK(s.tokens[1][j].item<int64_t>() == (real ? ex.ids[static_cast<size_t>(g)] : ByteTokenizer::kPad));
      const bool has_target = g + 1 < 73 && g + 1 >= 25;
      CHECK(s.target_valid[1][j].item<bool>() == has_target);
      if (has_target) CHECK(s.targets[1][j].item<int64_t>() == ex.ids[static_cast<size_t>(g + 1)]);
      CHECK(tb.scored[static_cast<size_t>(t)][1][j].item<bool>() == has_target);
    }
  }
  CHECK(tb.segments[0].target_valid.sum().item<int64_t>() == 0);  // the first segment is all input
  CHECK(tb.examples == 2);
}

TEST_CASE("tasks: bad config fields are rejected by name") {
  auto rejects = [](const char* json, const char* needle) {
    try {
      TaskConfig::from_json(nlohmann::json::parse(json));
      FAIL("accepted " << json);
    } catch (const ConfigError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  rejects(R"({"name": "sort"})", "task.name");
  rejects(R"({"name": "copy", "source_len": 0})", "task.source_len");
  rejects(R"({"name": "copy", "symbols": 27})", "task.symbols");
  rejects(R"({"name": "assoc", "pairs": 12, "symbols": 10})", "task.pairs");
  rejects(R"({"name": "copy", "segments": "2"})", "task.segments");
  rejects(R"({"name": "copy", "colour": 1})", "task.colour");
  rejects(R"({"name": "copy", "seed": -1})", "task.seed");
  CHECK_THROWS_AS(Task(task_cfg("assoc", 5)), ConfigError);   // 11 tokens in 5 segments of 3: the last is empty
  CHECK_THROWS_AS(Task(task_cfg("assoc", 12)), ConfigError);  // more segments than tokens
  auto c = TaskConfig::from_json(nlohmann::json::parse(R"({"name": "reverse", "source_len": 5, "segments": 2})"));
  CHECK(TaskConfig::from_json(c.to_json()).to_json() == c.to_json());
  CHECK(parse_split("valid") == Split::kValid);
  CHECK_THROWS_AS(parse_split("dev"), ConfigError);
}

TEST_CASE("stepping: a task's segment length from its fields equals the built task's - and a model runs as it was trained") {
  // The synthetic tasks, built (they generate examples on demand).
  for (const char* name : {"copy", "reverse", "assoc", "quadratic"}) {
    for (int64_t segs : {1, 2, 6}) {
      CAPTURE(name);
      CAPTURE(segs);
      const nlohmann::json j = task_cfg(name, segs).to_json();
      CHECK(task_segment_len(j) == make_task(j)->segment_len());
      CHECK(task_segment_len(j) > 0);
    }
  }
  // The zoo's rmt-copy task: 24 symbols, '>' and two copies = 73 tokens in 6 segments of 13.
  nlohmann::json copy = task_cfg("copy", 6).to_json();
  CHECK(task_segment_len(copy) == 13);
  const nlohmann::json recall = {{"name", "copy-recall"}, {"segments", 5}, {"source_len", 8}, {"symbols", 10}, {"seed", 1}};
  CHECK(task_segment_len(recall) == make_task(recall)->segment_len());
  CHECK(task_segment_len(recall) == 9);
  // Byte-window tasks from their fields (building one reads its corpus): L = length / segments.
  const std::string dir = test::temp_dir("stepping-text");
  test::write_file(dir + "/a.txt", std::string(40000, 'a'));
  const nlohmann::json text = {{"name", "text"}, {"corpus", dir}, {"length", 512}, {"segments", 16}, {"seed", 1}};
  CHECK(task_segment_len(text) == 32);
  CHECK(task_segment_len(text) == make_task(text)->segment_len());
  CHECK(task_segment_len({{"name", "moby-dick"}, {"length", 256}, {"segments", 4}}) == 64);
  CHECK(task_segment_len({{"name", "mnist"}, {"segments", 8}}) == 98);  // ceil(784 / 8)
  CHECK(task_segment_len({{"name", "mnist"}, {"segments", 3}}) == 262);  // ceil(784 / 3)
  CHECK(task_segment_len({{"name", "qa"}, {"chunk_len", 32}}) == 32);
  // Unknown: 0, never a throw.
  CHECK(task_segment_len({{"name", "text"}, {"length", 100}, {"segments", 3}}) == 0);
  CHECK(task_segment_len({{"name", "no-such-task"}}) == 0);
  CHECK(task_segment_len(nlohmann::json()) == 0);
  CHECK(task_segment_len({{"name", "copy"}, {"segments", "six"}}) == 0);

  ModelConfig m;
  m.model = "rmt";
  m.segment_len = 37;
  Stepping s = choose_stepping(m, 13);
  CHECK(s.segment_len == 13);
  CHECK(s.as_trained());
  CHECK(s.describe() == "segments of 13 tokens, as trained");
  CHECK(s.warning().empty());
  s = choose_stepping(m, 13, 37, "--segment-len");
  CHECK(s.segment_len == 37);
  CHECK(s.requested);
  CHECK_FALSE(s.as_trained());
  CHECK(s.describe() == "segments of 37 tokens (trained on segments of 13)");
  CHECK(s.warning().find("trained on segments of 13 tokens and is stepped in segments of 37") != std::string::npos);
  CHECK(choose_stepping(m, 0).segment_len == 37);   // nothing recorded: the model's own
  CHECK(choose_stepping(m, 0).describe() == "segments of 37 tokens");
  CHECK(choose_stepping(m, 50).segment_len == 37);  // trained longer than it takes: its own
  CHECK_THROWS_WITH_AS(choose_stepping(m, 13, 38, "--segment-len"),
                       doctest::Contains("--segment-len 38 is out of range 1..37: the rmt model takes segments of at most 37"),
                       ConfigError);
  CHECK_THROWS_AS(choose_stepping(m, 13, -1), ConfigError);
}

namespace {
// The names in the `task.name` row of docs/models.md#config: its backquoted words before "or a kind".
std::vector<std::string> documented_task_names() {
  std::ifstream f(std::string(MNEMO_SOURCE_DIR) + "/docs/models.md");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("| `task.name` |", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, '|');) cells.push_back(c);
    REQUIRE(cells.size() > 4);  // "", name, type, default, values, ...
    const std::string values = cells[4].substr(0, cells[4].find("or a kind"));
    std::vector<std::string> names;
    for (size_t at = values.find('`'); at != std::string::npos; at = values.find('`', values.find('`', at + 1) + 1))
      names.push_back(values.substr(at + 1, values.find('`', at + 1) - at - 1));
    return names;
  }
  return {};
}
}  // namespace

TEST_CASE("task registry: every built-in name builds its task, and an unknown name's message lists exactly the registry's names") {
  const std::vector<std::string> builtin = {"copy",  "reverse",     "assoc",        "quadratic", "mnist",
                                            "moby-dick", "text", "copy-recall", "assoc-recall", "qa"};
  std::vector<std::string> names = task_names();
  // Other tests of this process may have registered kinds: they follow the built-in ones.
  REQUIRE(names.size() >= builtin.size());
  CHECK(std::vector<std::string>(names.begin(), names.begin() + builtin.size()) == builtin);
  CHECK(documented_task_names() == builtin);
  for (const std::string& name : builtin) {
    CAPTURE(name);
    nlohmann::json j = {{"name", name}};
    if (name == "text") j["corpus"] = "sotu";
    const TaskKind* kind = find_task_kind(name);
    REQUIRE(kind);
    try {
      const auto task = make_task(j);
      CHECK(task->name() == name);
      CHECK(task->to_json()["name"] == name);
      CHECK(task->segment_len() > 0);
    } catch (const ConfigError& e) {
      // A data set that is not in this machine's cache: the task was found and says what it lacks.
      CAPTURE(e.what());
      CHECK(kind->data == TaskData::kDataSet);
      CHECK(std::string(e.what()).find("is not a task") == std::string::npos);
      MESSAGE("data set not available here: " << e.what());
    }
  }
  // What each kind reads: the synthetic and recall tasks generate their episodes (the scored
  // positions of a probe come from them), the data sets read data.
  for (const char* g : {"copy", "reverse", "assoc", "quadratic", "copy-recall", "assoc-recall"})
    CHECK(find_task_kind(g)->data == TaskData::kGenerated);
  for (const char* d : {"mnist", "moby-dick", "text"}) CHECK(find_task_kind(d)->data == TaskData::kDataSet);
  CHECK(find_task_kind("qa")->data == TaskData::kOther);
  CHECK(find_task_kind("nope") == nullptr);

  // A registered kind joins the registry once, after the others: it builds, and is listed.
  auto maker = [](const nlohmann::json& j) -> std::shared_ptr<TaskSource> {
    TaskConfig c;
    c.name = "reverse";
    return std::make_shared<Task>(c);
  };
  register_task_kind("registry-probe", maker);
  register_task_kind("registry-probe", maker);  // replaced, not listed twice
  names = task_names();
  CHECK(std::count(names.begin(), names.end(), "registry-probe") == 1);
  CHECK(names.back() == "registry-probe");
  CHECK(make_task({{"name", "registry-probe"}})->name() == "reverse");

  std::string message;
  try {
    make_task({{"name", "nope"}});
  } catch (const ConfigError& e) {
    message = e.what();
    CHECK(e.field() == "task.name");
  }
  const std::string head = "known: ";
  REQUIRE(message.find(head) != std::string::npos);
  std::vector<std::string> listed;
  std::stringstream rest(message.substr(message.find(head) + head.size()));
  for (std::string n; std::getline(rest, n, ',');) listed.push_back(n.substr(n.find_first_not_of(' ')));
  CHECK(listed == names);
  CHECK(message.find("'nope' is not a task") != std::string::npos);
}
