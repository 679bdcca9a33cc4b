"""Benchmark: the peak memory and time of refusing what an attacker or a careless user hands over, beside the
baseline that reads it whole.

Run on demand: ``python benchmarks/bench_limits.py [--repeats 3]`` (about a minute and 3 GB of memory at peak, in
the baselines).

Each measurement is a fresh process (its peak resident memory, ``ru_maxrss``, is that case's alone), run after a
warm-up and in turn with its baseline in every repetition; medians of the paired repetitions are quoted. The cases:

- ``.eval`` logs whose one member expands to 1 GiB of Zstandard (35 KiB on disk), the same with deflate, and a
  Zstandard member that declares 200 MiB and expands to 1 GiB (a lying header): ``logs.read_inspect`` with its
  default limit (256 MiB) against the previous reader's way, the member decompressed whole (zstandard's
  ``decompressobj``, zipfile's ``read``);
- a 200 reply whose body is 500 MB (its Content-Length says so) and an endless chunked body, both served as fast as
  the loopback allows by a server in its own process: ``OpenAIChat`` with its default limit (16 MiB) against a bare
  aiohttp read of the whole body and its JSON (a client without a limit). The endless body has no
  baseline: read whole it ends only when memory does.

The limit, printed beside each figure, is the least a process can do: the floor (a process that imports evalkit
and refuses nothing) for a refusal made from a declared size, the floor plus the bytes that must be held to be
checked (the declared 200 MiB; 16 MiB of a reply) otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30

CHILD = r"""
import json, resource, sys, time
kind, arg = sys.argv[1], sys.argv[2]
import asyncio, pandas, zstandard, zipfile, aiohttp
from evalkit import logs, models
start = time.perf_counter()
outcome = "read"
try:
    if kind == "floor":
        pass
    elif kind == "evalkit-eval":
        logs.read_inspect(arg)
    elif kind == "baseline-eval":
        with zipfile.ZipFile(arg) as archive:
            info = archive.infolist()[0]
            if info.compress_type == 93:
                data = open(arg, "rb").read()[30 + len(info.filename):][:info.compress_size]
                content = zstandard.ZstdDecompressor().decompressobj().decompress(data)
            else:
                content = archive.read(info)
        outcome = f"read {len(content):,} bytes"
    elif kind == "evalkit-reply":
        models.OpenAIChat("m", base_url=arg, timeout=120)("x")
    elif kind == "baseline-reply":
        async def whole():
            async with aiohttp.ClientSession() as session:
                async with session.post(arg + "/chat/completions", data=b"{}",
                                        timeout=aiohttp.ClientTimeout(total=120)) as response:
                    return await response.read()
        body = asyncio.run(whole())
        outcome = f"read {len(json.loads(body)['choices'][0]['message']['content']):,} characters"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[:90]}"
seconds = time.perf_counter() - start
print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "seconds": seconds,
                  "outcome": outcome}))
