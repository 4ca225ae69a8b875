"""Times a Python test file's cases one by one (docs/benchmarks.md, "where the suite's time goes").

    python3 python/tests/time_cases.py python/tests/test_models.py [NAME_PART...]

Prints the module's import time, each case's wall seconds (only the cases whose id contains one
of NAME_PART, when given), the total, and any failure. Run it with the environment that
python/CMakeLists.txt gives the tests (MNEMOSCOPE_BIN and the tools), under /usr/bin/time for
CPU seconds. Not a test: CTest does not run it."""

import importlib.util
import os
import sys
import time
import unittest


def main(argv):
    if len(argv) < 2 or not os.path.isfile(argv[1]):
        print("usage: time_cases.py TEST_FILE.py [NAME_PART...]", file=sys.stderr)
        return 2
    path = argv[1]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("timed_tests", path)
    mod = importlib.util.module_from_spec(spec)
    t0 = time.time()
    spec.loader.exec_module(mod)
    print("import %.2f s" % (time.time() - t0))

    class Timed(unittest.TextTestResult):
        def startTest(self, test):
            self._t0 = time.time()
            super().startTest(test)

        def stopTest(self, test):
            print("  %7.2f s  %s" % (time.time() - self._t0, test.id()), flush=True)
            super().stopTest(test)

    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    if len(argv) > 2:
        suite = unittest.TestSuite(t for s in suite for t in s if any(k in t.id() for k in argv[2:]))
    t0 = time.time()
    with open(os.devnull, "w") as quiet:
        r = unittest.TextTestRunner(resultclass=Timed, verbosity=0, stream=quiet).run(suite)
    print("total %.2f s, %d run, %d failures, %d errors, %d skipped"
          % (time.time() - t0, r.testsRun, len(r.failures), len(r.errors), len(r.skipped)))
    for _, trace in r.failures + r.errors:
        print(trace)
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
