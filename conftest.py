"""The two test tiers, and doctest collection with optional extras.

``pytest`` runs the fast tier: unit tests, doctests and the fast coverage subset. The slow tier (notebooks, the
documentation build, the browser tests, the wheel build, the slow coverage designs and the real data sets: every
test marked ``slow``) runs with ``pytest --run-slow``, which runs both tiers, as CI does. A ``-m`` expression of
your own selects by marker instead (``pytest -m slow`` runs the slow tier alone).

A fast-tier test file whose tests take more than ``FAST_FILE_SECONDS`` in all fails a run of the fast tier: a slow test
cannot creep into it unnoticed (mark it ``slow``, or make it faster). The time counted is the processor time of the
test process and of the processes it started and waited for (a kernel, a server), which a busy machine does not
inflate the way it inflates the wall clock. The check is off with ``--run-slow``; CI runs the fast tier on its own first.

A module whose optional extra is not installed is skipped with the extra named; the unit tests in tests/ skip
themselves the same way (tests/_extras.py); this covers the doctests that ``--doctest-modules`` collects from
evalkit/ itself.
"""

import collections
import importlib.util
import os

import pytest

# The scripts that made the fixture logs run with the tools installed, not with evalkit's tests.
collect_ignore_glob = ["tests/data/*"]
pytest_plugins = ["pytester"]  # tests/test_tiers.py runs pytest on small projects with these rules

#: The most processor time a fast-tier test file may take, setup and teardown included (seconds;
#: EVALKIT_FAST_FILE_SECONDS overrides).
FAST_FILE_SECONDS = float(os.environ.get("EVALKIT_FAST_FILE_SECONDS", 60))
SLOW_TIER = "notebooks, the docs build, the browser tests, the wheel build, the slow coverage designs and the real data sets"

# module file, or package folder, of evalkit -> (what it imports, the extra that installs it)
OPTIONAL_MODULES = {
    "widgets": ("ipywidgets", "widgets"),
    "report.py": ("nbclient", "report"),
}


# doctests (by name prefix: a module or an object in it) that need an extra their module does not
OPTIONAL_DOCTESTS = {
    "evalkit.batch.": ("openai", "openai"),
    "evalkit.pairwise.length_bias": ("statsmodels", "stats"),
    "evalkit.logs.read_inspect": ("zstandard", "logs"),
}


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help=f"run the slow tier as well ({SLOW_TIER}); CI runs both tiers")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Both cores by default: ``-n auto`` with pytest-xdist installed (the ``test`` extra), unless ``-n`` is given
    (``-n 0`` runs in one process); tests that share a server, a port or a folder carry one ``xdist_group``."""
    if hasattr(config, "workerinput"):
        # A worker parses the command line again, where ``--dist`` is absent: it learns the mode from its controller
        # (``pytest_configure_node``), or it would not add the group suffixes that ``loadgroup`` schedules by.
        config.option.loadgroup = config.option.loadgroup or config.workerinput.get("evalkit_loadgroup", False)
        return
    if config.option.collectonly:
        return
    if getattr(config.option, "numprocesses", False) is None:
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_configure_node(node):
    node.workerinput["evalkit_loadgroup"] = node.config.option.dist == "loadgroup"


def pytest_configure(config):
    global _RUN_SLOW
    _RUN_SLOW = bool(config.getoption("--run-slow"))
    if not config.pluginmanager.hasplugin("xdist"):  # `pip install -e . pytest`: the marker tests carry still exists
        config.addinivalue_line("markers", "xdist_group(name): tests that share a server, a port or a folder run on "
                                           "one pytest-xdist worker (nothing without pytest-xdist)")
    config._evalkit_slow_deselected = 0


@pytest.hookimpl(trylast=True)  # after tests/conftest.py has marked the real-data tests slow
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith("evalkit/"):
            item.add_marker(pytest.mark.base)  # a doctest runs, or skips naming its extra, in either install
        needed = next((extra for prefix, extra in OPTIONAL_DOCTESTS.items() if item.name.startswith(prefix)), None)
        if needed and importlib.util.find_spec(needed[0]) is None:
            item.add_marker(pytest.mark.skip(reason=f"this doctest needs {needed[0]}, from the '{needed[1]}' extra: "
                                                    f"pip install \"llm-evalkit[{needed[1]}]\""))
    named = any("::" in arg for arg in config.args)  # a test asked for by its id runs, whatever its tier
    if config.getoption("--run-slow") or config.getoption("markexpr") or named:
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config._evalkit_slow_deselected = len(slow)
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the controller prints the summary
            config.workeroutput["evalkit_slow_deselected"] = len(slow)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: every worker collects the same tests, so any one's count of deselected slow tests is the count."""
    count = getattr(node, "workeroutput", {}).get("evalkit_slow_deselected", 0)
    node.config._evalkit_slow_deselected = max(node.config._evalkit_slow_deselected, count)


