"""The labels file under stress: torn lines, two writers, a killed writer, unique sessions (no widget library)."""

import errno
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


# ------------------------------------------------------------------ every append repairs, a failed write leaves no tear
def test_append_label_after_a_torn_tail_moves_the_fragment_aside(tmp_path):
    path = tmp_path / "labels.jsonl"
    labels.append_label(path, {"case_id": "a", "label": "PASS"})
    with path.open("a") as handle:
        handle.write('{"case_id": "b", "lab')  # a process killed mid-write
    with pytest.warns(EvalkitWarning, match="cut short by an interrupted write"):
        labels.append_label(path, {"case_id": "c", "label": "FAIL"})
    assert labels.read_labels(path)["case_id"].tolist() == ["a", "c"]  # the new record is not glued to the fragment
    assert (tmp_path / "labels.jsonl.torn").read_text() == '{"case_id": "b", "lab\n'


def test_an_open_writer_repairs_a_tail_torn_after_it_opened(tmp_path):
    path = tmp_path / "labels.jsonl"
    writer = labels.LabelWriter(path, labeller="ann")
    writer.append({"case_id": "a", "label": "PASS"})
    with path.open("a") as handle:
        handle.write('{"case_id": "b", "lab')
    with pytest.warns(EvalkitWarning, match="cut short"):
        writer.append({"case_id": "c", "label": "FAIL"})
    writer.close()
    assert labels.read_labels(path)["case_id"].tolist() == ["a", "c"]


class _DiskFull:
    """A raw file object that writes ``room`` bytes in all, then fails with ENOSPC (a disk filling up mid-record)."""

    def __init__(self, handle, room):
        self._handle, self.room = handle, room

    def write(self, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self._handle.write(bytes(data[:self.room]))
        self.room -= n
        return n

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_a_disk_full_mid_record_leaves_the_file_readable_and_the_writer_appends_again(tmp_path, monkeypatch):
    path = tmp_path / "labels.jsonl"
    writer = labels.LabelWriter(path, labeller="ann")
    for i in range(22):
        writer.append({"case_id": f"c{i}", "label": "PASS", "labeller": "ann"})
    size = path.stat().st_size
    real_open = open
    monkeypatch.setattr(labels, "open", lambda *a, **k: _DiskFull(real_open(*a, **k), room=17), raising=False)
    with pytest.raises(OSError, match="not saved") as failed:
        writer.append({"case_id": "c22", "label": "FAIL", "labeller": "ann"})
    assert failed.value.errno == errno.ENOSPC
    assert path.stat().st_size == size  # the 17 bytes of the half-written record are gone
    assert len(labels.read_labels(path)) == 22
    monkeypatch.undo()  # space again: the same open writer appends on a fresh line
    writer.append({"case_id": "c22", "label": "FAIL", "labeller": "ann"})
    writer.close()
    assert labels.read_labels(path)["case_id"].tolist() == [f"c{i}" for i in range(23)]
    assert not (tmp_path / "labels.jsonl.torn").exists()


@pytest.mark.slow
def test_a_real_full_file_system(tmp_path):
    """A 16 KiB tmpfs filled to the last byte: every acknowledged label stays readable, the writer resumes."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root and CAP_SYS_ADMIN")
    try:
        filler = mount / "filler"
        filler.write_bytes(b"x" * 8192)  # deleted later to make room again
        path = mount / "labels.jsonl"
        writer = labels.LabelWriter(path, labeller="ann")
        saved, refused = 0, 0
        for i in range(2000):
            try:
                writer.append({"case_id": f"case-{i:04d}", "label": "PASS", "labeller": "ann", "note": "x" * (i % 50)})
                saved += 1
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                refused += 1
                if refused == 5:
                    break
        assert refused == 5 and saved > 20
        assert len(labels.read_labels(path)) == saved and path.read_bytes().endswith(b"\n")
        filler.unlink()
        writer.append({"case_id": "last", "label": "FAIL", "labeller": "ann"})
        table = labels.read_labels(path)
        assert len(table) == saved + 1 and table["case_id"].iloc[-1] == "last"
    finally:
        if "writer" in locals():
            writer.close()  # releases the lock file, so the file system can be unmounted
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_lock_is_taken_on_the_resolved_path(tmp_path):
    path = tmp_path / "labels.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    other = hold(path)
    try:
        with pytest.raises(labels.LabelsLockedError, match="labeller 'bob'"):
            labels.LabelWriter(link, labeller="ann")
        with pytest.raises(labels.LabelsLockedError, match="labeller 'bob'"):
            labels.append_label(link, {"case_id": "a", "label": "PASS"})
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    other = hold(link)
    try:
        with pytest.raises(labels.LabelsLockedError, match="labeller 'bob'"):
            labels.LabelWriter(path, labeller="ann")
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()


# ------------------------------------------------------------------ annotators from several files
def test_two_files_under_one_labeller_name_are_refused(tmp_path):
    from evalkit import agreement

    for file, who in (("a.jsonl", "anonymous"), ("b.jsonl", "anonymous"), ("c.jsonl", "cy")):
        for i, label in enumerate(("PASS", "FAIL", "PASS")):
            labels.append_label(tmp_path / file, {"case_id": f"c{i}", "label": label, "labeller": who, "mode": "label"})
    with pytest.raises(ValueError, match=r"a.jsonl and .*b.jsonl both hold labels by labeller 'anonymous'.*merged"):
        agreement.ratings_from_labels([tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"])
    with pytest.raises(ValueError, match="both hold labels by labeller 'anonymous'"):
        agreement.krippendorff_alpha([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    ratings = agreement.ratings_from_labels([tmp_path / "a.jsonl", tmp_path / "c.jsonl"])
    assert sorted(ratings["annotator"].unique()) == ["anonymous", "cy"] and len(ratings) == 6


def test_label_records_without_a_labeller_name_are_refused(tmp_path):
    from evalkit import agreement

    labels.append_label(tmp_path / "a.jsonl", {"case_id": "c1", "label": "PASS", "labeller": "ann", "mode": "label"})
    labels.append_label(tmp_path / "b.jsonl", {"case_id": "c1", "label": "FAIL", "mode": "label"})
    with pytest.raises(ValueError, match=r"b.jsonl: 1 label record\(s\) name no labeller \(e.g. case 'c1'\)"):
        agreement.ratings_from_labels([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    records = labels.read_labels([tmp_path / "a.jsonl"]).assign(labeller=" ")
    with pytest.raises(ValueError, match="`labels`: 1 label record"):
        agreement.ratings_from_labels(records)
