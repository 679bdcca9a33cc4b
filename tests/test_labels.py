"""The labels file under stress: torn lines, two writers, a killed writer, unique sessions (no widget library)."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from evalkit import EvalkitWarning, labels

pytestmark = pytest.mark.skipif(labels.fcntl is None, reason="advisory locks need fcntl (POSIX)")


def hold(path, labeller="bob"):
    """A separate process that opens a writer on ``path`` and waits; returns it once the lock is held."""
    code = textwrap.dedent(f"""
        import sys, time
        from evalkit.labels import LabelWriter
        writer = LabelWriter({str(path)!r}, labeller={labeller!r})
        print("locked", flush=True)
        time.sleep(60)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout.readline().strip() == "locked"
    return process


def test_a_second_writer_is_refused_naming_the_holder_until_it_dies(tmp_path):
    path = tmp_path / "labels.jsonl"
    other = hold(path)
    try:
        with pytest.raises(labels.LabelsLockedError) as refused:
            labels.LabelWriter(path, labeller="ann")
        message = str(refused.value)
        assert f"labeller 'bob' (process {other.pid} on {socket.gethostname()}, since 20" in message
        assert "session 20" in message and "label into a file of your own" in message
    finally:
        other.send_signal(signal.SIGKILL)  # kill -9: the operating system releases the lock
        other.wait()
    with labels.LabelWriter(path, labeller="ann") as writer:
        writer.append({"case_id": "a", "label": "PASS", "labeller": "ann"})
    assert labels.read_labels(path)["labeller"].tolist() == ["ann"]


def test_the_same_process_takes_over_and_the_old_writer_stops(tmp_path):
    path = tmp_path / "labels.jsonl"
    old = labels.LabelWriter(path, labeller="ann")
    new = labels.LabelWriter(path, labeller="ann")  # a notebook cell run again
    assert not old.open and new.open and old.session != new.session
    with pytest.raises(labels.LabelsLockedError, match="is closed"):
        old.append({"case_id": "a", "label": "PASS"})
    new.append({"case_id": "a", "label": "FAIL"})
    new.close()
    new.close()  # idempotent
    again = labels.LabelWriter(path, labeller="ann")
    assert again.open
    again.close()
    with pytest.raises(TypeError, match="annotator's name"):
        labels.LabelWriter(path, labeller="")


def test_torn_last_line_is_moved_aside_and_a_whole_one_is_finished(tmp_path):
    path = tmp_path / "labels.jsonl"
    labels.append_label(path, {"case_id": "a", "label": "PASS"})
    with path.open("a") as handle:
        handle.write('{"case_id": "b", "label": "FA')  # killed mid-write
    with pytest.warns(EvalkitWarning, match=r"labels.jsonl: the last line was cut short.*labels.jsonl.torn"):
        writer = labels.LabelWriter(path, labeller="ann")
    assert writer.torn == '{"case_id": "b", "label": "FA'
    writer.append({"case_id": "c", "label": "FAIL"})
    writer.close()
    assert labels.read_labels(path)["case_id"].tolist() == ["a", "c"]
    assert (tmp_path / "labels.jsonl.torn").read_text() == '{"case_id": "b", "label": "FA\n'
    with path.open("a") as handle:
        handle.write('{"case_id": "d", "label": "PASS"}')  # whole record, newline lost
    with labels.LabelWriter(path, labeller="ann") as writer:  # no warning: nothing is lost
        assert writer.torn is None
        writer.append({"case_id": "e", "label": "PASS"})
    assert labels.read_labels(path)["case_id"].tolist() == ["a", "c", "d", "e"]
    assert [json.loads(line)["case_id"] for line in path.read_text().splitlines()] == ["a", "c", "d", "e"]


def test_session_ids_are_unique():
    ids = {labels.new_session_id() for _ in range(1000)}
    assert len(ids) == 1000


def test_nothing_is_created_before_the_first_record_in_a_new_folder(tmp_path):
    path = tmp_path / "labels" / "new.jsonl"
    writer = labels.LabelWriter(path, labeller="ann")
    assert not path.parent.exists()  # opening a labeller in report mode writes nothing
    writer.append({"case_id": "a", "label": "PASS", "labeller": "ann"})  # creates the folder and locks the file
    second = subprocess.run([sys.executable, "-c", f"from evalkit.labels import LabelWriter; LabelWriter({str(path)!r}, "
                             "labeller='bob')"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert second.returncode != 0 and f"labeller 'ann' (process {os.getpid()}" in second.stderr
    writer.close()
