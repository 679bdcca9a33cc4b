"""The two test tiers of the root conftest.py: the fast one by default, the slow one with --run-slow, a summary line
saying what was left out, and a fast-tier file over its time limit failing the run."""

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