def _cpu_seconds() -> float:
    """Processor time of this process and of the child processes it has waited for."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's processor time rides on its report (pytest-xdist sends user_properties to the controller)."""
    report = yield
    start = getattr(item, "_evalkit_cpu_start", None)
    if start is not None:
        report.user_properties.append(("cpu_seconds", _cpu_seconds() - start))
    item._evalkit_cpu_start = _cpu_seconds()  # the next phase starts now
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._evalkit_cpu_start = _cpu_seconds()


def pytest_runtest_logreport(report):
    """Add up each fast-tier file's processor time (on the controller, under pytest-xdist too)."""
    if "slow" not in report.keywords and not _RUN_SLOW:
        report_file = report.nodeid.split("::", 1)[0]
        _FILE_SECONDS[report_file] += dict(report.user_properties).get("cpu_seconds", 0.0)


_FILE_SECONDS = collections.Counter()
_RUN_SLOW = False


def _too_slow() -> list[tuple[str, float]]:
    return [(name, seconds) for name, seconds in _FILE_SECONDS.most_common() if seconds > FAST_FILE_SECONDS]


def pytest_sessionfinish(session, exitstatus):
    if _too_slow() and exitstatus == pytest.ExitCode.OK and not hasattr(session.config, "workerinput"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    write = terminalreporter.write_line
    for name, seconds in _too_slow():
        terminalreporter.section("fast tier over its time limit", sep="-", red=True, bold=True)
        write(f"{name}: its fast-tier tests took {seconds:.0f} s of processor time, more than {FAST_FILE_SECONDS:g} s: mark the slow "
              "ones `@pytest.mark.slow` (they then run with --run-slow) or make them faster.", red=True)
    if config._evalkit_slow_deselected:
        write(f"{config._evalkit_slow_deselected} slow-tier tests were not run ({SLOW_TIER}): "
              "`pytest --run-slow` runs both tiers, as CI does.", yellow=True)


def _optional(path) -> tuple[str, str] | None:
    """(what it imports, its extra) for a file of an optional module of evalkit or of an optional package's folder."""
    if path.parent.name == "evalkit" and path.name in OPTIONAL_MODULES:
        return OPTIONAL_MODULES[path.name]
    if path.parent.parent.name == "evalkit" and path.parent.name in OPTIONAL_MODULES:
        return OPTIONAL_MODULES[path.parent.name]
    return None


class _NeedsExtra(pytest.File):
    def collect(self):
        module, extra = _optional(self.path)
        where = self.path.relative_to(self.path.parents[1 if self.path.parent.name == "evalkit" else 2])
        pytest.skip(f"doctests of {where} need {module}, from the '{extra}' extra: "
                    f"pip install \"llm-evalkit[{extra}]\"")


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    collected = yield
    needs = _optional(file_path) if file_path.suffix == ".py" else None
    if needs is not None:
        module, _ = needs
        if importlib.util.find_spec(module) is None:
            return [_NeedsExtra.from_parent(parent, path=file_path)]
    return collected
