"""The two test tiers of the root conftest.py: the fast one by default, the slow one with --run-slow, a summary line
saying what was left out, and a fast-tier file over its time limit failing the run."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.base

PROJECT = '''
import pytest

def test_fast():
    pass

@pytest.mark.slow
def test_slow():
    pass

def test_takes_a_while():
    sum(i * i for i in range(3_000_000))  # processor time, which the limit counts
'''


@pytest.fixture
def project(pytester):
    pytester.makeconftest((ROOT / "conftest.py").read_text(encoding="utf-8").replace('pytest_plugins = ["pytester"]', ""))
    pytester.makeini("[pytest]\nmarkers =\n    slow: the slow tier\n    base: the base-install pass\n")
    pytester.makepyfile(test_project=PROJECT)
    return pytester


def test_the_default_is_the_fast_tier_and_says_how_to_run_the_rest(project):
    result = project.runpytest_subprocess("-n", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(["*1 slow-tier tests were not run*`pytest --run-slow` runs both tiers*"])


def test_run_slow_runs_both_tiers_and_a_marker_expression_selects_by_marker(project):
    project.runpytest_subprocess("-n", "0", "--run-slow").assert_outcomes(passed=3)
    project.runpytest_subprocess("-n", "0", "-m", "slow").assert_outcomes(passed=1, deselected=2)
    project.runpytest_subprocess("-n", "0", "test_project.py::test_slow").assert_outcomes(passed=1)


@pytest.mark.slow  # two worker processes start
def test_the_summary_line_holds_under_pytest_xdist(project):
    pytest.importorskip("xdist", reason='needs pytest-xdist, from the \'test\' extra: pip install "llm-evalkit[test]"')
    result = project.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 slow-tier tests were not run*"])


@pytest.mark.slow  # two worker processes start
def test_tests_sharing_a_costly_session_fixture_run_on_one_worker(project, monkeypatch):
    """The tests that use one of tests/conftest.py's ``SHARED_FIXTURE_GROUPS`` (notebooks run once per session, the
    report built once) run on one pytest-xdist worker under the default ``-n auto``: the workers, which parse the
    command line again, learn ``loadgroup`` from the controller and see the group marks before pytest-xdist reads
    them. (With pytest 9.2, pytest-xdist 3.8 drops every group: pytest-dev/pytest-xdist#1386.)"""
    pytest.importorskip("xdist", reason='needs pytest-xdist, from the \'test\' extra: pip install "llm-evalkit[test]"')
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # tests/conftest.py imports tests.harness
    (project.path / "tests").mkdir()
    (project.path / "tests" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    (project.path / "tests" / "test_shared.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('k', range(6))\ndef test_shared(notebook_run, k):\n    pass\n\n"
        "@pytest.mark.parametrize('k', range(6))\ndef test_alone(k):\n    pass\n")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-v", "--run-slow", "tests/test_shared.py")
    # the fixture skips its tests where the 'report' extra is absent (the base install): where they run is the point
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    workers = re.findall(r"\[(gw\d+)\][^\n]*(?:PASSED|SKIPPED) tests/test_shared.py::test_shared\[\d\]@notebooks",
                         result.stdout.str())
    assert len(workers) == 6 and len(set(workers)) == 1, result.stdout.str()


def test_a_fast_tier_file_over_its_limit_fails_the_run(project, monkeypatch):
    monkeypatch.setenv("EVALKIT_FAST_FILE_SECONDS", "0.1")
    result = project.runpytest_subprocess("-n", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_project.py: its fast-tier tests took * s of processor time, more than 0.1 s*"])
    # With --run-slow the slow tests run beside the fast ones, so their times say nothing: the check is off.
    assert project.runpytest_subprocess("-n", "0", "-p", "no:cacheprovider", "--run-slow").ret == pytest.ExitCode.OK
    monkeypatch.setenv("EVALKIT_FAST_FILE_SECONDS", "30")
    assert project.runpytest_subprocess("-n", "0", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_the_suite_runs_without_pytest_xdist(project):
    """With a plain `pip install -e . pytest` (no pytest-xdist), a test carrying an `xdist_group` marker runs: the
    marker is registered, so --strict-markers does not stop the run with INTERNALERROR."""
    project.makepyfile(test_grouped=(
        "import pytest\n\n@pytest.mark.xdist_group('notebooks')\ndef test_grouped():\n    pass\n"))
    result = project.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider", "--strict-markers",
                                          "test_grouped.py")
    result.assert_outcomes(passed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
