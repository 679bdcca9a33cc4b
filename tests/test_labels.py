"""The labels file under stress: torn lines, two writers, a killed writer, unique sessions (no widget library)."""

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from evalkit import EvalkitWarning, labels

pytestmark = pytest.mark.skipif(labels.fcntl is None, reason="advisory locks need fcntl (POSIX)")


def hold(path, labeller="bob", seconds=60):
    """A separate process that opens a writer on ``path`` and holds it ``seconds``; returns it once the lock is held."""
    code = textwrap.dedent(f"""
        import sys, time
        from evalkit.labels import LabelWriter
        writer = LabelWriter({str(path)!r}, labeller={labeller!r})
        print("locked", flush=True)
        time.sleep({seconds})
        writer.close()
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
            labels.LabelWriter(path, labeller="ann", wait=0)
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
                             "labeller='bob', wait=0)"], capture_output=True, text=True,
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
            labels.LabelWriter(link, labeller="ann", wait=0)
        with pytest.raises(labels.LabelsLockedError, match="labeller 'bob'"):
            labels.append_label(link, {"case_id": "a", "label": "PASS"}, wait=0)
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    other = hold(link)
    try:
        with pytest.raises(labels.LabelsLockedError, match="labeller 'bob'"):
            labels.LabelWriter(path, labeller="ann", wait=0)
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


# ------------------------------------------------------------------ two processes appending at once
APPENDER = """
import json, sys
from evalkit.labels import LabelsLockedError, append_label
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # both start together
refused = 0
for i in range(n):
    try:
        append_label(path, {"case_id": f"{who}-{i:04d}", "label": "PASS", "labeller": who, "mode": "label",
                            "note": "x" * (i % 97)})
    except LabelsLockedError:
        refused += 1
print(json.dumps({"refused": refused}), flush=True)
"""


def test_two_processes_appending_at_once_wait_for_the_lock_and_lose_nothing(tmp_path):
    """Two processes append 1,000 labels each to one file at the same time: none refused, none lost, none torn."""
    path, n = tmp_path / "labels.jsonl", 1000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), who, str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for who in ("ann", "bob")]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    refused = [json.loads(proc.communicate(timeout=300)[0].strip().splitlines()[-1])["refused"] for proc in procs]
    assert refused == [0, 0]
    records = labels.read_labels(path)
    for who in ("ann", "bob"):  # every append is there once, in its writer's order
        assert records.loc[records["labeller"] == who, "case_id"].tolist() == [f"{who}-{i:04d}" for i in range(n)]
    assert len(records) == 2 * n and not (tmp_path / "labels.jsonl.torn").exists()
    assert all(json.loads(line)["case_id"] for line in path.read_text().splitlines())  # no line glued to another


def test_a_lock_is_waited_for_then_refused_after_the_wait(tmp_path):
    """A writer that lets go within the wait is waited for; one that holds on is refused once the wait is over."""
    import time

    path = tmp_path / "labels.jsonl"
    other = hold(path, seconds=1.0)  # a writer that lets go after a second
    try:
        with pytest.raises(labels.LabelsLockedError, match=r"open for writing by labeller 'bob'.*; close that labeller"):
            labels.append_label(path, {"case_id": "a", "label": "PASS"}, wait=0)  # wait=0: refused at once
        started = time.monotonic()
        labels.append_label(path, {"case_id": "a", "label": "PASS", "labeller": "ann"})  # the default wait covers it
        assert 0.2 < time.monotonic() - started < labels.LOCK_WAIT
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    other = hold(path)  # one that holds on: refused after the wait, which the message states
    try:
        started = time.monotonic()
        with pytest.raises(labels.LabelsLockedError, match=r"labeller 'bob' \(process \d+ .*\) \(waited 0.5 s\)"):
            labels.LabelWriter(path, labeller="ann", wait=0.5)
        assert 0.5 <= time.monotonic() - started < 3
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    assert labels.read_labels(path)["labeller"].tolist() == ["ann"]
    # the lock file is a hidden file beside the labels file, so file browsers do not list it
    assert sorted(p.name for p in tmp_path.iterdir()) == [".labels.jsonl.lock", "labels.jsonl"]
    for bad in (-1, float("nan"), float("inf"), "5", True, [1]):
        with pytest.raises(ValueError, match="`wait` must be the seconds to wait for the lock"):
            labels.append_label(path, {"case_id": "a"}, wait=bad)
        with pytest.raises(ValueError, match="`wait` must be"):
            labels.LabelWriter(path, labeller="ann", wait=bad)


# ------------------------------------------------------------------ annotators: every label stays its annotator's
def _naive_latest(records):
    """(labeller, case) -> label, replaying the records one by one: the reference for latest_labels."""
    state = {}
    for r in records:
        if r.get("mode", "label") != "label":
            continue
        key = (r.get("labeller"), r["case_id"])
        if r.get("label") is None:
            state.pop(key, None)  # an undo or an ignore clears this annotator's label, and only theirs
        else:
            state[key] = r["label"]
    return state


def test_every_interleaving_of_two_annotators_keeps_each_label_its_own(tmp_path):
    """ann's and bob's records on the same cases (labels, re-labels, undo, ignore, a reveal, records of no one) written
    in every interleaving: each annotator's latest labels are theirs, as a record-by-record replay says, in one shared
    file and in one file each; none is replaced, hidden or credited to another."""
    import itertools

    ann = [{"case_id": "c1", "label": "PASS"}, {"case_id": "c2", "label": "FAIL"}, {"case_id": "c1", "label": "FAIL"},
           {"case_id": "c2", "label": None, "note": "undo"}, {"case_id": "c3", "label": None, "ignored": True}]
    bob = [{"case_id": "c1", "label": "FAIL"}, {"case_id": "c3", "label": "PASS"}, {"case_id": "c2", "label": "PASS"},
           {"case_id": "c1", "label": None, "mode": "reveal"}, {"case_id": "c3", "label": "FAIL", "mode": "relabel"}]
    nobody = [{"case_id": "c2", "label": "FAIL"}]
    orders = set()
    for slots in itertools.combinations(range(len(ann) + len(bob)), len(ann)):  # every interleaving of ann's and bob's
        merged, a, b = [], iter(ann), iter(bob)
        for i in range(len(ann) + len(bob)):
            merged.append(("ann", next(a)) if i in slots else ("bob", next(b)))
        orders.add(slots)
        merged.insert(len(orders) % (len(merged) + 1), (None, nobody[0]))  # a record of no one, anywhere among them
        records = [{**r, "labeller": who, "mode": r.get("mode", "label")} if who else {**r, "mode": "label"}
                   for who, r in merged]
        expected = _naive_latest(records)
        assert expected == {("ann", "c1"): "FAIL", ("bob", "c1"): "FAIL", ("bob", "c3"): "PASS", ("bob", "c2"): "PASS",
                            (None, "c2"): "FAIL"}
        table = pd.DataFrame(records)
        if len(orders) % 25 == 1:  # through a shared file too, now and then
            shared = tmp_path / f"shared-{len(orders)}.jsonl"
            for record in records:
                labels.append_label(shared, record, wait=0)
            table = labels.read_labels(shared)
            for who in ("ann", "bob"):
                mine = labels.latest_labels(table, labeller=who)["label"].to_dict()
                assert mine == {c: lab for (w, c), lab in expected.items() if w == who}
        latest = labels.latest_labels(table, by_labeller=True)
        got = {(None if pd.isna(w) else w, c): lab for w, c, lab in zip(latest["labeller"], latest["case_id"],
                                                                         latest["label"], strict=True)}
        assert got == expected
        again = labels.latest_labels(table, mode="relabel", by_labeller=True)
        assert again[["labeller", "case_id", "label"]].values.tolist() == [["bob", "c3", "FAIL"]]
    assert len(orders) == 252  # C(10, 5) interleavings
    everyone = labels.read_labels(tmp_path / "shared-1.jsonl")
    assert everyone["ignored"].tolist().count(True) == 1 and everyone["ignored"].dtype == bool
    with pytest.raises(ValueError, match=r"labels by several annotators \('ann', 'bob', no name\); pass labeller="):
        labels.latest_labels(everyone)
    with pytest.raises(KeyError, match="no 'labeller' column"):
        labels.latest_labels(everyone.drop(columns="labeller"), labeller="ann")
    with pytest.raises(TypeError, match="`labeller` must be an annotator's name"):
        labels.latest_labels(everyone, labeller=3)