"""


def _zip(name: str, data: bytes, method: int, crc: int, size: int) -> bytes:
    """A one-member zip archive, byte by byte (zipfile writes no Zstandard member and no lying size)."""
    encoded = name.encode()
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), size, len(encoded), 0)
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(data), size,
                          len(encoded), 0, 0, 0, 0, 0, 0) + encoded
    body = local + encoded + data
    return body + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(body), 0)


def bombs(folder: Path) -> dict[str, Path]:
    """The three archives: 1 GiB of zeros in one member (Zstandard, deflate), and a Zstandard one declaring 200 MiB."""
    import zstandard

    chunk, crc = bytes(1 << 20), 0
    zstd, deflate = zstandard.ZstdCompressor().compressobj(), zlib.compressobj(9, zlib.DEFLATED, -15)
    z_parts, d_parts = [], []
    for _ in range(GIB >> 20):
        z_parts.append(zstd.compress(chunk))
        d_parts.append(deflate.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    z_data, d_data = b"".join(z_parts) + zstd.flush(), b"".join(d_parts) + deflate.flush()
    paths = {"zstd 1 GiB": folder / "zstd.eval", "deflate 1 GiB": folder / "deflate.eval",
             "zstd declaring 200 MiB": folder / "liar.eval"}
    paths["zstd 1 GiB"].write_bytes(_zip("header.json", z_data, 93, crc, GIB))
    paths["deflate 1 GiB"].write_bytes(_zip("header.json", d_data, 8, crc, GIB))
    paths["zstd declaring 200 MiB"].write_bytes(_zip("header.json", z_data, 93, crc, 200 << 20))
    return paths


def serve(kind: str, port: mp.Queue, stop) -> None:
    """A 200 reply of 500 MB (a chat completion whose content is 500 MB of "x") or an endless chunked body."""
    listener = socket.create_server(("127.0.0.1", 0))
    port.put(listener.getsockname()[1])
    listener.settimeout(0.2)
    head = b'{"choices": [{"message": {"content": "'
    tail = b'"}}]}'
    block = b"x" * (1 << 16)
    size = 500_000_000

    def answer(client):
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                request += client.recv(65536)
            head_end = request.index(b"\r\n\r\n") + 4
            length = int(next((line.split(b":")[1] for line in request[:head_end].split(b"\r\n")
                               if line.lower().startswith(b"content-length")), b"0"))
            while len(request) - head_end < length:  # the whole request, so that closing sends no reset
                request += client.recv(65536)
            if kind == "declared":
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                               % (len(head) + size + len(tail)) + head)
                left = size
                while left:
                    part = block[:min(left, len(block))]
                    client.sendall(part)
                    left -= len(part)
                client.sendall(tail)
                client.shutdown(socket.SHUT_WR)
                while client.recv(65536):  # until the client has read it all and closed
                    pass
            else:
                client.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                frame = b"%x\r\n" % len(block) + block + b"\r\n"
                while True:
                    client.sendall(frame)
        except OSError:
            pass
        finally:
            client.close()

    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        threading.Thread(target=answer, args=(client,), daemon=True).start()


def child(kind: str, arg: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, arg], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if out.returncode != 0 or not out.stdout.strip():
        return {"peak_mib": np.nan, "seconds": np.nan, "outcome": (out.stderr.strip().splitlines() or ["?"])[-1][:90]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(cases: dict, repeats: int) -> dict:
    """Warm up every case, then run them in turn ``repeats`` times; name -> list of results."""
    for kind, arg in cases.values():
        child(kind, arg)
    runs = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (kind, arg) in cases.items():
            runs[name].append(child(kind, arg))
    return runs


def report(title: str, runs: dict, ours: str, baseline: str | None, limit: float, floor: float, why: str) -> None:
    mine = np.median([r["peak_mib"] for r in runs[ours]])
    seconds = np.median([r["seconds"] for r in runs[ours]])
    print(f"\n{title}")
    print(f"  evalkit   peak {mine:8.0f} MiB ({mine - floor:+7.0f} over the floor)  {seconds:7.3f} s   "
          f"{runs[ours][-1]['outcome']}")
    if baseline is not None:
        theirs = np.median([r["peak_mib"] for r in runs[baseline]])
        base_seconds = np.median([r["seconds"] for r in runs[baseline]])
        ratio = np.median([b["peak_mib"] / a["peak_mib"] for a, b in zip(runs[ours], runs[baseline], strict=True)])
        print(f"  baseline  peak {theirs:8.0f} MiB ({theirs - floor:+7.0f} over the floor)  {base_seconds:7.3f} s   "
              f"{runs[baseline][-1]['outcome']}")
        print(f"  baseline / evalkit peak: {ratio:.2f}x (median of the paired runs)")
    else:
        print("  baseline  not run: read whole, an endless body ends only when memory does")
    print(f"  limit     peak {limit:8.0f} MiB ({why})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = bombs(Path(tmp))
        floor_runs = measure({"floor": ("floor", "")}, args.repeats)
        floor = float(np.median([r["peak_mib"] for r in floor_runs["floor"]]))
        print(f"floor (a process that imports evalkit and refuses nothing): {floor:.0f} MiB; "
              f"archives on disk: {', '.join(f'{k} {p.stat().st_size / 1024:.0f} KiB' for k, p in paths.items())}")
        for name, path in paths.items():
            runs = measure({"evalkit": ("evalkit-eval", str(path)), "baseline": ("baseline-eval", str(path))}, args.repeats)
            declared = 200 if "200" in name else 0
            report(f".eval log, one member: {name}", runs, "evalkit", "baseline", floor + declared, floor,
                   "refused from the declared size, nothing expanded" if not declared else
                   "the floor and the 200 MiB declared, which must be expanded to be checked")
        stop = mp.Event()
        for kind, title in (("declared", "a 200 reply of 500 MB (Content-Length)"), ("endless", "an endless chunked body")):
            ports: mp.Queue = mp.Queue()
            server = mp.Process(target=serve, args=(kind, ports, stop), daemon=True)
            server.start()
            url = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
            cases = {"evalkit": ("evalkit-reply", url)}
            if kind == "declared":
                cases["baseline"] = ("baseline-reply", url)
            runs = measure(cases, args.repeats)
            report(title, runs, "evalkit", "baseline" if kind == "declared" else None,
                   floor if kind == "declared" else floor + 16, floor,
                   "refused from the Content-Length, nothing read" if kind == "declared" else
                   "the floor and the 16 MiB limit, read before the body is refused")
            stop.set()
            server.join(5)
            stop.clear()


if __name__ == "__main__":
    main()
