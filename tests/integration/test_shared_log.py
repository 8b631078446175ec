"""The servers of one vault append to and rotate the same logs: nothing lost, no error."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

from vault_tool.server.shared_log import SharedRotatingFileHandler

WRITERS = 3
LINES = 400
MAX_BYTES = 4_000
# Enough backups to keep every line written, so a line lost is a line the rotation lost.
BACKUPS = 60

WRITER = """
import logging, sys
from pathlib import Path
from vault_tool.server.shared_log import SharedRotatingFileHandler

handler = SharedRotatingFileHandler(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
log = logging.getLogger("shared")
log.addHandler(handler)
log.setLevel(logging.INFO)
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.readline()  # (all start writing at once)
for n in range(int(sys.argv[5])):
    log.info("writer %s line %04d %s", sys.argv[4], n, "x" * 40)
handler.close()
"""


def test_processes_sharing_a_rotating_log_lose_no_line_and_print_no_error(tmp_path: Path):
    log = tmp_path / "run" / "audit.jsonl"
    log.parent.mkdir()
    args = [str(log), str(MAX_BYTES), str(BACKUPS)]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, *args, str(w), str(LINES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    errors = [writer.communicate(timeout=120)[1] for writer in writers]

    assert errors == [""] * WRITERS  # (logging prints a failed rotation's traceback here)
    assert [w.returncode for w in writers] == [0] * WRITERS
    files = sorted(log.parent.glob("audit.jsonl*"))
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    expected = {f"writer {w} line {n:04d} {'x' * 40}" for w in range(WRITERS) for n in range(LINES)}
    assert sorted(lines) == sorted(expected)  # every line once: none lost, none doubled
    assert len(files) <= BACKUPS + 1
    # Rotated at the file's own size, not each writer's share of it: the backups are full
    # files, not rotated again by each process in turn, and none outgrows the limit by more
    # than the lines the other writers had begun as it was rotated.
    line_bytes = len(next(iter(expected))) + 1
    sizes = [f.stat().st_size for f in files]
    assert max(sizes) <= MAX_BYTES + (WRITERS - 1) * line_bytes
    backups = [f.stat().st_size for f in files if f != log]
    assert backups and min(backups) > MAX_BYTES - line_bytes


def test_a_log_removed_with_its_folder_is_written_again_where_it_was(tmp_path: Path):
    # `git clean -xfd` removes .vault/run with the logs in it while the servers run.
    log_path = tmp_path / "run" / "server.log"
    log_path.parent.mkdir()
    handler = SharedRotatingFileHandler(log_path, MAX_BYTES, 2)
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "line %d", (1,), None)
    handler.emit(record)
    shutil.rmtree(log_path.parent)
    record.args = (2,)
    handler.emit(record)
    handler.close()
    assert log_path.read_text(encoding="utf-8") == "line 2\n"
